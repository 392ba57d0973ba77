// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// torch_allocator.cpp — tierpool_torch_malloc / tierpool_torch_free: the two C functions
// PyTorch's CUDAPluggableAllocator loads from this extension (tierpool.torch.mem_pool).
//
// Note [A pluggable allocator pins its blocks]
// --------------------------------------------
// Rationale: torch.cuda.MemPool over a CUDAPluggableAllocator hands torch raw device
// pointers, which torch keeps in its tensors' storages; nothing tells the allocator when a
// kernel reads them. So a block can never move: the pool cannot evict or compact it.
// Approach: each malloc allocates a tensor in the device tier and holds a write_discard
// lease on it, ordered on the caller's stream (wrapped with wrap_native_stream once per
// stream), until the matching free, which ends the lease on that stream and frees the
// tensor (stream-ordered, so the block is reused only after the stream's work). The pool
// still accounts for the blocks (stats, fits, summary) and evicts its other tensors to make
// room for them. No Python object is touched: torch may call these without the GIL. The
// allocator's lock guards its tables only, never a pool call: a malloc that waits in the
// pool for other threads' leases must not keep those threads from freeing theirs.
// Limitations: the blocks are pinned for their whole life (they count as pinned in an
// OutOfMemory); a free of a pointer this allocator did not hand out is logged and ignored;
// one pool at a time.

#include "torch_allocator.hpp"

#include <tierpool/log.hpp>

#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace tierpool::python {
namespace {

struct block {
  tierpool::pool* pool{nullptr};  // the pool it came from
  tierpool::tensor tensor;
  tierpool::lease lease;
  std::size_t bytes{0};
};

struct state {
  std::mutex mtx;
  tierpool::pool* pool{nullptr};
  std::unordered_map<void*, block> blocks;
  std::unordered_map<void*, tierpool::stream_handle> streams;  // native stream -> the pool's handle
  torch_allocator_figures figures;
};

state& the_state()
{
  static state s;  // never destroyed before the extension is unloaded
  return s;
}

tierpool::stream_handle stream_of(state& s, void* native)
{
  if (native == nullptr) { return tierpool::stream_handle{}; }  // the legacy default stream: the pool's default
  if (auto it = s.streams.find(native); it != s.streams.end()) { return it->second; }
  tierpool::stream_handle const h = s.pool->wrap_native_stream(native);
  s.streams.emplace(native, h);
  return h;
}

}  // namespace

void torch_allocator_attach(tierpool::pool* p)
{
  state& s = the_state();
  std::lock_guard g(s.mtx);
  if (p == s.pool) { return; }
  if (!s.blocks.empty()) {
    throw tierpool::logic_error("tierpool.torch.mem_pool: " + std::to_string(s.blocks.size()) +
                                " block(s) of the allocator's current pool are live; free them before switching pools");
  }
  if (s.pool != nullptr) {
    for (auto const& [native, h] : s.streams) {
      try {
        s.pool->destroy_stream(h);
      } catch (std::exception const&) {  // the pool is closed: it has forgotten its streams
      }
    }
  }
  s.streams.clear();
  s.pool = p;
}

torch_allocator_figures torch_allocator_stats()
{
  state& s = the_state();
  std::lock_guard g(s.mtx);
  return s.figures;
}

}  // namespace tierpool::python

// The signatures torch.cuda.memory.CUDAPluggableAllocator expects (a cudaStream_t is a pointer).
extern "C" __attribute__((visibility("default"))) void* tierpool_torch_malloc(std::size_t size, int device,
                                                                              void* stream) noexcept
{
  using namespace tierpool::python;
  state& s = the_state();
  std::unique_lock g(s.mtx);
  ++s.figures.mallocs;
  auto fail = [&](std::string const& why) -> void* {
    ++s.figures.failures;
    tierpool::log_message(tierpool::log_level::warning, "tierpool_torch_malloc(" + std::to_string(size) + "): " + why);
    return nullptr;
  };
  if (s.pool == nullptr) { return fail("no pool (tierpool.torch.mem_pool sets one)"); }
  if (size == 0) { return fail("zero bytes"); }
  if (device != s.pool->backend().caps().device_ordinal) {
    return fail("device " + std::to_string(device) + " is not the pool's (" +
                std::to_string(s.pool->backend().caps().device_ordinal) + ")");
  }
  block b;
  b.pool = s.pool;
  b.bytes = size;
  try {
    tierpool::stream_handle const h = stream_of(s, stream);
    g.unlock();  // the pool's calls may wait for other threads (Note [A pluggable allocator pins its blocks])
    b.tensor = b.pool->allocate(size, {.name = "torch.MemPool", .preferred_tier = tierpool::tier_id{0}});
    b.lease = b.pool->acquire(b.tensor, tierpool::access_mode::write_discard, h);
    g.lock();
    void* const p = b.lease.data();
    s.blocks.emplace(p, std::move(b));
    ++s.figures.live_blocks;
    s.figures.live_bytes += size;
    return p;
  } catch (std::exception const& e) {
    if (!g.owns_lock()) { g.lock(); }
    return fail(e.what());  // b's lease and tensor (if any) end with it
  }
}

extern "C" __attribute__((visibility("default"))) void tierpool_torch_free(void* ptr, std::size_t size, int device,
                                                                           void* stream) noexcept
{
  using namespace tierpool::python;
  (void)size;
  (void)device;
  (void)stream;  // the lease is ordered on its malloc's stream; the free follows that stream
  state& s = the_state();
  block b;
  {
    std::lock_guard g(s.mtx);
    auto it = s.blocks.find(ptr);
    if (it == s.blocks.end()) {
      ++s.figures.foreign_frees;
      tierpool::log_message(tierpool::log_level::error,
                            "tierpool_torch_free: a pointer this allocator did not hand out (ignored)");
      return;
    }
    b = std::move(it->second);
    s.blocks.erase(it);
    --s.figures.live_blocks;
    s.figures.live_bytes -= b.bytes;
    ++s.figures.frees;
  }
  b.lease.release();
  try {
    b.pool->free(b.tensor);
  } catch (std::exception const& e) {  // a closed pool: its memory went with it
    tierpool::log_message(tierpool::log_level::error, std::string("tierpool_torch_free: ") + e.what());
  }
}

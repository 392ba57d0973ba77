// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// sim_memory.cpp — the sim backend's memory: real aligned host allocations or phantom
// address ranges, capacity accounting per tier kind, and pointer validation for copies
// and frees. Main entry points: sim_memory::allocate / deallocate / contains.
#include "sim_memory.hpp"

#include <cstdlib>
#include <iterator>
#include <new>

namespace tierpool::detail {

namespace {

constexpr std::size_t kind_index(tier_kind k) noexcept { return static_cast<std::size_t>(k); }

// Phantom ranges: 2^48 bytes (256 TiB) of address space per kind and simulated device, above
// the canonical user-space range so a dereference faults instead of corrupting memory. The
// kind is in bits 56-63, the device ordinal in bits 48-55: two simulated devices never
// hand out the same address, so a pointer of one is never inside an allocation of another.
constexpr unsigned kPhantomKindShift = 56;
constexpr unsigned kPhantomDeviceShift = 48;
constexpr std::uintptr_t phantom_base(std::size_t k, int device) noexcept
{
  return (std::uintptr_t{k + 1} << kPhantomKindShift) |
         ((static_cast<std::uintptr_t>(device) & 0xFFU) << kPhantomDeviceShift);
}
constexpr std::uintptr_t phantom_span = std::uintptr_t{1} << kPhantomDeviceShift;

}  // namespace

sim_memory::sim_memory(sim_memory_mode mode, std::array<std::size_t, tier_kind_count> capacities, int device) noexcept
  : mode_(mode), device_(device), capacity_(capacities)
{
  for (std::size_t k = 0; k < tier_kind_count; ++k) {
    phantom_next_[k] = phantom_base(k, device_);
  }
}

int sim_memory::phantom_device(void const* p) noexcept
{
  auto const a = reinterpret_cast<std::uintptr_t>(p);
  std::uintptr_t const kind = a >> kPhantomKindShift;
  if (kind == 0 || kind > tier_kind_count) { return -1; }
  return static_cast<int>((a >> kPhantomDeviceShift) & 0xFFU);
}

sim_memory::~sim_memory()
{
  std::lock_guard lock(mtx_);
  if (mode_ == sim_memory_mode::real) {
    for (auto const& [addr, b] : blocks_) {
      std::free(reinterpret_cast<void*>(addr));  // NOLINT(cppcoreguidelines-no-malloc)
    }
  }
  blocks_.clear();
}

status sim_memory::allocate(tier_kind kind, std::size_t bytes, void** out) noexcept
{
  std::size_t const k = kind_index(kind);
  if (bytes > SIZE_MAX - sim_alignment) {
    return status::out_of_memory;
  }
  std::size_t const rounded = (bytes + sim_alignment - 1) / sim_alignment * sim_alignment;
  bool const bounded = kind == tier_kind::device || kind == tier_kind::managed || capacity_[k] != 0;
  if (kind == tier_kind::managed && capacity_[k] == 0) {
    return status::not_supported;
  }
  std::lock_guard lock(mtx_);
  if (bounded && rounded > capacity_[k] - used_[k]) {
    return status::out_of_memory;
  }
  std::uintptr_t addr = 0;
  if (mode_ == sim_memory_mode::real) {
    void* p = std::aligned_alloc(sim_alignment, rounded);  // NOLINT(cppcoreguidelines-no-malloc)
    if (p == nullptr) {
      return status::out_of_memory;
    }
    addr = reinterpret_cast<std::uintptr_t>(p);
  } else {
    if (rounded > phantom_base(k, device_) + phantom_span - phantom_next_[k]) {
      return status::out_of_memory;
    }
    addr = phantom_next_[k];
    phantom_next_[k] += rounded;
  }
  try {
    blocks_.emplace(addr, block{rounded, kind});
  } catch (...) {
    release_locked(addr, block{rounded, kind});
    used_[k] += rounded;  // release_locked subtracted it; it was never added
    return status::out_of_memory;
  }
  used_[k] += rounded;
  *out = reinterpret_cast<void*>(addr);
  return status::ok;
}

void sim_memory::release_locked(std::uintptr_t addr, block const& b) noexcept
{
  frees_.store(frees_.load(std::memory_order_relaxed) + 1, std::memory_order_release);  // voids the hint
  std::size_t const k = kind_index(b.kind);
  used_[k] -= b.bytes;
  if (mode_ == sim_memory_mode::real) {
    std::free(reinterpret_cast<void*>(addr));  // NOLINT(cppcoreguidelines-no-malloc)
  } else if (addr + b.bytes == phantom_next_[k]) {
    phantom_next_[k] = addr;  // give back the top of the bump range (LIFO frees reuse addresses)
  }
}

sim_memory::free_result sim_memory::deallocate(tier_kind kind, void* ptr, std::size_t bytes) noexcept
{
  if (ptr == nullptr) {
    return free_result::null_pointer;
  }
  std::lock_guard lock(mtx_);
  auto const it = blocks_.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == blocks_.end()) {
    return free_result::unknown_pointer;
  }
  if (it->second.kind != kind) {
    return free_result::wrong_kind;
  }
  std::size_t const rounded = (bytes + sim_alignment - 1) / sim_alignment * sim_alignment;
  bool const size_ok = rounded == it->second.bytes;
  release_locked(it->first, it->second);
  blocks_.erase(it);
  return size_ok ? free_result::ok : free_result::size_mismatch;
}

// Note [contains without the lock]
// Rationale: the sim backend checks every device-side copy range with contains(); a
// replay copies on most requests, nearly always inside the one chunk of its device tier.
// Approach: the block found last is kept as a hint behind a sequence counter (odd while
// written, under the mutex); a reader that sees an even, unchanged counter and no free
// since the hint was taken (frees_) knows the block is still live, so a range inside it
// is answered without the mutex. Anything else takes the mutex and refreshes the hint.
// Limitations: one hint; a free anywhere voids it (frees are rare next to copies).
bool sim_memory::contains(tier_kind kind, void const* p, std::size_t bytes) const noexcept
{
  auto const addr = reinterpret_cast<std::uintptr_t>(p);
  std::uint64_t const seq = hint_seq_.load(std::memory_order_acquire);
  if ((seq & 1U) == 0) {
    // Sequentially consistent loads and stores instead of relaxed ones plus fences:
    // ThreadSanitizer does not model fences (GCC refuses them under -fsanitize=thread), and
    // on x86 a seq_cst load is a plain load, so the reader's fast path costs the same.
    std::uintptr_t const h_addr = hint_addr_.load();
    std::size_t const h_bytes = hint_bytes_.load();
    auto const h_kind = static_cast<tier_kind>(hint_kind_.load());
    std::uint64_t const h_frees = hint_frees_.load();
    if (hint_seq_.load() == seq && h_bytes != 0 &&
        h_frees == frees_.load(std::memory_order_acquire) && h_kind == kind && inside(h_addr, h_bytes, addr, bytes)) {
      return true;
    }
  }
  std::lock_guard lock(mtx_);
  auto it = blocks_.upper_bound(addr);
  if (it == blocks_.begin()) {
    return false;
  }
  --it;
  if (it->second.kind != kind || !inside(it->first, it->second.bytes, addr, bytes)) {
    return false;
  }
  std::uint64_t const s = hint_seq_.load(std::memory_order_relaxed);
  hint_seq_.store(s + 1);  // odd: being written (seq_cst: see above)
  hint_addr_.store(it->first);
  hint_bytes_.store(it->second.bytes);
  hint_kind_.store(static_cast<std::uint8_t>(kind));
  hint_frees_.store(frees_.load(std::memory_order_relaxed));
  hint_seq_.store(s + 2);
  return true;
}

std::size_t sim_memory::used(tier_kind kind) const noexcept
{
  std::lock_guard lock(mtx_);
  return used_[kind_index(kind)];
}

std::size_t sim_memory::live() const noexcept
{
  std::lock_guard lock(mtx_);
  return blocks_.size();
}

}  // namespace tierpool::detail

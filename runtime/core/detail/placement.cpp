// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// placement.cpp — owns the out-of-memory ladder of one tier (pool_impl::place) and the
// diagnosis an out_of_memory carries (oom_message_locked). Eviction itself is in
// runtime/migration/eviction.cpp.
//
// The ladder, in order; each step is cheaper and less disruptive than the next
// (docs/notes/pool_design.md, "Out of memory is a ladder"):
//   1. deferred frees whose events completed        (tier::allocate step 1)
//   2. the arena's free space                        (tier::allocate step 2)
//   3. grow the tier by a backend chunk, in budget   (tier::allocate step 3)
//   3b. when the caller can order its use after an event: a block still awaiting the
//      deferred free of one of our copy streams, with its pending event (tier::take_deferred)
//   4. when deferred frees alone would make room: wait for the oldest (host stall)
//   5. evict via the policy (clean: drop; dirty: write back to the next lower tier); a
//      victim whose last use and copies have completed returns to the arena at once
//   6. wait for the oldest deferred free (the write-backs of step 5)
// place_mode::no_wait (prefetch) stops before each wait: steps 1-3, then at most one
// eviction round (stream-ordered, no host wait) and a retry; the caller queues on failure.
//   7. out_of_memory with a diagnosis (or backend_error when growing failed in the backend)
// The low-memory callbacks (pool::add_low_memory_callback) come after: the request catches
// the out_of_memory, lets go of its locks, runs them and starts over once (Note
// [Low-memory callbacks run unlocked], pool_impl.cpp).
// Growing comes before evicting (the note had it after): evicting while budget is unused
// trades a cheap backend allocate for copies.
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <utility>
#include <string>

#include "core/detail/pool_impl.hpp"

namespace tierpool::detail {
namespace {

// Upper bound on ladder rounds of one request. Each round evicts or reclaims something,
// so it is only reached when other threads keep taking the room made (then we give up).
constexpr int kMaxLadderRounds = 4096;

}  // namespace

bool pool_impl::is_copy_stream(stream_handle s) const noexcept
{
  return std::find(h2d_.begin(), h2d_.end(), s) != h2d_.end() || std::find(d2h_.begin(), d2h_.end(), s) != d2h_.end();
}

std::optional<block> pool_impl::place(std::uint32_t k, std::size_t bytes, place_mode mode, place_failure* why,
                                      event_handle* after, stream_handle* after_stream, tensor_id incoming)
{
  tier_state& ts = *tiers_[k];
  status last_backend = status::ok;
  auto wait_oldest = [&]() -> bool {  // under the tier lock
    auto const t0 = std::chrono::steady_clock::now();
    std::size_t got = 0;
    status const st = ts.mem->reclaim_oldest_blocking(&got);
    add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return st == status::ok && got != 0;
  };
  bool evicted = false;
  for (int round = 0; round < kMaxLadderRounds; ++round) {
    {
      std::lock_guard tl(ts.mem->mutex());
      drain_accesses_locked(ts);
      tier_alloc_report rep;
      if (auto b = ts.mem->allocate(bytes, 0, &rep, tier_grow::allow)) {
        ts.bytes_allocated.fetch_add(static_cast<std::int64_t>(b->slot.size), std::memory_order_relaxed);
        return b;
      }
      if (after != nullptr && rep.deferred_bytes != 0) {
        // Stream-ordered reuse (Note [Stream-ordered reuse of deferred blocks], tier.cpp):
        // a block vacated behind one of our copies, taken with its pending event.
        auto const own = [this](stream_handle s) { return is_copy_stream(s); };
        if (auto b = ts.mem->take_deferred(bytes, own, after, after_stream)) {
          ts.bytes_allocated.fetch_add(static_cast<std::int64_t>(b->slot.size), std::memory_order_relaxed);
          ts.reused_in_order.fetch_add(1, std::memory_order_relaxed);
          return b;
        }
      }
      ts.alloc_failures.fetch_add(1, std::memory_order_relaxed);
      if (rep.result == tier_alloc_result::backend_failed) { last_backend = rep.backend_status; }
      if (mode == place_mode::try_only || (mode == place_mode::no_wait && evicted)) {
        if (why != nullptr) { why->backend_status = last_backend; }
        return std::nullopt;
      }
      std::size_t const unreserved = ts.capacity - std::min(ts.capacity, ts.mem->reserved_bytes());
      if (rep.deferred_bytes != 0 && rep.free_bytes + rep.deferred_bytes + unreserved >= bytes) {
        // The vacated blocks alone would make room once their last uses complete: wait
        // for them (ladder) rather than evict more; no_wait gives up (the caller queues).
        if (mode == place_mode::no_wait) {
          if (why != nullptr) { why->backend_status = last_backend; }
          return std::nullopt;
        }
        if (wait_oldest()) { continue; }
      }
    }
    if (evict_round(k, bytes, mode, incoming)) {
      evicted = true;
      continue;
    }
    if (mode == place_mode::no_wait) { break; }
    {
      std::lock_guard tl(ts.mem->mutex());
      if (ts.mem->deferred_bytes() != 0 && wait_oldest()) { continue; }
    }
    break;
  }
  if (why != nullptr) {
    std::lock_guard tl(ts.mem->mutex());
    why->diagnosis = oom_message_locked(k, bytes);
    why->backend_status = last_backend;
  }
  return std::nullopt;
}

void pool_impl::unplace(std::uint32_t k, block const& b, event_handle after, stream_handle after_stream) noexcept
{
  tier_state& ts = *tiers_[k];
  if (after) {
    // Back behind the copy it was taken behind (the tier owns the event again), as if
    // never taken; if even that bookkeeping cannot grow, wait for the copy instead.
    {
      std::lock_guard tl(ts.mem->mutex());
      try {
        ts.mem->deallocate_after(b, after, after_stream);
        ts.bytes_freed.fetch_add(static_cast<std::int64_t>(b.slot.size), std::memory_order_relaxed);
        return;
      } catch (...) {
      }
    }
    auto const t0 = std::chrono::steady_clock::now();
    (void)backend_->synchronize_event(after);
    add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    release_event(after);
  }
  give_back_now(k, b);
}

void pool_impl::give_back_now(std::uint32_t k, block const& b) noexcept
{
  tier_state& ts = *tiers_[k];
  std::lock_guard tl(ts.mem->mutex());
  try {
    ts.mem->deallocate(b);
    ts.bytes_freed.fetch_add(static_cast<std::int64_t>(b.slot.size), std::memory_order_relaxed);
  } catch (...) {  // not a live block: nothing to give back
  }
}

std::string pool_impl::oom_message_locked(std::uint32_t k, std::size_t bytes) const
{
  tier_state const& ts = *tiers_[k];
  tier_usage const u = ts.mem->usage();
  std::size_t const pinned = ts.pinned_bytes();
  std::size_t const unreserved = u.capacity_bytes - std::min(u.capacity_bytes, u.reserved_bytes);
  std::size_t const free_total = u.free_bytes + unreserved;
  std::size_t const largest = std::max(u.largest_free_block, unreserved);
  std::string const raise = ts.kind == tier_kind::device
                              ? "raise tier_options::capacity_bytes (or TIERPOOL_DEVICE_BYTES) of tier '" + ts.name + "'"
                              : "raise tier_options::capacity_bytes of tier '" + ts.name + "'";
  std::string cause;
  if (bytes > u.capacity_bytes) {
    cause = "capacity — the request is larger than the tier; " + raise + " or split the tensor";
  } else if (pinned + bytes > u.capacity_bytes) {
    cause = "pinned — live leases pin " + format_byte_size(pinned) +
            " of the tier; release leases (end lease objects) before acquiring more, or " + raise;
  } else if (free_total + u.deferred_bytes >= bytes && largest < bytes) {
    cause = "fragmentation — " + format_byte_size(free_total) + " free but the largest free block is " +
            format_byte_size(largest) + "; free or demote neighbouring tensors, use fewer distinct sizes, or " + raise;
  } else {
    cause = "capacity — what is resident cannot be evicted (pinned, busy, or dirty with no room in a lower tier); " +
            raise + " or a lower tier's, or keep fewer tensors live";
  }
  std::string msg = "tierpool: out of memory: cannot place " + format_byte_size(bytes) + " (" + std::to_string(bytes) +
                    " bytes) in tier " + std::to_string(k) + " '" + ts.name + "' (" + std::string(to_string(ts.kind)) +
                    "): capacity " + format_byte_size(u.capacity_bytes) + ", reserved " +
                    format_byte_size(u.reserved_bytes) + ", resident " + format_byte_size(u.used_bytes) + " in " +
                    std::to_string(ts.resident.load(std::memory_order_relaxed)) + " tensors, pinned " +
                    format_byte_size(pinned) + ", in flight " + format_byte_size(u.deferred_bytes) +
                    ", free " + format_byte_size(free_total) + ", largest free block " + format_byte_size(largest) +
                    "; cause: " + cause;
  return msg;
}

void pool_impl::throw_place_failure(std::uint32_t k, std::size_t bytes, place_failure const& why) const
{
  if (why.backend_status != status::ok && why.backend_status != status::out_of_memory) {
    throw backend_error(why.backend_status, "pool: growing tier '" + tiers_[k]->name + "' for " +
                                              std::to_string(bytes) + " bytes failed in the backend");
  }
  std::string msg = why.diagnosis;
  if (msg.empty()) {
    std::lock_guard tl(tiers_[k]->mem->mutex());
    msg = oom_message_locked(k, bytes);
  }
  throw out_of_memory(std::move(msg), tier_id{k}, bytes);
}

}  // namespace tierpool::detail

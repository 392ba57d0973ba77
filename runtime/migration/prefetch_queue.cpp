// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// prefetch_queue.cpp — owns prefetches: a copy into a faster tier started without
// blocking the host (prefetch_record), the queue of requests that found no room without
// waiting (enqueue_prefetch, served by later pool calls, best first), and the steering of
// managed pages to the device (steer_to_device).
#include <tierpool/error.hpp>

#include <algorithm>
#include <mutex>
#include <new>

#include "migration/migration_engine.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {

void migration_engine::steer_to_device(tensor_record& rec, copy_slot& slot, stream_handle stream) noexcept
{
  slot.pages_on_device = true;  // a hint either way: if it fails, the pages fault in on use
  if (!backend_->caps().has_managed_prefetch) { return; }
  memory_location to{};
  to.kind = tier_kind::device;
  if (backend_->prefetch_async(slot.blk.ptr, rec.bytes, to, stream) == status::ok) {
    counters_->managed_prefetches.fetch_add(1, std::memory_order_relaxed);
    counters_->managed_prefetch_bytes.fetch_add(rec.bytes, std::memory_order_relaxed);
  }
}

void migration_engine::prefetch_record(record_ref const& recp, std::uint32_t k, bool predicted)
{
  tensor_record& rec = *recp;
  record_lock rl(rec);
  if (predicted && rec.freed) { return; }
  TIERPOOL_EXPECTS(!rec.freed, "pool::prefetch: the tensor was freed");
  if (rec.slots[k].state == copy_state::valid || rec.prefetch_queued) { return; }  // resident, in flight, queued
  // A live write lease may be changing the bytes (on the host, or on a stream after the
  // copy would run): a copy now would snapshot them half-written. Nothing to prefetch.
  if (rec.write_pins != 0 || rec.needs_rebuild || rec.discarded) {  // or dropped for recompute: nothing to copy
    counters_->prefetch_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Never blocks the host: placement without waiting (completed frees, arena, grow, one
  // stream-ordered eviction round); when room can only be made by waiting, the request
  // is queued and served by later pool calls. A hint: errors do nothing.
  try {
    fill_result const r = [&] {
      filling_ahead_scope const ahead(rec);
      return ensure_valid_locked(rec, k, access_mode::read, place_mode::no_wait);
    }();
    // A predicted request counts once it issued a copy or was queued (not when dropped).
    if (r == fill_result::filled) {
      counters_->prefetches.fetch_add(1, std::memory_order_relaxed);
      rec.prefetched = true;
      if (predicted) { counters_->predicted_prefetches.fetch_add(1, std::memory_order_relaxed); }
    } else if (r == fill_result::no_room && rec.bytes <= tiers_[k]->capacity) {
      if (enqueue_prefetch(recp, k) && predicted) { counters_->predicted_prefetches.fetch_add(1, std::memory_order_relaxed); }
    }
  } catch (out_of_memory const&) {
  } catch (backend_error const&) {
  } catch (std::bad_alloc const&) {
  }
}

bool migration_engine::enqueue_prefetch(record_ref const& recp, std::uint32_t k)
{
  tensor_record& rec = *recp;  // locked by the caller
  std::lock_guard lock(pq_mtx_);
  if (pq_.size() >= kPrefetchQueueCap) {
    counters_->prefetch_dropped.fetch_add(1, std::memory_order_relaxed);  // full: the newest request is dropped
    return false;
  }
  pq_.push_back(prefetch_request{rec.id, k, rec.priority, pq_seq_++});
  rec.prefetch_queued = true;
  counters_->prefetch_queued.fetch_add(1, std::memory_order_relaxed);
  pq_size_.store(pq_.size(), std::memory_order_relaxed);
  return true;
}

// Serves queued prefetches, best first (higher tensor priority, then older), while they
// can be placed without waiting; stops at the first that cannot (its room is still in
// flight). One thread serves at a time; the caller holds no record or tier lock, and
// records are only try-locked, so this never blocks.
void migration_engine::serve_prefetches() noexcept
{
  if (!held_records().empty()) { return; }  // defensive: only from lock-free entry points
  if (pq_serving_.exchange(true, std::memory_order_acquire)) { return; }
  auto remove = [&](std::uint64_t seq) {
    std::lock_guard lock(pq_mtx_);
    auto it = std::find_if(pq_.begin(), pq_.end(), [&](prefetch_request const& r) { return r.seq == seq; });
    if (it != pq_.end()) { pq_.erase(it); }
    pq_size_.store(pq_.size(), std::memory_order_relaxed);
  };
  for (;;) {
    prefetch_request req;
    {
      std::lock_guard lock(pq_mtx_);
      if (pq_.empty()) { break; }
      auto best = std::min_element(pq_.begin(), pq_.end(), [](prefetch_request const& a, prefetch_request const& b) {
        return a.priority != b.priority ? a.priority > b.priority : a.seq < b.seq;
      });
      req = *best;
    }
    record_ref rec;  // Note [Records count their references]: the table holds live tensors
    {
      std::lock_guard lock(*table_mtx_);  // a leaf
      if (auto const* r = table_->find(static_cast<std::uint64_t>(req.id))) { rec = *r; }
    }
    if (rec == nullptr || closed_.load(std::memory_order_acquire)) {  // freed and gone
      remove(req.seq);
      counters_->prefetch_dropped.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    record_lock rl(*rec, std::try_to_lock);
    if (!rl.owns()) { break; }  // busy: try again at a later call
    if (rec->freed || rec->slots[req.tier].state == copy_state::valid ||
        rec->write_pins != 0 || rec->needs_rebuild || rec->discarded) {  // freed, resident by now, being written (see prefetch()), dropped
      rec->prefetch_queued = false;
      remove(req.seq);
      counters_->prefetch_dropped.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    fill_result r = fill_result::no_room;
    bool failed = false;
    try {
      filling_ahead_scope const ahead(*rec);
      r = ensure_valid_locked(*rec, req.tier, access_mode::read, place_mode::no_wait);
    } catch (...) {
      failed = true;
    }
    if (!failed && r == fill_result::no_room) { break; }  // still no room without waiting
    rec->prefetch_queued = false;
    remove(req.seq);
    if (failed) {
      counters_->prefetch_dropped.fetch_add(1, std::memory_order_relaxed);
    } else {
      counters_->prefetches.fetch_add(1, std::memory_order_relaxed);
      rec->prefetched = true;
    }
  }
  pq_serving_.store(false, std::memory_order_release);
}

void migration_engine::close_prefetch_queue() noexcept
{
  closed_.store(true, std::memory_order_release);
  std::lock_guard lock(pq_mtx_);
  pq_.clear();
  pq_size_.store(0, std::memory_order_relaxed);
}

}  // namespace tierpool::detail

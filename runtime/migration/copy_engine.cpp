// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// copy_engine.cpp — owns the movement of a tensor's bytes between tiers and the
// bookkeeping of its copy slots: filling a slot (ensure_valid_locked), copying on a copy
// stream (copy_locked), writing a dirty copy back (write_back_locked), vacating a slot
// into a deferred free (vacate_locked), pins, and the policy hooks of slot changes.
// Also the stream-ordering primitives, which never throw: a failed event call falls back
// to a host wait (docs/notes/pool_design.md, "Failure paths").
//
// Invariant kept by every function here (the record is locked by the caller):
//   a live record has >= 1 valid slot; a slot's block is released only after an event
//   covering its `ready` copy and every stream in `users` has completed.
#include <tierpool/error.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>

#include "core/detail/pool_impl.hpp"

namespace tierpool::detail {

// ---------------------------------------------------------------------------------------
// Stream-ordering primitives
// ---------------------------------------------------------------------------------------

void pool_impl::add_stall(double seconds) noexcept
{
  stall_ns_.fetch_add(static_cast<std::uint64_t>(seconds * 1e9), std::memory_order_relaxed);
}

void pool_impl::release_event(event_handle& e) noexcept
{
  if (e) { (void)events_->try_release(e); }
  e = event_handle{};
}

bool pool_impl::ready_complete(copy_slot& slot) noexcept
{
  if (!slot.ready) { return true; }
  if (backend_->query_event(slot.ready) == status::ok) {
    release_event(slot.ready);
    return true;
  }
  return false;
}

event_handle pool_impl::record_or_sync(stream_handle s) noexcept
{
  event_handle e{};
  if (events_->acquire(&e) == status::ok) {
    if (backend_->record_event(e, s) == status::ok) { return e; }
    release_event(e);
  }
  auto const t0 = std::chrono::steady_clock::now();
  (void)backend_->synchronize_stream(s);
  add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return event_handle{};
}

void pool_impl::stream_wait_stream(stream_handle waiter, stream_handle source) noexcept
{
  if (waiter == source) { return; }
  event_handle e = record_or_sync(source);
  if (!e) { return; }  // the host waited for `source` instead
  stream_wait_event_or_sync(waiter, e);
  release_event(e);  // the wait captured the record (a later re-record is harmless)
}

void pool_impl::stream_wait_event_or_sync(stream_handle waiter, event_handle e) noexcept
{
  if (!e || backend_->stream_wait_event(waiter, e) == status::ok) { return; }
  auto const t0 = std::chrono::steady_clock::now();
  (void)backend_->synchronize_event(e);
  add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void pool_impl::host_wait_slot(copy_slot& slot, bool include_users) noexcept
{
  auto const t0 = std::chrono::steady_clock::now();
  bool waited = false;
  if (slot.ready) {
    (void)backend_->synchronize_event(slot.ready);
    release_event(slot.ready);
    waited = true;
  }
  if (include_users) {
    for (stream_handle u : slot.users) {
      event_handle e = record_or_sync(u);
      if (e) {
        (void)backend_->synchronize_event(e);
        release_event(e);
      }
      waited = true;
    }
    slot.users.clear();
  }
  if (waited) { add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()); }
}

stream_handle pool_impl::copy_stream(std::uint32_t to, std::uint32_t from) noexcept
{
  std::uint32_t const i = rr_.fetch_add(1, std::memory_order_relaxed);
  return to < from ? h2d_[i % h2d_.size()] : d2h_[i % d2h_.size()];
}

// ---------------------------------------------------------------------------------------
// Policy hooks and pins
// ---------------------------------------------------------------------------------------

void pool_impl::drain_accesses_locked(tier_state& ts) noexcept
{
  {
    std::lock_guard al(ts.acc_mtx);
    ts.acc_buf.swap(ts.acc_drain);
  }
  for (tensor_view const& v : ts.acc_drain) { ts.policy->on_access(v); }
  ts.acc_drain.clear();
}

void pool_impl::insert_into_policy(tensor_record& rec, std::uint32_t k, bool write) noexcept
{
  tier_state& ts = *tiers_[k];
  tensor_view v{};
  v.id = rec.id;
  v.tier = tier_id{k};
  v.bytes = rec.bytes;
  v.last_access = backend_->now();
  v.access_count = ++rec.access_count;
  v.pinned = rec.slots[k].pins != 0;
  v.write_access = write;
  std::lock_guard tl(ts.mem->mutex());
  drain_accesses_locked(ts);
  ts.policy->on_insert(v);
  ts.resident.fetch_add(1, std::memory_order_relaxed);
}

void pool_impl::note_access(tensor_record& rec, std::uint32_t k, bool write) noexcept
{
  tier_state& ts = *tiers_[k];
  tensor_view v{};
  v.id = rec.id;
  v.tier = tier_id{k};
  v.bytes = rec.bytes;
  v.last_access = backend_->now();
  v.access_count = ++rec.access_count;
  v.write_access = write;
  {
    std::lock_guard al(ts.acc_mtx);
    if (ts.acc_buf.size() < ts.acc_buf.capacity()) {
      ts.acc_buf.push_back(v);  // no allocation: capacity reserved at construction
      return;
    }
  }
  std::lock_guard tl(ts.mem->mutex());  // buffer full: apply it (tensor -> tier order holds)
  drain_accesses_locked(ts);
  ts.policy->on_access(v);
}

void pool_impl::pin_locked(tensor_record& rec, std::uint32_t k) noexcept
{
  copy_slot& s = rec.slots[k];
  ++rec.pins;
  if (s.pins++ == 0) { tiers_[k]->pinned_bytes.fetch_add(rec.bytes, std::memory_order_relaxed); }
}

void pool_impl::unpin_locked(tensor_record& rec, std::uint32_t k) noexcept
{
  if (k >= rec.slots.size()) { return; }
  copy_slot& s = rec.slots[k];
  if (s.pins == 0) { return; }
  --rec.pins;
  if (--s.pins != 0) { return; }
  tiers_[k]->pinned_bytes.fetch_sub(rec.bytes, std::memory_order_relaxed);
  if (s.policy_pinned) {  // the policy heard of the pin (eviction skipped it): tell it
    tier_state& ts = *tiers_[k];
    std::lock_guard tl(ts.mem->mutex());
    ts.policy->on_unpin(rec.id);
    s.policy_pinned = false;
  }
}

// ---------------------------------------------------------------------------------------
// Slots
// ---------------------------------------------------------------------------------------

void pool_impl::mark_others_stale_locked(tensor_record& rec, std::uint32_t k) noexcept
{
  for (std::uint32_t j = 0; j < rec.slots.size(); ++j) {
    if (j != k && rec.slots[j].state == copy_state::valid) { rec.slots[j].state = copy_state::stale; }
  }
}

status pool_impl::copy_locked(tensor_record& rec, std::uint32_t from, std::uint32_t to)
{
  copy_slot& src = rec.slots[from];
  copy_slot& dst = rec.slots[to];
  stream_handle const c = copy_stream(to, from);
  // The copy reads src after whatever wrote it, and overwrites dst after whatever used it.
  if (!ready_complete(src)) { stream_wait_event_or_sync(c, src.ready); }
  for (stream_handle u : src.users) { stream_wait_stream(c, u); }
  if (!ready_complete(dst)) { stream_wait_event_or_sync(c, dst.ready); }
  for (stream_handle u : dst.users) { stream_wait_stream(c, u); }
  copy_desc d{};
  d.dst = dst.blk.ptr;
  d.src = src.blk.ptr;
  d.bytes = rec.bytes;
  d.dst_kind = tiers_[to]->kind;
  d.src_kind = tiers_[from]->kind;
  if (status const st = backend_->copy_async(d, c); st != status::ok) { return st; }
  event_handle const e = record_or_sync(c);
  release_event(dst.ready);
  dst.ready = e;
  dst.users.clear();  // covered by `ready`: the copy waited for them
  if (std::find(src.users.begin(), src.users.end(), c) == src.users.end()) { src.users.push_back(c); }
  if (to < from) {
    bytes_h2d_.fetch_add(rec.bytes, std::memory_order_relaxed);
    copies_h2d_.fetch_add(1, std::memory_order_relaxed);
  } else {
    bytes_d2h_.fetch_add(rec.bytes, std::memory_order_relaxed);
    copies_d2h_.fetch_add(1, std::memory_order_relaxed);
  }
  return status::ok;
}

pool_impl::fill_result pool_impl::ensure_valid_locked(tensor_record& rec, std::uint32_t k, access_mode access,
                                                      place_mode mode)
{
  copy_slot& dst = rec.slots[k];
  if (dst.state == copy_state::valid) { return fill_result::hit; }
  bool const fresh = dst.state == copy_state::absent;
  if (fresh) {
    place_failure why;
    std::optional<block> b;
    if (rec.bytes <= tiers_[k]->capacity || mode == place_mode::ladder) {
      b = place(k, rec.bytes, mode, mode == place_mode::ladder ? &why : nullptr);
    }
    if (!b) {
      if (mode == place_mode::try_only) { return fill_result::no_room; }
      throw_place_failure(k, rec.bytes, why);
    }
    dst.blk = *b;
  }
  if (access != access_mode::write_discard) {
    std::uint32_t src = 0;
    while (src < rec.slots.size() && rec.slots[src].state != copy_state::valid) { ++src; }
    TIERPOOL_ASSERT(src < rec.slots.size());
    if (status const st = copy_locked(rec, src, k); st != status::ok) {
      if (fresh) {
        give_back_now(k, dst.blk);  // no queued work touches it: the copy was never enqueued
        dst.blk = block{};
      }
      throw backend_error(st, "pool: copying tensor " + std::to_string(static_cast<std::uint64_t>(rec.id)) +
                                " from tier '" + tiers_[src]->name + "' to tier '" + tiers_[k]->name +
                                "' (the tensor's bytes are unchanged)");
    }
  }
  dst.state = copy_state::valid;
  if (fresh) { insert_into_policy(rec, k, access != access_mode::read); }
  return fill_result::filled;
}

bool pool_impl::write_back_locked(tensor_record& rec, std::uint32_t k) noexcept
{
  for (auto j = static_cast<std::uint32_t>(k + 1); j < rec.slots.size(); ++j) {
    copy_slot& dst = rec.slots[j];
    if (dst.state == copy_state::valid) { return true; }
    bool const fresh = dst.state == copy_state::absent;
    if (fresh) {
      if (rec.bytes > tiers_[j]->capacity) { continue; }
      std::optional<block> b;
      try {
        b = place(j, rec.bytes, place_mode::ladder, nullptr);
      } catch (...) {
        b.reset();
      }
      if (!b) { continue; }  // no room there: try the next lower tier
      dst.blk = *b;
    }
    if (copy_locked(rec, k, j) != status::ok) {
      if (fresh) {
        give_back_now(j, dst.blk);
        dst.blk = block{};
      }
      return false;  // the victim keeps its copy and stays resident
    }
    dst.state = copy_state::valid;
    if (fresh) { insert_into_policy(rec, j, false); }
    return true;
  }
  return false;
}

void pool_impl::vacate_locked(tensor_record& rec, std::uint32_t k) noexcept
{
  copy_slot& s = rec.slots[k];
  if (s.state == copy_state::absent) { return; }
  tier_state& ts = *tiers_[k];
  // One event on the retire stream covers the copy that filled the block and every use.
  event_handle e{};
  bool const pending = !ready_complete(s) ||
                       std::any_of(s.users.begin(), s.users.end(), [&](stream_handle u) { return u != retire_; });
  if (pending) {
    if (s.ready) { stream_wait_event_or_sync(retire_, s.ready); }
    for (stream_handle u : s.users) { stream_wait_stream(retire_, u); }
    e = record_or_sync(retire_);
  }
  release_event(s.ready);
  {
    std::lock_guard tl(ts.mem->mutex());
    drain_accesses_locked(ts);
    ts.policy->on_erase(rec.id);
    try {
      if (e) {
        ts.mem->deallocate_after(s.blk, e, retire_);
      } else {
        ts.mem->deallocate(s.blk);
      }
    } catch (...) {
      // Bookkeeping could not grow (bad_alloc): wait here instead, then free at once.
      if (e) {
        (void)backend_->synchronize_event(e);
        release_event(e);
      }
      try {
        ts.mem->deallocate(s.blk);
      } catch (...) {  // not a live block: nothing more to do
      }
    }
    ts.bytes_freed.fetch_add(static_cast<std::int64_t>(s.blk.slot.size), std::memory_order_relaxed);
    ts.resident.fetch_sub(1, std::memory_order_relaxed);
  }
  if (s.pins != 0) { ts.pinned_bytes.fetch_sub(rec.bytes, std::memory_order_relaxed); }
  rec.pins -= s.pins;
  s = copy_slot{};
}

void pool_impl::free_slots_locked(tensor_record& rec) noexcept
{
  if (rec.freed) { return; }
  for (auto k = static_cast<std::uint32_t>(rec.slots.size()); k-- > 0;) { vacate_locked(rec, k); }
  if (rec.prefetched) {
    prefetch_wasted_.fetch_add(1, std::memory_order_relaxed);
    rec.prefetched = false;
  }
  rec.freed = true;
  live_tensors_.fetch_sub(1, std::memory_order_relaxed);
  live_tensor_bytes_.fetch_sub(rec.bytes, std::memory_order_relaxed);
}

}  // namespace tierpool::detail

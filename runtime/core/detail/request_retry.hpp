// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file request_retry.hpp
 * @brief Internal: the top of every request that may run out of memory (allocate, acquire,
 *        acquire_host, demote) — pool_impl::with_low_memory_step: the busy retries and the
 *        low-memory callbacks, run with every lock let go. Included by tensor_ops.cpp only.
 */
#pragma once

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "core/detail/pool_impl.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {

// Note [Low-memory callbacks run unlocked]
// ------------------------------------------
// The ladder's "low-memory callbacks" step (pool::add_low_memory_callback) runs at the top
// of a request, not inside migration_engine::place(): when the whole ladder failed with
// out_of_memory, the request has let go of every lock (its tensor's record too), the
// callbacks run, and the request runs once more from the start (it rechecks everything:
// another thread may have moved the tensor meanwhile). So a callback may free, release,
// demote or prefetch any tensor, the requested one included, and can never deadlock
// against a thread that locks records in id order (close) or against another thread's
// callback. (Callbacks run with the request's record locked would break the lock order as
// soon as one locked a second record: Note [Lock order of the pool].)
//
// While the callbacks and the second attempt run, the request's record is "paused"
// (tensor_record::paused) and kept alive by a reference of its own: a callback may destroy
// the tensor's last handle, and the request still finishes normally. A free of a paused
// record is deferred as for a leased one (free_when_unpinned): if the second attempt made a
// lease, the last release frees the tensor; if not (demote, or a request that failed
// again), the unpause does (record_lock's unlock). The free is recorded in a trace when it
// happens, after the request's access. pool::free on a paused tensor defers alike.
template <class Body>
auto pool_impl::with_low_memory_step(tensor_record* rec, record_ref const* handle, Body&& body)
  -> decltype(body(false))
{
  // Busy retries (Note [Busy victims are waited for, not failed on], placement.cpp): an
  // attempt that failed only because other threads held its victims has let go of every
  // lock; back off (outside the quiesce gate) and start over, within the bounds.
  using result = decltype(body(false));
  // The retries, out of line: the first attempt costs the hit path nothing more.
  auto again = [&](busy_failure const& first_failure) __attribute__((noinline)) -> result {
    auto const t0 = std::chrono::steady_clock::now();  // of the first busy failure
    auto const timeout = std::chrono::milliseconds(contention_.busy_timeout_ms);
    std::uint32_t attempts = 1;
    std::size_t last_busy = first_failure.figures().busy_bytes;
    bool last_pins = first_failure.pins();
    tier_id last_tier = first_failure.tier();
    std::size_t const requested = first_failure.requested();
    for (;;) {
      auto const waited = std::chrono::steady_clock::now() - t0;
      if (attempts >= contention_.busy_attempts || waited >= timeout) {
        auto const k = static_cast<std::uint32_t>(last_tier);
        oom_figures f{};
        std::string msg;
        {
          std::lock_guard tl(engine_.tiers()[k]->mem->mutex());
          msg = engine_.oom_message_locked(k, requested, &f, last_busy, attempts, std::chrono::duration<double>(waited).count(),
                                   last_pins);
        }
        throw out_of_memory(std::move(msg), last_tier, requested, f);
      }
      counters_.busy_retries.fetch_add(1, std::memory_order_relaxed);
      bool const out = gate_.suspend();
      if (attempts <= 4) {
        std::this_thread::yield();
      } else {
        auto const t1 = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(std::chrono::microseconds(
          std::min<std::uint64_t>(1000, std::uint64_t{20} << std::min<std::uint32_t>(attempts - 5, 6))));
        streams_->add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
      }
      gate_.resume(out, thread_shard());
      try {
        return body(true);
      } catch (busy_failure const& e) {
        ++attempts;
        last_busy = e.figures().busy_bytes;
        last_pins = e.pins();
        last_tier = e.tier();
      }
    }
  };
  auto attempt = [&](bool retry) -> result {
    try {
      return body(retry);
    } catch (busy_failure const& e) {
      return again(e);
    }
  };
  std::exception_ptr first;
  std::uint32_t k = 0;
  std::size_t bytes = 0;
  try {
    return attempt(false);
  } catch (out_of_memory const& e) {
    if (!lowmem_.any()) { throw; }
    first = std::current_exception();
    k = static_cast<std::uint32_t>(e.tier());
    bytes = e.requested();
  }
  // The handle is still alive here (no callback ran yet); it may not be after.
  record_ref const keep = handle != nullptr ? *handle : nullptr;
  struct pause {
    tensor_record* rec;
    explicit pause(tensor_record* r) : rec(r)
    {
      if (rec == nullptr) { return; }
      record_lock rl(*rec);
      ++rec->paused;
    }
    pause(pause const&) = delete;
    pause& operator=(pause const&) = delete;
    ~pause()
    {
      if (rec == nullptr) { return; }
      rec->mtx.lock();  // not record_lock: it may throw; the unlock below does what its would
      --rec->paused;
      bool const dropped = rec->free_when_unpinned && rec->pins == 0 && rec->paused == 0 && rec->drop_held;
      std::shared_ptr<record_owner> keep_alive;
      record_ref keep_self;
      if (dropped) { rec->owner()->finish_dropped_locked(*rec, keep_alive, keep_self); }
      rec->mtx.unlock();
    }
  } const paused{rec};
  bool ran = false;
  {
    // The callbacks run outside the quiesce gate: they may call the pool, or wait for
    // other threads' pool calls (Note [The quiesce gate]).
    bool const out = gate_.suspend();
    try {
      ran = run_low_memory_callbacks(k, bytes);
    } catch (...) {
      gate_.resume(out, thread_shard());
      throw;
    }
    gate_.resume(out, thread_shard());
  }
  if (!ran) { std::rethrow_exception(first); }
  return attempt(true);
}

}  // namespace tierpool::detail

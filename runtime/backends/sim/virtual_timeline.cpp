// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// virtual_timeline.cpp — the sim backend's deterministic discrete-event engine
// (sim_clock_mode::virtual_clock). No threads: every operation takes effect at enqueue
// and is given a completion time from the stream tail, waited events and link occupancy;
// now() moves only on synchronize_* and advance_*. Main entry point: make_virtual_timeline.
//
// Note [Virtual copy timing]
//   start = max(now, stream.tail, link.free)      (waited events are folded into tail)
//   end   = start + link.transfer_ns(bytes)        (latency + bytes / bandwidth)
//   stream.tail = link.free = end
// A link is busy for the whole copy, latency included, so two copies on one link
// serialize while copies on different links overlap. Events take the stream tail at
// record; query_event is ok iff event.time <= now. Host functions run at enqueue, on the
// calling thread, like every other data effect (so they see bytes in enqueue order).
#include "sim_timeline.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

namespace tierpool::detail {

namespace {

class virtual_timeline final : public sim_timeline, public virtual_timeline_ops {
 public:
  explicit virtual_timeline(sim_links const& links) : links_(links)
  {
    streams_.emplace(0, stream_state{});
  }

  ~virtual_timeline() override { shutdown(); }

  bool has_stream(stream_handle s) const noexcept override
  {
    std::lock_guard lock(mtx_);
    return streams_.contains(s.value);
  }

  bool has_event(event_handle e) const noexcept override
  {
    std::lock_guard lock(mtx_);
    return events_.contains(e.value);
  }

  status create_stream(stream_handle* out) noexcept override
  {
    std::lock_guard lock(mtx_);
    try {
      std::uintptr_t const h = make_handle(++next_stream_, kStreamTag);
      streams_.emplace(h, stream_state{});
      *out = stream_handle{h};
      return status::ok;
    } catch (...) {
      return status::out_of_memory;
    }
  }

  bool destroy_stream(stream_handle s) noexcept override
  {
    // Its work already took effect at enqueue and keeps its times (events recorded on it
    // stay valid), so destroying a stream never changes the clock.
    if (s.is_default()) {
      return false;
    }
    std::lock_guard lock(mtx_);
    return streams_.erase(s.value) != 0;
  }

  status synchronize_stream(stream_handle s) noexcept override
  {
    tick target = 0;
    {
      std::lock_guard lock(mtx_);
      auto const it = streams_.find(s.value);
      if (it == streams_.end()) {
        return status::invalid_value;
      }
      target = it->second.tail;
    }
    advance_to(target);
    return status::ok;
  }

  status create_event(event_handle* out) noexcept override
  {
    std::lock_guard lock(mtx_);
    try {
      std::uintptr_t const h = make_handle(++next_event_, kEventTag);
      events_.emplace(h, tick{0});
      *out = event_handle{h};
      return status::ok;
    } catch (...) {
      return status::out_of_memory;
    }
  }

  bool destroy_event(event_handle e) noexcept override
  {
    std::lock_guard lock(mtx_);
    return events_.erase(e.value) != 0;
  }

  status record_event(event_handle e, stream_handle s) noexcept override
  {
    std::lock_guard lock(mtx_);
    auto const st = streams_.find(s.value);
    auto const ev = events_.find(e.value);
    if (st == streams_.end() || ev == events_.end()) {
      return status::invalid_value;
    }
    ev->second = st->second.tail;
    return status::ok;
  }

  status query_event(event_handle e) noexcept override
  {
    std::lock_guard lock(mtx_);
    auto const ev = events_.find(e.value);
    if (ev == events_.end()) {
      return status::invalid_value;
    }
    return ev->second <= now_.load(std::memory_order_relaxed) ? status::ok : status::not_ready;
  }

  status synchronize_event(event_handle e) noexcept override
  {
    tick target = 0;
    {
      std::lock_guard lock(mtx_);
      auto const ev = events_.find(e.value);
      if (ev == events_.end()) {
        return status::invalid_value;
      }
      target = ev->second;
    }
    advance_to(target);
    return status::ok;
  }

  status stream_wait_event(stream_handle s, event_handle e) noexcept override
  {
    std::lock_guard lock(mtx_);
    auto const st = streams_.find(s.value);
    auto const ev = events_.find(e.value);
    if (st == streams_.end() || ev == events_.end()) {
      return status::invalid_value;
    }
    st->second.tail = std::max(st->second.tail, ev->second);
    return status::ok;
  }

  status enqueue_transfer(stream_handle s, sim_link link, std::size_t bytes, sim_effect effect) noexcept override
  {
    std::lock_guard lock(mtx_);
    auto const st = streams_.find(s.value);
    if (st == streams_.end()) {
      return status::invalid_value;
    }
    auto const l = static_cast<std::size_t>(link);
    tick const start = std::max({now_.load(std::memory_order_relaxed), st->second.tail, link_free_[l]});
    tick const cost = links_.get(link).transfer_ns(bytes);
    tick const end = start + cost;
    st->second.tail = end;
    link_free_[l] = end;
    stats_[l].copies += 1;
    stats_[l].bytes += bytes;
    stats_[l].busy_ns += cost;
    effect.apply();  // eager: data effects follow enqueue order
    return status::ok;
  }

  status enqueue_compute(stream_handle s, tick duration) noexcept override
  {
    std::lock_guard lock(mtx_);
    auto const st = streams_.find(s.value);
    if (st == streams_.end()) {
      return status::invalid_value;
    }
    st->second.tail = std::max(now_.load(std::memory_order_relaxed), st->second.tail) + duration;
    return status::ok;
  }

  status enqueue_host_func(stream_handle s, host_fn fn, void* user_data) noexcept override
  {
    // Eager like every other operation: the function observes data effects in enqueue
    // order. It runs on the calling thread with no lock held.
    {
      std::lock_guard lock(mtx_);
      if (!streams_.contains(s.value)) {
        return status::invalid_value;
      }
    }
    fn(user_data);
    return status::ok;
  }

  tick now() const noexcept override { return now_.load(std::memory_order_acquire); }

  sim_link_stats link_stats(sim_link link) const noexcept override
  {
    std::lock_guard lock(mtx_);
    return stats_[static_cast<std::size_t>(link)];
  }

  void shutdown() noexcept override {}  // nothing runs later than its enqueue

  // ---- virtual_timeline_ops ----
  void advance_to(tick t) noexcept override
  {
    std::lock_guard lock(mtx_);
    if (t > now_.load(std::memory_order_relaxed)) {
      now_.store(t, std::memory_order_release);
    }
  }

  std::optional<tick> event_time(event_handle e) const noexcept override
  {
    std::lock_guard lock(mtx_);
    auto const ev = events_.find(e.value);
    if (ev == events_.end()) {
      return std::nullopt;
    }
    return ev->second;
  }

  std::optional<tick> stream_tail(stream_handle s) const noexcept override
  {
    std::lock_guard lock(mtx_);
    auto const st = streams_.find(s.value);
    if (st == streams_.end()) {
      return std::nullopt;
    }
    return st->second.tail;
  }

 private:
  struct stream_state {
    tick tail{0};  // completion time of the last work queued (tail >= every waited event)
  };
  sim_links const links_;
  mutable std::mutex mtx_;  // guards everything below except now_'s lock-free reads
  std::atomic<tick> now_{0};
  std::unordered_map<std::uintptr_t, stream_state> streams_;
  std::unordered_map<std::uintptr_t, tick> events_;  // event -> time of its last record (0: never)
  std::array<tick, sim_link_count> link_free_{};
  std::array<sim_link_stats, sim_link_count> stats_{};
  std::uint64_t next_stream_{0};
  std::uint64_t next_event_{0};
};

}  // namespace

std::unique_ptr<sim_timeline> make_virtual_timeline(sim_links const& links)
{
  return std::make_unique<virtual_timeline>(links);
}

}  // namespace tierpool::detail

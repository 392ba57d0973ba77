/**
 * @file device_timer.hpp
 * @brief Device times measured after the fact with timed events, for a backend that does not
 *        know them ahead (CUDA): Note [Device times measured with events], device_timer.cpp.
 */
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include <tierpool/backend.hpp>

namespace tierpool::detail {

class device_timer {
 public:
  explicit device_timer(backend& be) noexcept : be_(&be), usable_(be.caps().timed_events) {}
  ~device_timer();
  device_timer(device_timer const&) = delete;
  device_timer& operator=(device_timer const&) = delete;

  /// Whether the backend times events (backend_caps::timed_events), until it once says it
  /// cannot (event_elapsed not_supported: then nothing more is measured).
  [[nodiscard]] bool usable() const noexcept { return usable_.load(std::memory_order_relaxed); }
  /// An acquire's start on `s`: an event recorded after the program's work so far (a null
  /// handle when none could be).
  [[nodiscard]] event_handle mark(stream_handle s) noexcept;
  /// An event from mark() whose access was never told (its acquire threw): back to the free list.
  void drop(event_handle e) noexcept;
  /// The access at `position` was told on `s`, after its acquire queued its own waits. The
  /// compute between the stream's access before and this one is timed from the event recorded
  /// then to `began` (from mark()); the h2d streams get an event with the bytes queued on them
  /// so far (`h2d_queued`).
  void told(stream_handle s, event_handle began, std::uint64_t position, std::span<stream_handle const> h2d,
            std::uint64_t h2d_queued) noexcept;
  /// The accesses whose events have completed, oldest first: fn(position, compute ns).
  void resolve(std::function<void(std::uint64_t, tick)> const& fn) noexcept;
  /// Bytes queued on the h2d streams that are known to have been copied (resolve()).
  [[nodiscard]] std::uint64_t copied_in() const noexcept { return copied_in_.load(std::memory_order_relaxed); }
  /// Accesses whose compute was measured.
  [[nodiscard]] std::uint64_t measured() const noexcept { return measured_.load(std::memory_order_relaxed); }

 private:
  struct pair {
    event_handle from;  // the stream's point when its access before was told
    event_handle to;    // its point when this access's acquire began
    std::uint64_t position{0};
  };
  struct h2d_mark {
    std::vector<event_handle> events;  // one per h2d stream
    std::uint64_t bytes{0};            // queued on them when recorded
  };
  [[nodiscard]] event_handle take_locked() noexcept;
  void give_locked(event_handle e) noexcept;
  [[nodiscard]] event_handle record_locked(stream_handle s) noexcept;

  static constexpr std::size_t kMaxPending = 4096;  // events not completed yet (a host that never waits)
  backend* be_;
  std::mutex mtx_;  // a leaf: the free events and the queues
  std::atomic<bool> usable_;
  std::vector<event_handle> free_;
  std::vector<std::pair<std::uint64_t, event_handle>> last_told_;  // per stream
  std::deque<pair> pending_;
  std::deque<h2d_mark> marks_;
  std::atomic<std::uint64_t> copied_in_{0};  // written under mtx_, read without it
  std::atomic<std::uint64_t> measured_{0};
};

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file sim_timeline.hpp
 * @brief Private: the stream/event engine of the sim backend, one per clock mode
 *        (wall_timeline: worker threads; virtual_timeline: discrete events).
 *
 * The facade (sim_backend.cpp) validates arguments, checks faults, then calls a timeline.
 * Timelines check handles themselves (a handle may vanish between the facade's check and
 * the call) and report unknown ones as invalid_value.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/error.hpp>
#include <tierpool/types.hpp>

namespace tierpool::detail {

/// Data effect of a copy: memcpy(dst, src, bytes) when dst is non-null (real memory only).
struct sim_effect {
  void* dst{nullptr};
  void const* src{nullptr};
  std::size_t bytes{0};

  void apply() const noexcept
  {
    if (dst != nullptr && bytes != 0) {
      std::memcpy(dst, src, bytes);
    }
  }
};

// Handles carry a type tag in the low byte so that an event passed as a stream (or a
// stale small integer) is rejected rather than aliased, and the simulated device's
// ordinal in the next byte, so that a handle of another simulated device is never one of
// ours and can be named as such (sim_options::device_ordinal). The number above them is
// never reused by one timeline.
inline constexpr std::uintptr_t kStreamTag = 0x51;
inline constexpr std::uintptr_t kEventTag = 0xE7;
inline constexpr unsigned kHandleNumberShift = 16;  ///< bits 0-7 tag, 8-15 device, 16- number
inline constexpr std::uintptr_t make_handle(std::uint64_t n, int device, std::uintptr_t tag) noexcept
{
  return (static_cast<std::uintptr_t>(n) << kHandleNumberShift) |
         ((static_cast<std::uintptr_t>(device) & 0xFFU) << 8U) | tag;
}
/// The number a handle carries (make_handle's n).
inline constexpr std::uint64_t handle_number(std::uintptr_t h) noexcept { return h >> kHandleNumberShift; }
/// The simulated device a handle belongs to.
inline constexpr int handle_device(std::uintptr_t h) noexcept { return static_cast<int>((h >> 8U) & 0xFFU); }
/// The type tag of a handle (kStreamTag, kEventTag; anything else: not a sim handle).
inline constexpr std::uintptr_t handle_tag(std::uintptr_t h) noexcept { return h & 0xFFU; }

/// Interface shared by the two clock modes. All members thread-safe and noexcept.
class sim_timeline {
 public:
  sim_timeline() = default;
  sim_timeline(sim_timeline const&) = delete;
  sim_timeline& operator=(sim_timeline const&) = delete;
  virtual ~sim_timeline() = default;

  [[nodiscard]] virtual bool has_stream(stream_handle s) const noexcept = 0;
  [[nodiscard]] virtual bool has_event(event_handle e) const noexcept = 0;
  [[nodiscard]] virtual status create_stream(stream_handle* out) noexcept = 0;
  /// false when `s` is unknown or the default stream (which is never destroyed).
  virtual bool destroy_stream(stream_handle s) noexcept = 0;
  [[nodiscard]] virtual status synchronize_stream(stream_handle s) noexcept = 0;
  [[nodiscard]] virtual status create_event(event_handle* out) noexcept = 0;
  /// false when `e` is unknown.
  virtual bool destroy_event(event_handle e) noexcept = 0;
  [[nodiscard]] virtual status record_event(event_handle e, stream_handle s) noexcept = 0;
  [[nodiscard]] virtual status query_event(event_handle e) noexcept = 0;
  [[nodiscard]] virtual status synchronize_event(event_handle e) noexcept = 0;
  [[nodiscard]] virtual status stream_wait_event(stream_handle s, event_handle e) noexcept = 0;
  /// Queue a transfer of `bytes` on `link` whose data effect is `effect`.
  [[nodiscard]] virtual status enqueue_transfer(stream_handle s, sim_link link, std::size_t bytes,
                                                sim_effect effect) noexcept = 0;
  [[nodiscard]] virtual status enqueue_compute(stream_handle s, tick duration) noexcept = 0;
  [[nodiscard]] virtual status enqueue_host_func(stream_handle s, host_fn fn, void* user_data) noexcept = 0;
  [[nodiscard]] virtual tick now() const noexcept = 0;
  [[nodiscard]] virtual sim_link_stats link_stats(sim_link link) const noexcept = 0;
  /// Drain every stream and run every pending host function (called by ~sim_backend).
  virtual void shutdown() noexcept = 0;
};

/// What a timeline is built with besides its links.
struct timeline_options {
  int device{0};                          ///< sim_options::device_ordinal (in every handle)
  bool serialize_host_functions{false};   ///< sim_options::serialize_host_functions
  bool inline_idle_copies{true};          ///< sim_options::inline_idle_copies (wall clock only)
  bool record_spans{false};               ///< sim_options::record_spans (virtual clock only)
};

/// Worker-thread engine (sim_clock_mode::wall). May throw std::system_error (a worker thread).
[[nodiscard]] std::unique_ptr<sim_timeline> make_wall_timeline(sim_links const& links, timeline_options const& t = {});
/// Discrete-event engine (sim_clock_mode::virtual_clock).
[[nodiscard]] std::unique_ptr<sim_timeline> make_virtual_timeline(sim_links const& links,
                                                                  timeline_options const& t = {});

/// Virtual-clock extras, reached by sim_backend through a downcast.
class virtual_timeline_ops {
 public:
  virtual ~virtual_timeline_ops() = default;
  virtual void advance_to(tick t) noexcept = 0;
  [[nodiscard]] virtual std::optional<tick> event_time(event_handle e) const noexcept = 0;
  [[nodiscard]] virtual std::optional<tick> stream_tail(stream_handle s) const noexcept = 0;
  /// The copies and kernels so far, when timeline_options::record_spans. @throws std::bad_alloc
  [[nodiscard]] virtual std::vector<sim_span> spans() const = 0;
};

}  // namespace tierpool::detail

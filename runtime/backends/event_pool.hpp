// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file event_pool.hpp
 * @brief Internal: a bounded cache of backend events, so that the runtime does not pay
 *        `create_event` / `destroy_event` (cudaEventCreate is costly) per migration or free.
 *
 * Not installed API (runtime/ is private to the library and its tests).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/error.hpp>
#include <tierpool/export.hpp>
#include <tierpool/types.hpp>

#include "util/flat_u64_set.hpp"
#include "util/spin_mutex.hpp"

namespace tierpool::detail {

/// @brief Figures of an @ref event_pool at one moment.
struct event_pool_stats {
  std::uint64_t created{0};          ///< COUNT of successful backend create_event calls
  std::uint64_t reused{0};           ///< COUNT of acquires served from the cache
  std::uint64_t destroyed{0};        ///< COUNT of backend destroy_event calls
  std::uint64_t create_failures{0};  ///< COUNT of acquires that failed (backend or bookkeeping)
  std::size_t outstanding{0};        ///< events acquired and not yet released
  std::size_t cached{0};             ///< idle events ready for reuse (<= max_cached)
};

/**
 * @brief A recycling cache of events of one backend.
 *
 * `acquire` hands out an idle event (or creates one); `release` returns it to the cache,
 * or destroys it when the cache already holds `max_cached` events. A released event may
 * still have a pending record: that is harmless, the next holder re-records it (a record
 * replaces the previous one, as with cudaEventRecord).
 *
 * Thread safety: every member may be called concurrently (one internal mutex; backend
 * calls — create and destroy — are made outside it).
 *
 * Ownership: not copyable or movable. The pool tracks every event it handed out; the
 * destructor destroys the cached ones **and** those still outstanding (their holders
 * must not use them afterwards), so nothing leaks. The backend must outlive the pool.
 *
 * Invariant: `created == destroyed + outstanding + cached`.
 *
 * @code
 * tierpool::detail::event_pool events{backend};
 * tierpool::event_handle e{};
 * if (events.acquire(&e) == tierpool::status::ok) {
 *   (void)backend.record_event(e, stream);
 *   ...
 *   events.release(e);
 * }
 * @endcode
 */
class TIERPOOL_EXPORT event_pool {
 public:
  /// Idle events kept by default: enough for the copy streams' in-flight work; each costs
  /// a driver object (a few hundred bytes), so more only delays their reclamation.
  static constexpr std::size_t default_max_cached = 64;

  /**
   * @brief Build an empty pool over `be`.
   * @param be         The backend whose events are pooled; must outlive the pool.
   * @param max_cached Idle events kept at most (0: every release destroys).
   */
  explicit event_pool(backend& be, std::size_t max_cached = default_max_cached);
  /// @brief Destroys every event the pool knows: cached and outstanding.
  ~event_pool();
  event_pool(event_pool const&) = delete;
  event_pool& operator=(event_pool const&) = delete;

  /**
   * @brief Get an event: a cached one, or a new one from the backend.
   * @param out Receives the event on success; untouched otherwise.
   * @return ok; invalid_value if `out` is null; the backend's create_event status
   *         (e.g. injected_fault, device_error) on failure; out_of_memory when the
   *         bookkeeping cannot allocate. On failure no event is held or leaked.
   */
  [[nodiscard]] status acquire(event_handle* out) noexcept;

  /**
   * @brief Return an event obtained from acquire(). A null handle is a no-op.
   * @throws tierpool::logic_error if `e` is not outstanding in this pool (double release
   *         or a foreign event); the pool is left unchanged.
   */
  void release(event_handle e);

  /// @brief As release(), but reports misuse by returning false (no change). Never throws.
  bool try_release(event_handle e) noexcept;

  /// @brief True when `e` was acquired from this pool and not yet released.
  [[nodiscard]] bool owns(event_handle e) const noexcept;

  /// @brief All figures at once.
  [[nodiscard]] event_pool_stats stats() const noexcept;

  /// @brief The backend whose events are pooled.
  [[nodiscard]] backend& get_backend() const noexcept { return *backend_; }

  /// @brief Idle events kept at most.
  [[nodiscard]] std::size_t max_cached() const noexcept { return max_cached_; }

 private:
  backend* backend_;
  std::size_t max_cached_;
  mutable spin_mutex mtx_;  // guards the cache, the set and the counters (short sections only)
  std::vector<event_handle> cache_;                 // idle events; size() <= max_cached_
  flat_u64_set outstanding_;  // handed out, not yet released (handle values; never 0 nor ~0)
  std::uint64_t created_{0};
  std::uint64_t reused_{0};
  std::uint64_t destroyed_{0};
  std::uint64_t create_failures_{0};
};

}  // namespace tierpool::detail

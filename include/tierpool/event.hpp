// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file event.hpp
 * @brief Events of a pool (tierpool::event, made by pool::create_event()): mark a point in
 *        a stream, ask whether the work before it is done, wait for it on the host or make
 *        another stream wait for it. Exceptions instead of the backend's status codes.
 *
 * The same four calls as `torch.cuda.Event` (record, query, synchronize, wait) and CUDA's
 * cudaEventRecord / cudaEventQuery / cudaEventSynchronize / cudaStreamWaitEvent. The pool's
 * other stream calls (pool::enqueue_host, pool::order, pool::record_stream) are in pool.hpp;
 * the chapter: docs/chapters/streams.md.
 */
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include <tierpool/backend.hpp>
#include <tierpool/export.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

class pool;

namespace detail {
class pool_impl;

/// Internal: a callable queued by pool::enqueue_host, type-erased and move-only.
class host_work {
 public:
  host_work() = default;
  host_work(host_work const&) = delete;
  host_work& operator=(host_work const&) = delete;
  virtual ~host_work() = default;
  /// Call it (once).
  virtual void run() = 0;
};

/// Internal: host_work holding a callable of type F.
template <class F>
class host_work_of final : public host_work {
 public:
  template <class G>
  explicit host_work_of(G&& fn) : fn_(std::forward<G>(fn))
  {
  }
  void run() override { std::invoke(fn_); }

 private:
  F fn_;
};
}  // namespace detail

/**
 * @brief An event of a pool: a point in a stream's work. Move-only; destroying it destroys
 *        the backend event (a record still pending completes harmlessly).
 *
 * Made by pool::create_event(). record(s) captures the work queued on `s` so far; query()
 * says whether it has completed, synchronize() blocks the host until it has, and wait(s2)
 * makes work queued on `s2` afterwards wait for it without blocking the host. A
 * never-recorded event counts as complete. Every failure is an exception:
 * tierpool::logic_error for misuse (an empty event, a stream its pool does not know, its
 * pool closed or gone), tierpool::backend_error when the backend fails (its last_error()
 * in the message).
 *
 * Lifetime: the event keeps its pool's backend alive, not the pool. After the pool is
 * closed or destroyed, query() and synchronize() still work (on the records made before);
 * record() and wait() throw logic_error, since the streams they name were the pool's. No
 * use of an event is undefined behaviour, whatever the order of destruction.
 *
 * Thread safety: every member but the move operations and the destructor may be called
 * from many threads at once (each is one backend call); a query or wait racing with a
 * record sees one of the two records, as in CUDA.
 *
 * @code
 * tierpool::event produced = pool.create_event();
 * { auto out = pool.acquire(t, tierpool::access_mode::write_discard, a); launch(producer, out.data(), a); }
 * produced.record(a);   // after the producer
 * produced.wait(b);     // b waits for it; the host does not
 * { auto in = pool.acquire(t, tierpool::access_mode::read, b); launch(consumer, in.data(), b); }
 * @endcode
 */
class TIERPOOL_EXPORT event {
 public:
  /// @brief An empty event (valid() is false); every call but the move operations throws.
  event() noexcept = default;
  /// @brief Take over `other`'s event; `other` becomes empty.
  event(event&& other) noexcept;
  /// @brief Destroy this event's backend event, then take over `other`'s.
  event& operator=(event&& other) noexcept;
  event(event const&) = delete;
  event& operator=(event const&) = delete;
  ~event();

  /**
   * @brief Capture the work queued on `s` so far: the event completes when it has run. A
   *        later record replaces the earlier one (as cudaEventRecord).
   * @param s A stream of the event's pool: the default stream, or one from create_stream()
   *          or wrap_native_stream() not destroyed since.
   * @throws tierpool::logic_error for an empty event, a stream the pool does not know, or
   *         a pool that is closed or gone.
   * @throws tierpool::backend_error when the backend cannot record.
   */
  void record(stream_handle s = {});
  /**
   * @brief True when the work the last record captured has completed (or it was never
   *        recorded); never blocks.
   * @throws tierpool::logic_error for an empty event.
   * @throws tierpool::backend_error when the backend fails.
   */
  [[nodiscard]] bool query() const;
  /**
   * @brief Block the calling thread until the work the last record captured has completed
   *        (counted in pool_stats' host stall time while the pool lives).
   * @throws tierpool::logic_error for an empty event.
   * @throws tierpool::backend_error when the backend fails.
   */
  void synchronize() const;
  /**
   * @brief Make work queued on `s` after this call wait for the last record (no host
   *        wait). The same as pool::wait(s, *this).
   * @throws tierpool::logic_error / tierpool::backend_error as record().
   */
  void wait(stream_handle s) const;

  /// @brief True unless default-constructed or moved from.
  [[nodiscard]] bool valid() const noexcept { return backend_ != nullptr; }
  /// @brief valid().
  [[nodiscard]] explicit operator bool() const noexcept { return valid(); }
  /// @brief The backend's handle (a `cudaEvent_t` on CUDA), for the backend's own calls;
  ///        owned by this event: do not destroy it. Null when empty.
  [[nodiscard]] event_handle native_handle() const noexcept { return handle_; }

 private:
  friend class pool;
  friend class detail::pool_impl;
  event(std::weak_ptr<detail::pool_impl> owner, std::shared_ptr<tierpool::backend> be, event_handle h) noexcept;
  void reset() noexcept;
  void check(char const* what) const;

  std::weak_ptr<detail::pool_impl> pool_{};           ///< the pool that made it (not kept alive)
  std::shared_ptr<tierpool::backend> backend_{};      ///< kept alive: the event is the backend's
  event_handle handle_{};
};

}  // namespace tierpool

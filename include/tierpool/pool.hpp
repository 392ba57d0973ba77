// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file pool.hpp
 * @brief The tiered pool: tensors whose home can change, leases that make their bytes
 *        reachable on a stream, prefetch, demotion and eviction across tiers.
 *
 * The contract: docs/chapters/pools.md (tensors, leases), docs/chapters/tiers.md (placement
 * and the out-of-memory ladder), docs/chapters/streams.md (ordering) and
 * docs/chapters/thread_safety.md; the reasons: docs/notes/pool_design.md.
 */
#pragma once

#include <cstddef>
#include <memory>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/detail/record_ref.hpp>
#include <tierpool/error.hpp>
#include <tierpool/event.hpp>
#include <tierpool/export.hpp>
#include <tierpool/pool_options.hpp>
#include <tierpool/snapshot.hpp>
#include <tierpool/telemetry.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

class pool;

namespace detail {
class pool_impl;
struct tensor_record;
}  // namespace detail

/**
 * @brief An owning, move-only handle to a tensor of a pool. Destroying it frees the
 *        tensor (stream-ordered: its space returns once outstanding work completes).
 *
 * Thread safety: a handle is externally synchronized as an object (like VmaAllocation):
 * pool calls that take it by `const&` (acquire, acquire_host, prefetch, demote,
 * set_next_use) may use one handle from many threads at once, while moving it, destroying
 * it and pool::free need it to themselves. A moved-from or freed handle is empty: using it
 * throws tierpool::logic_error.
 */
class TIERPOOL_EXPORT tensor {
 public:
  /// @brief An empty handle (valid() is false).
  tensor() noexcept = default;
  /// @brief Take over `other`'s tensor; `other` becomes empty.
  tensor(tensor&& other) noexcept;
  /// @brief Free this handle's tensor (as the destructor does), then take over `other`'s.
  tensor& operator=(tensor&& other) noexcept;
  tensor(tensor const&) = delete;
  tensor& operator=(tensor const&) = delete;
  ~tensor();

  /// @brief The tensor's id in its pool.
  [[nodiscard]] tensor_id id() const noexcept { return id_; }
  /// @brief Size in bytes as requested.
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// @brief True unless moved from or freed.
  [[nodiscard]] bool valid() const noexcept { return impl_ != nullptr; }
  /// @brief valid().
  [[nodiscard]] explicit operator bool() const noexcept { return valid(); }

 private:
  friend class pool;
  friend class detail::pool_impl;
  tensor(std::shared_ptr<detail::pool_impl> impl, detail::record_ref rec, tensor_id id,
         std::size_t bytes) noexcept;
  void reset() noexcept;

  std::shared_ptr<detail::pool_impl> impl_{};
  detail::record_ref rec_{};  // the pool's record: no table lookup on the hit path
  tensor_id id_{};
  std::size_t bytes_{0};
};

/**
 * @brief A pin on a tensor that makes its bytes reachable at data(): in device-accessible
 *        memory for pool::acquire, host memory for pool::acquire_host.
 *
 * While a lease lives the tensor is neither moved nor evicted. Ending it (destructor or
 * release()) unpins; for a device lease the bytes are not moved or reused until work
 * already enqueued on the lease's stream has completed. Move-only.
 *
 * A lease that outlives its pool object is misuse that is caught, not undefined
 * behaviour: pool::close() throws tierpool::logic_error naming the live leases, and the
 * destructor (which cannot throw) keeps the pool's memory alive until the last lease ends
 * and says so (log_level::error, log.hpp).
 *
 * Thread safety: externally synchronized. Many leases on one tensor may live on different
 * threads at once, and a lease may be released on another thread than the one that took it.
 */
class TIERPOOL_EXPORT lease {
 public:
  /// @brief An empty lease (holds nothing).
  lease() noexcept = default;
  /// @brief Take over `other`'s lease; `other` becomes empty.
  lease(lease&& other) noexcept;
  /// @brief Release this lease (as the destructor does), then take over `other`'s.
  lease& operator=(lease&& other) noexcept;
  lease(lease const&) = delete;
  lease& operator=(lease const&) = delete;
  ~lease();

  /// @brief The bytes: device-accessible (acquire) or host (acquire_host). Null when empty.
  [[nodiscard]] void* data() const noexcept { return data_; }
  /// @brief Typed view of data().
  template <class T>
  [[nodiscard]] T* as() const noexcept { return static_cast<T*>(data_); }
  /// @brief Size in bytes.
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// @brief The access this lease was taken with.
  [[nodiscard]] access_mode access() const noexcept { return access_; }
  /// @brief The stream the lease is ordered on (default stream for host leases).
  [[nodiscard]] stream_handle stream() const noexcept { return stream_; }
  /// @brief The tensor's id.
  [[nodiscard]] tensor_id id() const noexcept { return id_; }
  /// @brief True while the lease holds a pin.
  [[nodiscard]] bool active() const noexcept { return impl_ != nullptr; }
  /// @brief End the lease now (idempotent).
  void release() noexcept;

 private:
  friend class detail::pool_impl;
  // Raw: a shared refcount would be written by every lease (the pool's by every thread's).
  // The tensor handle keeps pool and record alive; once every handle of the tensor is gone
  // the record keeps both alive until the last release (see pool_impl::free_handle).
  detail::pool_impl* impl_{nullptr};
  detail::tensor_record* rec_{nullptr};
  void* data_{nullptr};
  std::size_t bytes_{0};
  tensor_id id_{};
  stream_handle stream_{};
  access_mode access_{access_mode::read};
  bool host_{false};
  std::uint32_t tier_{0};
};

/// @brief What a low-memory callback is told (pool::add_low_memory_callback).
struct low_memory_event {
  tier_id tier{};                 ///< the tier that lacks room
  std::string_view tier_name{};   ///< its name
  std::size_t bytes_needed{0};    ///< the request that cannot be placed
  std::size_t capacity_bytes{0};  ///< the tier's capacity
  std::size_t pinned_bytes{0};    ///< bytes of the tier's tensors with live leases
};
/// @brief A low-memory callback.
using low_memory_callback = std::function<void(low_memory_event const&)>;

/**
 * @brief One tensor of a pool::acquire_all call, and how it is accessed.
 */
struct acquire_item {
  tensor const* t{nullptr};                ///< the tensor (not owned; null: a logic_error)
  access_mode access{access_mode::read};  ///< as pool::acquire's
};

/**
 * @brief The tiered memory pool: tiers from fastest (the device) to slowest, each with an
 *        arena and an eviction policy, a migration engine with copy streams, and the
 *        tensors it places among them.
 *
 * allocate() makes a tensor; acquire() / acquire_host() lease its bytes where the caller
 * needs them, copying them up and evicting others as the tier's policy proposes;
 * prefetch() and demote() move them ahead of time. Out of memory follows a ladder (free
 * space, growing the tier, eviction, waiting for vacated blocks, low-memory callbacks;
 * docs/chapters/tiers.md) and ends in a typed tierpool::out_of_memory that says why.
 *
 * Thread safety: every member function may be called from many threads at once
 * (internally synchronized), except the move operations and the destructor. close() may
 * race with other calls: each either completes before it or throws tierpool::logic_error
 * (the pool is closed). Separate pools are independent; there is no global state. See
 * docs/chapters/thread_safety.md.
 *
 * Stream semantics: acquire() and prefetch() never block the host on a copy; the user's
 * stream waits on the copy's event. prefetch() never blocks at all; acquire() may wait on
 * the host for space that eviction has freed but whose last use is still running.
 * Eviction waits (stream-wise) for a victim's last use before copying it out, and space is
 * reused only after the copy that vacated it is done. Ordering two of the program's
 * streams on one tensor is the program's job: order(), events (create_event()) and
 * record_stream() do it (docs/chapters/streams.md).
 *
 * @code
 * tierpool::pool p;                                  // default tiers, LRU, auto backend
 * auto s = p.create_stream();
 * tierpool::tensor w = p.allocate(64_MiB, {.name = "w0"});
 * { auto h = p.acquire_host(w, tierpool::access_mode::write_discard); fill(h.as<float>()); }
 * { auto l = p.acquire(w, tierpool::access_mode::read, s); launch(kernel, l.data(), s); }
 * p.prefetch(w);                                      // bring it back before the next use
 * @endcode
 */
class TIERPOOL_EXPORT pool {
 public:
  /**
   * @brief Build a pool: select the backend, build the tiers and their policies.
   * @throws tierpool::logic_error for invalid options or an unknown policy name.
   * @throws tierpool::backend_error when the backend cannot be built or a tier cannot
   *         reserve its initial memory.
   */
  explicit pool(pool_options options = {});
  ~pool();
  pool(pool const&) = delete;
  pool& operator=(pool const&) = delete;
  /// @brief Take over another pool (not while any thread uses either).
  pool(pool&&) noexcept;
  /// @brief Close this pool (see close()), then take over `other`. Not while any thread uses either.
  pool& operator=(pool&&) noexcept;

  /**
   * @brief Create a tensor of `bytes` bytes (contents undefined), placed in the preferred
   *        tier (evicting there if needed), else the fastest tier with room without
   *        evicting, else the lowest tier that can hold it (evicting there).
   *        See docs/chapters/tiers.md.
   * @throws tierpool::logic_error if bytes == 0 or the preferred tier is unknown.
   * @throws tierpool::out_of_memory if no tier can hold it (the message is a diagnosis).
   */
  [[nodiscard]] tensor allocate(std::size_t bytes, tensor_options options = {});

  /**
   * @brief Make `t`'s bytes reachable in device-accessible memory for work on `stream`.
   *
   * Copies the tensor in if needed (evicting others from the device tier), and makes
   * `stream` wait on that copy; the host does not wait. A write access marks lower copies
   * stale.
   *
   * @throws tierpool::logic_error for an empty/foreign/freed tensor, a closed pool, a pool
   *         without a device-accessible tier, or a stream the pool does not know (made
   *         neither by create_stream() nor wrap_native_stream(), not the default stream,
   *         or destroyed).
   * @throws tierpool::out_of_memory if the device tier cannot make room (all pinned, ...).
   *         With a prefetch predictor (pool_options::prefetch) the access still counts as
   *         a step of the program's schedule: it is told before this thread's next
   *         acquire, allocate or free on the pool, unless that is an acquire of the same
   *         tensor that succeeds (a retry: told once). The program may go on another way
   *         (acquire_host) or retry.
   * @throws tierpool::backend_error if a copy fails; the tensor's bytes are unchanged.
   */
  [[nodiscard]] lease acquire(tensor const& t, access_mode access, stream_handle stream = {});

  /**
   * @brief Lease several tensors for one piece of work on `stream` (a kernel's operands):
   *        all of them, or none.
   *
   * The leases come back in the items' order, but are taken largest tensor first (ties in
   * the items' order): a small tensor placed first can sit in the middle of the room a
   * large one needs, and once leased it cannot move, so the large one fails for
   * fragmentation although the tier had room for all. When one acquire throws, the
   * leases already taken end (in the reverse order) and the exception propagates; the
   * tensors' bytes are as before, except a write_discard item's, which the caller has
   * declared dead. The same tensor may appear twice, as two acquire calls would lease it.
   * Each lease is an acquire() (traced and told to the prefetcher as one).
   *
   * @throws tierpool::logic_error for a null item (nothing leased), and as acquire().
   * @throws tierpool::out_of_memory, tierpool::backend_error as acquire().
   */
  [[nodiscard]] std::vector<lease> acquire_all(std::span<acquire_item const> items, stream_handle stream = {});

  /**
   * @brief Make `t`'s bytes reachable in host memory, synchronously (for filling and checking).
   * @throws as acquire().
   */
  [[nodiscard]] lease acquire_host(tensor const& t, access_mode access);

  /**
   * @brief Queue a copy of `t` into `to` (default: the fastest tier) and return at once;
   *        never blocks the host. A no-op when resident, in flight or already queued there.
   *        A later acquire only waits (stream-wise) for this copy. Room is made without
   *        waiting (completed frees, growing, one stream-ordered eviction round); when room
   *        can only come from frees still in flight the request waits in a small queue
   *        (tensor priority, then request order), served by later pool calls and dropped
   *        when the tensor is freed or resident by then (pool_stats::prefetch_queued,
   *        prefetch_dropped). A hint: no room or a failed copy does nothing (no exception).
   * @throws tierpool::logic_error for an empty/foreign tensor or unknown tier.
   */
  void prefetch(tensor const& t, tier_id to = tier_id{0});

  /**
   * @brief Move `t` down to tier `to`, writing it back if its newest bytes are above.
   *        Copies above `to` are dropped; copies below stay.
   * @throws tierpool::logic_error if `t` is pinned (has a live lease) or `to` is unknown.
   * @throws tierpool::out_of_memory / tierpool::backend_error as acquire() when the copy
   *         into `to` cannot be made (the tensor is unchanged then).
   */
  void demote(tensor const& t, tier_id to);

  /**
   * @brief Declare `t`'s bytes dead: the program will not read them again before it writes
   *        every byte anew (a buffer reused each step, a paged cache block given back to its
   *        free list). The pool drops its copies when it evicts them, never writing them
   *        back, so no transfer carries dead bytes.
   *
   * The tensor stays allocated. Until a lease with access_mode::write_discard gives it new
   *        contents, a lease that reads it (read, read_write; acquire or acquire_host) is a
   *        logic_error, whether or not a copy is still resident, and a prefetch of it does
   *        nothing. Discarding twice is the same as once. Recipes end as at a
   *        write_discard lease: those that read `t` (a dependent that was dropped is
   *        rebuilt first), then `t`'s own, without rebuilding `t`. See
   *        docs/chapters/pools.md, "Discarding contents".
   * @throws tierpool::logic_error for an empty/foreign/freed tensor or a tensor with a live
   *         lease (nothing changes); as acquire_host when a dependent's rebuild fails.
   */
  void discard(tensor const& t);

  /**
   * @brief Tell the pool that device work of `duration_ns` was queued on `s` outside it (a
   *        kernel it does not see), so that a recorded trace carries the program's compute.
   *
   * The recording (pool_options::trace_path, `TIERPOOL_TRACE`) gets a `compute` event on
   * `s`: a replay of the trace then times the run (docs/chapters/traces.md, "Recording a
   * run"). On the simulated backend, which has no kernels of its own, `s` also runs for that
   * long (sim_backend::compute_async): a live run on the virtual clock is timed as its
   * replay. On CUDA the kernels are real, and only the recording changes. The duration is
   * the program's: a measurement, or a model (`tierpool.torch.roofline` estimates it from
   * each module's FLOPs and bytes). A duration of 0 does nothing.
   * Thread safety: safe concurrently with any other call.
   * @throws tierpool::logic_error for a stream not of this pool, or on a closed pool;
   *         tierpool::backend_error when the simulated stream refuses the work
   */
  void note_compute(stream_handle s, std::uint64_t duration_ns);

  /**
   * @brief Mark the start of a program phase (`"forward"`, `"iter 3"`) in the recording:
   *        a `phase` event, which replays use to split their figures (docs/chapters/replay.md, "Where
   *        the device time went") and the phase floor needs. Nothing when the
   *        pool does not record.
   * Thread safety: safe concurrently with any other call.
   * @throws tierpool::logic_error for an empty name, one over 1 MiB, or on a closed pool
   */
  void note_phase(std::string_view name);

  /**
   * @brief Give the eviction policies a forecast of `t`'s next use (Belady's MIN needs one;
   *        `tierpool replay` passes the trace's true next use before every access).
   *
   * The value is in any unit that grows with time (the replay uses the index of the next
   * access event); policies only compare forecasts. `no_next_use` means "never used
   * again"; `std::nullopt` withdraws the forecast. The policy of each tier sees it from the
   * tensor's next insert or access on (tensor_view::next_use), so call it before acquire().
   * Thread safety: safe concurrently with any other call; one atomic store.
   * @throws tierpool::logic_error for an empty or foreign tensor.
   */
  void set_next_use(tensor const& t, std::optional<tick> next_use);

  /**
   * @brief Free `t` now (stream-ordered); `t` becomes empty. Same as destroying the handle,
   *        except that a handle destroyed while leased frees the tensor at the last release.
   *        From a low-memory callback, freeing the tensor whose request called it frees it
   *        when that request (or the lease it returns) ends.
   * @throws tierpool::logic_error if `t` is empty (double free), foreign, or has live leases.
   */
  void free(tensor& t);

  /**
   * @brief Let the pool drop `t` instead of keeping its bytes, and rebuild it with
   *        `options.fn` from `options.inputs` on next use (activation checkpointing;
   *        docs/chapters/tiers.md, "Eviction actions").
   *
   * The recipe describes the bytes `t` holds now. When `t` leaves its last copy (an
   * eviction with nothing valid below), the pool drops it instead of writing it back if
   * a rebuild costs less than the write-back and the read back (recompute_options::
   * cost_seconds against the links' bandwidths, action_options), or if no lower tier has
   * room. The next acquire or acquire_host rebuilds it: a block where the lease is asked
   * for (host recipes: a host tier), the inputs leased for reading there, `fn` called,
   * then the lease. A lease on `t` that may write, or pool::clear_recompute, ends the
   * recipe; so does freeing an input or a lease on one that may write, after rebuilding
   * `t` if it was dropped. Prefetches of a dropped tensor are dropped (nothing to copy).
   * Replaces an earlier recipe of `t`.
   * @throws tierpool::logic_error for an empty or foreign tensor, no `fn`, more than 64
   *         inputs, an input that is `t`, not a live tensor of this pool, or recomputable
   *         itself, or a `t` that is an input of another recipe.
   * Thread safety: safe concurrently with any other call.
   */
  void set_recompute(tensor const& t, recompute_options options);
  /**
   * @brief End `t`'s recipe (rebuilding `t` first if it is dropped). No-op without one.
   * @throws as acquire_host (a rebuild), logic_error for an empty or foreign tensor.
   */
  void clear_recompute(tensor const& t);

  /**
   * @brief Register a low-memory callback: the step of the out-of-memory ladder after
   *        eviction and growing have failed, before out_of_memory is thrown.
   *
   * Each callback is called once per failing request (allocate, acquire, acquire_host,
   * demote), with what is missing; it may free, demote, prefetch or release any tensor (or
   * drop caches of its own), after which the request starts over once. It runs on the
   * requesting thread with no pool lock held, so it may use the requested tensor too and
   * cannot deadlock against other threads; destroying that tensor's last handle (or
   * freeing it) is allowed: the tensor is then freed once the request (or the lease it
   * returns) ends. Callbacks do not nest: requests made inside one skip this step. An
   * exception from a callback propagates out of the request (nothing changed).
   * Thread safety: safe concurrently with any other call; a callback may run on any thread
   * that uses the pool, concurrently with itself.
   * @return An id for remove_low_memory_callback.
   */
  std::uint64_t add_low_memory_callback(low_memory_callback callback);
  /// @brief Unregister a callback (unknown ids are ignored). Thread-safe.
  void remove_low_memory_callback(std::uint64_t id);

  /**
   * @brief Set (or, with 0, remove) a tenant's quota: the most bytes of live tensors it may
   *        hold. Tensors already live stay; only later allocations are refused.
   * Thread safety: safe concurrently with any other call.
   */
  void set_quota(std::uint32_t tenant, std::size_t bytes);
  /**
   * @brief Set (or, with 0, remove) a tenant's share of a tier: evictions there take from
   *        the tenants over their share first and pass over the tensors of those within it
   *        (tier_options::tenant_shares; docs/chapters/tiers.md, "Tenants and quotas").
   *        Copies already in the tier stay; later evictions follow the new share.
   * @throws tierpool::logic_error for an unknown tier
   * Thread safety: safe concurrently with any other call.
   */
  void set_tenant_share(std::uint32_t tenant, tier_id tier, std::size_t bytes);
  /**
   * @brief Set a tenant's standing against the others: its priority and whether its
   *        shares are hard (tenant_options; docs/chapters/tiers.md, "Tenants and quotas").
   *        Copies already placed stay; later placements and evictions follow it.
   * Thread safety: safe concurrently with any other call.
   */
  void set_tenant(std::uint32_t tenant, tenant_options const& options);

  /// @brief Create a stream owned by the pool.
  [[nodiscard]] stream_handle create_stream(int priority = 0);
  /**
   * @brief Use a stream the program made itself: a `cudaStream_t` on the CUDA backend (of
   *        the pool's device), on sim the value of a handle from `backend().create_stream()`.
   *        The returned handle works like one from create_stream(): acquire() orders the
   *        tensor's copy before work on it, a lease's end records its last use there.
   *        The caller keeps ownership: call destroy_stream() on the handle before destroying
   *        the native stream (the pool forgets it; it does not destroy it). Wrapping the same
   *        stream again returns the same handle.
   * Thread safety: safe concurrently with any other call.
   * @throws tierpool::logic_error for a null stream, one of the pool's own (a copy stream or
   *         one from create_stream()), or one the backend cannot use (not a live stream, a
   *         stream of another device); the message says which.
   */
  [[nodiscard]] stream_handle wrap_native_stream(void* native);
  /**
   * @brief Destroy a stream made by create_stream() (after its queued work), or stop using
   *        one from wrap_native_stream() (not destroyed: it is the caller's). Returns at
   *        once: the pool records a last event on `s` first, and no block used there is
   *        reused or copied out before the work queued on `s` by then has finished. Later
   *        calls naming `s` throw logic_error. Work the program queues on a wrapped stream
   *        after this call is not tracked: end the leases it uses first.
   * @throws tierpool::logic_error for any other stream.
   */
  void destroy_stream(stream_handle s);
  /// @brief Block until all work on `s` has completed.
  ///        Rethrows the first exception a host callable queued on `s` (enqueue_host) threw
  ///        since the last synchronize of `s`.
  void synchronize(stream_handle s);

  // -- events and host work --
  /**
   * @brief Make an event of this pool: record it on a stream, then query it, wait for it
   *        on the host, or make another stream wait for it (tierpool::event). Thread-safe.
   * @throws tierpool::logic_error for a closed pool.
   * @throws tierpool::backend_error when the backend cannot make an event.
   */
  [[nodiscard]] event create_event();
  /**
   * @brief Make work queued on `s` after this call wait for `e`'s last record, without
   *        blocking the host (cudaStreamWaitEvent; the same as `e.wait(s)`). Thread-safe.
   * @throws tierpool::logic_error for an empty event, an event of another pool, a stream
   *         the pool does not know, or a closed pool.
   * @throws tierpool::backend_error when the backend cannot make `s` wait.
   */
  void wait(stream_handle s, event const& e);
  /**
   * @brief Run `fn()` on the host in stream order: after the work queued on `s` before
   *        this call, before the work queued after it (cudaLaunchHostFunc with any callable).
   *
   * `fn` is moved (or copied) into the pool and destroyed after it ran, on the thread that
   * ran it (a backend's worker; on the sim's virtual clock, this thread during this call).
   * It must not call the pool or its backend (as with cudaLaunchHostFunc). An exception
   * it throws never reaches the backend: the pool keeps it, and the next synchronize(s)
   * rethrows it (the first, if several threw; the others are counted in a warning). One
   * that no synchronize(s) can report any more (destroy_stream(s) or the pool's end came
   * first) is logged at log_level::error (log.hpp). Later work on `s` runs either way.
   * Thread-safe.
   * @throws tierpool::logic_error for a stream the pool does not know or a closed pool
   *         (`fn` is not run).
   * @throws tierpool::backend_error when the backend cannot queue it (`fn` is not run).
   */
  template <class F>
  void enqueue_host(stream_handle s, F&& fn)
  {
    using callable = std::decay_t<F>;
    static_assert(std::is_invocable_v<callable&>, "pool::enqueue_host: fn must be callable with no arguments");
    enqueue_host_work(s, std::make_unique<detail::host_work_of<callable>>(std::forward<F>(fn)));
  }
  /**
   * @brief Order two of the program's streams on one tensor: work queued on `to` after
   *        this call waits for the work queued on `from` so far that used `t` (under its
   *        leases on `from`, live or ended, or record_stream(lease, from)), without
   *        blocking the host. Call it after queuing that work.
   *
   * `to` waits for the oldest mark the pool recorded on `from` after that use (Note
   * [Last-use marks]), else for a new one (all of `from`'s work so far): at most what an
   * event recorded on `from` now would cover. Nothing is enqueued when the pool knows the
   * use is complete or knows no use of `t` on `from`, and when `from == to`. Thread-safe.
   * See docs/chapters/streams.md.
   * @throws tierpool::logic_error for an empty, foreign or freed tensor, a stream the pool
   *         does not know, or a closed pool.
   */
  void order(tensor const& t, stream_handle from, stream_handle to);
  /**
   * @brief Tell the pool that work the program queues on `s` also uses `l`'s bytes
   *        (like `torch.Tensor.record_stream`): they are not moved, evicted or reused before
   *        the work queued on `s` by the time the tensor's last lease there ends has
   *        completed, as for the lease's own stream. Ordering `s` after other streams stays
   *        the program's (order(), events). A no-op for `s == l.stream()`. Thread-safe (the
   *        lease is externally synchronized as ever).
   * @throws tierpool::logic_error for an ended lease, a lease of another pool, a stream
   *         the pool does not know, or a closed pool.
   */
  void record_stream(lease const& l, stream_handle s);

 private:
  void enqueue_host_work(stream_handle s, std::unique_ptr<detail::host_work> work);

 public:

  /**
   * @brief Shut the pool down: wait for outstanding copies and free every tier.
   * @throws tierpool::logic_error if leases are still live (naming them); nothing is freed then.
   */
  void close();

  /// @brief Statistics now.
  [[nodiscard]] pool_stats stats() const;
  /// @brief A human-readable table of stats() (like torch.cuda.memory_summary).
  [[nodiscard]] std::string summary() const;
  /// @brief stats() as one JSON object.
  [[nodiscard]] std::string summary_json() const;

  // -- stats control and capacity --
  /**
   * @brief Start the peaks over (torch.cuda.reset_peak_memory_stats): every tier's
   *        used_bytes.peak and every tenant's peak_bytes become their current values.
   *        Totals and counters are not reset. Thread-safe.
   */
  void reset_peak_stats();
  /**
   * @brief Give every chunk that holds no block back to the backend (torch.cuda.empty_cache):
   *        after completed stream-ordered frees are reclaimed. Chunks with a live copy, or a
   *        free whose stream has not got there yet, stay. The tiers grow again on demand.
   *        Thread-safe; never blocks on a stream.
   * @return Bytes given back, over all tiers.
   */
  std::size_t trim();
  /**
   * @brief Change tier `tier`'s capacity at run time: grow its budget, or shrink it to give
   *        memory back (another allocator needs the device). See capacity_report.
   *
   * Shrinking waits for the tier's outstanding copies and stream-ordered frees (the host
   * blocks), and holds other pool calls back while it runs (they wait; none fails because
   * of it). It never loses a byte: a copy leaves only once another tier holds its newest
   * bytes. A leased copy, or a lower tier without room, stops it where it is (the report
   * says so; nothing is thrown for that).
   * @param tier  The tier.
   * @param bytes The new capacity; at least the tier's alignment.
   * @throws tierpool::logic_error for a tier out of range, bytes below the tier's
   *         alignment, a closed pool, or a call from inside a pool call (a low-memory callback).
   */
  capacity_report set_capacity(tier_id tier, std::size_t bytes);
  /**
   * @brief Defragment tier `tier` (default: every tier but storage ones) by moving copies
   *        within it, so that its free space coalesces: each copy goes to the lowest free
   *        block before it that holds it, until none can move. See compact_result and
   *        docs/chapters/tiers.md, "Compaction".
   *
   * Only copies nobody can see move: no pointer a live lease holds ever changes (leased
   * copies stay), nor does a copy still being filled or used by a stream. The bytes of
   * every moved tensor are the same afterwards; a copy whose move fails stays where it was.
   * Waits for the pool's copy streams and stream-ordered frees first (the host blocks) and
   * holds other pool calls back while it runs (they wait; none fails because of it).
   * The out-of-memory ladder compacts on its own when pool_options::compaction is set.
   * @param tier The tier, or std::nullopt for every tier.
   * @throws tierpool::logic_error for a tier out of range, a closed pool, or a call from
   *         inside a pool call (a low-memory callback); std::bad_alloc (the moves made
   *         stay, each tensor intact).
   */
  compact_result compact(std::optional<tier_id> tier = std::nullopt);
  /**
   * @brief Check the device's free memory once against pool_options::pressure's floor and,
   *        when it is below, shrink the first device tier by the shortfall (set_capacity).
   *        What the pressure thread does every interval. Thread-safe.
   * @return What the shrink did, or std::nullopt when no shrink was needed (no floor, no
   *         device tier, free memory above the floor, or the backend cannot tell).
   */
  std::optional<capacity_report> check_memory_pressure();
  /**
   * @brief Check every invariant of the pool (records, tiers, policies) at one consistent
   *        moment; logs each violation (log_level::error, log.hpp). @return true when all hold.
   *
   * Thread-safe, and safe while other threads use the pool: it waits until no operation is
   * running and holds new ones back until it is done (they wait, they never fail because
   * of it). Its cost is linear in the tensors. From a low-memory callback it works as
   * anywhere; from inside a nested pool call on the same thread it throws logic_error.
   */
  [[nodiscard]] bool validate() const;
  /**
   * @brief How many more tensors of `bytes` tier `tier` can take, now and after eviction,
   *        within `tenant`'s quota, and what limits it (fit_report): for sizing a batch
   *        ("how many more activations of this size stay on the device?"). Thread-safe; a
   *        snapshot (takes each record's lock in turn, then the tier's). Changes nothing.
   * @param bytes  Size of one tensor, > 0.
   * @param tier   The tier (default: the fastest).
   * @param tenant Whose quota bounds the answer (tensor_options::tenant).
   * @throws tierpool::logic_error for bytes == 0, a tier out of range, or a closed pool.
   */
  [[nodiscard]] fit_report fits(std::size_t bytes, tier_id tier = tier_id{0}, std::uint32_t tenant = 0) const;
  // -- residency and snapshots --
  /**
   * @brief Where `t` lives now: which tiers hold a copy (valid or stale), its home (the
   *        fastest valid copy), which copy is dirty, whether a copy is in flight or a
   *        prefetch queued, its live leases, its last use. See docs/chapters/monitoring.md.
   *
   * Cheap: one tensor lock (the one every acquire of `t` takes), no table walk, and one
   * event query per copy still being filled; allocates the small copies vector. A
   * snapshot: consistent for `t`, but other threads may move it right after. Changes
   * nothing. Thread-safe.
   * @throws tierpool::logic_error for an empty or foreign tensor, or a closed pool.
   */
  [[nodiscard]] tensor_residency residency(tensor const& t) const;
  /**
   * @brief Every live tensor (id, name, size, tenant, copies, state, last use) and every
   *        tier's blocks (free, used by which tensor, pending, released; chunk and offsets)
   *        with the tier's figures, at one consistent moment. See docs/chapters/monitoring.md.
   *
   * Stops the world briefly, as validate(): it waits until no operation is running and
   * holds new ones back while it copies the records and the tiers' layouts (they wait,
   * never fail); takes no tensor lock. Cost: linear in tensors + blocks. Changes nothing.
   * Thread-safe; from inside a nested pool call on the same thread (a low-memory
   * callback's) it throws logic_error, as validate().
   * @throws tierpool::logic_error for a closed pool, or as said above.
   */
  [[nodiscard]] pool_snapshot snapshot() const;
  /// @brief to_json(snapshot()): the snapshot as one JSON object (schema version 1). @throws as snapshot().
  [[nodiscard]] std::string snapshot_json() const;
  /**
   * @brief Write stats() into the pool's shared-memory segment now (pool_options::publish),
   *        besides the periodic refresh: e.g. before a long phase, or in a program that
   *        refreshes only by hand (interval_ms = 0). A no-op when the pool does not publish
   *        (disabled, closed, or the segment could not be made). Thread-safe.
   */
  void publish();
  /**
   * @brief Name of the pool's stats segment under /dev/shm ("tierpool.PID.N"), for
   *        tierpool::read_published_pool(); empty when the pool does not publish (disabled,
   *        closed, or the segment could not be made: publishing_error() says why).
   */
  [[nodiscard]] std::string stats_segment() const;
  /// @brief Why the pool does not publish although asked to ("" when it does or was not asked).
  [[nodiscard]] std::string publishing_error() const;
  /**
   * @brief Why recording the trace (TIERPOOL_TRACE, pool_options::trace_path) stopped, e.g.
   *        "cannot write trace 'run.tpt': No space left on device"; "" while it works or
   *        when the pool records nothing. The first write error stops the recording: the
   *        pool logs one message (log_level::error, log.hpp; none with fallback_notice::silent) and drops the
   *        later events. close() writes the last buffered events, so a program that must
   *        know its trace is whole checks this after close(). Thread-safe.
   */
  [[nodiscard]] std::string tracing_error() const;

  /// @brief The backend in use.
  [[nodiscard]] tierpool::backend& backend() const noexcept;
  /// @brief Why this backend was chosen.
  [[nodiscard]] std::string const& backend_reason() const noexcept;
  /// @brief Number of tiers.
  [[nodiscard]] std::size_t tier_count() const noexcept;

 private:
  std::shared_ptr<detail::pool_impl> impl_;
};

}  // namespace tierpool

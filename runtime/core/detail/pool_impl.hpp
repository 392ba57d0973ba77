// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file pool_impl.hpp
 * @brief Internal: the coordinator behind tierpool::pool — the record table, the tensor
 *        operations, and the components it owns: the stream registry, the migration
 *        engine (tiers, copies, eviction, the ladder, prefetch), the tenant ledger, the
 *        low-memory callbacks, the counters, recording and publishing.
 *
 * Not installed API. docs/chapters/architecture.md walks one acquire() through the
 * components; docs/notes/pool_design.md says why they are as they are.
 *
 * Locks (one order, no exceptions; see Note [Lock order of the pool] in pool_impl.cpp):
 * tensor_record::mtx before tier_state's mutex (tier::mutex()); a thread never blocks on a
 * second tensor lock while holding one (victims are try-locked) and never holds two tier
 * locks. table_mtx_, the stream registry's locks and access_shard::busy are leaves.
 */
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/pool_options.hpp>
#include <tierpool/plan_predictor.hpp>
#include <tierpool/prefetch.hpp>
#include <tierpool/trace.hpp>
#include <tierpool/telemetry.hpp>

#include "core/detail/device_timer.hpp"
#include "core/detail/op_gate.hpp"
#include "core/low_memory.hpp"
#include "core/tenant_ledger.hpp"
#include "util/record_slab.hpp"
#include "util/spin_mutex.hpp"
#include "util/periodic_thread.hpp"
#include "util/thread_shard.hpp"
#include "telemetry/pool_counters.hpp"
#include "telemetry/pool_tracer.hpp"
#include "backends/event_pool.hpp"
#include "migration/migration_engine.hpp"
#include "streams/stream_registry.hpp"
#include "telemetry/stats_segment.hpp"
#include "tiers/tier.hpp"

namespace tierpool::detail {

/// @brief pool_impl::prediction::next_id when the next acquire's forecast does not depend
///        on which tensor it is (the planner still learning: least recently used order).
inline constexpr std::uint64_t kAnyNextTensor = ~std::uint64_t{0};

/// @brief The engine behind tierpool::pool. Every public member is internally synchronized.
class pool_impl final : public record_owner, public std::enable_shared_from_this<pool_impl> {
 public:
  explicit pool_impl(pool_options options);
  ~pool_impl();
  pool_impl(pool_impl const&) = delete;
  pool_impl& operator=(pool_impl const&) = delete;

  tensor allocate(std::size_t bytes, tensor_options options);
  lease acquire(tensor const& t, access_mode access, stream_handle stream);
  lease acquire_host(tensor const& t, access_mode access);
  void prefetch(tensor const& t, tier_id to);
  void set_next_use(tensor const& t, std::optional<tick> next_use);
  void set_quota(std::uint32_t tenant, std::size_t bytes);
  void set_tenant_share(std::uint32_t tenant, tier_id tier, std::size_t bytes);
  void set_tenant(std::uint32_t tenant, tenant_options const& options);
  // -- recompute (core/detail/recompute.cpp; Note [Recompute as an eviction action]) --
  void set_recompute(tensor const& t, recompute_options options);
  void clear_recompute(tensor const& t);
  [[nodiscard]] double recompute_cost(tensor_record const& rec) const noexcept override;
  /// TIERPOOL_TRACE / pool_options::trace_path: true when this pool records its calls.
  [[nodiscard]] bool tracing() const noexcept { return tracer_.active(); }
  /// Record an access by lease `l` (acquire or acquire_host). No-op unless tracing().
  void trace_access(lease const& l) noexcept;
  /// Record an event, stamping its time with the backend clock. Never throws: a failed
  /// write stops the recording (tracing_error()) with one log message, once.
  void trace_record(trace::event e) noexcept;
  /// Why recording stopped (trace::recorder::error()); empty when it works or no trace is recorded.
  [[nodiscard]] std::string tracing_error() const { return tracer_.error(); }
  /// True when a prefetch predictor other than `none` is set.
  [[nodiscard]] bool has_predictor() const noexcept { return prediction_.active; }
  /// This pool's number in the process, never reused (a thread-local note of a failed
  /// acquire names its pool by it: Note [A failed acquire is still a step of the schedule]).
  [[nodiscard]] std::uint64_t serial() const noexcept { return serial_; }
  /// Tell the predictor about a device acquire (no record lock held) and prefetch its plan.
  void predict_after(tensor_id id, std::size_t bytes, access_mode access, stream_handle stream);
  /// predict_after for a device acquire that failed earlier (Note [A failed acquire is still
  /// a step of the schedule], pool.cpp), if its tensor is still live and its stream too.
  void predict_failed(tensor_id id, std::size_t bytes, access_mode access, stream_handle stream);
  /// The `plan` forecast of the tensor's next use after this access, given before the
  /// acquire (Note [The forecast before the access], pool_impl.cpp). @return false while the
  /// planner sleeps (Note [A planner that finds no schedule sleeps]): nothing to time.
  bool forecast_before(tensor_record& rec);
  /// The calling thread's latest planned acquire: the pool, its stream and that stream's
  /// device time when it began (known device times only; taken by tell_predictor). Note
  /// [Copy-ins at the latest start].
  struct acquire_start {
    pool_impl const* pool{nullptr};
    std::uint64_t stream{0};
    tick at{0};
    event_handle ev{};  ///< measured device times: the event device_timer::mark recorded
  };
  /// Whether the backend knows device times ahead (the sim's virtual clock): asked once, on
  /// the first planned acquire, then remembered (a wall clock or CUDA never does: the hit
  /// path with the planner then makes no virtual call for it).
  [[nodiscard]] bool device_times_known(stream_handle s) const noexcept
  {
    int k = device_times_.load(std::memory_order_relaxed);
    if (k < 0) [[unlikely]] {
      k = backend_->known_stream_time(s).has_value() ? 1 : 0;
      device_times_.store(k, std::memory_order_relaxed);
    }
    return k == 1;
  }
  /// Whether the planner measures device times with events (timing on, device times not known
  /// ahead, a backend that times events): asked once, then remembered.
  [[nodiscard]] bool measured_times(stream_handle s) noexcept
  {
    int k = measured_times_.load(std::memory_order_relaxed);
    if (k < 0) [[unlikely]] {
      k = timer_ != nullptr && !device_times_known(s) && timer_->usable() ? 1 : 0;
      measured_times_.store(k, std::memory_order_relaxed);
    }
    return k == 1 && timer_->usable();
  }
  [[nodiscard]] static acquire_start& acquire_began() noexcept
  {
    thread_local acquire_start t;
    return t;
  }
  /// Tell the predictor of a device access (prediction_.mtx held); the view it was told.
  access_view tell_predictor(tensor_id id, std::size_t bytes, access_mode access, stream_handle stream);
  /// The transfer planner's step after a device acquire (Note [The planner's step], pool_impl.cpp).
  void plan_after(tensor_id id, std::size_t bytes, access_mode access, stream_handle stream);
  /// Whether this step issues planned prefetches, measuring each period (prediction_.mtx
  /// held; Note [Measuring whether prefetching pays], pool_impl.cpp).
  bool probe_prefetching(plan_predictor const& planner, stream_handle stream);
  /// A prefetched copy is used on `stream`: on a backend that knows device times ahead
  /// (virtual clock), count it on time or late, and by how much (pool_stats::prefetch_late_device).
  void note_prefetch_timing(copy_slot const& slot, stream_handle stream) noexcept;
  /// A tensor was allocated: the planner names it (plan_predictor::on_allocate).
  void plan_allocated(tensor_id id, std::size_t bytes);
  std::uint64_t add_low_memory_callback(low_memory_callback cb);
  void remove_low_memory_callback(std::uint64_t id);
  /// Run the low-memory callbacks for tier k (no pool lock held). @return true if any ran.
  bool run_low_memory_callbacks(std::uint32_t k, std::size_t bytes);
  /// Run `body(false)`; if it throws out_of_memory, run the low-memory callbacks (no lock
  /// held) and, if any ran, `body(true)` once more. `rec`/`handle`: the record of the
  /// request's tensor and its handle's pointer (null for allocate): the record is paused
  /// and kept alive meanwhile (Note [Low-memory callbacks run unlocked]).
  template <class Body>
  auto with_low_memory_step(tensor_record* rec, record_ref const* handle, Body&& body)
    -> decltype(body(false));
  void demote(tensor const& t, tier_id to);
  void discard(tensor const& t);
  void note_compute(stream_handle s, std::uint64_t duration_ns);
  void note_phase(std::string_view name);
  void free(tensor& t);
  void free_handle(tensor& t) noexcept;  ///< the handle's destructor
  /// The record is locked by this thread, its handle is gone (free_when_unpinned, drop_held
  /// set) and no lease or paused request holds it: free its slots (recording the free when
  /// tracing) and move the references that kept it and the pool alive into the
  /// out-parameters (the caller drops them after unlocking).
  void finish_dropped_locked(tensor_record& rec, std::shared_ptr<record_owner>& keep_alive,
                             record_ref& keep_self) noexcept override;
  [[nodiscard]] std::string name_of(tensor_id id) const override;
  void release(lease& l) noexcept;

  stream_handle create_stream(int priority);
  stream_handle wrap_native_stream(void* native);
  void destroy_stream(stream_handle s);
  void synchronize(stream_handle s);

  // -- events and host work (core/detail/pool_events.cpp) --
  /// pool::create_event. @throws logic_error (closed), backend_error
  [[nodiscard]] event create_event();
  /// The entry of `s` when the program may use it (the default stream, or one from
  /// create_stream / wrap_native_stream not destroyed), with the pool open; else
  /// logic_error starting with `what` ("event::record").
  stream_entry& user_stream(stream_handle s, char const* what) const;
  /// pool::enqueue_host (Note [Exceptions of host callables], runtime/streams/host_faults.cpp).
  void enqueue_host_work(stream_handle s, std::unique_ptr<host_work> work);
  /// pool::order: `to` waits for the uses of `t` on `from` (stream_registry::order_after_use).
  void order(tensor const& t, stream_handle from, stream_handle to);
  /// pool::record_stream: a use of the lease's copy on `s`, stamped at its last unpin (kStampAtUnpin).
  void record_stream(lease const& l, stream_handle s);
  /// Count `seconds` the host waited for an event (event::synchronize).
  void add_stall(double seconds) noexcept { streams_->add_stall(seconds); }

  void close();
  /// @brief Destructor path of pool: close() unless leases live; then one log message.
  void close_from_destructor() noexcept;

  [[nodiscard]] pool_stats stats() const;
  [[nodiscard]] std::string summary() const;
  [[nodiscard]] std::string summary_json() const;
  [[nodiscard]] bool validate() const;
  [[nodiscard]] fit_report fits(std::size_t bytes, tier_id tier, std::uint32_t tenant) const;  // pool_fit.cpp
  [[nodiscard]] std::vector<std::uint64_t> evictable_copies(std::uint32_t k, bool has_below) const;  // pool_fit.cpp
  bool pinned_copies(std::uint32_t k, std::vector<std::uint64_t>& out) const;                       // pool_fit.cpp
  // pool_loss.cpp: a lost device (Note [A lost device])
  /// A call of the pool threw `e`: when it says the device is lost, enter the lost state
  /// (once) and throw tierpool::device_lost instead; otherwise return. No lock held.
  void note_backend_error(backend_error const& e);
  /// Throw device_lost for a call made after the device was lost.
  [[noreturn]] void throw_lost(char const* what) const;
  /// True once the device was lost.
  [[nodiscard]] bool lost() const noexcept { return lost_.load(std::memory_order_acquire); }
  /// After pool::synchronize: wait for the write-through copies issued so far, so that they
  /// count as complete (and survive a lost device).
  void flush_write_throughs() noexcept;
  // pool_control.cpp: peaks, trim, capacity, device pressure
  void reset_peak_stats();
  std::size_t trim();
  capacity_report set_capacity(tier_id tier, std::size_t bytes);
  compact_result compact(std::optional<tier_id> tier);  // Note [Compaction], runtime/migration/compaction.cpp
  std::optional<capacity_report> check_memory_pressure();
  // -- residency and snapshots (pool_snapshot.cpp) --
  [[nodiscard]] tensor_residency residency(tensor const& t) const;
  [[nodiscard]] pool_snapshot snapshot() const;
  void publish();
  [[nodiscard]] std::string stats_segment() const;
  [[nodiscard]] std::string publishing_error() const;
  /// Every live record, in id order (the order in which several records may be locked;
  /// see Note [Lock order of the pool]).
  [[nodiscard]] std::vector<record_ref> records_by_id() const;

  [[nodiscard]] tierpool::backend& get_backend() const noexcept { return *backend_; }
  /// True when `s` is being captured into a graph (backend::is_capturing; false when the
  /// backend cannot tell). Note [Acquire during stream capture], tensor_ops.cpp.
  [[nodiscard]] bool capturing(stream_handle s) const noexcept;
  [[nodiscard]] std::string const& backend_reason() const noexcept { return backend_reason_; }
  [[nodiscard]] std::size_t tier_count() const noexcept { return engine_.tiers().size(); }

 private:
  // ---- lookup and checks ----
  tensor_record& checked_record(tensor const& t, char const* what) const;
  void check_open(char const* what) const;
  [[nodiscard]] std::size_t device_tier() const;
  /// Free the (locked) record's slots and settle its accounts: live figures, tenant, predictor.
  void free_slots_locked(tensor_record& rec) noexcept;
  lease make_lease(tensor_record& rec, std::uint32_t k, access_mode access, stream_handle s,
                   bool host);
  /// The locked part of acquire / acquire_host / demote; `retry`: the second attempt after
  /// low-memory callbacks (the acquire was counted as a hit or miss by the first).
  /// `counted`: set once the request is counted as a hit or a miss (a failure after that
  /// counts in acquire_failures).
  lease acquire_locked(tensor_record& rec, std::uint32_t d, stream_entry& se, stream_handle stream,
                       access_mode access, bool retry, bool& counted);
  lease acquire_host_locked(tensor_record& rec, access_mode access, bool retry, bool& counted);
  void demote_locked(tensor_record& rec, std::uint32_t k);
  // A logic_error naming `what` when rec is discarded and `access` would read it (Note
  // [Discarded contents], tensor_ops.cpp). Under the record's lock.
  static void refuse_discarded(tensor_record const& rec, access_mode access, char const* what);
  /// Write a write-through tensor's device copy in tier k back (Note [Write-through tensors]).
  void write_through_locked(tensor_record& rec, std::uint32_t k, stream_handle used_on) noexcept;
  /// A deferred free happens (the handle died earlier): free the slots, record the free.
  void free_dropped_locked(tensor_record& rec, record_ref& keep_self) noexcept;
  /// Refuse a lease that may write beyond tensor_record::write_pins' bound (record locked).
  void check_write_leases(tensor_record const& rec, access_mode access, char const* what) const;
  // Names of named tensors by id (Note [Names beside the records], tensor_ops.cpp).
  void add_name(std::uint64_t id, std::string const& name);  // @throws std::bad_alloc (unchanged)
  void drop_name(std::uint64_t id) noexcept;
  /// A handle died while its record is leased or paused: mark the record dropped and hold
  /// the pool for it (Note [A dropped record's references]). Record locked.
  void hold_dropped_locked(tensor_record& rec, std::shared_ptr<pool_impl> const& self) noexcept;

  // ---- recompute (recompute.cpp) ----
  struct recipe;
  /// Before a lease of `rec` (acquire: `stream`, device; acquire_host: host) with recipes
  /// live: rebuild it if it is dropped (unless the lease overwrites it), end its recipe if
  /// the lease may write, and rebuild and end the recipes it is an input of if it may.
  void prepare_recipes(tensor_record& rec, access_mode access, stream_handle stream, bool host);
  /// Run `rec`'s recipe (it is dropped). @throws what the recipe throws, or the leases
  void rebuild(tensor_record& rec, stream_handle stream, bool host);
  /// End the recipes `rec` is an input of (rebuilding the dropped ones first).
  void end_dependents(tensor_record& rec);
  /// End `rec`'s own recipe: out of the table, its inputs' counts down. `discard`: the
  /// caller overwrites every byte (a dropped tensor needs no rebuild then).
  [[nodiscard]] bool end_recipe(tensor_record& rec, bool discard);  // false: dropped, rebuild first (unless discard)
  /// free / free_handle of a tensor with recipes live (before its slots go). `noexcept`
  /// callers: a failing rebuild is logged and counted.
  void free_recipes(tensor_record& rec, bool may_throw);
  /// The lease of a record (acquire / acquire_host less the handle checks).
  lease acquire_record(tensor_record& rec, record_ref const* handle, access_mode access, stream_handle stream);
  lease acquire_host_record(tensor_record& rec, record_ref const* handle, access_mode access);
  /// acquire_record's and acquire_host_record's request loop around `locked(retry,
  /// counted)` (their *_locked part): recipes prepared, rebuilds, failures counted.
  template <class Locked>
  lease lease_with_recipes(tensor_record& rec, record_ref const* handle, access_mode access, stream_handle stream,
                           bool host, Locked&& locked);
  /// True while this thread runs a recipe (its leases are the rebuild's).
  [[nodiscard]] static bool rebuilding() noexcept;
  std::mutex recipe_edit_mtx_;  ///< serializes set/end of recipes (before any record lock)
  mutable std::mutex recipes_mtx_;  ///< leaf: guards recipes_ and input_uses_
  std::unordered_map<std::uint64_t, std::shared_ptr<recipe>> recipes_;  ///< by tensor id
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> dependents_;  ///< input id -> tensors whose recipe reads it
  std::atomic<std::uint64_t> recipes_live_{0};  ///< recipes_.size(): 0 skips all of it

  /// This pool in the process's registry of record owners (Note [A record names its pool in
  /// two bytes], records.cpp): the first member, so registered first and given back last.
  owner_registration const owner_reg_{this};
  std::uint16_t const owner_index_{owner_reg_.index()};
  std::uint64_t const serial_{[] {
    static std::atomic<std::uint64_t> pools{0};
    return pools.fetch_add(1, std::memory_order_relaxed) + 1;
  }()};
  mutable spin_mutex names_mtx_;                            // leaf (taken inside table_mtx_)
  std::unordered_map<std::uint64_t, std::string> names_;    // guarded by names_mtx_
  spin_mutex drop_mtx_;                        // leaf: guards the two below
  std::size_t dropped_{0};                     // records with drop_held set
  std::shared_ptr<record_owner> drop_keep_;    // this pool, while dropped_ != 0

  /// Busy retries of one request (Note [Busy victims are waited for, not failed on]).
  contention_options contention_{};
  /// Entered by every operation that changes the pool; validate() closes it (Note [The
  /// quiesce gate], op_gate.hpp).
  mutable op_gate gate_;

  // ---- state ----
  std::shared_ptr<tierpool::backend> backend_;  // destroyed last
  std::string backend_reason_;
  std::unique_ptr<event_pool> events_;
  std::unique_ptr<stream_registry> streams_;  ///< user and copy streams, marks, ordering (after events_)
  /// The tiers, the copies between them, eviction, placement, the prefetch queue.
  migration_engine engine_;

  // Records and their shared_ptr control blocks come from the process's slabs (Note
  // [Tensor records come from a slab]).
  /// A new default record, its memory and control block from the slabs. @throws std::bad_alloc
  [[nodiscard]] record_ref make_record();
  mutable spin_mutex table_mtx_;  // leaf (short sections: a lookup, insert or erase)
  record_table table_;
  std::uint64_t next_id_{1};



  std::atomic<bool> closed_{false};
  std::mutex close_mtx_;

  // Live figures (pool_options::publish, Note [The stats segment is a seqlock of plain
  // words]). publish_mtx_ guards the pointer; it is taken before any other lock of the
  // pool (publish() reads stats() under it) and the refresh thread never takes it.
  mutable std::mutex publish_mtx_;
  std::unique_ptr<telemetry::publisher> publisher_;
  std::string publish_error_;  ///< why publishing was asked for but is not happening
  /// Stop the refresh thread and remove the segment (close, destruction). Idempotent.
  void stop_publishing() noexcept;

  pool_counters counters_;  ///< the pool's figures (telemetry/pool_counters.hpp)
  tenant_ledger tenants_;       ///< quotas and live bytes per tenant
  low_memory_callbacks lowmem_;  ///< the ladder's last step (pool::add_low_memory_callback)
  /// The prefetch predictor (pool_options::prefetch) and its plan, behind one leaf lock
  /// (held only to ask the predictor).
  struct prediction {
    mutable std::mutex mtx;
    /// Set while mtx is held outside the acquires' planner work (stats(), a tensor's
    /// allocation or free: prediction::outside_hold): a planner step that finds mtx held
    /// waits then, and skips otherwise (Note [A planner step never waits for another
    /// thread's], pool_impl.cpp). Next to mtx: the line its holder writes anyway.
    mutable std::atomic<bool> outside{false};
    /// mtx held outside the acquires' planner work, marked so.
    class outside_hold {
     public:
      explicit outside_hold(prediction const& p) : lock_(p.mtx), flag_(p.outside) { flag_.store(true, std::memory_order_relaxed); }
      ~outside_hold() { flag_.store(false, std::memory_order_relaxed); }  // before the unlock (declared after it)
      outside_hold(outside_hold const&) = delete;
      outside_hold& operator=(outside_hold const&) = delete;

     private:
      std::lock_guard<std::mutex> lock_;
      std::atomic<bool>& flag_;
    };
    std::optional<any_prefetch_predictor> predictor;  ///< under mtx
    prefetch_plan plan;                               ///< under mtx
    std::uint64_t seq{0};                             ///< under mtx: accesses told so far
    bool active{false};                               ///< constant after construction: not "none"
    /// The transfer planner: the predictor when it is `plan` or `oracle` (else null).
    plan_predictor* planner{nullptr};
    std::shared_ptr<schedule_source> schedule;        ///< pool_options::schedule (oracle)
    std::uint64_t budget{0};                          ///< bytes prefetched and unused at most
    /// Note [A quiet window is walked once] (pool_impl.cpp): the planner's position before
    /// which steps skip the walks, and the device tier's departures (evictions, demotes,
    /// shrinks) and bytes held when the last full walk found nothing to do (relaxed: a
    /// heuristic, read under mtx).
    std::atomic<std::uint64_t> quiet_until{0};
    std::atomic<std::uint64_t> quiet_evictions{0};
    std::atomic<std::int64_t> quiet_used{0};
    std::atomic<std::uint64_t> quiet_seen{0};  ///< the position whose window's far end a step checked last
    /// Under mtx: tensors written lately and the access count then, to clean early (FIFO).
    std::vector<std::pair<tensor_id, std::uint64_t>> written;  // looked up in the table when due
    std::size_t written_head{0};                        ///< under mtx: first entry of `written` still pending
    std::uint64_t device_evictions{0};                  ///< under mtx: the device tier's evictions at the last step
    std::uint32_t quiet_steps{~std::uint32_t{0}};       ///< under mtx: steps since the device tier last evicted (capped; none yet: max)
    /// Under mtx: per stream, its device time when its latest acquire was told (known device
    /// times only): access_view::compute is the time queued on it since.
    std::vector<std::pair<std::uint64_t, tick>> stream_told;
    /// Written under mtx, read without it (forecast_before): the tensor the schedule has
    /// next (kAnyNextTensor: whatever it is; 0: none known) and its forecast next use after it.
    std::atomic<std::uint64_t> next_id{0};
    std::atomic<tick> next_value{0};
    /// Under mtx: whether prefetching pays, measured period by period (Note [Measuring
    /// whether prefetching pays], pool_impl.cpp).
    struct probe_state {
      std::uint64_t period{0};     ///< the period measured (0: none yet)
      bool measuring{false};       ///< a period is being timed from start_pos
      bool on{false};              ///< planned prefetches in the period being timed
      std::uint32_t trial{0};      ///< periods left of a trial of the other mode (0: none under way)
      std::uint64_t start_pos{0};  ///< the planner's position where it began
      tick start_time{0};          ///< the clock then (device time where known, else the host's)
      tick took_on{0};             ///< periods with prefetches: running mean, or the last trial's (0: none yet)
      tick took_off{0};            ///< periods without: the same
      std::uint64_t since{0};      ///< periods since the mode was chosen
      std::uint64_t next_trial{0}; ///< periods after which the other mode is tried again
      tick trial_sum{0};           ///< the trial's timed periods so far: their sum
      std::uint64_t trial_n{0};    ///< and count
    } probe;
    std::uint64_t periods_on{0};   ///< under mtx: periods timed with planned prefetches
    std::uint64_t periods_off{0};  ///< under mtx: periods timed without
    /// Note [A planner that finds no schedule sleeps] (pool_impl.cpp): device acquires left
    /// untold (0: awake; counted down without the lock), the sleep's length, and the
    /// least-recently-used order position where it began (read without the lock by
    /// forecast_before).
    std::atomic<std::uint64_t> asleep{0};
    std::atomic<std::uint64_t> sleep_len{0};
    std::atomic<std::uint64_t> sleep_base{0};
    std::uint64_t slept{0};       ///< under mtx: accesses slept through so far (the order positions skip them)
    std::uint64_t unplanned{0};   ///< under mtx: accesses told without a forecast or a candidate period since the last forecast or sleep
    std::uint64_t next_sleep{0};  ///< under mtx: the next sleep's length (0: the first)
  } prediction_;
  /// The least-recently-used order value of a tensor accessed at the planner's `position`
  /// while there is no forecast (Note [The planner's step]), counting slept accesses too.
  [[nodiscard]] tick unforecast_order(std::uint64_t position) const noexcept;
  /// The order value of the `at`-th access with no forecast: later accesses get smaller values.
  [[nodiscard]] static constexpr tick lru_order(std::uint64_t at) noexcept
  {
    return kNoForecast - 1 - std::min<tick>(at, kNoForecast / 2);
  }
  /// Note [A planner that finds no schedule sleeps]: a device acquire while asleep is not
  /// told; true when this one was (the count went down).
  bool sleep_step() noexcept;
  mutable std::atomic<int> device_times_{-1};  ///< device_times_known: -1 not asked yet, 0 no, 1 yes
  /// Device times measured with events where not known ahead (Note [Device times measured
  /// with events], device_timer.cpp): made with the planner when its timing is on.
  std::unique_ptr<device_timer> timer_;
  mutable std::atomic<int> measured_times_{-1};  ///< measured_times: -1 not asked yet, 0 no, 1 yes
  pool_tracer tracer_;  ///< trace recording (TIERPOOL_TRACE)
  std::string prefetch_spec_{"none"};  ///< the predictor with all its parameters (pool_stats::prefetch)
  // A lost device (pool_loss.cpp): lost_ is set once, after lost_ids_ and friends.
  std::atomic<bool> lost_{false};
  mutable std::mutex lost_mtx_;            ///< guards the lost_* below (a leaf)
  std::vector<tensor_id> lost_ids_;        ///< tensors whose bytes went with the device
  std::vector<std::string> lost_names_;    ///< their names
  std::string lost_cause_;                 ///< what the call that found it said
  std::mutex wt_mtx_;                      ///< guards wt_pending_ (a leaf)
  std::vector<std::uint64_t> wt_pending_;  ///< ids of write-through copies not yet seen complete
  pressure_options pressure_{};  ///< pool_options::pressure (constant after construction)
  /// Calls check_memory_pressure() every pressure_.interval_ms (Note [Shrinking a tier],
  /// pool_control.cpp). Last member: stopped before anything it reads goes.
  periodic_thread pressure_thread_;
};

}  // namespace tierpool::detail

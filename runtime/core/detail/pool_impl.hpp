// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file pool_impl.hpp
 * @brief Internal: the engine behind tierpool::pool — tensor records (one copy slot per
 *        tier), the tiers with their policies, placement, the out-of-memory ladder,
 *        eviction and the copies between tiers.
 *
 * Not installed API. See docs/notes/pool_design.md for the plan this implements and
 * docs/chapters/tiers.md for the user-facing behaviour.
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
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/detail/flat_table.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/pool_options.hpp>
#include <tierpool/prefetch.hpp>
#include <tierpool/trace.hpp>
#include <tierpool/telemetry.hpp>

#include "core/detail/op_gate.hpp"
#include "util/record_slab.hpp"
#include "util/spin_mutex.hpp"
#include "util/thread_shard.hpp"
#include "telemetry/pool_counters.hpp"
#include "backends/event_pool.hpp"
#include "streams/stream_registry.hpp"
#include "telemetry/stats_segment.hpp"
#include "tiers/tier.hpp"

namespace tierpool::detail {

/// @brief State of a tensor's copy in one tier.
enum class copy_state : std::uint8_t {
  absent,  ///< no block in the tier
  valid,   ///< holds the tensor's newest bytes (possibly still being copied in: see ready)
  stale,   ///< holds a block whose bytes are outdated (kept: a later copy or write-back reuses it)
};

/// @brief One tier's copy of a tensor. Guarded by the record's mutex.
struct copy_slot {
  // Read on every acquire, copy and eviction first (Note [Record layout], record_slab.cpp).
  copy_state state{copy_state::absent};
  bool policy_pinned{false};         ///< this tier's policy was told on_pin (told on_unpin at pins 0)
  /// Managed tiers: the pages were last steered to the device (prefetch_async); false
  /// after placement, a copy into the block, or a host access.
  bool pages_on_device{false};
  std::uint32_t pins{0};             ///< live leases on this copy
  event_handle ready{};              ///< completes when the copy that filled blk is done; null = done
  block blk{};                       ///< the tier's block (absent: empty)
  /// Streams that used blk since `ready` (leases, copies reading it). A lease's stamp is
  /// settled at its release; while `pins != 0` stamps of lease streams may be early.
  use_list users;
};

/**
 * @brief A record's copy slots, one per tier: up to kInline of them inside the record
 *        (no allocation, and on the record's own cache lines), more in one heap array.
 *
 * Sized once by resize() at allocate; never copied or moved (the record is not either).
 * Not synchronized (the record's mutex guards the slots).
 */
class slot_array {
 public:
  static constexpr std::size_t kInline = 3;  ///< device, pinned host, host: the default pool

  slot_array() noexcept { data_ = inline_.data(); }
  slot_array(slot_array const&) = delete;
  slot_array& operator=(slot_array const&) = delete;
  ~slot_array() = default;

  /// @brief Make `n` default slots. Precondition: empty. @throws std::bad_alloc (unchanged).
  void resize(std::size_t n)
  {
    if (n > kInline) {
      heap_ = std::make_unique<copy_slot[]>(n);
      data_ = heap_.get();
    }
    size_ = n;
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] copy_slot& operator[](std::size_t k) noexcept { return data_[k]; }
  [[nodiscard]] copy_slot const& operator[](std::size_t k) const noexcept { return data_[k]; }
  [[nodiscard]] copy_slot* begin() noexcept { return data_; }
  [[nodiscard]] copy_slot* end() noexcept { return data_ + size_; }
  [[nodiscard]] copy_slot const* begin() const noexcept { return data_; }
  [[nodiscard]] copy_slot const* end() const noexcept { return data_ + size_; }

 private:
  // The pointer and size before the inline slots: slot 0 follows them on the same line.
  copy_slot* data_{nullptr};           ///< inline_ or heap_ (set by the constructor)
  std::size_t size_{0};
  std::array<copy_slot, kInline> inline_{};
  std::unique_ptr<copy_slot[]> heap_;  ///< set when size() > kInline
};

/// @brief tensor_record::next_use value meaning "no forecast" (tensor_view::next_use empty).
inline constexpr tick kNoForecast = no_next_use - 1;

/// @brief tensor_view::next_use for a stored forecast.
[[nodiscard]] inline std::optional<tick> forecast_of(tick v) noexcept
{
  return v == kNoForecast ? std::nullopt : std::optional<tick>{v};
}

/// @brief One buffered hit (a policy access event, stamped with a tick when drained).
struct access_event {
  tensor_id id{};
  std::size_t bytes{0};
  std::uint32_t access_count{0};
  bool write{false};
  tick next_use{0};  ///< the record's forecast when buffered (kNoForecast: none)
};

/// @brief A shard's buffer of hits of one tier: a tiny spin lock, taken by its own
///        threads on a hit and by the tier-lock holder when draining (a leaf lock).
struct alignas(128) access_shard {
  static constexpr std::size_t kCap = 32;
  std::atomic<bool> busy{false};
  std::uint32_t count{0};  ///< under busy
  std::array<access_event, kCap> events{};
  void lock() noexcept
  {
    while (busy.exchange(true, std::memory_order_acquire)) {
      while (busy.load(std::memory_order_relaxed)) { std::this_thread::yield(); }
    }
  }
  void unlock() noexcept { busy.store(false, std::memory_order_release); }
};

/// @brief A shard's share of a tier's pinned bytes (may be negative: pin here, unpin there).
struct alignas(128) pinned_shard {
  std::atomic<std::int64_t> bytes{0};
};

/// @brief What the pool knows about one tensor. Guarded by `mtx` except the constants.
/// Aligned so that records of tensors used by different threads share no cache lines.
struct alignas(128) tensor_record {
  std::mutex mtx;
  pool_impl* owner{nullptr};      ///< constant
  tensor_id id{};                 ///< constant
  std::size_t bytes{0};           ///< constant
  // Hot fields first (Note [Record layout] in record_slab.cpp): the scalars and the first
  // slots share the record's first cache lines; the options (read on misses) come after.
  std::uint32_t pins{0};          ///< == SUM(slots[k].pins)
  std::uint32_t write_pins{0};    ///< live leases that may write (no copy may read it meanwhile)
  std::uint32_t access_count{0};
  /// Requests of this tensor waiting on low-memory callbacks, with the lock dropped (Note
  /// [Low-memory callbacks run unlocked], pool_impl.cpp): a free waits for them as for leases
  std::uint32_t paused{0};
  std::atomic<tick> next_use{kNoForecast};  ///< pool::set_next_use (any thread, relaxed)
  bool freed{false};              ///< freed (or the pool closed): every slot absent
  /// The handle died while leased or while a request of it waited on low-memory callbacks:
  /// the last release frees it (or record_lock's unlock when no lease or request holds it)
  bool free_when_unpinned{false};
  bool prefetched{false};         ///< a prefetch copied it in and no acquire used it yet
  bool prefetch_queued{false};    ///< a request for it waits in the prefetch queue
  /// Constant: opts.preferred_tier names a device-accessible tier (acquire may use it in
  /// place of the device tier). Lets a miss skip the options' cache line.
  bool prefers_device_accessible{false};
  slot_array slots;               ///< one per tier; invariant: >= 1 valid while live
  tensor_options opts{};          ///< constant
  /// Set when the handle dies while leased or paused (the record stays in the table until
  /// the deferred free): keep the pool and this record alive for the leases, which hold raw
  /// pointers (no shared refcount on the hit path); the deferred free drops both, after
  /// unlocking.
  std::shared_ptr<pool_impl> keep_alive;
  std::shared_ptr<tensor_record> keep_self;
};

/**
 * @brief The pool's live records by id: detail::flat_table (Note [A flat index instead of
 *        std::unordered_map]) of (id, record) cells, so that a lookup (eviction, once per
 *        victim) touches one cell, not a bucket and a node as std::unordered_map did.
 *        Runs of 8 consecutive ids share consecutive cells (ids are handed out in order:
 *        a burst of allocations or frees writes a few cache lines, not one random line
 *        per tensor). Ids are never 0 (0 marks an empty cell). Externally synchronized
 *        (table_mtx_).
 */
class record_table {
 public:
  /// @brief The record of `id`, or null.
  [[nodiscard]] std::shared_ptr<tensor_record> const* find(std::uint64_t id) const noexcept
  {
    cell const* c = table_.find(id);
    return c == nullptr ? nullptr : &c->rec;
  }
  /// @brief Add `rec` under `id` (absent, != 0). @throws std::bad_alloc when growing fails (unchanged).
  void insert(std::uint64_t id, std::shared_ptr<tensor_record> rec)
  {
    cell* c = table_.find_or_claim(id).first;
    c->id = id;
    c->rec = std::move(rec);
  }
  /// @brief Remove `id`. @return false when absent.
  bool erase(std::uint64_t id) noexcept { return table_.erase(id); }
  /// @brief Remove every record (keeps the memory).
  void clear() noexcept { table_.clear(); }
  [[nodiscard]] std::size_t size() const noexcept { return table_.size(); }
  /// @brief Call `f(record)` for every record, in no meaningful order.
  template <class F>
  void for_each(F&& f) const
  {
    table_.for_each([&f](cell const& c) { f(c.rec); });
  }
  /// @brief The home cell of `id` in a table of `cells` cells (tests build collisions).
  [[nodiscard]] static std::size_t home_in(std::uint64_t id, std::size_t cells) noexcept
  {
    return flat_table<traits>::home_in(id, cells);
  }

 private:
  struct cell {
    std::uint64_t id{0};  ///< 0: empty
    std::shared_ptr<tensor_record> rec;
  };
  struct traits {
    using cell = record_table::cell;
    static constexpr unsigned run_bits = 3;
    static constexpr std::size_t min_cells = 64;
    static bool empty(cell const& c) noexcept { return c.id == 0; }
    static std::uint64_t key(cell const& c) noexcept { return c.id; }
    static void clear(cell& c) noexcept
    {
      c.id = 0;
      c.rec.reset();
    }
  };
  flat_table<traits> table_;
};

/// @brief One tier of the pool: memory, policy, figures.
struct tier_state {
  std::unique_ptr<tier> mem;                 ///< guarded by mem->mutex()
  std::optional<any_eviction_policy> policy; ///< guarded by mem->mutex()
  eviction_proposal proposal;                ///< reused under mem->mutex()
  std::string name;
  std::uint32_t index{0};  ///< position in the pool's tiers
  tier_kind kind{tier_kind::device};
  std::size_t capacity{0};
  // Access events of hits, per shard, applied to the policy when the tier lock is next
  // taken (Note [The hit path takes no shared lock]). access_shard::busy is a leaf lock.
  std::array<access_shard, kShards + 1> acc{};
  std::atomic<std::uint64_t> acc_nonempty{0};  ///< bit i: shard i may hold events
  std::vector<access_event> acc_drain;         ///< under mem->mutex()
  // Figures (relaxed atomics: read without locks by stats()).
  std::array<pinned_shard, kShards + 1> pinned{};  ///< SUM over shards: bytes of tensors with a lease on their copy here
  [[nodiscard]] std::size_t pinned_bytes() const noexcept
  {
    std::int64_t n = 0;
    for (pinned_shard const& p : pinned) { n += p.bytes.load(std::memory_order_relaxed); }
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  std::atomic<std::uint64_t> resident{0};     ///< COUNT of slots not absent
  std::atomic<std::uint64_t> evictions{0};
  std::atomic<std::uint64_t> evictions_clean{0};
  std::atomic<std::uint64_t> alloc_failures{0};
  std::atomic<std::uint64_t> reused_in_order{0};  ///< blocks taken with a pending deferred free
  std::atomic<std::int64_t> bytes_allocated{0};  ///< SUM of slot sizes placed here, over the pool's life
  std::atomic<std::int64_t> bytes_freed{0};      ///< SUM of slot sizes vacated here
};

/// @brief How hard placement in one tier tries.
enum class place_mode : std::uint8_t {
  try_only,  ///< reclaim completed frees, the arena, grow: no eviction, no waiting
  no_wait,   ///< as try_only, then one round of eviction (stream-ordered): the host never waits
  ladder,    ///< the whole ladder: also evict via the policy and wait for deferred frees
};

/// @brief Why place() returned no block.
struct place_failure {
  std::string diagnosis;                ///< the out_of_memory message (ladder mode only)
  oom_figures figures{};                ///< its figures and cause (ladder mode only)
  status backend_status{status::ok};    ///< last failed backend allocate while growing, if any
  /// Bytes of victims another thread held when the ladder gave up (0: none). Non-zero means
  /// the only obstacle may be transient: the request lets go of its locks and tries again
  /// (Note [Busy victims are waited for, not failed on], placement.cpp).
  std::size_t busy_bytes{0};
  /// The obstacle was leases of other threads (the calling thread holds none), not locks:
  /// they pin `busy_bytes`; the request waits for them as for busy victims.
  bool busy_pins{false};
};

/// @brief Leases the calling thread holds, in every pool (made here minus released here;
///        a lease released by another thread leaves its maker's count high, which only
///        makes that thread fail sooner). Zero or less: the thread holds none, so pinned
///        bytes in its way belong to other threads and will be released.
[[nodiscard]] inline std::int64_t& thread_leases() noexcept
{
  thread_local std::int64_t n = 0;
  return n;
}

/// @brief The out_of_memory of an attempt that failed only on other threads' locks or
///        leases (place_failure::busy_bytes): the request catches it and tries again
///        (Note [Busy victims are waited for, not failed on], placement.cpp).
class busy_failure : public out_of_memory {
 public:
  busy_failure(std::string msg, tier_id tier, std::size_t bytes, std::size_t busy_bytes, bool pins)
      : out_of_memory(std::move(msg), tier, bytes, oom_figures{.cause = oom_cause::busy, .busy_bytes = busy_bytes}),
        pins_(pins)
  {
  }
  /// True when other threads' leases, not their locks, were in the way.
  [[nodiscard]] bool pins() const noexcept { return pins_; }

 private:
  bool pins_;
};

/// @brief What one round of eviction did.
struct evict_outcome {
  bool progress{false};     ///< at least one victim was vacated
  std::size_t busy_bytes{0};  ///< bytes of proposed victims another thread held (skipped)
};

/// @brief The engine behind tierpool::pool. Every public member is internally synchronized.
class pool_impl : public std::enable_shared_from_this<pool_impl> {
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
  /// TIERPOOL_TRACE / pool_options::trace_path: true when this pool records its calls.
  [[nodiscard]] bool tracing() const noexcept { return recorder_ != nullptr; }
  /// Record an access by lease `l` (acquire or acquire_host). No-op unless tracing().
  void trace_access(lease const& l) noexcept;
  /// Record an event, stamping its time with the backend clock. Never throws: a failed
  /// write stops the recording (tracing_error()) with one line on stderr, once.
  void trace_record(trace::event e) noexcept;
  /// Why recording stopped (trace::recorder::error()); empty when it works or no trace is recorded.
  [[nodiscard]] std::string tracing_error() const;
  /// Close the recorder (idempotent), reporting a failure as trace_record does.
  void close_trace() noexcept;
  /// The stderr line of a recording failure: once per pool, none with fallback_notice::silent.
  void report_trace_failure(char const* what) noexcept;
  /// True when a prefetch predictor other than `none` is set.
  [[nodiscard]] bool has_predictor() const noexcept { return predictor_active_; }
  /// Tell the predictor about a device acquire (no record lock held) and prefetch its plan.
  void predict_after(tensor_id id, std::size_t bytes, bool write);
  std::uint64_t add_low_memory_callback(low_memory_callback cb);
  void remove_low_memory_callback(std::uint64_t id);
  /// Run the low-memory callbacks for tier k (no pool lock held). @return true if any ran.
  bool run_low_memory_callbacks(std::uint32_t k, std::size_t bytes);
  /// Run `body(false)`; if it throws out_of_memory, run the low-memory callbacks (no lock
  /// held) and, if any ran, `body(true)` once more. `rec`/`handle`: the record of the
  /// request's tensor and its handle's pointer (null for allocate): the record is paused
  /// and kept alive meanwhile (Note [Low-memory callbacks run unlocked]).
  template <class Body>
  auto with_low_memory_step(tensor_record* rec, std::shared_ptr<tensor_record> const* handle, Body&& body)
    -> decltype(body(false));
  /// Charge `bytes` to the tenant's live bytes, or throw quota_exceeded.
  void charge_tenant(std::uint32_t tenant, std::size_t bytes, std::string const& name);
  void uncharge_tenant(std::uint32_t tenant, std::size_t bytes) noexcept;
  void demote(tensor const& t, tier_id to);
  void free(tensor& t);
  void free_handle(tensor& t) noexcept;  ///< the handle's destructor
  /// The record is locked by this thread, its handle is gone (free_when_unpinned, keep_self
  /// set) and no lease or paused request holds it: free its slots (recording the free when
  /// tracing) and move the references that kept it and the pool alive into the
  /// out-parameters (the caller drops them after unlocking).
  void finish_dropped_locked(tensor_record& rec, std::shared_ptr<pool_impl>& keep_alive,
                             std::shared_ptr<tensor_record>& keep_self) noexcept;
  void release(lease& l) noexcept;

  stream_handle create_stream(int priority);
  stream_handle wrap_native_stream(void* native);
  void destroy_stream(stream_handle s);
  void synchronize(stream_handle s);

  void close();
  /// @brief Destructor path of pool: close() unless leases live; then one stderr line.
  void close_from_destructor() noexcept;

  [[nodiscard]] pool_stats stats() const;
  [[nodiscard]] std::string summary() const;
  [[nodiscard]] std::string summary_json() const;
  [[nodiscard]] bool validate() const;
  [[nodiscard]] fit_report fits(std::size_t bytes, tier_id tier, std::uint32_t tenant) const;  // pool_fit.cpp
  void publish();
  [[nodiscard]] std::string stats_segment() const;
  [[nodiscard]] std::string publishing_error() const;
  /// Every live record, in id order (the order in which several records may be locked;
  /// see Note [Lock order of the pool]).
  [[nodiscard]] std::vector<std::shared_ptr<tensor_record>> records_by_id() const;

  [[nodiscard]] tierpool::backend& get_backend() const noexcept { return *backend_; }
  [[nodiscard]] std::string const& backend_reason() const noexcept { return backend_reason_; }
  [[nodiscard]] std::size_t tier_count() const noexcept { return tiers_.size(); }

 private:
  friend struct eviction_context;

  // ---- lookup and checks ----
  tensor_record& checked_record(tensor const& t, char const* what) const;
  void check_open(char const* what) const;
  [[nodiscard]] std::size_t device_tier() const;

  // ---- placement and the out-of-memory ladder (pool_placement.cpp) ----
  /// The OOM ladder of tier k. With `after` non-null, a block still awaiting a copy
  /// stream's deferred free may be handed out with its pending event in `*after`
  /// (tier::take_deferred): the caller makes it the slot's `ready`.
  /// `after_stream`, when non-null, receives the stream that event was recorded on.
  /// `incoming`: the tensor the room is for, if known (eviction_request::incoming).
  std::optional<block> place(std::uint32_t k, std::size_t bytes, place_mode mode, place_failure* why,
                             event_handle* after = nullptr, stream_handle* after_stream = nullptr,
                             tensor_id incoming = {});
  /// Undo a place() whose block the caller cannot use (it threw before the block reached a
  /// record): the block goes back to tier k, behind `after` (recorded on `after_stream`)
  /// when place() handed one over, the event with it.
  void unplace(std::uint32_t k, block const& b, event_handle after, stream_handle after_stream) noexcept;
  /// True for the pool's own copy streams (h2d, d2h), whose deferred frees may be reused
  /// in stream order.
  [[nodiscard]] bool is_copy_stream(stream_handle s) const noexcept;
  evict_outcome evict_round(std::uint32_t k, std::size_t bytes, place_mode mode, tensor_id incoming = {});
  /// The diagnosis of a failed request for `bytes` in tier k (tier lock held): the message
  /// and, in `*figures` when given, its figures and cause. `busy_bytes`: victims other
  /// threads held; `attempts`/`waited_s`: the busy retries made (cause busy when non-zero).
  [[nodiscard]] std::string oom_message_locked(std::uint32_t k, std::size_t bytes, oom_figures* figures = nullptr,
                                               std::size_t busy_bytes = 0, std::uint32_t attempts = 0,
                                               double waited_s = 0.0, bool busy_pins = false) const;
  [[noreturn]] void throw_place_failure(std::uint32_t k, std::size_t bytes, place_failure const& why) const;
  void give_back_now(std::uint32_t k, block const& b) noexcept;

  // ---- copies and slots (pool_migration.cpp); the record is locked ----
  enum class fill_result : std::uint8_t { hit, filled, no_room };
  fill_result ensure_valid_locked(tensor_record& rec, std::uint32_t k, access_mode access, place_mode mode);
  status copy_locked(tensor_record& rec, std::uint32_t from, std::uint32_t to);
  /// Write the dirty copy in tier k back to a lower tier. @return false when it stays the
  /// only valid copy; then `*busy_bytes` (when given) grows by the busy victims that kept
  /// the lower tiers full.
  bool write_back_locked(tensor_record& rec, std::uint32_t k, place_mode mode, std::size_t* busy_bytes = nullptr) noexcept;
  void vacate_locked(tensor_record& rec, std::uint32_t k) noexcept;
  void mark_others_stale_locked(tensor_record& rec, std::uint32_t k) noexcept;
  void free_slots_locked(tensor_record& rec) noexcept;
  void insert_into_policy(tensor_record& rec, std::uint32_t k, bool write) noexcept;
  void note_access(tensor_record& rec, std::uint32_t k, bool write) noexcept;
  void drain_accesses_locked(tier_state& ts) noexcept;
  void pin_locked(tensor_record& rec, std::uint32_t k) noexcept;
  void unpin_locked(tensor_record& rec, std::uint32_t k) noexcept;


  // ---- the prefetch queue (requests that found no room without waiting) ----
  void serve_prefetches() noexcept;
  /// Queue a prefetch of the (locked) record. @return false when the queue was full (dropped).
  bool enqueue_prefetch(std::shared_ptr<tensor_record> const& recp, std::uint32_t k);
  /// pool::prefetch of a record (`predicted`: from the predictor; a freed tensor is skipped).
  void prefetch_record(std::shared_ptr<tensor_record> const& recp, std::uint32_t k, bool predicted);

  void host_wait_slot(copy_slot& slot, bool include_users) noexcept;
  /// acquire of a managed copy: queue its pages' migration to the device on `stream`.
  void steer_to_device(tensor_record& rec, copy_slot& slot, stream_handle stream) noexcept;
  [[nodiscard]] bool ready_complete(copy_slot& slot) noexcept;
  [[nodiscard]] stream_handle copy_stream(std::uint32_t to, std::uint32_t from) noexcept;

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
  /// A deferred free happens (the handle died earlier): free the slots, record the free.
  void free_dropped_locked(tensor_record& rec) noexcept;

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
  std::vector<std::unique_ptr<tier_state>> tiers_;
  std::vector<stream_handle> h2d_;
  std::vector<stream_handle> d2h_;
  stream_handle retire_{};  // collects the last uses of vacated blocks (deferred frees)
  std::atomic<std::uint32_t> rr_{0};

  // Blocks of the records and of their shared_ptr control blocks (Note [Tensor records
  // come from a slab]); each record's control block holds both, so they outlive the pool
  // if a record does.
  std::shared_ptr<record_slab> record_blocks_ = std::make_shared<record_slab>(sizeof(tensor_record), alignof(tensor_record));
  std::shared_ptr<record_slab> control_blocks_ = std::make_shared<record_slab>(64, 16);
  /// A new default record, its memory and control block from the slabs. @throws std::bad_alloc
  [[nodiscard]] std::shared_ptr<tensor_record> make_record();
  mutable spin_mutex table_mtx_;  // leaf (short sections: a lookup, insert or erase)
  record_table table_;
  std::uint64_t next_id_{1};


  // Prefetch queue: leaf lock; pq_size_ lets the hit path skip it with one load.
  static constexpr std::size_t kPrefetchQueueCap = 64;
  struct prefetch_request {
    std::weak_ptr<tensor_record> rec;
    std::uint32_t tier{0};
    float priority{0.0F};
    std::uint64_t seq{0};
  };
  std::mutex pq_mtx_;
  std::vector<prefetch_request> pq_;
  std::uint64_t pq_seq_{0};
  std::atomic<std::size_t> pq_size_{0};
  std::atomic<bool> pq_serving_{false};

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
  struct tenant_state {
    std::size_t quota{0};
    std::size_t live{0};
    std::size_t peak{0};
    std::uint64_t tensors{0};
    std::uint64_t refusals{0};
  };
  mutable spin_mutex tenants_mtx_;                   ///< a leaf lock (short sections)
  std::mutex lowmem_mtx_;                                                   ///< a leaf lock
  std::vector<std::pair<std::uint64_t, std::shared_ptr<low_memory_callback>>> lowmem_;  ///< under lowmem_mtx_
  std::uint64_t next_lowmem_id_{1};                                         ///< under lowmem_mtx_
  std::atomic<std::size_t> lowmem_count_{0};
  std::atomic<std::uint64_t> lowmem_calls_{0};
  std::mutex predictor_mtx_;                         ///< a leaf lock (held only to ask the predictor)
  std::optional<any_prefetch_predictor> predictor_;  ///< under predictor_mtx_
  prefetch_plan plan_;                               ///< under predictor_mtx_
  bool predictor_active_{false};                     ///< constant after construction
  std::uint64_t access_seq_{0};                      ///< under predictor_mtx_
  std::unique_ptr<trace::recorder> recorder_;        ///< null: not recording
  std::atomic<bool> trace_reported_{false};         ///< a recording failure was reported
  bool trace_quiet_{false};                          ///< constant after construction: notice is silent
  std::map<std::uint32_t, tenant_state> tenants_;    ///< under tenants_mtx_
};

}  // namespace tierpool::detail

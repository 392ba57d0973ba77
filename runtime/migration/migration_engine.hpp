// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file migration_engine.hpp
 * @brief Internal: the migration engine — the tiers and their policies, the pool's copy
 *        streams, the copies between tiers (copy-in, write-back, vacate), eviction rounds
 *        through the policy, placement with the out-of-memory ladder, and prefetches with
 *        their queue.
 *
 * Owns: the tiers (tier_state), the copy and retire streams, the prefetch queue. Uses,
 * without owning: the backend, the event pool, the stream registry, the pool's counters
 * and its record table (to find eviction victims by id). May call: streams, tiers,
 * telemetry's counters, backends and util; never core (a record's owner is reached only
 * through record_owner).
 *
 * Every function that takes a `tensor_record&` expects it locked by the caller
 * (record_lock); the engine takes tier locks itself, one at a time (Note [Lock order of
 * the pool], core/detail/pool_impl.cpp).
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <span>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/error.hpp>
#include <tierpool/pool_options.hpp>

#include "backends/event_pool.hpp"
#include "migration/records.hpp"
#include "streams/stream_registry.hpp"
#include "telemetry/pool_counters.hpp"
#include "util/spin_mutex.hpp"

namespace tierpool::detail {

/// @brief How hard placement in one tier tries.
enum class place_mode : std::uint8_t {
  try_only,  ///< reclaim completed frees, the arena, grow: no eviction, no waiting
  no_wait,   ///< as try_only, then one round of eviction (stream-ordered): the host never waits
  ladder,    ///< the whole ladder: also evict via the policy and wait for deferred frees
};

/// @brief A request for a block (migration_engine::place).
struct place_request {
  std::uint32_t tier{0};                 ///< the tier
  std::size_t bytes{0};                  ///< the block's size
  place_mode mode{place_mode::ladder};   ///< how hard to try
  /// A block still awaiting the deferred free of one of the pool's copy streams may be
  /// handed over with its pending event (place_result::after), which the block's first
  /// use must wait for (tier::take_deferred).
  bool reuse_in_order{true};
  tensor_id incoming{};                  ///< the tensor the room is for, if known (eviction_request::incoming)
  /// The tenant the room is for (tensor_options::tenant): eviction takes from tenants over
  /// their share of the tier first (Note [Tenants' shares of a tier], eviction.cpp).
  std::uint32_t tenant{0};
  /// The caller copies into the block at once (copy_locked), ordering the copy after the
  /// slot's `ready` and `users`: a block this request's own eviction round vacated may then
  /// come with its previous occupant's fill event and uses as they are
  /// (place_result::after_users), not joined into one event (Note [The evicted block goes
  /// to the request that evicted it], eviction.cpp). Ladder mode only.
  bool take_uses{false};
  /// With take_uses: the tensor the block is for (locked by the caller) and whether its
  /// access writes. When the block comes from the round's hand-off, the tensor enters the
  /// tier's policy under the round's tier lock (place_result::inserted), not in a lock of
  /// its own after the copy.
  tensor_record* incoming_rec{nullptr};
  bool incoming_write{false};
};

/// @brief Why place() returned no block.
/// Plain data (no string): place() returns one on every call, and a miss-heavy run places
/// on every miss; throw_place_failure() writes the diagnosis when the request gives up.
struct place_failure {
  status backend_status{status::ok};    ///< last failed backend allocate while growing, if any
  /// Bytes of victims another thread held when the ladder gave up (0: none). Non-zero means
  /// the only obstacle may be transient: the request lets go of its locks and tries again
  /// (Note [Busy victims are waited for, not failed on], placement.cpp).
  std::size_t busy_bytes{0};
  /// The obstacle was leases of other threads (the calling thread holds none), not locks:
  /// they pin `busy_bytes`; the request waits for them as for busy victims.
  bool busy_pins{false};
  /// The obstacle was blocks other threads are placing (tier_state::unsettled_bytes): they
  /// make up `busy_bytes`; the request waits for them as for busy victims (Note [Blocks
  /// being placed are waited for], placement.cpp).
  bool busy_placing{false};
  /// A dirty victim's write-back failed in the backend on every try (the victim kept its
  /// bytes and stays resident): the request fails with this status, not an out-of-memory.
  status write_back_status{status::ok};
  tensor_id write_back_victim{};  ///< the victim of that write-back
  /// The tenant's hard share refused it (Note [Hard shares and priorities], eviction.cpp):
  /// the share, and what the tenant held in the tier when it gave up.
  bool share{false};
  std::size_t share_bytes{0};
  std::size_t share_held{0};
};

/// @brief What place() gave.
struct place_result {
  std::optional<block> blk;      ///< the block; empty: none (see why)
  event_handle after{};          ///< a reused block's pending event (null: none); the caller owns it
  stream_handle after_stream{};  ///< the stream `after` was recorded on (default: not known)
  /// Only when place_request::take_uses: the uses of the block's previous occupant, which
  /// the block's first use must also be ordered after (the slot's `users`).
  use_list after_users{};
  /// The tensor of place_request::incoming_rec is in the tier's policy already (and counted
  /// resident): the caller must not insert it again, and must take it out (forget_in_policy)
  /// if it cannot use the block.
  bool inserted{false};
  /// Bytes counted as in flight for a hard tenant (tenant_rank::placing): the caller hands
  /// them back with settle_placing once the copy entered the policy or the block went back.
  std::size_t placing{0};
  /// Bytes of the block counted in tier_state::unsettled_bytes (the block is not in the
  /// policy yet: `inserted` is false): the caller's placing_settle hands them back.
  std::size_t unsettled{0};
  place_failure why{};           ///< when blk is empty; busy bytes in ladder mode only
};

/// @brief Add `d` to a tier figure whose writers all hold the tier's lock (tier_state::
///        resident, bytes_freed, bytes_allocated, alloc_failures, reused_in_order,
///        merged_in_order): a relaxed load and store, not a locked read-modify-write (no
///        update can be lost; stats() reads it without the lock, as before). The locked
///        instruction cost a full barrier per eviction, waiting on the victim's cache misses.
template <class T>
void add_under_tier_lock(std::atomic<T>& figure, T d) noexcept
{
  figure.store(static_cast<T>(figure.load(std::memory_order_relaxed) + d), std::memory_order_relaxed);
}

/// @brief A block an eviction round hands to the request that made it (Note [The evicted
///        block goes to the request that evicted it], eviction.cpp).
struct evict_handoff {
  std::size_t bytes{0};      ///< the request (a victim block of its slot size is taken)
  std::optional<block> blk;  ///< the block (a live block of the tier, `bytes` long); empty: none
  event_handle ready{};      ///< the previous occupant's fill event (null: done); owned
  use_list users{};          ///< the previous occupant's uses
  tensor_record* incoming{nullptr};  ///< place_request::incoming_rec: inserted into the policy with the hand-off
  bool incoming_write{false};
  bool inserted{false};              ///< it was
  /// The policy and the tier's figures know (the victim left the policy, the block counts
  /// as freed and placed again): done under the round's first tier lock for a clean victim.
  bool told{false};
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

/// @brief Bytes of blocks the calling thread was given by place() and has not settled yet
///        (place_result::unsettled, in every pool): a request does not wait for its own.
[[nodiscard]] inline std::size_t& thread_unsettled() noexcept
{
  thread_local std::size_t n = 0;
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

/// @brief The transfer planner's terms for the placement this thread is making
///        (planning_scope): a planned prefetch evicts no tensor whose forecast next use comes
///        at or before `protect` ("do no harm"; a forecast before `now` is stale and does not
///        protect), and may reuse a block vacated behind user work in stream order.
struct planning_terms {
  bool active{false};
  tick protect{0};
  tick now{0};
  std::size_t harm_skips{0};  ///< victims the policy proposed that were protected
  bool stream_reuse{true};    ///< may reuse a block vacated behind user work (plan_predictor::config)
  /// Asks the policy for this many times the room needed and evicts, of its victims, the
  /// ones needed last first (Note [Prefetch victims the forecast needs last]); 1: its order.
  std::uint32_t sample{1};
};

/// @brief How the planner's prefetches place (plan_predictor::config; migration_engine::plan_prefetch).
struct plan_terms {
  bool stream_reuse{true};         ///< planning_terms::stream_reuse
  std::uint32_t victim_sample{1};  ///< planning_terms::sample
};
[[nodiscard]] inline planning_terms& planning() noexcept
{
  thread_local planning_terms t;
  return t;
}

/// @brief What a planned prefetch did (migration_engine::plan_prefetch).
enum class plan_outcome : std::uint8_t {
  resident,  ///< already valid in the tier
  issued,    ///< a copy-in was enqueued
  no_room,   ///< no room without evicting something needed sooner, or without waiting
  skipped,   ///< busy, freed, being written, or larger than the tier
};

/// @brief What one round of eviction did.
struct evict_outcome {
  bool progress{false};     ///< at least one victim was vacated
  std::size_t busy_bytes{0};  ///< bytes of proposed victims another thread held (skipped)
  std::size_t pinned_bytes{0};  ///< bytes of proposed victims with a lease on their copy here (skipped)
  bool kept{false};           ///< the planner's keep window, or a tenant's share, passed over a victim
  status write_back_status{status::ok};  ///< a victim's write-back failed in the backend (it stays resident)
  tensor_id write_back_victim{};         ///< that victim
};

/// @brief The eviction actions' settings and the bandwidths that price them (bytes per
///        second; pool_options::actions resolved at construction). Note [Choosing an
///        eviction action], eviction.cpp.
struct action_prices {
  bool recompute{true};       ///< drop tensors with a recipe when that is cheaper, or when nothing below has room
  bool by_cost{true};         ///< order a write-back's candidate tiers by round-trip cost
  double h2d{25e9};           ///< host tier -> device tier
  double d2h{25e9};           ///< device tier -> host tier
  double h2h{10e9};           ///< host tier -> host tier
  double storage_write{5e9};  ///< host tier -> storage file, until measured
  double storage_read{7e9};   ///< storage file -> host tier, until measured
};

/// @brief Which tenants' victims an eviction round may take (Note [Hard shares and
///        priorities], eviction.cpp).
enum class evict_pass : std::uint8_t {
  shares,    ///< first: the tenants over their share (or of lower priority); the keep window holds
  fallback,  ///< then: any tenant but those of higher priority or with a hard share, within their share
  own,       ///< a tenant with a hard share over it: only its own tensors
};

/// @brief What migration_engine::compact_tier did.
struct compact_totals {
  std::uint64_t moved{0};        ///< copies moved
  std::uint64_t moved_bytes{0};  ///< their bytes (tensor sizes)
  /// Copies that had room lower down but stayed (leased, in use by a stream, busy, or their copy failed)
  std::uint64_t skipped{0};
};

/// @brief A copy resident in a tier, as compaction found it (Note [Compaction], compaction.cpp).
struct resident_copy {
  std::uint64_t offset{0};  ///< its block's arena offset
  std::uint64_t size{0};    ///< its block's slot size
  record_ref rec;           ///< its tensor
};

/// @brief What ensure_valid_locked() did.
enum class fill_result : std::uint8_t { hit, filled, no_room };

/// @brief Thrown by ensure_valid_locked (and the acquire paths) for a tensor dropped for
///        recompute (tensor_record::needs_rebuild): its bytes must be rebuilt by its recipe
///        first, with no lock held (core/detail/recompute.cpp). Never leaves the pool.
struct rebuild_needed {};

/// @brief The migration engine of one pool (see the file comment).
class migration_engine {
 public:
  migration_engine() = default;
  migration_engine(migration_engine const&) = delete;
  migration_engine& operator=(migration_engine const&) = delete;
  ~migration_engine() = default;

  /// @brief Connect the engine to what it uses (they outlive it): once, before any other call.
  void attach(backend& be, event_pool& events, stream_registry& streams, pool_counters& counters,
              spin_mutex& table_mtx, record_table& table) noexcept
  {
    backend_ = &be;
    events_ = &events;
    streams_ = &streams;
    counters_ = &counters;
    table_mtx_ = &table_mtx;
    table_ = &table;
  }
  /// @brief Add the next tier (in order, fastest first).
  void add_tier(std::unique_ptr<tier_state> ts)
  {
    has_storage_ = has_storage_ || is_storage(ts->kind);
    tiers_.push_back(std::move(ts));
  }
  /// @brief Make `h2d` + `d2h` copy streams and the retire stream, registered as internal.
  /// @throws backend_error when the backend cannot make one (none is left behind)
  void make_copy_streams(std::uint32_t h2d, std::uint32_t d2h);
  /// @brief Wait for every copy stream (close, destruction).
  void synchronize_copy_streams() noexcept;
  /// @brief Destruction: wait for the copies, free the tiers (their deferred frees first),
  ///        destroy the copy streams. Nothing may be called after.
  void shutdown() noexcept;

  [[nodiscard]] std::vector<std::unique_ptr<tier_state>>& tiers() noexcept { return tiers_; }
  [[nodiscard]] std::vector<std::unique_ptr<tier_state>> const& tiers() const noexcept { return tiers_; }

  // ---- placement and the out-of-memory ladder (placement.cpp) ----
  /// The out-of-memory ladder of one tier, from "completed frees" to "wait for the oldest
  /// vacated block" (placement.cpp). The caller holds no tier lock; it may hold records
  /// (they are not evicted: holds_record).
  [[nodiscard]] place_result place(place_request const& r);
  /// Hand back a placement's in-flight count (place_result::placing) for `tenant` in tier
  /// k: its copy is in the policy now (counted in tenant_bytes), or the block went back.
  /// No-op for 0. Takes tier k's lock.
  void settle_placing(std::uint32_t k, std::uint32_t tenant, std::size_t bytes, std::size_t unsettled) noexcept;
  /// Undo a place() whose block the caller cannot use (it threw before the block reached a
  /// record): the block goes back to tier k, behind `after` (recorded on `after_stream`)
  /// when place() handed one over, the event with it.
  /// `users` (place_result::after_users, may be null): the host waits for them and for
  /// `after`, then the block is freed at once.
  void unplace(std::uint32_t k, block const& b, event_handle after, stream_handle after_stream,
               use_list* users = nullptr) noexcept;
  // ---- compaction (compaction.cpp; Note [Compaction]) ----
  /// The ladder's compaction step for `bytes` in tier `ts` (its lock held): move copies out
  /// of one run of the tier so that the request fits there. @return the request's block,
  /// or std::nullopt (copies moved meanwhile stay moved, each intact). `wait_for_uses`
  /// (the last resort before a failure): the host waits for an unleased copy's fill and
  /// uses instead of passing over it.
  [[nodiscard]] std::optional<block> compact_for_locked(tier_state& ts, std::size_t bytes, bool wait_for_uses = false);
  /// pool::compact of tier k (takes its lock): move copies down until none can move. The
  /// caller closed the quiesce gate (no operation runs).
  compact_totals compact_tier(std::uint32_t k);
  /// True when the (locked) record's copy in tier k may move: resident, no lease, its fill
  /// complete and every recorded use settled (then its use list is cleared), not paused.
  [[nodiscard]] bool movable_locked(tensor_record& rec, std::uint32_t k) noexcept;
  /// Every copy resident in tier `ts` (its lock held) whose record could be try-locked, by
  /// offset; records this thread holds are left out. @throws std::bad_alloc
  void resident_copies_locked(tier_state& ts, std::vector<resident_copy>& out);
  /// Move the (locked, movable) record's copy in tier `ts` (its lock held) to the free range
  /// at arena offset `to`. @return false when the range is not free or the copy failed (the
  /// copy stays where it was).
  bool move_copy_locked(tier_state& ts, tensor_record& rec, std::uint64_t to) noexcept;
  /// move_copy_locked for `c`, its record try-locked and checked to be still where it was
  /// and movable (`wait_for_uses`: after the host waited for its fill and uses, when unleased).
  bool move_resident_locked(tier_state& ts, resident_copy const& c, std::uint64_t to, bool wait_for_uses = false) noexcept;
  /// True for the pool's own copy streams (h2d, d2h), whose deferred frees may be reused
  /// in stream order.
  [[nodiscard]] bool is_copy_stream(stream_handle s) const noexcept;
  /// Reorders a proposal's victims for a planned prefetch (Note [Prefetch victims the
  /// forecast needs last], transfer_planner.cpp): those no larger than the limit, the larger
  /// of `bytes` and the size of the policy's first victim outside [guard_from, guard_until],
  /// come first, latest forecast next use first; the larger ones follow. Stable: ties and the
  /// larger ones keep the policy's order. Takes the table lock.
  void order_by_forecast(std::vector<tensor_id>& victims, std::size_t bytes, tick guard_from, tick guard_until) const;
  /// `pass`: which victims the tenants' standing allows (Note [Hard shares and
  /// priorities], eviction.cpp; `tenant`: whom the room is for). evict_pass::shares also
  /// honours the planner's keep window (set_keep_window); placement retries a round that
  /// made no progress with evict_pass::fallback.
  /// `handoff` (ladder mode): the round may vacate one victim block of the request's size
  /// straight into it instead of the tier (Note [The evicted block goes to the request that
  /// evicted it], eviction.cpp).
  /// `held`: the caller's lock of tier k, when it holds it (placement's climb, so that the
  /// round's first phase takes no second lock); the round releases it after that phase.
  /// `chosen`: the victims, in place of the policy's proposal (window_victims_locked);
  /// each is still checked as a proposed one is, and the round asks nothing more.
  evict_outcome evict_round(std::uint32_t k, std::size_t bytes, place_mode mode, tensor_id incoming = {},
                            std::uint32_t tenant = 0, evict_pass pass = evict_pass::shares, evict_handoff* handoff = nullptr,
                            std::unique_lock<std::mutex>* held = nullptr, std::span<tensor_id const> chosen = {});
  /// The victims of one contiguous run of tier `ts` that holds `bytes` once they are
  /// evicted, cheapest by the policy's order (Note [Evicting a window for a large
  /// request], window_eviction.cpp), into `out`, and their slot bytes into `live_bytes`.
  /// False (out empty) when no run qualifies. The caller holds ts's lock, accesses drained.
  bool window_victims_locked(tier_state& ts, std::size_t bytes, std::vector<tensor_id>& out, std::size_t* live_bytes);
  /// Set the eviction actions' settings and prices (construction, before any tensor).
  void set_actions(action_prices const& p) noexcept { actions_ = p; }
  [[nodiscard]] action_prices const& actions() const noexcept { return actions_; }
  /// Seconds a copy of `bytes` takes from tier a to tier b (staged through a host tier
  /// where it cannot be direct); a storage tier's rates as measured once it has some.
  [[nodiscard]] double copy_seconds(std::uint32_t a, std::uint32_t b, std::size_t bytes) const noexcept;
  /// The (locked) record's rebuild cost in seconds when eviction may drop it for recompute
  /// now, else a negative value (Note [Choosing an eviction action], eviction.cpp).
  [[nodiscard]] double recompute_price(tensor_record const& rec) const noexcept;
  /// Whether a write-back of the record's copy in tier k may go to tier j: below k, reached
  /// directly (storage only from a host tier), not a compressed tier for a tensor not
  /// compressible, and large enough to hold it.
  [[nodiscard]] bool write_back_target(tensor_record const& rec, std::uint32_t k, std::uint32_t j) const noexcept;
  /// Seconds to copy the record from tier k to tier j and back (copy_seconds each way).
  [[nodiscard]] double round_trip_seconds(tensor_record const& rec, std::uint32_t k, std::uint32_t j) const noexcept;
  /// Whether the (locked) record's copy in tier k can leave it: clean, a tier below that
  /// takes it, or a recipe. False for a dirty, not compressible tensor above compressed tiers only.
  [[nodiscard]] bool can_leave_locked(tensor_record const& rec, std::uint32_t k) const noexcept;
  /// The cheapest round trip (down and back) of the record's copy in tier k to a tier a
  /// write-back could use; infinity when none.
  [[nodiscard]] double cheapest_round_trip(tensor_record const& rec, std::uint32_t k) const noexcept;
  /// True when tier k stores compressed copies (storage_engine::compressed).
  [[nodiscard]] bool compressed_tier(std::uint32_t k) const noexcept;
  /// Give `tenant` an entry in every tier's tenant list (Note [Tenants' shares of a tier],
  /// eviction.cpp) before its first tensor, so that counting its bytes never allocates.
  /// @throws std::bad_alloc (the tiers that got an entry keep it)
  void add_tenant(std::uint32_t tenant);
  /// Set (bytes > 0) or remove (0) `tenant`'s share of tier k. @throws std::out_of_range for
  /// an unknown tier, std::bad_alloc
  void set_tenant_share(std::uint32_t k, std::uint32_t tenant, std::size_t bytes);
  /// Set `tenant`'s priority and hard shares (tenant_options) in every tier. @throws std::bad_alloc
  void set_tenant_rank(std::uint32_t tenant, int priority, bool hard);
  /// Set (0: remove) `tenant`'s quota in every tier: a device tier's default share. @throws std::bad_alloc
  void set_tenant_quota(std::uint32_t tenant, std::size_t quota);
  /// The transfer planner's keep window: evictions in tier k pass over tensors whose
  /// forecast next use lies in [from, until] (needed before the horizon) while others can
  /// go (Note [The keep window], transfer_planner.cpp). until == 0: none.
  void set_keep_window(std::uint32_t k, tick from, tick until) noexcept
  {
    keep_tier_.store(k, std::memory_order_relaxed);
    keep_from_.store(from, std::memory_order_relaxed);
    keep_until_.store(until, std::memory_order_relaxed);
  }
  /// The diagnosis of a failed request for `bytes` in tier k (tier lock held): the message
  /// and, in `*figures` when given, its figures and cause. `busy_bytes`: victims other
  /// threads held; `attempts`/`waited_s`: the busy retries made (cause busy when non-zero).
  [[nodiscard]] std::string oom_message_locked(std::uint32_t k, std::size_t bytes, oom_figures* figures = nullptr,
                                               std::size_t busy_bytes = 0, std::uint32_t attempts = 0,
                                               double waited_s = 0.0, bool busy_pins = false) const;
  [[noreturn]] void throw_place_failure(std::uint32_t k, std::size_t bytes, place_failure const& why) const;
  void give_back_now(std::uint32_t k, block const& b) noexcept;
  /// One event that completes when every event of `sp` has (Note [Merging deferred blocks],
  /// tier.cpp): the single event itself, or one recorded on a join stream after waiting for
  /// all of them; `*on` receives its stream. Takes the events (released once waited for).
  [[nodiscard]] event_handle join_events(tier::deferred_span& sp, stream_handle* on) noexcept;

  // ---- copies and slots (copy_engine.cpp); the record is locked ----
  fill_result ensure_valid_locked(tensor_record& rec, std::uint32_t k, access_mode access, place_mode mode);
  status copy_locked(tensor_record& rec, std::uint32_t from, std::uint32_t to);
  // ---- storage copies (storage_copy.cpp); the record is locked ----
  /// A copy between a storage tier's file and a host-accessible tier: file I/O on the
  /// calling thread (Note [Storage copies are synchronous]). io_error on failure, the
  /// details in take_storage_failure(); the destination's bytes are then undefined.
  status storage_copy_locked(tensor_record& rec, std::uint32_t from, std::uint32_t to);
  /// True when a copy from tier `from` to tier `to` may be made directly: storage is
  /// reached only from and into host-accessible tiers (device <-> storage is staged).
  [[nodiscard]] bool direct_copy(std::uint32_t from, std::uint32_t to) const noexcept;
  /// The host-accessible tier a copy between `a` and `b` goes through when it may not be
  /// direct (the fastest that can hold `bytes`); throws out_of_memory when none can.
  [[nodiscard]] std::uint32_t staging_tier(std::uint32_t a, std::uint32_t b, std::size_t bytes) const;
  /// The details of the calling thread's last failed storage copy, as a storage_error
  /// whose message names `what` (the tensor and the tiers).
  [[noreturn]] static void throw_storage_failure(std::string const& what);
  /// Count a copy of `n` bytes from tier `from` to tier `to` in the pool's figures.
  void count_copy(std::uint64_t n, std::uint32_t from, std::uint32_t to) noexcept;
  /// Write the dirty copy in tier k back to a lower tier. @return false when it stays the
  /// only valid copy; then `*busy_bytes` (when given) grows by the busy victims that kept
  /// the lower tiers full.
  /// `wrote_to` (when given): the tier written to (unchanged when a lower copy was valid).
  /// Candidate tiers go by round-trip cost (action_prices::by_cost); compressed tiers are
  /// passed over for tensors not compressible (tensor_options::compressible).
  bool write_back_locked(tensor_record& rec, std::uint32_t k, place_mode mode, std::size_t* busy_bytes = nullptr,
                         status* copy_failed = nullptr, std::uint32_t* wrote_to = nullptr) noexcept;
  void vacate_locked(tensor_record& rec, std::uint32_t k) noexcept;
  /// As vacate_locked, for an unpinned copy whose block goes to `h` (it stays a live block
  /// of the tier) with the copy's `ready` and `users`, instead of a deferred free.
  void hand_off_locked(tensor_record& rec, std::uint32_t k, evict_handoff& h) noexcept;
  /// hand_off_locked's part under the tier lock (held): the policy forgets the victim, the
  /// figures count the block freed and placed again.
  void hand_off_told_locked(tier_state& ts, tensor_record& rec, std::uint32_t k) noexcept;
  /// Give up the record's heap array of copy slots once at most one copy is left (moving
  /// that copy's slot inline, its register entry with it): Note [Copy slots only where a
  /// copy is]. Called after a slot became absent; references to the record's slots taken
  /// before it are stale after it.
  void compact_slots_locked(tensor_record& rec) noexcept;
  void mark_others_stale_locked(tensor_record& rec, std::uint32_t k) noexcept;
  /// The record's early write-back is wasted (a write or a free came before the device copy left):
  /// counted in pool_stats::early_write_backs_wasted.
  void early_write_back_wasted(tensor_record& rec) noexcept;
  /// Vacate every slot of the (locked) record and mark it freed (the caller settles its accounts).
  void vacate_all_locked(tensor_record& rec) noexcept;
  void insert_into_policy(tensor_record& rec, std::uint32_t k, bool write) noexcept;
  /// insert_into_policy with tier k's lock held (and its accesses drained).
  void insert_into_policy_locked(tier_state& ts, tensor_record& rec, std::uint32_t k, bool write) noexcept;
  /// Undo insert_into_policy of a copy that never came to be: the policy forgets the tensor.
  void forget_in_policy(tensor_record& rec, std::uint32_t k) noexcept;
  void note_access(tensor_record& rec, std::uint32_t k, bool write) noexcept;
  void drain_accesses_locked(tier_state& ts) noexcept;
  void pin_locked(tensor_record& rec, std::uint32_t k) noexcept;
  void unpin_locked(tensor_record& rec, std::uint32_t k) noexcept;
  /// Add slot k of `rec` (pinned) to its tier's register of pinned copies, in shard `sh`
  /// (Note [A register of pinned copies], pool_fit.cpp). Under the record's lock.
  void register_pin_locked(tensor_record& rec, std::uint32_t k, std::size_t sh) const noexcept;
  /// Take slot k of `rec` out of that register, if it is in. Under the record's lock.
  void unregister_pin_locked(tensor_record& rec, std::uint32_t k) noexcept;
  /// The blocks of tier k's pinned copies (offsets), sorted; false when the register
  /// lost an entry (then the caller walks the records). Takes each shard's lock in turn.
  bool pinned_offsets(std::uint32_t k, std::vector<std::uint64_t>& out) const;

  // ---- prefetches and the prefetch queue (prefetch_queue.cpp) ----
  void serve_prefetches() noexcept;
  /// Queue a prefetch of the (locked) record. @return false when the queue was full (dropped).
  bool enqueue_prefetch(record_ref const& recp, std::uint32_t k);
  /// pool::prefetch of a record (`predicted`: from the predictor; a freed tensor is skipped).
  void prefetch_record(record_ref const& recp, std::uint32_t k, bool predicted);

  // ---- the transfer planner's mechanisms (transfer_planner.cpp); records unlocked ----
  /// Prefetch into tier k for a use at `use` (Note [Planned prefetches], transfer_planner.cpp).
  plan_outcome plan_prefetch(record_ref const& recp, std::uint32_t k, tick use, tick now,
                             plan_terms terms);
  /// Write the dirty copy in tier k back now, behind its last use, and keep it resident:
  /// its eviction later drops it without a write-back. @return true when a copy was issued
  bool write_back_early(record_ref const& recp, std::uint32_t k) noexcept;
  /// Clean ahead of the policy: write back early the dirty ones among the victims tier k's
  /// policy would give for `bytes` now (Note [Cleaning ahead of eviction]). @return copies issued
  std::size_t clean_ahead(std::uint32_t k, std::size_t bytes) noexcept;

  void host_wait_slot(copy_slot& slot, bool include_users) noexcept;
  /// acquire of a managed copy: queue its pages' migration to the device on `stream`.
  void steer_to_device(tensor_record& rec, copy_slot& slot, stream_handle stream) noexcept;
  [[nodiscard]] bool ready_complete(copy_slot& slot) noexcept;
  [[nodiscard]] stream_handle copy_stream(std::uint32_t to, std::uint32_t from) noexcept;
  /// True when a write-back queued now would start at once in device time: some d2h copy
  /// stream has reached the point `user` has reached (or the backend does not know device
  /// times). Note [Early write-backs on an idle link], transfer_planner.cpp.
  [[nodiscard]] bool write_back_link_idle(stream_handle user) const noexcept;
  /// Device time (ns) from the point `user` has reached until the h2d copy streams have
  /// run what is queued on them (0 when they are idle there); std::nullopt where the
  /// backend does not know device times ahead (Note [Copy-ins at the latest start], pool_impl.cpp).
  [[nodiscard]] std::optional<tick> copy_in_backlog(stream_handle user) const noexcept;
  /// The h2d copy streams, and the bytes queued on them so far (Note [Device times measured
  /// with events], device_timer.cpp).
  [[nodiscard]] std::span<stream_handle const> copy_in_streams() const noexcept { return h2d_; }
  [[nodiscard]] std::uint64_t copy_in_bytes_queued() const noexcept { return h2d_queued_.load(std::memory_order_relaxed); }
  /// True when prefetch requests wait in the queue (one relaxed load: the hit path's check).
  [[nodiscard]] bool prefetch_pending() const noexcept { return pq_size_.load(std::memory_order_relaxed) != 0; }
  /// close(): drop every queued request; later prefetches of freed records are dropped.
  void close_prefetch_queue() noexcept;

 private:
  void destroy_copy_streams() noexcept;

  backend* backend_{nullptr};
  event_pool* events_{nullptr};
  stream_registry* streams_{nullptr};
  pool_counters* counters_{nullptr};
  spin_mutex* table_mtx_{nullptr};
  record_table* table_{nullptr};
  std::vector<std::unique_ptr<tier_state>> tiers_;
  action_prices actions_{};  // pool_options::actions, resolved (set_actions)
  bool has_storage_{false};  // a storage tier is among tiers_: copies may need staging (storage_copy.cpp)
  std::vector<stream_handle> h2d_;
  std::vector<stream_handle> d2h_;
  std::atomic<std::uint64_t> h2d_queued_{0};  // bytes of the copies queued on h2d_
  stream_handle retire_{};  // collects the last uses of vacated blocks (deferred frees)
  std::vector<stream_handle> join_;  // join the events of merged deferred blocks (join_events)
  std::atomic<std::uint32_t> join_rr_{0};
  std::atomic<std::uint32_t> rr_{0};
  std::atomic<std::uint32_t> keep_tier_{0};
  std::atomic<tick> keep_from_{0};
  std::atomic<tick> keep_until_{0};  ///< 0: no keep window
  spin_mutex tenants_mtx_;                   ///< guards known_tenants_ (a leaf)
  std::vector<std::uint32_t> known_tenants_;  ///< tenants with an entry in every tier (add_tenant)

  // Prefetch queue: leaf lock; pq_size_ lets the hit path skip it with one load.
  static constexpr std::size_t kPrefetchQueueCap = 64;
  struct prefetch_request {
    tensor_id id{};  ///< looked up in the table when served (gone: freed meanwhile)
    std::uint32_t tier{0};
    float priority{0.0F};
    std::uint64_t seq{0};
  };
  std::mutex pq_mtx_;
  std::vector<prefetch_request> pq_;
  std::uint64_t pq_seq_{0};
  std::atomic<std::size_t> pq_size_{0};
  std::atomic<bool> pq_serving_{false};
  std::atomic<bool> closed_{false};  ///< close_prefetch_queue() ran
};

/// @brief Thrown by record_lock when this thread holds the record already (re-entry).
[[noreturn]] void throw_held(tensor_record const& r);  // copy_engine.cpp

/// @brief Hands a placement's in-flight count back when it goes out of scope
///        (migration_engine::settle_placing): after the copy entered the policy, or after
///        the block went back on a failure. Set it from the place_result (take()).
class placing_settle {
 public:
  placing_settle(migration_engine& e, std::uint32_t k, std::uint32_t tenant) noexcept : e_(e), k_(k), tenant_(tenant) {}
  placing_settle(placing_settle const&) = delete;
  placing_settle& operator=(placing_settle const&) = delete;
  ~placing_settle() { e_.settle_placing(k_, tenant_, bytes, unsettled); }
  void take(place_result const& got) noexcept
  {
    bytes = got.placing;
    unsettled = got.unsettled;
  }
  std::size_t bytes{0};      ///< place_result::placing
  std::size_t unsettled{0};  ///< place_result::unsettled

 private:
  migration_engine& e_;
  std::uint32_t k_;
  std::uint32_t tenant_;
};

}  // namespace tierpool::detail

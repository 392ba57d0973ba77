// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file telemetry.hpp
 * @brief Statistics of a pool: per tier and per direction (PyTorch DeviceStats style:
 *        each field says whether it is a COUNT or a SUM of bytes, and of what).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <tierpool/export.hpp>

#include <tierpool/tier.hpp>

namespace tierpool {

/// @brief A gauge with its peak and totals.
struct stat {
  std::int64_t current{0};    ///< now
  std::int64_t peak{0};       ///< highest `current` seen
  std::int64_t allocated{0};  ///< total added over the pool's life
  std::int64_t freed{0};      ///< total removed over the pool's life
};

/// @brief One tenant in one tier (tier_stats::tenants).
struct tier_tenant_stats {
  std::uint32_t tenant{0};         ///< the tenant (tensor_options::tenant)
  std::size_t resident_bytes{0};   ///< SUM: bytes of its tensors with a copy in the tier
  /// Its share of the tier (tier_options::tenant_shares; in a device tier without one, an
  /// equal split among the tenants with copies there); the capacity when shares do not apply
  std::size_t share_bytes{0};
  int priority{0};                 ///< its priority (tenant_options::priority)
  bool hard_share{false};          ///< its share is hard (tenant_options::hard_shares)
};

/// @brief Figures of one tier.
struct tier_stats {
  std::string name;                  ///< tier name
  tier_kind kind{tier_kind::device};  ///< memory behind the tier
  int numa_node{-1};                 ///< NUMA node the tier is bound to; -1: none
  /// The tier's eviction policy with every parameter, defaults included
  /// ("s3fifo:small_ratio=0.1,..."; a plug-in's spec as given): what TIERPOOL_POLICY set.
  std::string policy{};
  std::size_t capacity_bytes{0};     ///< SUM: budget of the tier
  std::size_t reserved_bytes{0};     ///< SUM: chunks obtained from the backend
  stat used_bytes{};                 ///< SUM: bytes of live copies in the tier
  std::size_t pinned_bytes{0};       ///< SUM: bytes of tensors with live leases, resident here
  std::size_t in_flight_bytes{0};    ///< SUM: bytes being copied into or out of the tier
  std::size_t largest_free_block{0}; ///< SUM: largest contiguous free range
  double fragmentation{0.0};         ///< 1 - largest_free / free
  std::uint64_t resident_tensors{0}; ///< COUNT: tensors with a valid copy here
  std::uint64_t evictions{0};        ///< COUNT: copies evicted from this tier
  std::uint64_t evictions_clean{0};  ///< COUNT: evictions that wrote nothing back
  std::uint64_t allocation_failures{0};  ///< COUNT: allocations the arena could not place
  /// COUNT: placements that evicted (or, with nothing to evict and no compaction that
  /// helped, failed) although the tier's free bytes covered the request: no free block
  /// held it (fragmentation)
  std::uint64_t fragmented_evictions{0};
  /// COUNT: eviction rounds of large requests that evicted one contiguous run of victims
  /// chosen by the ladder (pool_options::window_eviction_share)
  std::uint64_t window_evictions{0};
  /// COUNT: placements the out-of-memory ladder made room for by compacting the tier
  /// (pool_options::compaction) instead of evicting
  std::uint64_t compactions{0};
  /// COUNT: placements whose host waited for vacated blocks so that compaction could
  /// gather the room (the free and vacated bytes covered the request, no run of them did)
  std::uint64_t waits_to_compact{0};
  std::uint64_t compacted_tensors{0};  ///< COUNT: copies moved within the tier (the ladder and pool::compact)
  std::uint64_t compacted_bytes{0};    ///< SUM: their bytes
  std::uint64_t compaction_copy_failures{0};  ///< COUNT: moves whose copy failed (the copy stayed where it was)
  /// COUNT: blocks reused in stream order: vacated behind a copy still running, handed to
  /// the next tensor with that copy's event to wait on (no host wait)
  std::uint64_t reuses_in_order{0};
  /// COUNT: of those, blocks made of several vacated blocks and the free space between
  /// them, or of the head of a larger one (Note [Merging deferred blocks]): a request no
  /// single vacated block held, placed without the host waiting
  std::uint64_t merges_in_order{0};
  /// COUNT: victims an eviction passed over because their tenant was within its share while
  /// another was over its own (docs/chapters/tiers.md, "Tenants and quotas")
  std::uint64_t share_skips{0};
  /// COUNT: placements refused because a tenant with a hard share would pass it and could
  /// not evict enough of its own tensors (tenant_options::hard_shares)
  std::uint64_t share_refusals{0};
  /// Every tenant with copies in the tier or a share of it, by id
  std::vector<tier_tenant_stats> tenants{};
  // ---- storage tiers (tier_kind::storage) only; empty or zero for the others ----
  /// What holds the bytes: the file ("/tmp (unlinked temporary file)", a device), or
  /// "phantom" on a phantom-memory backend (no file; the backend times the copies).
  std::string storage_file{};
  std::string storage_engine{};  ///< "io_uring", "pread", or "phantom"
  bool storage_direct{false};    ///< the file is open with O_DIRECT
  std::uint64_t bytes_written{0};   ///< SUM: bytes copied into the tier (written to the file)
  std::uint64_t bytes_read{0};      ///< SUM: bytes copied out of the tier (read from the file)
  std::uint64_t write_failures{0};  ///< COUNT: writes that failed (the copy above stayed)
  std::uint64_t read_failures{0};   ///< COUNT: reads that failed (storage_error thrown)
  double write_seconds{0.0};        ///< SUM: time in writes (their verification included); 0 on phantom
  double read_seconds{0.0};         ///< SUM: time in reads; 0 on phantom
  /// A compressed tier (storage_engine::compressed) only: the host bytes its compressed
  /// copies take now, and the bytes of the tensors they hold (their ratio is the gain)
  std::uint64_t packed_bytes{0};
  std::uint64_t packed_logical_bytes{0};  ///< SUM: see packed_bytes
  std::uint64_t lossy_writes{0};          ///< COUNT: copies stored with q8 (tensor_options::lossy_compression)
  double max_relative_rms_error{0.0};     ///< the largest relative RMS error of a lossy copy so far
};

/// @brief One tenant's share of a pool (tensor_options::tenant).
struct tenant_stats {
  std::uint32_t tenant{0};        ///< the tenant
  std::uint64_t tensors{0};       ///< COUNT: its live tensors
  std::size_t live_bytes{0};      ///< SUM: bytes of its live tensors
  std::size_t peak_bytes{0};      ///< SUM: highest live_bytes seen
  std::size_t quota_bytes{0};     ///< its quota; 0 = none
  std::uint64_t quota_refusals{0};  ///< COUNT: allocations refused with quota_exceeded
};

/// @brief Figures of a whole pool (pool::stats()); SUM and COUNT fields are totals since it was built.
struct pool_stats {
  std::vector<tier_stats> tiers;          ///< fastest first
  std::vector<tenant_stats> tenants;      ///< every tenant that allocated or has a quota, by id
  /// The prefetch predictor with every parameter ("none", "sequence:depth=8", "plan:..."):
  /// what TIERPOOL_PREFETCH set.
  std::string prefetch{"none"};
  std::uint64_t tensors{0};               ///< COUNT: live tensors
  std::size_t tensor_bytes{0};            ///< SUM: bytes of live tensors
  std::uint64_t acquires{0};              ///< COUNT: leases taken (acquire and acquire_host calls that returned one)
  /// COUNT: acquire and acquire_host calls that threw after being counted as a hit or a miss
  /// (out_of_memory, backend_error, ...): hits + misses = acquires + acquire_failures.
  std::uint64_t acquire_failures{0};
  std::uint64_t hits{0};                  ///< COUNT: acquire calls that found the tensor resident
  std::uint64_t misses{0};                ///< COUNT: acquire calls that needed a copy-in
  /// COUNT: times a request let go of its locks and started over because other threads
  /// held the victims eviction needed (pool_options::contention).
  std::uint64_t busy_retries{0};
  // Copies between tiers. "Device tiers" are the device-accessible kinds (device,
  // managed); a copy between two device tiers, or between two host tiers (e.g. a
  // pinned_host -> host write-back), is neither h2d nor d2h, but is counted as up or down.
  std::size_t bytes_h2d{0};               ///< SUM: bytes copied into a device tier from a host tier
  std::size_t bytes_d2h{0};               ///< SUM: bytes copied out of a device tier into a host tier
  std::uint64_t copies_h2d{0};            ///< COUNT: copies counted in bytes_h2d
  std::uint64_t copies_d2h{0};            ///< COUNT: copies counted in bytes_d2h
  std::size_t bytes_up{0};                ///< SUM: bytes copied to a faster tier (lower index), any tiers
  std::size_t bytes_down{0};              ///< SUM: bytes copied to a slower tier (higher index), any tiers
  std::uint64_t copies_up{0};             ///< COUNT: copies counted in bytes_up
  std::uint64_t copies_down{0};           ///< COUNT: copies counted in bytes_down
  std::uint64_t prefetches{0};            ///< COUNT: prefetch requests that issued a copy (at once or from the queue)
  std::uint64_t prefetch_hits{0};         ///< COUNT: prefetched and complete before its acquire
  std::uint64_t prefetch_late{0};         ///< COUNT: prefetched but still in flight at acquire
  /// COUNT: prefetched copies used whose copy completed by the time the using stream reached
  /// the acquire, in device time (a backend that knows it: sim's virtual clock; else 0).
  /// On a virtual clock the host runs ahead, so prefetch_late (host time) says little.
  std::uint64_t prefetch_on_time_device{0};
  std::uint64_t prefetch_late_device{0};  ///< COUNT: the others: the stream waited for the copy
  double prefetch_lateness_seconds{0.0};  ///< SUM: how long those streams waited, device time
  /// SUM: for the prefetches on time, how long each copy sat complete before its use, device
  /// time: room held early (a planner that starts copies too soon shows here)
  double prefetch_lead_seconds{0.0};
  std::uint64_t prefetch_wasted_bytes{0};  ///< SUM: bytes of the prefetch_wasted copies (prefetched, evicted or freed unused)
  std::uint64_t prefetch_wasted{0};       ///< COUNT: prefetched and evicted or freed unused
  /// COUNT: prefetch requests that found no room without waiting and were queued
  std::uint64_t prefetch_queued{0};
  /// COUNT: prefetch requests dropped unserved: queue full, or when served the tensor was
  /// freed or already resident (e.g. an acquire copied it in first), or the copy failed
  std::uint64_t prefetch_dropped{0};
  /// COUNT: prefetch requests the predictor (pool_options::prefetch) made for tensors not
  /// resident that issued a copy or were queued (each also counts in `prefetches` or
  /// `prefetch_queued`, like a prefetch() call). Requests dropped at once (a live write
  /// lease, a full queue, a failed copy) count only in `prefetch_dropped`.
  std::uint64_t predicted_prefetches{0};
  /// The transfer planner (prefetch = "plan" or "oracle"; docs/chapters/policies.md): its
  /// phase ("learning", "planned", "fallback", "asleep": no schedule found in `history`
  /// accesses, device acquires not told for a while; "oracle"; empty without a planner), the period it
  /// learned (accesses; 0: none), how often it relearned, and accesses it predicted wrong.
  std::string planner_state{};
  std::uint64_t planner_period{0};        ///< COUNT
  std::uint64_t planner_relearns{0};      ///< COUNT
  std::uint64_t planner_mispredicted{0};  ///< COUNT
  /// COUNT: device acquires the planner was not told because another thread's planner step
  /// was under way (`plan` never waits for it; the oracle does). Threads that interleave
  /// their loops show here: a schedule it cannot learn from any one of them.
  std::uint64_t planner_busy_skips{0};
  /// Accesses whose compute the planner measured with timed events, where the backend does
  /// not know device times ahead (a GPU; Note [Device times measured with events]): 0 where
  /// it knows them (the sim's virtual clock), with `timing=off`, or before any completed.
  std::uint64_t planner_timed_accesses{0};  ///< COUNT
  /// The device compute of the planner's last period, as it learned it (known device times,
  /// or measured with events): what one iteration computes between its accesses. 0 without a
  /// period or before any compute was learned.
  double planner_period_compute_seconds{0.0};  ///< SECONDS
  /// `plan` measuring whether prefetching pays (Note [Measuring whether prefetching pays]):
  /// whether the period under way issues planned prefetches, how many periods were timed
  /// with and without them, and the running mean of each (or the last trial's; device time where
  /// the backend knows it, of the host's clock otherwise; 0: not timed yet).
  bool planner_prefetching{false};
  std::uint64_t planner_periods_prefetching{0};  ///< COUNT
  std::uint64_t planner_periods_without{0};      ///< COUNT
  double planner_period_seconds_prefetching{0.0};  ///< periods with planned prefetches: their running mean, seconds
  double planner_period_seconds_without{0.0};      ///< periods without: the same
  std::uint64_t planned_prefetches{0};    ///< COUNT: planned prefetches that issued a copy (also in `prefetches`)
  std::uint64_t planned_prefetch_bytes{0};  ///< SUM: their bytes
  /// COUNT: victims a planned prefetch passed over because their next use came first ("do no harm")
  std::uint64_t plan_harm_skips{0};
  std::uint64_t plan_no_room{0};          ///< COUNT: planned prefetches that found no harmless room (the walk stopped)
  /// COUNT: dirty tensors written back early, off the critical path
  std::uint64_t early_write_backs{0};
  std::uint64_t early_write_back_bytes{0};  ///< SUM: their bytes
  /// COUNT: early write-backs wasted: the tensor was written again or freed before its
  /// device copy left (eviction, demote, shrink), so the copy below was never used
  std::uint64_t early_write_backs_wasted{0};
  std::uint64_t early_write_back_wasted_bytes{0};  ///< SUM: their bytes
  /// COUNT: managed copies used in place by acquire whose pages were steered to the device
  /// (cudaMemPrefetchAsync on the lease's stream) instead of copied into a device tier
  std::uint64_t managed_prefetches{0};
  /// SUM: bytes of those managed ranges (they migrate over the link; not in bytes_h2d)
  std::size_t managed_prefetch_bytes{0};
  /// SUM: host time blocked inside pool calls: waits for deferred frees in the OOM ladder,
  /// acquire_host's wait for its copy, pool::synchronize, and fallback waits after failed
  /// event calls. prefetch() never waits.
  double stall_seconds{0.0};
  /// COUNT: requests that ran the low-memory callbacks (the ladder's last step before
  /// out_of_memory; docs/chapters/tiers.md)
  std::uint64_t low_memory_callbacks{0};
  /// COUNT: times the device's free memory fell below pool_options::pressure's floor and
  /// the pool shrank its device tier (pool::check_memory_pressure)
  std::uint64_t pressure_shrinks{0};
  /// SUM: chunk bytes given back to the device by those shrinks
  std::size_t pressure_released_bytes{0};
  /// COUNT: write leases of write-through tensors (tensor_options::write_through) whose
  /// device copy was written back at release
  std::uint64_t write_throughs{0};
  std::size_t write_through_bytes{0};     ///< SUM: their bytes
  /// COUNT: those that found no room below even after the ladder: the copy stays
  /// device-only until it is evicted or written again
  std::uint64_t write_through_misses{0};
  // Eviction actions (docs/chapters/tiers.md, "Eviction actions"): what happened to each
  // copy that left a tier. dropped + moved + compressed + recomputed = SUM(tier evictions).
  std::uint64_t evicted_dropped{0};     ///< COUNT: clean copies dropped (a valid copy was below)
  std::uint64_t evicted_moved{0};       ///< COUNT: written back into a lower, uncompressed tier
  std::uint64_t evicted_compressed{0};  ///< COUNT: written back into a compressed tier
  /// COUNT: dropped with no copy left, to be rebuilt by their recipe (pool::set_recompute)
  std::uint64_t evicted_recompute{0};
  std::size_t evicted_recompute_bytes{0};  ///< SUM: their bytes (write-backs saved)
  std::uint64_t rebuilds{0};            ///< COUNT: recipes run to rebuild a dropped tensor
  std::uint64_t rebuild_failures{0};    ///< COUNT: recipes that threw (the tensor stayed dropped)
  double rebuild_seconds{0.0};          ///< SUM: time in recipes (host recipes; device ones: enqueueing)
  std::uint64_t recipes{0};             ///< COUNT: live recipes now
  std::uint64_t recipes_ended{0};       ///< COUNT: recipes ended by a write, an input's free or write, or clear_recompute
  std::uint64_t discards{0};            ///< COUNT: pool::discard calls that marked a tensor's bytes dead
  /// COUNT: evictions of a discarded tensor's newest copy, dropped with nothing written back
  std::uint64_t evicted_discarded{0};
  std::uint64_t evicted_discarded_bytes{0};  ///< SUM: their bytes (the write-backs saved)
  /// The device was lost (tierpool::device_lost): only host copies remain
  bool device_lost{false};
  std::uint64_t lost_tensors{0};          ///< COUNT: tensors whose bytes went with it
};

/// @brief What bounds fit_report::fits_after_eviction.
enum class fit_limit : std::uint8_t {
  capacity,       ///< the tier's capacity itself: every byte counted is in use by copies that cannot go
  pinned,         ///< live leases hold space that would otherwise fit more
  fragmentation,  ///< the space is there, but not contiguous
  quota,          ///< the tenant's quota
};

/// @brief Lower-case name of a limit ("capacity", "pinned", "fragmentation", "quota").
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(fit_limit l) noexcept;

/**
 * @brief How many more tensors of one size a tier can take (pool::fits): the answer for
 *        sizing a batch. A snapshot: other threads may change it at once.
 *
 * "Now" counts the tier's free blocks and the chunks it may still obtain within its
 * capacity (as allocate grows: chunks of max(chunk_bytes, tensor)); "after eviction" also
 * counts the space of every copy eviction could take out (resident, no live lease, and
 * clean or with a tier below to write it back to) and of the blocks waiting for their
 * streams, merged with their free neighbours, as the arena would. Both assume the backend
 * has the memory for the growth and the tiers below have room for the write-backs.
 */
struct fit_report {
  std::string tier;                        ///< the tier's name
  std::size_t bytes{0};                    ///< the tensor size asked about
  std::size_t slot_bytes{0};               ///< what one such tensor takes in the tier (rounded up to its alignment)
  std::size_t fits_now{0};                 ///< COUNT that fit without evicting or waiting (and within the quota)
  std::size_t fits_after_eviction{0};      ///< COUNT that fit after evicting what can be (and within the quota)
  std::size_t largest_now{0};              ///< SUM: the largest tensor placeable now without evicting
  std::size_t largest_after_eviction{0};   ///< SUM: the largest tensor placeable after evicting
  std::size_t free_bytes{0};               ///< SUM: free in the tier's chunks
  std::size_t growable_bytes{0};           ///< SUM: capacity not yet obtained from the backend
  std::size_t evictable_bytes{0};          ///< SUM: copies eviction could take out now
  std::size_t pinned_bytes{0};             ///< SUM: copies held by live leases (not evictable)
  std::size_t in_flight_bytes{0};          ///< SUM: vacated or freed blocks whose streams have not got there yet
  std::size_t quota_left{0};               ///< SUM: the tenant's quota minus its live bytes; SIZE_MAX without a quota
  /// What bounds fits_after_eviction (to_string(limit) names it): the tenant's quota, live
  /// leases holding the rest, fragmentation (the space is there, not contiguous), or the
  /// capacity itself.
  fit_limit limit{fit_limit::capacity};
};

/**
 * @brief What pool::set_capacity did to one tier.
 *
 * Growing only raises the budget (chunks come as allocations need them). Shrinking gives
 * back whole chunks: first those already empty, then, emptiest first, chunks whose copies
 * it moves out (a clean copy is dropped when another tier holds the bytes; otherwise it is
 * written to a lower tier first). A chunk holding a leased copy, or one whose copies find
 * no room below, stays: the capacity then stops at what was reached (`reached` is false
 * and `why` says what held it).
 */
struct capacity_report {
  std::string tier;                 ///< the tier's name
  std::size_t requested_bytes{0};   ///< SUM: the capacity asked for, rounded down to the tier's alignment
  std::size_t previous_bytes{0};    ///< SUM: the capacity before
  std::size_t capacity_bytes{0};    ///< SUM: the capacity now: requested_bytes, or what shrinking reached
  std::size_t reserved_before{0};   ///< SUM: chunks held before
  std::size_t reserved_bytes{0};    ///< SUM: chunks held now (<= capacity_bytes)
  std::size_t released_bytes{0};    ///< SUM: chunks given back to the backend
  std::uint64_t moved_tensors{0};   ///< COUNT: copies moved out of the tier (dropped clean or written back)
  std::size_t moved_bytes{0};       ///< SUM: their bytes
  std::uint64_t written_back{0};    ///< COUNT: of those, copies written to a lower tier first
  bool reached{true};               ///< the capacity is requested_bytes
  std::string why{};                ///< when not reached: what held the rest
};

/// @brief What pool::compact did to one tier (Note [Compaction] in runtime/migration/compaction.cpp).
struct tier_compaction {
  std::string tier;                       ///< the tier's name
  std::uint64_t moved_tensors{0};         ///< COUNT: copies moved within the tier
  std::size_t moved_bytes{0};             ///< SUM: their bytes
  /// COUNT: copies that had room lower down but stayed: leased (a pointer a live lease
  /// holds never changes), still being filled or used by a stream, busy in another
  /// thread, or their copy failed
  std::uint64_t skipped_tensors{0};
  std::size_t free_bytes{0};              ///< SUM: free in the tier's chunks (a move changes nothing of it)
  std::size_t largest_free_before{0};     ///< SUM: largest free block before
  std::size_t largest_free_after{0};      ///< SUM: largest free block after
  double fragmentation_before{0.0};       ///< 1 - largest free / free, before
  double fragmentation_after{0.0};        ///< the same, after
};

/// @brief What pool::compact did: the tiers it compacted, fastest first, and the totals.
struct compact_result {
  std::vector<tier_compaction> tiers;     ///< one per tier compacted (storage tiers are not)
  std::uint64_t moved_tensors{0};         ///< COUNT: over the tiers
  std::size_t moved_bytes{0};             ///< SUM: over the tiers
};

}  // namespace tierpool

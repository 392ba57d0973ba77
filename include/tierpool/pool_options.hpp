// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file pool_options.hpp
 * @brief Create-info aggregates of the tiered pool (VMA style): tiers, policies, streams,
 *        backend choice, and the per-tensor options of pool::allocate.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/backend_factory.hpp>
#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/storage.hpp>
#include <tierpool/tier.hpp>
#include <tierpool/prefetch.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

class policy_registry;

/// @brief One tier of a pool, fastest first in pool_options::tiers.
struct tier_options {
  tier_kind kind{tier_kind::device};  ///< memory behind the tier
  int numa_node{-1};                  ///< host kinds: bind to this NUMA node (-1: none)
  /// Capacity in bytes; 0 = the default for the kind (device: the device's memory; host
  /// kinds: a share of the node's memory). TIERPOOL_DEVICE_BYTES replaces it for device tiers.
  std::size_t capacity_bytes{0};
  /// Bytes requested from the backend at a time; 0 = min(capacity, 64 MiB).
  std::size_t chunk_bytes{0};
  /// Eviction policy spec for this tier ("lru", "s3fifo:small_ratio=0.1"); empty = pool_options::policy.
  std::string policy{};
  std::string name{};  ///< for messages and statistics; empty = the kind's name
  /// Tenants' shares of this tier in bytes (tensor_options::tenant -> share; 0: none): an
  /// eviction here takes from the tenants over their share first and passes over the
  /// tensors of those within it (docs/chapters/tiers.md, "Tenants and quotas"). In a device
  /// tier a tenant without a share has an equal split of the capacity among the tenants
  /// with copies there. Shares are soft: no request is refused for one. Changeable later
  /// with pool::set_tenant_share.
  std::map<std::uint32_t, std::size_t> tenant_shares{};
  /// tier_kind::storage only: the file, engine and checks (include/tierpool/storage.hpp).
  /// A storage tier needs capacity_bytes, and sits below every host tier.
  storage_options storage{};
};

/// @brief How a lease uses a tensor's bytes.
enum class access_mode : std::uint8_t {
  read,           ///< reads only: lower copies stay valid
  read_write,     ///< reads and writes: lower copies become stale
  write_discard,  ///< overwrites every byte: no copy-in is needed, lower copies become stale
};

/**
 * @brief How a tenant (tensor_options::tenant) stands against the others in the tiers
 *        (pool_options::tenants, pool::set_tenant; docs/chapters/tiers.md, "Tenants and
 *        quotas"). The defaults are every tenant's until set: soft shares, one priority.
 */
struct tenant_options {
  /// Higher keeps its tensors longer: when no tenant is over its share, a tenant that needs
  /// room takes it from tenants of lower priority first, and never from the tensors a tenant
  /// of higher priority holds within its share (it spills to a lower tier instead).
  int priority{0};
  /// Its shares are hard, in every tier where it has one: a limit (its copies there never
  /// pass the share; a placement that would evicts its own tensors, else goes to a lower
  /// tier or fails with oom_cause::share) and a reservation (other tenants never evict
  /// what it holds within the share).
  bool hard_shares{false};
};

/**
 * @brief Outside pressure on the device (pool_options::pressure): other allocators share it
 *        (PyTorch's caching allocator, NCCL, other processes), and the pool gives memory
 *        back when the device runs low.
 *
 * With `device_free_floor` set, a thread of the pool's own checks the device's free
 * memory (backend::device_memory_info) every `interval_ms`; when it is below the floor,
 * the pool shrinks its first device tier by the shortfall (pool::set_capacity: whole
 * chunks, copies moved down, never a byte lost) and counts it in
 * pool_stats::pressure_shrinks. pool::check_memory_pressure() runs one check by hand.
 * The tier does not grow back by itself: pool::set_capacity does that.
 */
struct pressure_options {
  std::size_t device_free_floor{0};  ///< bytes; 0: no check
  std::uint32_t interval_ms{100};    ///< period of the check; 0: only pool::check_memory_pressure()
};

/**
 * @brief Live figures a pool publishes for `tierpool top` and tierpool::scan_published_pools
 *        (include/tierpool/monitor.hpp, docs/chapters/monitoring.md).
 *
 * The pool keeps a small shared-memory segment, `/dev/shm/tierpool.PID.N`, refreshed by
 * a thread of its own every `interval_ms` (the pool's operations never write it) and on
 * pool::publish(); it is removed when the pool closes. Its pages are reserved when it is
 * made, so a full /dev/shm is an error then, never a crash later. Publishing is best
 * effort: a pool whose segment cannot be made works as usual (pool::stats_segment() is
 * then empty, pool::publishing_error() says why).
 *
 * The segment names the program's tensors, tiers and pool: by default only its owner (and
 * root) may read it (mode 0600). `group` lets a monitoring group read it too.
 */
struct publish_options {
  bool enabled{true};             ///< publish at all; TIERPOOL_PUBLISH=0 / 1 wins
  std::string name{};             ///< shown by `tierpool top`; empty = the program's name
  std::uint32_t interval_ms{500}; ///< refresh period; 0 = only on pool::publish()
  /// A group (name or number) that may read the segment too: mode 0640, owned by that
  /// group (the process must be a member, or root); empty = owner only (0600). A group
  /// that does not exist or cannot be given is a publishing error. TIERPOOL_PUBLISH_GROUP wins.
  std::string group{};
};

/**
 * @brief How long a request keeps trying while the only thing between it and room is
 *        other threads' work on the tensors eviction needs (docs/chapters/tiers.md,
 *        "Out of memory"; Note [Busy victims are waited for, not failed on]).
 *
 * A victim another thread is working on (acquiring, releasing, writing back) cannot be
 * evicted at that instant. The request then lets go of its locks, backs off (a yield,
 * then sleeps of 20 us doubling to 1 ms) and tries again, until one of these bounds is
 * reached; only then does it throw out_of_memory with cause `busy`.
 */
struct contention_options {
  std::uint32_t busy_timeout_ms{2000};  ///< give up after this long (0: after the first attempt)
  std::uint32_t busy_attempts{100000};  ///< or after this many attempts (at least 1)
};

/**
 * @brief Which eviction actions a pool chooses among, and the figures it prices them with
 *        (pool_options::actions; docs/chapters/tiers.md, "Eviction actions").
 */
struct action_options {
  /// Drop a tensor with a recipe (pool::set_recompute) when it leaves its last copy and
  /// rebuilding it costs less than writing it back and reading it again, or when no lower
  /// tier has room. false: recipes are kept but never used (a tensor is always written back).
  bool recompute{true};
  /// Order a write-back's candidate lower tiers by what a round trip through each costs
  /// (transfer and, for a compressed tier, coding) instead of fastest first.
  bool by_cost{true};
  /// Bandwidths, bytes per second, used to price copies between a device tier and a host
  /// tier (each way) and between a host tier and a storage file (each way); 0: the sim
  /// backend's link models where it is the backend, else 25e9 (PCIe 4 x16) for device <->
  /// host and 5e9 / 7e9 (NVMe write / read) for storage. A compressed tier is priced by
  /// its codec's throughput as measured on the tensors it stored so far (before the first,
  /// the codec's nominal figures).
  double h2d_bytes_per_s{0.0};
  double d2h_bytes_per_s{0.0};          ///< see h2d_bytes_per_s
  double storage_write_bytes_per_s{0.0};  ///< see h2d_bytes_per_s
  double storage_read_bytes_per_s{0.0};   ///< see h2d_bytes_per_s
};

/**
 * @brief Options of a tiered pool.
 *
 * Defaults come from the device and the topology.
 *
 * Environment rule: with `read_environment` (the default) a set, non-empty TIERPOOL_*
 * variable **always wins** over the corresponding field, whether the caller set it or
 * left the default (an aggregate cannot tell), like CUDA_VISIBLE_DEVICES; set
 * `read_environment = false` to ignore every variable.
 *  - TIERPOOL_BACKEND replaces `backend` (ignored when `backend_object` is given: an object
 *    is not an option the variable can name);
 *  - TIERPOOL_DEVICE_BYTES replaces `capacity_bytes` of every `device` tier (0 or not);
 *  - TIERPOOL_POLICY replaces `policy` and every `tier_options::policy`;
 *  - TIERPOOL_PREFETCH replaces `prefetch`;
 *  - TIERPOOL_TRACE replaces `trace_path`;
 *  - TIERPOOL_PUBLISH (0 or 1) replaces `publish.enabled`;
 *  - TIERPOOL_PUBLISH_GROUP replaces `publish.group`.
 * An invalid value throws tierpool::logic_error naming the variable.
 */
struct pool_options {
  /// Tiers, fastest first. Empty = device, pinned_host, host (device capacity from the
  /// backend; see docs/chapters/tiers.md).
  std::vector<tier_options> tiers{};
  std::string policy{"lru"};            ///< default eviction policy spec of every tier
  /// Prefetch predictor spec ("none", "sequence:depth=8", a plug-in's "lib.so:name"): told
  /// of every device acquire, it names tensors to prefetch (include/tierpool/prefetch.hpp).
  std::string prefetch{"none"};
  /// The program's own schedule, for the `oracle` planner (prefetch = "oracle"; required
  /// there, ignored otherwise): include/tierpool/prefetch.hpp. `tierpool replay` gives the
  /// trace's true future.
  std::shared_ptr<schedule_source> schedule{};
  /// Record every allocate, free, access, release and prefetch to this trace file (text,
  /// or binary for a `.tpb` name; include/tierpool/trace.hpp). TIERPOOL_TRACE wins.
  std::string trace_path{};
  std::uint32_t h2d_streams{2};         ///< copy streams host -> device (copy-in, prefetch)
  std::uint32_t d2h_streams{1};         ///< copy streams device -> host (write-back)
  backend_choice backend{backend_choice::automatic};  ///< which backend to build
  sim_options sim{};                    ///< options of the sim backend when it is chosen
  int device{0};                        ///< device ordinal: the CUDA device, or the simulated device (select_backend)
  /// Use this backend instead of building one (tests, replay). Shared with the caller.
  std::shared_ptr<tierpool::backend> backend_object{};
  /// Registry to create policies from; null = the built-in policies.
  policy_registry const* registry{nullptr};
  /// Per-tenant quotas: the most bytes of live tensors a tenant (tensor_options::tenant)
  /// may hold across all tiers; an allocation beyond it throws tierpool::quota_exceeded.
  /// Tenants not listed have none. Changeable later with pool::set_quota.
  std::map<std::uint32_t, std::size_t> tenant_quotas{};
  /// Tenants' standing against each other in every tier: priority and hard shares
  /// (tenant_options). Tenants not listed have the defaults. Changeable later with
  /// pool::set_tenant.
  std::map<std::uint32_t, tenant_options> tenants{};
  contention_options contention{};      ///< busy retries of a request (see contention_options)
  /// Compaction in the out-of-memory ladder: when a tier's free bytes cover a request but no
  /// free block holds it, move unleased, idle copies within the tier (device to device, or
  /// within a host tier) so that it fits, before evicting anything (docs/chapters/tiers.md,
  /// "Compaction"). The host waits for those copies. Storage tiers are never compacted.
  /// pool::compact works either way. Off by default: the host would wait for copies inside
  /// a request, and which tensors stay resident changes (the replay figures recorded for
  /// the policies are without it); turn it on for workloads of many distinct sizes, or a
  /// device tier near or above the program's peak. With it, the ladder also waits for
  /// vacated blocks when they and the free bytes cover a request that no run of them holds
  /// (Note [Compacting around vacated blocks]). TIERPOOL_COMPACTION=0/1 wins when read.
  bool compaction{false};
  /// Compaction as the last resort: a request about to fail with oom_cause::fragmentation
  /// (the free bytes cover it, no free block holds it, and eviction could not make room:
  /// leased tensors, or dirty ones with no room below) compacts the tier once before
  /// it fails, even with `compaction` off. Costs nothing where the ladder succeeds; on by
  /// default (docs/chapters/tiers.md, "Compaction").
  bool compact_before_failing{true};
  /// Window eviction: a request for at least 1/window_eviction_share of a tier that must
  /// evict (and is at least 1 MiB) takes one contiguous run of victims, chosen by the policy's order and the tier's
  /// layout, instead of the policy's first victims wherever they lie (whose blocks may not
  /// make room for it: the ladder then evicted again and again). 0 turns it off. Storage
  /// tiers never do it. See docs/chapters/tiers.md, "Window eviction".
  std::size_t window_eviction_share{64};
  /// Eviction actions beyond moving a copy down: recompute, and the order of the tiers a
  /// write-back may go to (action_options).
  action_options actions{};
  bool read_environment{true};          ///< honour the TIERPOOL_* variables (they win over the fields)
  /// With read_environment: variables this pool does not read, by name ("TIERPOOL_POLICY"),
  /// for a program whose own flag or logic decides that field (its flag must win over the
  /// variable); every other variable still applies. A program that reads a variable itself
  /// names it here instead of turning read_environment off, which would drop them all.
  /// An unknown name throws tierpool::logic_error.
  std::vector<std::string> ignore_environment{};
  fallback_notice notice{fallback_notice::stderr_line};  ///< announce a fallback to sim, a stopped trace, no publishing (log.hpp)
  publish_options publish{};            ///< live figures for `tierpool top`
  pressure_options pressure{};          ///< give device memory back when the device runs low
};

/// @brief Per-tensor options of pool::allocate.
struct tensor_options {
  std::string name{};                   ///< for messages, statistics and traces
  float priority{0.0F};                 ///< hint in [0, 1]; higher = keep resident longer
  std::uint32_t tenant{0};              ///< owner for quotas and statistics
  std::optional<tier_id> preferred_tier{};  ///< where to place it first; default: fastest with room
  /// Forecast of its first use, for policies that use one (as pool::set_next_use, which
  /// cannot reach the policies before allocate places the tensor).
  std::optional<tick> next_use{};
  /// Keep a host copy valid: when a device lease that may write ends, the pool writes the
  /// bytes back to the next lower tier (pinned host in the default pool) on its d2h stream,
  /// after the lease's work, instead of when the copy is evicted. For tensors that must
  /// survive the device (a sticky CUDA error loses every device-only copy): they lose at
  /// most the write of a lease not yet written back.
  /// Costs one d2h copy per write lease; eviction of such a tensor writes nothing back.
  bool write_through{false};
  /// May be stored lossy: in a compressed tier whose codec is codec_kind::q8_block
  /// (storage_options::codec) its copy is 8-bit block quantized (float32 data, relative RMS
  /// error about 0.5-1.5 %: activations) instead of lz4. Never applied to a tensor without it.
  bool lossy_compression{false};
  /// May be stored in a compressed tier at all (storage_engine::compressed; losslessly
  /// unless lossy_compression). false: its write-backs pass over compressed tiers (data
  /// that does not compress, or that must never be decoded on the way back).
  bool compressible{true};
};

/**
 * @brief What a recompute function is given (pool::set_recompute): where to write the
 *        tensor's bytes and where its inputs' bytes are.
 */
struct recompute_call {
  tensor_id id{};                     ///< the tensor being rebuilt
  void* out{nullptr};                 ///< its bytes, to be written in full (`bytes` bytes)
  std::size_t bytes{0};               ///< its size
  /// The inputs' bytes (read only), in recompute_options::inputs order, in the same kind
  /// of memory as `out`
  std::vector<void const*> inputs{};
  tier_id tier{};                     ///< the tier `out` is in
  /// on_device recipes: the stream to enqueue the work on (the lease that asked for the
  /// tensor, and every later use, is ordered after it); host recipes: the null handle
  stream_handle stream{};
};

/**
 * @brief How to rebuild a tensor instead of keeping its bytes (pool::set_recompute;
 *        docs/chapters/tiers.md, "Eviction actions"): activation checkpointing.
 */
struct recompute_options {
  /// Writes every byte of the tensor from its inputs. Called on the thread whose acquire
  /// (or acquire_host) needs the tensor, with no pool lock held. An exception from it
  /// propagates out of that call; the tensor stays dropped and can be asked for again.
  std::function<void(recompute_call const&)> fn{};
  /// Tensors of the same pool that fn reads (at most 64). While the recipe lives, none of
  /// them is dropped for recompute itself, and freeing one, or a lease on one that may
  /// write, first rebuilds this tensor if it is dropped and then ends the recipe.
  std::vector<tensor_id> inputs{};
  /// fn works on device memory: it gets device-tier pointers and a stream (enqueue work,
  /// do not wait). false: fn runs on the host with host pointers, and an acquire copies
  /// the result to the device as usual.
  bool on_device{false};
  /// Declared cost of one rebuild in seconds; < 0: measured (the mean of the rebuilds so
  /// far; 0, so always worth trying, until the first).
  double cost_seconds{-1.0};
};


}  // namespace tierpool

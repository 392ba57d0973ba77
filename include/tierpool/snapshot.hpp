// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file snapshot.hpp
 * @brief Where a pool's tensors live: one tensor's residency (pool::residency) and the whole
 *        pool at one moment (pool::snapshot): every tensor's copies and state, every tier's
 *        blocks; their JSON form (versioned), reading it back, and a layout plot over a
 *        series of snapshots (what `tierpool snapshot view` draws).
 *
 * Like PyTorch's torch.cuda.memory._snapshot() and its memory_viz, for a tiered pool. The
 * contract: docs/chapters/monitoring.md ("Residency and snapshots").
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/export.hpp>
#include <tierpool/tier.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

/// @brief A snapshot file is unreadable, not JSON, of another schema version, or malformed.
struct TIERPOOL_EXPORT snapshot_error : logic_error {
  using logic_error::logic_error;
};

/**
 * @brief One tier's copy of a tensor: a block the tensor holds there (tensor_residency::copies).
 *
 * In this pool every valid copy holds the newest bytes; a stale copy is an outdated block
 * kept so that a later copy or write-back reuses it.
 */
struct tensor_copy {
  tier_id tier{};            ///< the tier
  bool valid{false};         ///< holds the newest bytes (false: stale)
  /// Valid, a slower tier exists and none holds a valid copy: its bytes are newer than
  /// every copy below it, so evicting it (with no faster valid copy) needs a write-back.
  bool dirty{false};
  /// The copy that fills this block (a copy in, a prefetch, a write-back from above) has
  /// not completed yet: its bytes arrive stream-ordered.
  bool in_flight{false};
  std::uint32_t leases{0};        ///< live leases on this copy (it cannot move while > 0)
  std::uint64_t offset{0};        ///< the block's offset in the tier (tier_snapshot::blocks)
  std::uint64_t block_bytes{0};   ///< the block's size: the tensor's bytes rounded up to the tier's alignment
};

/**
 * @brief Where one tensor lives and in what state, at one moment (pool::residency).
 *
 * A snapshot, not a lock: by the time the caller reads it, other threads may have moved
 * the tensor. Its figures are mutually consistent (read under the tensor's lock).
 */
struct tensor_residency {
  tensor_id id{};           ///< the tensor
  std::size_t bytes{0};     ///< its size as requested
  /// The fastest tier holding a valid copy (always one for a live tensor): where an
  /// acquire_host or acquire finds the newest bytes without a copy from below.
  tier_id home{};
  std::vector<tensor_copy> copies{};  ///< every tier holding a block of it, fastest first
  bool dirty{false};            ///< the home copy is dirty (tensor_copy::dirty)
  /// A copy into one of its blocks is running, or a prefetch of it waits in the queue.
  bool in_flight{false};
  bool prefetch_queued{false};  ///< a prefetch of it waits in the pool's prefetch queue (no room yet)
  bool prefetched{false};       ///< a prefetch brought it in and no acquire has used it since
  /// Dropped for recompute: no tier holds its bytes (copies is empty or stale only, home is
  /// meaningless); its recipe rebuilds it on next use (pool::set_recompute)
  bool dropped_for_recompute{false};
  /// Its bytes were discarded (pool::discard): reads are refused until a write_discard
  /// lease, and its copies are dropped when evicted (copies may be empty, home meaningless)
  bool discarded{false};
  bool recomputable{false};     ///< it has a recipe (pool::set_recompute)
  std::uint32_t leases{0};      ///< live leases (acquire, acquire_host), all tiers
  std::uint32_t write_leases{0};  ///< of which may write
  std::uint32_t access_count{0};  ///< accesses so far (allocation and every acquire)
  /// Backend clock (tick) of its last acquire, or of its allocation when never acquired.
  /// On a hit the clock is the one the thread last read, at most 63 of its hits ago
  /// (docs/chapters/monitoring.md); order two tensors used back to back by access_count.
  tick last_use{0};

  /// @brief True while a lease lives (the tensor is pinned: neither moved nor evicted).
  [[nodiscard]] bool leased() const noexcept { return leases != 0; }
  /// @brief Its copy in tier `t`, or null when it holds no block there.
  [[nodiscard]] tensor_copy const* copy_in(tier_id t) const noexcept
  {
    for (tensor_copy const& c : copies) {
      if (c.tier == t) { return &c; }
    }
    return nullptr;
  }
  /// @brief True when tier `t` holds a valid copy (the newest bytes).
  [[nodiscard]] bool valid_in(tier_id t) const noexcept
  {
    tensor_copy const* c = copy_in(t);
    return c != nullptr && c->valid;
  }
};

/// @brief One tensor in a snapshot: its residency, name and owner.
struct tensor_snapshot : tensor_residency {
  std::string name{};          ///< tensor_options::name ("" when unnamed)
  std::uint32_t tenant{0};     ///< tensor_options::tenant
  float priority{0.0F};        ///< tensor_options::priority
  /// Its handle is gone while a lease still lives: it is freed when the last lease ends.
  bool free_pending{false};
};

/// @brief What a block of a tier holds (block_snapshot::state).
enum class block_state : std::uint8_t {
  free,      ///< free: allocatable now
  used,      ///< a tensor's copy (block_snapshot::tensor)
  pending,   ///< vacated, returned once the work that last used it completes (a deferred free)
  released,  ///< a chunk given back to the backend (its range holds no memory now)
};

/// @brief Lower-case name of a block state ("free", "used", "pending", "released").
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(block_state s) noexcept;

/// @brief One block of a tier: the blocks of a tier tile each of its chunks.
struct block_snapshot {
  std::uint64_t offset{0};        ///< offset in the tier (chunks are laid end to end)
  std::uint64_t bytes{0};         ///< size
  std::uint32_t chunk{0};         ///< the chunk holding it (tier_snapshot::chunks)
  std::uint64_t chunk_offset{0};  ///< offset inside its chunk
  block_state state{block_state::free};  ///< what it holds
  tensor_id tensor{};             ///< block_state::used: the tensor whose copy it is (else 0)
};

/// @brief One chunk (backend allocation) of a tier.
struct chunk_snapshot {
  std::uint64_t offset{0};  ///< where it starts in the tier's offsets
  std::uint64_t bytes{0};   ///< its size
  bool released{false};     ///< given back to the backend (a placeholder until the tier grows again)
};

/// @brief One tier in a snapshot: its figures and its layout.
struct tier_snapshot {
  tier_id tier{};                      ///< its index
  std::string name{};                  ///< its name
  tier_kind kind{tier_kind::device};   ///< its memory kind
  std::uint64_t capacity_bytes{0};     ///< budget
  std::uint64_t reserved_bytes{0};     ///< SUM of live chunk sizes
  std::uint64_t used_bytes{0};         ///< SUM of used blocks (== pool_stats' tier used_bytes.current)
  std::uint64_t pending_bytes{0};      ///< SUM of pending blocks (pool_stats' in_flight_bytes)
  std::uint64_t free_bytes{0};         ///< SUM of free blocks (== fit_report::free_bytes)
  std::uint64_t largest_free_block{0}; ///< bytes
  std::uint64_t pinned_bytes{0};       ///< bytes of tensors with a live lease on their copy here
  std::vector<chunk_snapshot> chunks{};  ///< in offset order
  std::vector<block_snapshot> blocks{};  ///< every block of every chunk, in offset order

  /// @brief External fragmentation of the free space: 1 - largest free block / free bytes (0 when none is free).
  [[nodiscard]] double fragmentation() const noexcept
  {
    return free_bytes == 0 ? 0.0
                           : 1.0 - static_cast<double>(largest_free_block) / static_cast<double>(free_bytes);
  }
};

/// @brief Version of the snapshot JSON schema written by to_json (the "version" field).
inline constexpr std::uint32_t snapshot_schema_version = 1;

/**
 * @brief A pool at one moment (pool::snapshot): every live tensor and every tier's blocks.
 *
 * The tensors and the blocks agree: each copy of each tensor is one used block of its tier
 * (same offset and size), each used block names its tensor, and the used, pending and free
 * blocks tile the tier's chunks.
 */
struct pool_snapshot {
  std::uint32_t version{snapshot_schema_version};  ///< schema version (of the file it was read from)
  tick time{0};                                    ///< backend clock when it was taken
  std::string backend{};                           ///< backend name ("sim", "cuda")
  std::vector<tensor_snapshot> tensors{};          ///< every live tensor, in id order
  std::vector<tier_snapshot> tiers{};              ///< every tier, fastest first

  /// @brief The tensor with id `id`, or null.
  [[nodiscard]] tensor_snapshot const* find(tensor_id id) const noexcept
  {
    for (tensor_snapshot const& t : tensors) {
      if (t.id == id) { return &t; }
    }
    return nullptr;
  }
};

/**
 * @brief The snapshot as one JSON object (schema: docs/chapters/monitoring.md, "The
 *        snapshot file"): `{"version": 1, "time": ..., "backend": ..., "tensors": [...],
 *        "tiers": [...]}`; read back with parse_snapshot().
 * @throws std::bad_alloc.
 */
[[nodiscard]] TIERPOOL_EXPORT std::string to_json(pool_snapshot const& snapshot);

/**
 * @brief Read a snapshot back from its JSON (to_json, pool::snapshot_json).
 * @param json   The text.
 * @param source Its name in messages (a file name), e.g. "run.json".
 * @throws tierpool::snapshot_error when it is not JSON, its version is not
 *         snapshot_schema_version, or a field is missing or of the wrong type (naming it).
 */
[[nodiscard]] TIERPOOL_EXPORT pool_snapshot parse_snapshot(std::string_view json, std::string_view source = "snapshot");

/**
 * @brief Read a snapshot file.
 * @throws tierpool::snapshot_error when the file cannot be read, or as parse_snapshot().
 */
[[nodiscard]] TIERPOOL_EXPORT pool_snapshot read_snapshot(std::string const& path);

/**
 * @brief Write to_json(snapshot) to a file (replacing it).
 * @throws tierpool::snapshot_error when the file cannot be written.
 */
TIERPOOL_EXPORT void write_snapshot(pool_snapshot const& snapshot, std::string const& path);

/**
 * @brief A self-contained SVG of each tier's layout over a series of snapshots, as
 *        PyTorch's memory_viz draws one device: one panel per tier, time (the snapshots in
 *        order) across, the tier's offsets down; each used block a bar coloured by its
 *        tensor (the same colour in every snapshot), pending blocks hatched grey, released
 *        chunks light grey, free space blank. Tiers are matched by index.
 * @param series The snapshots, oldest first (one is allowed).
 * @param title  The plot's title.
 * @throws tierpool::logic_error when `series` is empty.
 */
[[nodiscard]] TIERPOOL_EXPORT std::string snapshot_svg(std::span<pool_snapshot const> series, std::string_view title);

}  // namespace tierpool

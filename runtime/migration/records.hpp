// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file records.hpp
 * @brief Internal: what a pool knows about each tensor — its record (one copy slot per
 *        tier, pins, forecast), the table of live records, and each tier's state (memory,
 *        policy, buffered hits, figures). The data the migration engine moves.
 *
 * Locks: tensor_record::mtx guards a record (before any tier lock); tier_state's mutex is
 * tier::mutex(); access_shard::busy and the record table's spin lock (held by the pool)
 * are leaves. See Note [Lock order of the pool] in core/detail/pool_impl.cpp.
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
#include <thread>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/detail/flat_table.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/pool_options.hpp>

#include "streams/stream_registry.hpp"
#include "tiers/tier.hpp"
#include "util/record_slab.hpp"
#include "util/spin_mutex.hpp"
#include "util/thread_shard.hpp"

namespace tierpool::detail {

struct tensor_record;

/**
 * @brief The pool a record belongs to, as the migration layer sees it: the one call it
 *        needs from above, when the last lock of a record whose handle died is let go.
 */
class record_owner {
 public:
  /// The record is locked by this thread, its handle is gone (free_when_unpinned, keep_self
  /// set) and no lease or paused request holds it: free its slots (recording the free when
  /// tracing) and move the references that kept it and the pool alive into the
  /// out-parameters (the caller drops them after unlocking).
  virtual void finish_dropped_locked(tensor_record& rec, std::shared_ptr<record_owner>& keep_alive,
                                     std::shared_ptr<tensor_record>& keep_self) noexcept = 0;

 protected:
  record_owner() = default;
  record_owner(record_owner const&) = default;
  record_owner& operator=(record_owner const&) = default;
  ~record_owner() = default;
};

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
  /// In its tier's register of pinned copies (Note [A register of pinned copies],
  /// pool_fit.cpp); pin_shard names the shard. Both guarded by the record's mutex.
  bool pin_registered{false};
  std::uint8_t pin_shard{0};
  /// Position in that shard's entries; guarded by the shard's lock (a removal moves
  /// another record's entry and rewrites its index).
  std::uint32_t pin_index{0};
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

/// @brief One pinned copy in its tier's register: its block, and its slot (whose pin_index
///        says where the entry is).
struct pinned_entry {
  copy_slot* owner{nullptr};
  std::uint64_t offset{0};
  std::uint64_t size{0};
};

/// @brief A shard of a tier's register of pinned copies (Note [A register of pinned copies]).
struct alignas(128) pin_register_shard {
  spin_mutex mtx;
  std::vector<pinned_entry> entries;  ///< guarded by mtx
};

/// @brief A shard's share of a tier's pinned bytes (may be negative: pin here, unpin there).
struct alignas(128) pinned_shard {
  std::atomic<std::int64_t> bytes{0};
};

/// @brief What the pool knows about one tensor. Guarded by `mtx` except the constants.
/// Aligned so that records of tensors used by different threads share no cache lines.
struct alignas(128) tensor_record {
  std::mutex mtx;
  record_owner* owner{nullptr};   ///< constant: the pool
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
  bool lost{false};               ///< the device was lost with its only valid copy there (device_lost)
  /// Constant: opts.preferred_tier names a device-accessible tier (acquire may use it in
  /// place of the device tier). Lets a miss skip the options' cache line.
  bool prefers_device_accessible{false};
  slot_array slots;               ///< one per tier; invariant: >= 1 valid while live
  tensor_options opts{};          ///< constant
  /// Set when the handle dies while leased or paused (the record stays in the table until
  /// the deferred free): keep the pool and this record alive for the leases, which hold raw
  /// pointers (no shared refcount on the hit path); the deferred free drops both, after
  /// unlocking.
  std::shared_ptr<record_owner> keep_alive;
  std::shared_ptr<tensor_record> keep_self;
  /// Tick of the last acquire (at first, of the allocation), for pool::residency and
  /// snapshots: the shard's clock, read on each miss and every 64th hit (Note [Last use]
  /// in core/detail/pool_snapshot.cpp). Last: it sits in the record's tail padding, so no
  /// hot line moves (Note [Record layout]). Guarded by `mtx`.
  tick last_use{0};
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
  std::string policy_spec;  ///< the policy with all its parameters (tier_stats::policy); constant
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
  // The register of pinned copies, kept once fits() first asks (Note [A register of
  // pinned copies], pool_fit.cpp). `track_pins` turns it on (never off); `pins_lost`: an
  // entry could not be added (out of host memory), so fits() walks the records instead.
  std::atomic<bool> track_pins{false};
  std::atomic<bool> pins_lost{false};
  std::mutex track_start;  ///< serializes turning the register on
  mutable std::array<pin_register_shard, kShards + 1> pin_reg{};  // mutable: fits() and validate() lock its shards
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
  std::atomic<std::uint64_t> merged_in_order{0};  ///< of those, made of several blocks (Note [Merging deferred blocks])
  std::atomic<std::int64_t> bytes_allocated{0};  ///< SUM of slot sizes placed here, over the pool's life
  std::atomic<std::int64_t> bytes_freed{0};      ///< SUM of slot sizes vacated here
};

}  // namespace tierpool::detail

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
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/detail/record_ref.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/pool_options.hpp>

#include "streams/stream_registry.hpp"
#include "tiers/storage_file.hpp"
#include "tiers/tier.hpp"
#include "util/record_mutex.hpp"
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
  /// The record is locked by this thread, its handle is gone (free_when_unpinned and
  /// drop_held set) and no lease or paused request holds it: free its slots (recording the
  /// free when tracing) and move the references that kept it and the pool alive into the
  /// out-parameters (the caller drops them after unlocking): Note [A dropped record's
  /// references].
  virtual void finish_dropped_locked(tensor_record& rec, std::shared_ptr<record_owner>& keep_alive,
                                     record_ref& keep_self) noexcept = 0;
  /// The name of a live tensor made with one (tensor_record::named): the pool keeps names
  /// beside the records (Note [Names beside the records], core/detail/tensor_ops.cpp). "" when none.
  [[nodiscard]] virtual std::string name_of(tensor_id id) const = 0;
  /// The locked record has a recipe (has_recipe): what one rebuild costs in seconds, or a
  /// negative value when it may not be dropped now (Note [Recompute as an eviction action],
  /// core/detail/recompute.cpp).
  [[nodiscard]] virtual double recompute_cost(tensor_record const& rec) const noexcept = 0;

 protected:
  record_owner() = default;
  record_owner(record_owner const&) = default;
  record_owner& operator=(record_owner const&) = default;
  ~record_owner() = default;
};

/**
 * @brief Make `o` known to its records by a 16-bit index (Note [A record names its pool in
 *        two bytes], records.cpp). @return the index (never 0).
 * @throws tierpool::logic_error when 65,535 pools are alive in the process.
 */
[[nodiscard]] std::uint16_t register_owner(record_owner* o);
/// @brief Forget the owner of index `i` (the pool is going: its records are gone).
void unregister_owner(std::uint16_t i) noexcept;
/// @brief The owner registered under `i` (null for 0 or a free index).
[[nodiscard]] record_owner* owner_at(std::uint16_t i) noexcept;

/// @brief A registration of a record owner for as long as the object lives (register_owner,
///        unregister_owner). @throws tierpool::logic_error (construction: the registry is full)
class owner_registration {
 public:
  explicit owner_registration(record_owner* o) : index_(register_owner(o)) {}
  owner_registration(owner_registration const&) = delete;
  owner_registration& operator=(owner_registration const&) = delete;
  ~owner_registration() { unregister_owner(index_); }
  [[nodiscard]] std::uint16_t index() const noexcept { return index_; }

 private:
  std::uint16_t index_;
};

/// @brief State of a tensor's copy in one tier.
enum class copy_state : std::uint8_t {
  absent,  ///< no block in the tier
  valid,   ///< holds the tensor's newest bytes (possibly still being copied in: see ready)
  stale,   ///< holds a block whose bytes are outdated (kept: a later copy or write-back reuses it)
};

/// @brief A copy's block: tiers::block less its size, which is the record's (8 bytes a
///        copy: issue 19). whole() makes the block the tier's calls take.
struct slot_block {
  arena::allocation slot{};  ///< arena handle (offset is global; size is the reservation)
  void* ptr{nullptr};        ///< first byte
  slot_block& operator=(block const& b) noexcept
  {
    slot = b.slot;
    ptr = b.ptr;
    return *this;
  }
  /// @brief The tier's block of a tensor of `bytes` bytes.
  [[nodiscard]] block whole(std::size_t bytes) const noexcept { return block{slot, ptr, bytes}; }
};

/// @brief One tier's copy of a tensor. Guarded by the record's mutex.
struct copy_slot {
  constexpr copy_slot() noexcept = default;
  copy_slot(copy_slot const&) = default;
  copy_slot(copy_slot&&) noexcept = default;
  /// Assignment copies the copy's state, not the two bytes its container owns (owner_bytes).
  copy_slot& operator=(copy_slot const& o)
  {
    assign_state(o);
    users = o.users;
    return *this;
  }
  copy_slot& operator=(copy_slot&& o) noexcept
  {
    assign_state(o);
    users = std::move(o.users);
    return *this;
  }
  ~copy_slot() = default;

  // Read on every acquire, copy and eviction first (Note [Record layout], record_slab.cpp).
  copy_state state{copy_state::absent};
  bool policy_pinned{false};         ///< this tier's policy was told on_pin (told on_unpin at pins 0)
  /// Managed tiers: the pages were last steered to the device (prefetch_async); false
  /// after placement, a copy into the block, or a host access.
  bool pages_on_device{false};
  /// In its tier's register of pinned copies (Note [A register of pinned copies],
  /// pool_fit.cpp); pin_shard names the shard. Both guarded by the record's mutex.
  bool pin_registered{false};
  std::uint8_t pin_shard{0};
  /// Bytes of whatever holds the slot (slot_array keeps its home tier and size in its
  /// inline slot's): kept by assignment, so resetting a slot (`s = copy_slot{}`) or moving
  /// another copy into it leaves them.
  std::array<std::uint8_t, 3> owner_bytes{};
  std::uint32_t pins{0};             ///< live leases on this copy
  /// Position in that shard's entries; guarded by the shard's lock (a removal moves
  /// another record's entry and rewrites its index).
  std::uint32_t pin_index{0};
  event_handle ready{};              ///< completes when the copy that filled blk is done; null = done
  slot_block blk{};                  ///< the tier's block (absent: empty); its size is the record's
  /// Streams that used blk since `ready` (leases, copies reading it). A lease's stamp is
  /// settled at its release; while `pins != 0` stamps of lease streams may be early.
  use_list users;

 private:
  void assign_state(copy_slot const& o) noexcept
  {
    static_assert(sizeof(slot_block) == 40 && sizeof(use_list) == 24, "copy_slot's assignment names every field");
    state = o.state;
    policy_pinned = o.policy_pinned;
    pages_on_device = o.pages_on_device;
    pin_registered = o.pin_registered;
    pin_shard = o.pin_shard;
    pins = o.pins;
    pin_index = o.pin_index;
    ready = o.ready;
    blk = o.blk;
  }
};
static_assert(sizeof(copy_slot) == 88, "copy_slot: update assign_state with the new field");

/// @brief The slot every absent copy reads as (slot_array::operator[] of a tier with no
///        storage): all fields default. Never written (Note [Copy slots only where a copy is]).
inline constinit copy_slot const absent_copy_slot{};

/// @brief The process's slab of heap slot arrays of `n` slots (1 <= n <= 64): made on first
///        use, never destroyed (a spilled record takes and returns one per miss).
[[nodiscard]] inline record_slab& slot_array_slab(std::size_t n)
{
  static std::array<std::atomic<record_slab*>, 65> slabs{};
  record_slab* s = slabs[n].load(std::memory_order_acquire);
  if (s != nullptr) [[likely]] { return *s; }
  auto made = std::make_unique<record_slab>(n * sizeof(copy_slot), alignof(copy_slot));
  if (slabs[n].compare_exchange_strong(s, made.get(), std::memory_order_acq_rel)) { return *made.release(); }
  return *s;  // another thread made it first
}

/**
 * @brief A record's copy slots, one per tier, stored only where a copy is (Note [Copy
 *        slots only where a copy is]): one slot inline (the "home" tier's), the others in
 *        one heap array while the tensor has a copy in a second tier.
 *
 * operator[] of a tier with no storage returns absent_copy_slot (read-only in fact: only
 * materialize()d slots are written). Existing slots never move except in
 * migration_engine::compact_slots_locked. Not synchronized (the record's mutex guards it).
 */
class slot_array {
 public:
  slot_array() noexcept = default;
  slot_array(slot_array const&) = delete;
  slot_array& operator=(slot_array const&) = delete;
  ~slot_array() { drop_extra(); }

  /// @brief Say how many tiers the pool has (at most 64). Precondition: fresh.
  void resize(std::size_t n) noexcept { size_ref() = static_cast<std::uint8_t>(n); }
  [[nodiscard]] std::size_t size() const noexcept { return inline_.owner_bytes[1]; }
  /// @brief Tier `k`'s slot, or absent_copy_slot when it has no storage (then: not to be
  ///        written; materialize() it first).
  [[nodiscard]] copy_slot& operator[](std::size_t k) noexcept
  {
    if (k == home()) { return inline_; }
    if (extra_ != nullptr) { return extra_[k]; }
    return const_cast<copy_slot&>(absent_copy_slot);  // NOLINT: read-only by contract
  }
  [[nodiscard]] copy_slot const& operator[](std::size_t k) const noexcept
  {
    return const_cast<slot_array&>(*this)[k];  // NOLINT
  }
  /// @brief Tier `k`'s slot with storage, to place a block in. Slots that exist stay where
  ///        they are. @throws std::bad_alloc (nothing changed)
  copy_slot& materialize(std::size_t k)
  {
    if (k == home()) { return inline_; }
    if (extra_ != nullptr) { return extra_[k]; }
    if (inline_.state == copy_state::absent) {  // no copy anywhere: the inline slot moves to k
      home_ref() = static_cast<std::uint8_t>(k);
      return inline_;
    }
    std::size_t const n = size();
    void* const mem = slot_array_slab(n).allocate();  // may throw: unchanged
    auto* const slots = static_cast<copy_slot*>(mem);
    for (std::size_t j = 0; j < n; ++j) { new (slots + j) copy_slot(); }  // noexcept
    extra_ = slots;
    return extra_[k];
  }
  /// @brief Whether tier `k`'s slot has storage (tests, validate()).
  [[nodiscard]] bool has_storage(std::size_t k) const noexcept { return k == home() || extra_ != nullptr; }
  /// @brief The tier of the inline slot.
  [[nodiscard]] std::uint32_t home() const noexcept { return inline_.owner_bytes[0]; }
  /// @brief Whether the heap array exists.
  [[nodiscard]] bool spilled() const noexcept { return extra_ != nullptr; }
  /// @brief The heap array (null when not spilled); compact_slots_locked only.
  [[nodiscard]] copy_slot* extra() noexcept { return extra_; }
  /// @brief Give the heap array up, first moving tier `j`'s slot inline (`j` == home()
  ///        keeps the inline slot); compact_slots_locked only. Returns the inline slot.
  copy_slot& fold(std::uint32_t j) noexcept
  {
    if (j != home() && extra_ != nullptr) {
      inline_ = std::move(extra_[j]);  // keeps inline_'s owner bytes (home, size)
      home_ref() = static_cast<std::uint8_t>(j);
    }
    drop_extra();
    return inline_;
  }

 private:
  // The home tier and the size live in the inline slot's owner bytes (8 bytes a record).
  [[nodiscard]] std::uint8_t& home_ref() noexcept { return inline_.owner_bytes[0]; }
  [[nodiscard]] std::uint8_t& size_ref() noexcept { return inline_.owner_bytes[1]; }
  void drop_extra() noexcept
  {
    if (extra_ == nullptr) { return; }
    std::size_t const n = size();
    for (std::size_t j = 0; j < n; ++j) { extra_[j].~copy_slot(); }
    slot_array_slab(n).deallocate(extra_);
    extra_ = nullptr;
  }

  copy_slot inline_{};                   ///< tier home()'s slot
  copy_slot* extra_{nullptr};            ///< size() slots from slot_array_slab (index home() unused) while spilled
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

/// @brief tensor_record::preferred for a tensor with no preferred tier.
inline constexpr std::uint8_t kNoPreferredTier = 0xFF;  // pools have at most 64 tiers (pool_config.cpp)

/// @brief What the pool knows about one tensor (168 bytes). Guarded by `mtx` except the
///        constants. Layout: Note [Record layout] in record_slab.cpp.
struct alignas(8) tensor_record {
  record_mutex mtx;               ///< Note [A one-word record lock]
  // Hot fields first (Note [Record layout] in record_slab.cpp): the scalars and the first
  // slots share the record's first cache lines; the name (read on rare paths) is out of line.
  std::uint32_t pins{0};          ///< == SUM(slots[k].pins)
  std::uint32_t access_count{0};
  /// References (record_ref): the handle, the table, work in flight (Note [Records count
  /// their references], records.cpp). Atomic; the only field not guarded by `mtx`.
  std::atomic<std::uint32_t> refs{0};
  std::uint32_t tenant{0};        ///< constant: tensor_options::tenant
  float priority{0.0F};           ///< constant: tensor_options::priority
  bool freed{false};              ///< freed (or the pool closed): every slot absent
  /// The handle died while leased or while a request of it waited on low-memory callbacks:
  /// the last release frees it (or record_lock's unlock when no lease or request holds it)
  bool free_when_unpinned{false};
  // Three flags guarded by `mtx` share a byte: the record stays within its budget
  // (RecordLayout test).
  bool prefetched : 1 = false;  ///< a prefetch copied it in and no acquire used it yet
  /// An early write-back (migration_engine::write_back_early) made its lower copy and the
  /// device copy has not left since (an eviction, demote or shrink drops it: the early copy
  /// served; vacate_locked clears this): a write or a free first wastes that copy.
  bool cleaned_early : 1 = false;
  /// A prefetch is filling it (set around the prefetch's fill, under `mtx`): the copy-in is
  /// ahead of a use, not a use, and the policy is told so (tensor_view::prefetch).
  bool filling_ahead : 1 = false;
  bool prefetch_queued{false};    ///< a request for it waits in the prefetch queue
  bool lost{false};               ///< the device was lost with its only valid copy there (device_lost)
  /// pool::discard: its bytes are dead until a write_discard lease gives it new ones. Its
  /// copies are dropped, never written back; it may have no valid copy (Note [Discarded
  /// contents], tensor_ops.cpp).
  bool discarded{false};
  /// Constant: the preferred tier is device-accessible (acquire may use it in place of the
  /// device tier).
  bool prefers_device_accessible{false};
  // Three constants (set before the record is published) share a byte: the record stays
  // within its budget (RecordLayout test).
  bool write_through : 1 = false;  ///< constant: tensor_options::write_through
  bool lossy_ok : 1 = false;       ///< constant: tensor_options::lossy_compression
  bool no_compress : 1 = false;    ///< constant: !tensor_options::compressible
  /// With free_when_unpinned: the table's reference keeps this record, and the pool's hold
  /// keeps the pool, until the deferred free (Note [A dropped record's references]).
  bool drop_held : 1 = false;
  // Recompute (pool::set_recompute; Note [Recompute as an eviction action], recompute.cpp):
  // guarded by `mtx`, like drop_held, whose byte they share.
  /// Has a live recipe in its owner's table: eviction may drop its last copy.
  bool has_recipe : 1 = false;
  /// No copy holds its bytes (every slot absent or stale): the recipe rebuilds them.
  bool needs_rebuild : 1 = false;
  /// An input of a live recipe: never dropped for recompute itself.
  bool recipe_input : 1 = false;
  /// Rebuilt and not acquired since: not dropped again before that acquire (no rebuild loop).
  bool rebuilt_fresh : 1 = false;
  bool named{false};              ///< constant: made with a name (its owner keeps it: name_of)
  std::uint8_t preferred{kNoPreferredTier};  ///< constant: tensor_options::preferred_tier's index
  /// Constant: the pool, as its index in the process's registry (owner()).
  std::uint16_t owner_index{0};
  /// Live leases that may write (no copy may read it meanwhile); at most 65,535 (make_lease
  /// refuses more).
  std::uint16_t write_pins{0};
  /// Requests of this tensor waiting on low-memory callbacks, with the lock dropped (Note
  /// [Low-memory callbacks run unlocked], pool_impl.cpp): a free waits for them as for
  /// leases. At most one per thread.
  std::uint16_t paused{0};
  tensor_id id{};                 ///< constant
  std::size_t bytes{0};           ///< constant
  std::atomic<tick> next_use{kNoForecast};  ///< pool::set_next_use (any thread, relaxed)
  /// Tick of the last acquire (at first, of the allocation), for pool::residency and
  /// snapshots: the shard's clock, read on each miss and every 64th hit (Note [Last use]
  /// in core/detail/pool_snapshot.cpp). Guarded by `mtx`.
  tick last_use{0};
  slot_array slots;               ///< one per tier; invariant: >= 1 valid while live, unless needs_rebuild

  /// @brief tensor_options::name ("" when none; asks the owner for a named tensor).
  /// @brief The pool (null before allocate sets owner_index).
  [[nodiscard]] record_owner* owner() const noexcept { return owner_at(owner_index); }
  [[nodiscard]] std::string name() const { return named && owner() != nullptr ? owner()->name_of(id) : std::string(); }
  /// @brief " 'NAME'" for messages, or "" for an unnamed tensor.
  [[nodiscard]] std::string quoted_name() const
  {
    return named && owner() != nullptr ? " '" + owner()->name_of(id) + "'" : std::string();
  }
  /// @brief tensor_options::preferred_tier.
  [[nodiscard]] std::optional<tier_id> preferred_tier() const noexcept
  {
    return preferred == kNoPreferredTier ? std::nullopt : std::optional<tier_id>{tier_id{preferred}};
  }
  /// @brief Take the constant options but the name (allocate: the owner keeps the name).
  void set_options(tensor_options const& o) noexcept
  {
    named = !o.name.empty();
    tenant = o.tenant;
    priority = o.priority;
    write_through = o.write_through;
    lossy_ok = o.lossy_compression;
    no_compress = !o.compressible;
    preferred = o.preferred_tier ? static_cast<std::uint8_t>(*o.preferred_tier) : kNoPreferredTier;
  }
};

/// @brief Marks a record as filled by a prefetch while it lives (tensor_record::filling_ahead):
///        the policy is told the copy-in is not a use. The record's lock is held throughout.
class filling_ahead_scope {
 public:
  explicit filling_ahead_scope(tensor_record& r) noexcept : r_(r) { r_.filling_ahead = true; }
  ~filling_ahead_scope() { r_.filling_ahead = false; }
  filling_ahead_scope(filling_ahead_scope const&) = delete;
  filling_ahead_scope& operator=(filling_ahead_scope const&) = delete;

 private:
  tensor_record& r_;
};

// Note [Records indexed by id]
// ----------------------------
// Rationale: the pool finds a record by id once per eviction victim (and for prefetches,
// predictions, loss). A flat hash table of (id, reference) cells at load <= 0.5 took 48-96
// bytes a tensor at a million tensors (issue 19), for ids that are dense by construction:
// the pool hands them out in order from 1 and never reuses one.
// Approach: a two-level array indexed by the id: a directory of pages of 256 references
// (4 KiB, one OS page), a page made when its first id is inserted and freed when its last
// live id is erased. A lookup is two dependent loads, no probing; 16 bytes a live tensor
// where the ids of live tensors are dense; for_each visits records in id order (validate()
// and snapshot() need that order and no longer sort).
// Limitations: the directory keeps 8 bytes for every 256 ids ever handed out (a pool that
// made 10^9 tensors over its life holds a 31 MiB directory); a page lives while any of its
// 256 ids does, so long-lived tensors scattered among short-lived ones (one survivor per
// 256 allocations, at worst) cost up to a page each.

/**
 * @brief The pool's live records by id, in pages indexed by the id itself (Note [Records
 *        indexed by id]). Externally synchronized (table_mtx_).
 */
class record_table {
 public:
  static constexpr unsigned kPageBits = 8;  ///< 256 ids a page: 4 KiB of references
  static constexpr std::size_t kPageIds = std::size_t{1} << kPageBits;

  /// @brief The record of `id`, or null.
  [[nodiscard]] record_ref const* find(std::uint64_t id) const noexcept
  {
    auto const p = static_cast<std::size_t>(id >> kPageBits);
    if (p >= pages_.size() || pages_[p] == nullptr) { return nullptr; }
    record_ref const& c = (*pages_[p])[id & (kPageIds - 1)];
    return c == nullptr ? nullptr : &c;
  }
  /// @brief Remove `id` and return its reference (null when absent): erase() that hands
  ///        the reference over instead of dropping it.
  [[nodiscard]] record_ref take(std::uint64_t id) noexcept
  {
    record_ref out;
    auto const p = static_cast<std::size_t>(id >> kPageBits);
    if (p >= pages_.size() || pages_[p] == nullptr) { return out; }
    out = std::move((*pages_[p])[id & (kPageIds - 1)]);
    if (out != nullptr) { drop_one(p); }
    return out;
  }
  /**
   * @brief Add `rec` (not null) under `id` (absent, != 0; the pool's ids are dense).
   * @throws std::bad_alloc when a page or the page directory cannot grow (unchanged).
   */
  void insert(std::uint64_t id, record_ref rec)
  {
    auto const p = static_cast<std::size_t>(id >> kPageBits);
    if (p >= pages_.size()) {
      std::size_t const n = std::max(p + 1, pages_.size() * 2);
      live_.resize(n);   // first: a longer live_ than pages_ is harmless
      pages_.resize(n);
    }
    if (pages_[p] == nullptr) { pages_[p] = std::make_unique<page>(); }
    (*pages_[p])[id & (kPageIds - 1)] = std::move(rec);
    ++live_[p];
    ++size_;
  }
  /// @brief Remove `id` (its page goes when it was the page's last). @return false when absent.
  bool erase(std::uint64_t id) noexcept
  {
    auto const p = static_cast<std::size_t>(id >> kPageBits);
    if (p >= pages_.size() || pages_[p] == nullptr) { return false; }
    record_ref& c = (*pages_[p])[id & (kPageIds - 1)];
    if (c == nullptr) { return false; }
    c.reset();
    drop_one(p);
    return true;
  }
  /// @brief Remove every record (keeps the page directory).
  void clear() noexcept
  {
    for (auto& pg : pages_) { pg.reset(); }
    std::fill(live_.begin(), live_.end(), std::uint16_t{0});
    size_ = 0;
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// @brief Pages that exist (tests).
  [[nodiscard]] std::size_t pages() const noexcept
  {
    return static_cast<std::size_t>(std::count_if(pages_.begin(), pages_.end(), [](auto const& pg) { return pg != nullptr; }));
  }
  /// @brief Call `f(record)` for every record, in id order.
  template <class F>
  void for_each(F&& f) const
  {
    for (auto const& pg : pages_) {
      if (pg == nullptr) { continue; }
      for (auto const& c : *pg) {
        if (c != nullptr) { f(c); }
      }
    }
  }

 private:
  void drop_one(std::size_t p) noexcept
  {
    --size_;
    if (--live_[p] == 0) { pages_[p].reset(); }
  }
  using page = std::array<record_ref, kPageIds>;
  std::vector<std::unique_ptr<page>> pages_;  ///< by id >> kPageBits; null: no live id there
  std::vector<std::uint16_t> live_;           ///< live ids per page (at least pages_.size() entries)
  std::size_t size_{0};
};

/// @brief A new default record with one reference (the caller's), from the process's slab
///        of records. @throws std::bad_alloc
[[nodiscard]] record_ref make_record_ref();

/// @brief One tier of the pool: memory, policy, figures.
struct tier_state {
  /// A storage tier's file with real memory (Note [Where a storage tier's bytes are]):
  /// the chunk source of `mem` and the I/O of its copies; declared first, destroyed last.
  std::unique_ptr<storage_file> file;
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
  // Tenants' shares (Note [Tenants' shares of a tier], eviction.cpp), under mem->mutex():
  // bytes of each tenant's copies here (tensor sizes, counted where `resident` is), and
  // the shares set for this tier (tier_options::tenant_shares, pool::set_tenant_share).
  std::vector<std::pair<std::uint32_t, std::int64_t>> tenant_bytes;
  std::vector<std::pair<std::uint32_t, std::size_t>> tenant_shares;
  /// Each tenant's standing (tenant_options, pool::set_tenant) and quota (pool::set_quota),
  /// copied into every tier: Note [Hard shares and priorities], eviction.cpp. Under
  /// mem->mutex(); `ranked`: some tenant has a priority or a hard share (else no one's
  /// standing changes a round, and placement skips the hard-share check).
  struct tenant_rank {
    std::uint32_t tenant{0};
    int priority{0};
    bool hard{false};
    std::size_t quota{0};
    /// Hard tenants: bytes placed here whose copy has not entered the policy yet (counted
    /// in tenant_bytes only then): the hard-share check counts them too (Note [Hard shares
    /// and priorities], eviction.cpp). 0 whenever no placement is in flight.
    std::int64_t placing{0};
  };
  std::vector<tenant_rank> tenant_ranks;
  bool ranked{false};
  bool split_by_default{false};  ///< constant: no share set means an equal split (device tiers)
  std::atomic<std::uint64_t> share_skips{0};  ///< COUNT: victims passed over as within their tenant's share
  std::atomic<std::uint64_t> share_refusals{0};  ///< COUNT: placements a hard share refused
  /// `tenant`'s standing here (defaults when none was set). Under mem->mutex().
  [[nodiscard]] tenant_rank rank_of(std::uint32_t tenant) const noexcept
  {
    for (auto const& r : tenant_ranks) {
      if (r.tenant == tenant) { return r; }
    }
    return tenant_rank{tenant};
  }
  /// Add `delta` to `tenant`'s bytes here. Under mem->mutex(); never allocates: the entry
  /// is made when the tenant's first tensor is (migration_engine::add_tenant).
  void add_tenant_bytes(std::uint32_t tenant, std::int64_t delta) noexcept
  {
    for (auto& e : tenant_bytes) {
      if (e.first == tenant) {
        e.second += delta;
        return;
      }
    }
    // Every tenant has an entry before its first tensor (migration_engine::add_tenant);
    // validate() would report the mismatch.
  }
  /// `tenant`'s bytes here (0 if none). Under mem->mutex().
  [[nodiscard]] std::int64_t bytes_of_tenant(std::uint32_t tenant) const noexcept
  {
    for (auto const& e : tenant_bytes) {
      if (e.first == tenant) { return e.second; }
    }
    return 0;
  }
  /// `tenant`'s share here: the share set for it, else (device tiers) its quota if it has
  /// one (at most the capacity), else an equal split of the capacity among the tenants with
  /// bytes here and `tenant`, else the whole capacity.
  [[nodiscard]] std::size_t share_of(std::uint32_t tenant) const noexcept
  {
    for (auto const& e : tenant_shares) {
      if (e.first == tenant) { return e.second; }
    }
    if (!split_by_default) { return capacity; }
    for (auto const& r : tenant_ranks) {
      if (r.tenant == tenant && r.quota != 0) { return std::min(r.quota, capacity); }
    }
    std::size_t n = 0;
    bool self = false;
    for (auto const& e : tenant_bytes) {
      if (e.second > 0) {
        ++n;
        self = self || e.first == tenant;
      }
    }
    n += self ? 0 : 1;
    return capacity / n;
  }
  std::atomic<std::uint64_t> evictions{0};
  std::atomic<std::uint64_t> evictions_clean{0};
  std::atomic<std::uint64_t> alloc_failures{0};
  std::atomic<std::uint64_t> reused_in_order{0};  ///< blocks taken with a pending deferred free
  std::atomic<std::uint64_t> merged_in_order{0};  ///< of those, made of several blocks (Note [Merging deferred blocks])
  std::atomic<std::int64_t> bytes_allocated{0};  ///< SUM of slot sizes placed here, over the pool's life
  std::atomic<std::int64_t> bytes_freed{0};      ///< SUM of slot sizes vacated here
  /// Slot bytes of blocks place() handed out whose tensor has not entered the policy yet
  /// (the copy into them is being made): eviction cannot see them (Note [Blocks being
  /// placed are waited for], placement.cpp). Relaxed: a hint for the failure path only.
  std::atomic<std::int64_t> unsettled_bytes{0};
  /// Storage tiers only (count_copy): bytes copied into the tier (written) and out of it (read).
  std::atomic<std::uint64_t> storage_written{0};
  std::atomic<std::uint64_t> storage_read{0};
  // Compaction (Note [Compaction], compaction.cpp).
  bool compact_in_ladder{false};  ///< constant: the ladder compacts before it evicts (pool_options::compaction)
  bool compact_last_resort{false};  ///< constant: the ladder compacts before it fails (pool_options::compact_before_failing)
  std::atomic<std::uint64_t> compactions{0};           ///< COUNT: ladder requests placed by compacting
  std::atomic<std::uint64_t> waits_to_compact{0};      ///< COUNT: placements that waited for vacated blocks to compact
  std::atomic<std::uint64_t> compacted_tensors{0};     ///< COUNT: copies moved within the tier
  std::atomic<std::uint64_t> compacted_bytes{0};       ///< SUM: their bytes
  std::atomic<std::uint64_t> compaction_copy_failures{0};  ///< COUNT: moves whose copy failed (the copy stayed)
  /// COUNT: ladder placements that evicted although the tier's free bytes covered the request
  std::atomic<std::uint64_t> fragmented_evictions{0};
  // Window eviction (Note [Evicting a window for a large request], window_eviction.cpp).
  /// Constant: a ladder request of at least capacity / window_share bytes evicts one
  /// contiguous run (pool_options::window_eviction_share); 0: never.
  std::size_t window_share{0};
  std::atomic<std::uint64_t> window_evictions{0};  ///< COUNT: ladder rounds that evicted a chosen run
  /// COUNT: copies that left the tier neither evicted nor freed (pool::demote, a shrink):
  /// with `evictions`, what tells the planner a quiet window may have changed (Note [A
  /// quiet window is walked once], pool_impl.cpp)
  std::atomic<std::uint64_t> moved_down{0};
};

}  // namespace tierpool::detail

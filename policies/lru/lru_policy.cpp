// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// lru_policy.cpp — owns tierpool::lru_policy (the recency list over a slab, pin handling,
// sized proposals) and its registration as "lru" (register_lru). See lru_policy.hpp for
// the algorithm and policies/lru/README.md for the design.
#include "lru_policy.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace tierpool {
namespace {

constexpr std::size_t saturating_add(std::size_t a, std::size_t b) noexcept
{
  return b > std::numeric_limits<std::size_t>::max() - a ? std::numeric_limits<std::size_t>::max() : a + b;
}

}  // namespace

// Note [One cell per id]
// ----------------------
// Rationale: in a miss-heavy replay every miss erases a victim and inserts the missed
// tensor, each a lookup of a cold id. detail::id_index keeps ids and values in two arrays,
// so each lookup missed the cache twice; it was the largest single cost of lru in pool
// mode (10 % of a CloudPhysics replay).
// Approach: one array of (id, position) cells: a lookup reads one line. Ids are handed out
// in order by the pool, so the hash keeps runs of four consecutive ids in four adjacent
// cells (one line; Fibonacci hashing of id / 4 picks the run's place): a burst of inserts
// (a trace's first pass) writes a line per four tensors. propose() prefetches the cells of
// the victims it proposes: the engine erases them soon after.
// Limitations: the order of ids inside the index is never observed, so proposals are
// unchanged (the replay golden test pins this).

lru_policy::index_t lru_policy::position_index::find(tensor_id id) const noexcept
{
  if (size_ == 0) { return npos; }
  auto const key = static_cast<std::uint64_t>(id);
  for (std::size_t i = home(key);; i = (i + 1) & mask_) {
    cell const& c = cells_[i];
    if (c.pos == npos) { return npos; }
    if (c.id == key) { return c.pos; }
  }
}

void lru_policy::position_index::insert(tensor_id id, index_t pos)
{
  if ((size_ + 1) * 2 > cells_.size()) { grow(); }
  auto const key = static_cast<std::uint64_t>(id);
  std::size_t i = home(key);
  while (cells_[i].pos != npos && cells_[i].id != key) { i = (i + 1) & mask_; }
  if (cells_[i].pos == npos) { ++size_; }
  cells_[i].id = key;
  cells_[i].pos = pos;
}

bool lru_policy::position_index::erase(tensor_id id) noexcept
{
  if (size_ == 0) { return false; }
  auto const key = static_cast<std::uint64_t>(id);
  std::size_t i = home(key);
  while (cells_[i].pos != npos && cells_[i].id != key) { i = (i + 1) & mask_; }
  if (cells_[i].pos == npos) { return false; }
  // Backward shift: move later members of the probe run into the hole when the hole lies
  // between their home and their cell (no tombstones).
  for (std::size_t j = (i + 1) & mask_; cells_[j].pos != npos; j = (j + 1) & mask_) {
    if (((j - home(cells_[j].id)) & mask_) >= ((j - i) & mask_)) {
      cells_[i] = cells_[j];
      i = j;
    }
  }
  cells_[i].pos = npos;
  --size_;
  return true;
}

void lru_policy::position_index::prefetch(tensor_id id) const noexcept
{
  if (!cells_.empty()) { __builtin_prefetch(&cells_[home(static_cast<std::uint64_t>(id))], 1, 3); }
}

void lru_policy::position_index::grow()
{
  std::size_t const cap = cells_.empty() ? 16 : cells_.size() * 2;  // >= 4 runs of cells
  std::vector<cell, big_array_allocator<cell>> old(cap);
  std::swap(old, cells_);
  mask_ = cap - 1;
  shift_ = 64U - (static_cast<unsigned>(std::countr_zero(cap)) - kRunBits);
  for (cell const& c : old) {
    if (c.pos == npos) { continue; }
    std::size_t j = home(c.id);
    while (cells_[j].pos != npos) { j = (j + 1) & mask_; }
    cells_[j] = c;
  }
}

// Note [Big arrays on huge pages]
// -------------------------------
// Rationale: the host tier of a CloudPhysics replay tracks 49,000 tensors: the slab and
// the index grow by doubling to 2 MiB each, about 1,000 fresh 4 KiB pages, and a page
// fault costs ~14 us on the development VM (5 % of that replay went to faulting them in).
// Approach: arrays of kBigArrayBytes or more are mapped 2 MiB-aligned with MADV_HUGEPAGE
// (one fault per 2 MiB where transparent huge pages are enabled, "madvise" or "always");
// smaller ones come from operator new. Limitations: a mapping is rounded up to 2 MiB
// (address space, not memory, until touched); Linux only, elsewhere operator new.
namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20U;
constexpr std::size_t huge_round(std::size_t bytes) noexcept { return (bytes + kHugePage - 1) & ~(kHugePage - 1); }
}  // namespace

void* lru_policy::allocate_array(std::size_t bytes)
{
#if defined(__linux__)
  if (bytes >= kBigArrayBytes) {
    std::size_t const size = huge_round(bytes);
    std::size_t const span = size + kHugePage;  // over-map, then trim to a 2 MiB boundary
    void* const raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) { throw std::bad_alloc(); }
    auto const lo = reinterpret_cast<std::uintptr_t>(raw);
    std::uintptr_t const base = (lo + kHugePage - 1) & ~(kHugePage - 1);
    if (base != lo) { (void)::munmap(raw, base - lo); }
    if (std::size_t const tail = lo + span - (base + size); tail != 0) {
      (void)::munmap(reinterpret_cast<void*>(base + size), tail);
    }
    (void)::madvise(reinterpret_cast<void*>(base), size, MADV_HUGEPAGE);  // a hint
    return reinterpret_cast<void*>(base);
  }
#endif
  return ::operator new(bytes);
}

void lru_policy::deallocate_array(void* p, std::size_t bytes) noexcept
{
#if defined(__linux__)
  if (bytes >= kBigArrayBytes) {
    (void)::munmap(p, huge_round(bytes));
    return;
  }
#endif
  ::operator delete(p);
}

lru_policy::lru_policy() noexcept : lru_policy(config{}) {}

lru_policy::lru_policy(config cfg) noexcept : cfg_(cfg) {}

void lru_policy::link_front(list& l, index_t i) noexcept
{
  node& n = nodes_[i];
  n.prev = npos;
  n.next = l.head;
  if (l.head != npos) {
    nodes_[l.head].prev = i;
  } else {
    l.tail = i;
  }
  l.head = i;
  ++l.count;
  l.add(n.bytes);
}

void lru_policy::unlink(list& l, index_t i) noexcept
{
  node& n = nodes_[i];
  if (n.prev != npos) {
    nodes_[n.prev].next = n.next;
  } else {
    l.head = n.next;
  }
  if (n.next != npos) {
    nodes_[n.next].prev = n.prev;
  } else {
    l.tail = n.prev;
  }
  n.prev = npos;
  n.next = npos;
  --l.count;
  l.sub(n.bytes);
}

lru_policy::index_t lru_policy::lookup(tensor_id id) const noexcept
{
  return index_.find(id);
}

void lru_policy::set_bytes(index_t i, std::size_t bytes) noexcept
{
  node& n = nodes_[i];
  if (n.bytes == bytes) { return; }
  list& l = list_of(n);
  l.sub(n.bytes);
  n.bytes = bytes;
  l.add(bytes);
}

void lru_policy::on_insert(tensor_view const& v) noexcept
{
  index_t i = lookup(v.id);
  if (i != npos) {  // known: update, then promote unconditionally
    node& n = nodes_[i];
    unlink(list_of(n), i);
    n.bytes = v.bytes;
    n.pinned = v.pinned;
    n.promoted_at = v.last_access;
    link_front(list_of(n), i);
    return;
  }
  // Hooks are noexcept: if the host cannot grow the slab or the index, std::terminate
  // runs (the process is out of host memory; there is no sane ordering to keep).
  if (free_head_ != npos) {
    i = free_head_;
    free_head_ = nodes_[i].next;
  } else {
    i = static_cast<index_t>(nodes_.size());
    nodes_.emplace_back();
  }
  node& n = nodes_[i];
  n = node{v.id, v.bytes, v.last_access, npos, npos, v.pinned, true};
  index_.insert(v.id, i);
  link_front(list_of(n), i);
}

void lru_policy::on_access(tensor_view const& v) noexcept
{
  index_t const i = lookup(v.id);
  if (i == npos) { return; }
  node& n = nodes_[i];
  set_bytes(i, v.bytes);
  if (n.pinned != v.pinned) {  // the view is the truth at this event
    unlink(list_of(n), i);
    n.pinned = v.pinned;
    n.promoted_at = v.last_access;
    link_front(list_of(n), i);
    return;
  }
  if (n.pinned) { return; }  // order inside the pinned list is irrelevant
  if (!(v.write_access ? cfg_.promote_on_write : cfg_.promote_on_read)) { return; }
  // Saturating difference: a clock that went backwards counts as "no time passed".
  tick const since = v.last_access >= n.promoted_at ? v.last_access - n.promoted_at : 0;
  if (cfg_.refresh_interval != 0 && since < cfg_.refresh_interval) { return; }
  n.promoted_at = v.last_access;
  if (lru_.head == i) { return; }
  unlink(lru_, i);
  link_front(lru_, i);
}

void lru_policy::on_erase(tensor_id id) noexcept
{
  index_t const i = index_.find(id);
  if (i == npos) { return; }
  index_.erase(id);
  node& n = nodes_[i];
  unlink(list_of(n), i);
  n.live = false;
  n.pinned = false;
  n.bytes = 0;
  n.next = free_head_;
  free_head_ = i;
}

void lru_policy::on_pin(tensor_id id) noexcept
{
  index_t const i = lookup(id);
  if (i == npos || nodes_[i].pinned) { return; }
  unlink(lru_, i);
  nodes_[i].pinned = true;
  link_front(pinned_, i);
}

void lru_policy::on_unpin(tensor_id id) noexcept
{
  index_t const i = lookup(id);
  if (i == npos || !nodes_[i].pinned) { return; }
  unlink(pinned_, i);
  nodes_[i].pinned = false;
  link_front(lru_, i);  // the end of a lease is a use: most recently used
}

void lru_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  std::size_t freed = 0;
  for (index_t i = lru_.tail; i != npos && freed < req.bytes_needed; i = nodes_[i].prev) {
    node const& n = nodes_[i];
    index_.prefetch(n.id);  // the engine erases a claimed victim next (Note [One cell per id])
    out.add(n.id, n.bytes);
    freed = saturating_add(freed, n.bytes);
  }
}

bool lru_policy::validate() const noexcept
{
  std::size_t live = 0;
  for (bool const pinned : {false, true}) {
    list const& l = pinned ? pinned_ : lru_;
    std::size_t count = 0;
    list sum;  // recomputed, with the same wide arithmetic
    index_t prev = npos;
    for (index_t i = l.head; i != npos; i = nodes_[i].next) {
      if (i >= nodes_.size() || count > nodes_.size()) { return false; }  // bad link or cycle
      node const& n = nodes_[i];
      if (!n.live || n.pinned != pinned || n.prev != prev) { return false; }
      if (index_.find(n.id) != i) { return false; }
      sum.add(n.bytes);
      prev = i;
      ++count;
    }
    if (l.tail != prev || l.count != count) { return false; }
    if (l.bytes_low != sum.bytes_low || l.bytes_high != sum.bytes_high) { return false; }
    live += count;
  }
  if (live != index_.size()) { return false; }
  std::size_t free_slots = 0;
  for (index_t i = free_head_; i != npos; i = nodes_[i].next) {
    if (i >= nodes_.size() || nodes_[i].live || free_slots > nodes_.size()) { return false; }
    ++free_slots;
  }
  return live + free_slots == nodes_.size();
}

namespace policies {

void register_lru(policy_registry& registry)
{
  registry.add(
    "lru", "Least recently used first; pinned tensors are kept out of the order",
    {
      {"refresh_interval", parameter_type::unsigned_integer, "0",
       "promote a tensor at most once per this many ticks (0 = every access)"},
      {"promote_on_read", parameter_type::boolean, "true", "a read access moves the tensor to the most recent end"},
      {"promote_on_write", parameter_type::boolean, "true", "a write access moves the tensor to the most recent end"},
    },
    [](policy_params const& p) {
      lru_policy::config cfg;
      cfg.refresh_interval = p.get<std::uint64_t>("refresh_interval");
      cfg.promote_on_read = p.get<bool>("promote_on_read");
      cfg.promote_on_write = p.get<bool>("promote_on_write");
      return any_eviction_policy{lru_policy{cfg}};
    });
}

}  // namespace policies
}  // namespace tierpool

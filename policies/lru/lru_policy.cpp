// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// lru_policy.cpp — owns tierpool::lru_policy (the recency list over a slab, pin handling,
// sized proposals) and its registration as "lru" (register_lru). See lru_policy.hpp for
// the algorithm and policies/lru/README.md for the design.
#include "lru_policy.hpp"

#include <tierpool/policies/saturating.hpp>

#include <limits>
#include <string>
#include <utility>

namespace tierpool {
namespace {

using policies::detail::saturating_add;

}  // namespace

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
    index_.prefetch(n.id);  // the engine erases a claimed victim next
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

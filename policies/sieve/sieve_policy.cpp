// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// sieve_policy.cpp — owns tierpool::sieve_policy (the queue over a slab, the hand and its
// scan pointers, the hand's movement applied on erase, sized proposals) and its
// registration as "sieve" (register_sieve). See sieve_policy.hpp for the algorithm and
// Note [SIEVE's hand moves on erase].
#include "sieve_policy.hpp"

#include <limits>

namespace tierpool {
namespace {

constexpr std::size_t saturating_add(std::size_t a, std::size_t b) noexcept
{
  return b > std::numeric_limits<std::size_t>::max() - a ? std::numeric_limits<std::size_t>::max() : a + b;
}

}  // namespace

sieve_policy::sieve_policy() noexcept : sieve_policy(config{}) {}

sieve_policy::sieve_policy(config cfg) noexcept : cfg_(cfg) {}

void sieve_policy::link_before(list& l, index_t i, index_t at) noexcept
{
  node& n = nodes_[i];
  n.next = at;
  n.prev = at == npos ? l.back : nodes_[at].prev;
  if (n.prev != npos) {
    nodes_[n.prev].next = i;
  } else {
    l.front = i;
  }
  if (at != npos) {
    nodes_[at].prev = i;
  } else {
    l.back = i;
  }
  ++l.count;
  l.add(n.bytes);
}

void sieve_policy::unlink(list& l, index_t i) noexcept
{
  node& n = nodes_[i];
  if (n.prev != npos) {
    nodes_[n.prev].next = n.next;
  } else {
    l.front = n.next;
  }
  if (n.next != npos) {
    nodes_[n.next].prev = n.prev;
  } else {
    l.back = n.prev;
  }
  n.prev = npos;
  n.next = npos;
  --l.count;
  l.sub(n.bytes);
}

sieve_policy::index_t sieve_policy::lookup(tensor_id id) const noexcept
{
  auto const it = index_.find(id);
  return it == index_.end() ? npos : it->second;
}

bool sieve_policy::visited(tensor_id id) const noexcept
{
  index_t const i = lookup(id);
  return i != npos && nodes_[i].visited;
}

sieve_policy::index_t sieve_policy::first_unvisited(index_t from, index_t stop) const noexcept
{
  for (index_t i = from; i != npos && i != stop; i = nodes_[i].next) {
    if (!nodes_[i].visited) { return i; }
  }
  return npos;
}

void sieve_policy::enter(index_t i) noexcept
{
  link_before(queue_, i, npos);  // SIEVE: new objects at the head, the end of A
  if (hand_ == npos) { hand_ = i; }
  if (!nodes_[i].visited && p1_ == npos) { p1_ = i; }
}

void sieve_policy::leave(index_t i) noexcept
{
  index_t const nx = nodes_[i].next;
  if (i == p1_) { p1_ = first_unvisited(nx, npos); }
  if (i == p2_) { p2_ = first_unvisited(nx, hand_); }
  bool const was_hand = i == hand_;
  unlink(queue_, i);
  if (!was_hand) { return; }
  hand_ = nx;  // the paper: a removed hand object passes the hand to its neighbour toward the head
  if (hand_ == npos) {  // past the head: wrap to the tail, A becomes the whole queue
    hand_ = queue_.front;
    p1_ = p2_;
    p2_ = npos;
  }
}

void sieve_policy::evict(index_t i) noexcept
{
  // Precondition: i is the hand's next victim. See Note [SIEVE's hand moves on erase].
  index_t p1 = npos;
  index_t p2 = p2_;
  if (p1_ != npos) {  // i == p1_: the hand passes [hand_, i), all visited
    for (index_t j = hand_; j != i; j = nodes_[j].next) { nodes_[j].visited = false; }
    if (hand_ != i && p2 == npos) { p2 = hand_; }  // the cleared ones end B
    p1 = first_unvisited(nodes_[i].next, npos);
  } else if (p2_ != npos) {  // i == p2_: the hand clears A, wraps, clears [front, i)
    for (index_t j = hand_; j != npos; j = nodes_[j].next) { nodes_[j].visited = false; }
    for (index_t j = queue_.front; j != i; j = nodes_[j].next) { nodes_[j].visited = false; }
    p2 = queue_.front != i ? queue_.front : npos;
    p1 = first_unvisited(nodes_[i].next, npos);  // stops at the old hand at the latest
  } else {  // i == hand_, every bit set: a full lap clears them all and comes back to i
    for (index_t j = queue_.front; j != npos; j = nodes_[j].next) { nodes_[j].visited = false; }
    p2 = queue_.front != i ? queue_.front : npos;
    p1 = nodes_[i].next;
  }
  index_t const nx = nodes_[i].next;
  unlink(queue_, i);
  hand_ = nx;
  p1_ = p1;
  p2_ = p2;
  if (hand_ == npos) {
    hand_ = queue_.front;
    p1_ = p2_;
    p2_ = npos;
  }
}

void sieve_policy::set_pinned(index_t i, bool pinned) noexcept
{
  node& n = nodes_[i];
  if (n.pinned == pinned) { return; }
  if (pinned) {
    leave(i);
    n.pinned = true;
    link_before(pinned_, i, npos);
  } else {
    unlink(pinned_, i);
    n.pinned = false;
    enter(i);
  }
}

void sieve_policy::on_insert(tensor_view const& v) noexcept
{
  index_t i = lookup(v.id);
  if (i != npos) {  // known: update and count as an access
    on_access(v);
    return;
  }
  if (free_head_ != npos) {
    i = free_head_;
    free_head_ = nodes_[i].next;
  } else {
    i = static_cast<index_t>(nodes_.size());
    nodes_.emplace_back();  // hooks are noexcept: terminate if the host is out of memory
  }
  nodes_[i] = node{v.id, v.bytes, npos, npos, false, v.pinned, true};
  index_.emplace(v.id, i);
  if (v.pinned) {
    link_before(pinned_, i, npos);
  } else {
    enter(i);
  }
}

void sieve_policy::on_access(tensor_view const& v) noexcept
{
  index_t const i = lookup(v.id);
  if (i == npos) { return; }
  node& n = nodes_[i];
  if (n.bytes != v.bytes) {
    list& l = n.pinned ? pinned_ : queue_;
    l.sub(n.bytes);
    n.bytes = v.bytes;
    l.add(n.bytes);
  }
  set_pinned(i, v.pinned);
  if (n.visited) { return; }
  n.visited = true;
  if (n.pinned) { return; }
  if (i == p1_) { p1_ = first_unvisited(n.next, npos); }
  if (i == p2_) { p2_ = first_unvisited(n.next, hand_); }
}

void sieve_policy::on_erase(tensor_id id) noexcept
{
  auto const it = index_.find(id);
  if (it == index_.end()) { return; }
  index_t const i = it->second;
  index_.erase(it);
  if (nodes_[i].pinned) {
    unlink(pinned_, i);
  } else {
    index_t const victim = p1_ != npos ? p1_ : (p2_ != npos ? p2_ : hand_);
    if (i == victim) {
      evict(i);
    } else {
      leave(i);
    }
  }
  node& n = nodes_[i];
  n.live = false;
  n.pinned = false;
  n.visited = false;
  n.bytes = 0;
  n.next = free_head_;
  free_head_ = i;
}

void sieve_policy::on_pin(tensor_id id) noexcept
{
  index_t const i = lookup(id);
  if (i != npos) { set_pinned(i, true); }
}

void sieve_policy::on_unpin(tensor_id id) noexcept
{
  index_t const i = lookup(id);
  if (i != npos) { set_pinned(i, false); }
}

void sieve_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  std::size_t const need = req.bytes_needed;
  std::size_t freed = 0;
  auto const take = [&](index_t i) {
    out.add(nodes_[i].id, nodes_[i].bytes);
    freed = saturating_add(freed, nodes_[i].bytes);
  };
  // First lap: the unvisited tensors in the hand's order (A, then B); the visited ones are
  // passed (and would be cleared).
  for (index_t i = p1_; i != npos && freed < need; i = nodes_[i].next) {
    if (!nodes_[i].visited) { take(i); }
  }
  for (index_t i = p2_; i != npos && i != hand_ && freed < need; i = nodes_[i].next) {
    if (!nodes_[i].visited) { take(i); }
  }
  // Second lap: the tensors that were visited, now cleared, in the same order.
  for (index_t i = hand_; i != npos && freed < need; i = nodes_[i].next) {
    if (nodes_[i].visited) { take(i); }
  }
  for (index_t i = queue_.front; i != npos && i != hand_ && freed < need; i = nodes_[i].next) {
    if (nodes_[i].visited) { take(i); }
  }
}

bool sieve_policy::validate() const noexcept
{
  std::size_t live = 0;
  bool hand_seen = false;
  for (bool const pinned : {false, true}) {
    list const& l = pinned ? pinned_ : queue_;
    std::size_t count = 0;
    list sum;
    index_t prev = npos;
    for (index_t i = l.front; i != npos; i = nodes_[i].next) {
      if (i >= nodes_.size() || count > nodes_.size()) { return false; }
      node const& n = nodes_[i];
      if (!n.live || n.pinned != pinned || n.prev != prev) { return false; }
      auto const it = index_.find(n.id);
      if (it == index_.end() || it->second != i) { return false; }
      if (!pinned && i == hand_) { hand_seen = true; }
      sum.add(n.bytes);
      prev = i;
      ++count;
    }
    if (l.back != prev || l.count != count) { return false; }
    if (l.bytes_low != sum.bytes_low || l.bytes_high != sum.bytes_high) { return false; }
    live += count;
  }
  if (live != index_.size()) { return false; }
  if ((queue_.count == 0) != (hand_ == npos) || (hand_ != npos && !hand_seen)) { return false; }
  if (p1_ != first_unvisited(hand_, npos)) { return false; }
  if (p2_ != (hand_ == npos ? npos : first_unvisited(queue_.front, hand_))) { return false; }
  std::size_t free_slots = 0;
  for (index_t i = free_head_; i != npos; i = nodes_[i].next) {
    if (i >= nodes_.size() || nodes_[i].live || free_slots > nodes_.size()) { return false; }
    ++free_slots;
  }
  return live + free_slots == nodes_.size();
}

namespace policies {

void register_sieve(policy_registry& registry)
{
  registry.add("sieve",
               "SIEVE (Zhang et al., NSDI 2024): FIFO with a visited bit and a hand that keeps survivors in place",
               {}, [](policy_params const&) { return any_eviction_policy{sieve_policy{}}; });
}

}  // namespace policies
}  // namespace tierpool

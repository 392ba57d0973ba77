// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// hand_queue.cpp — owns tierpool::policies::detail::hand_queue, the implementation shared by
// clock_policy and sieve_policy (the queue over a slab, the hand and its scan pointers, the
// hand's movement applied on erase, sized proposals). See hand_queue.hpp, and Note [CLOCK's
// hand moves on erase] in clock_policy.hpp.
#include "hand_queue.hpp"

#include <tierpool/policies/saturating.hpp>

namespace tierpool::policies::detail {

void hand_queue::link_before(list& l, index_t i, index_t at) noexcept { detail::link_before(nodes_, l, i, at); }

void hand_queue::unlink(list& l, index_t i) noexcept { detail::unlink(nodes_, l, i); }

bool hand_queue::marked(tensor_id id) const noexcept
{
  index_t const i = find(id);
  return i != npos && nodes_[i].marked;
}

hand_queue::index_t hand_queue::first_unmarked(index_t from, index_t stop) const noexcept
{
  for (index_t i = from; i != npos && i != stop; i = nodes_[i].next) {
    if (!nodes_[i].marked) { return i; }
  }
  return npos;
}

void hand_queue::enter(index_t i) noexcept
{
  if (entry_ == entry_point::at_back) {
    link_before(queue_, i, npos);  // SIEVE: new objects at the head, the end of A
    if (hand_ == npos) { hand_ = i; }
    if (!nodes_[i].marked && p1_ == npos) { p1_ = i; }
    return;
  }
  if (hand_ == npos) {  // the only tensor: under the hand
    link_before(queue_, i, npos);
    hand_ = i;
    if (!nodes_[i].marked) { p1_ = i; }
    return;
  }
  // CLOCK: a new page goes into the frame just behind the hand, the last the hand will
  // meet: the end of B.
  link_before(queue_, i, hand_);
  if (!nodes_[i].marked && p2_ == npos) { p2_ = i; }
}

void hand_queue::leave(index_t i) noexcept
{
  index_t const nx = nodes_[i].next;
  if (i == p1_) { p1_ = first_unmarked(nx, npos); }
  if (i == p2_) { p2_ = first_unmarked(nx, hand_); }
  bool const was_hand = i == hand_;
  unlink(queue_, i);
  if (!was_hand) { return; }
  hand_ = nx;  // a removed frame under the hand: the hand points at the next one
  if (hand_ == npos) {  // past the head: wrap to the tail, A becomes the whole queue
    hand_ = queue_.front;
    p1_ = p2_;
    p2_ = npos;
  }
}

void hand_queue::evict(index_t i) noexcept
{
  // Precondition: i is the hand's next victim. See Note [CLOCK's hand moves on erase] (clock_policy.hpp).
  index_t p1 = npos;
  index_t p2 = p2_;
  if (p1_ != npos) {  // i == p1_: the hand passes [hand_, i), all marked
    for (index_t j = hand_; j != i; j = nodes_[j].next) { nodes_[j].marked = false; }
    if (hand_ != i && p2 == npos) { p2 = hand_; }  // the cleared ones end B
    p1 = first_unmarked(nodes_[i].next, npos);
  } else if (p2_ != npos) {  // i == p2_: the hand clears A, wraps, clears [front, i)
    for (index_t j = hand_; j != npos; j = nodes_[j].next) { nodes_[j].marked = false; }
    for (index_t j = queue_.front; j != i; j = nodes_[j].next) { nodes_[j].marked = false; }
    p2 = queue_.front != i ? queue_.front : npos;
    p1 = first_unmarked(nodes_[i].next, npos);  // stops at the old hand at the latest
  } else {  // i == hand_, every bit set: a full lap clears them all and comes back to i
    for (index_t j = queue_.front; j != npos; j = nodes_[j].next) { nodes_[j].marked = false; }
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

void hand_queue::on_insert(tensor_view const& v) noexcept
{
  if (find(v.id) != npos) {  // known: update and count as an access
    on_access(v);
    return;
  }
  index_t const i = admit(v);  // hooks are noexcept: terminate if the host is out of memory
  if (!v.pinned) { enter(i); }
}

void hand_queue::access(index_t i, tensor_view const& v) noexcept
{
  node& n = nodes_[i];
  set_bytes(i, v.bytes);
  set_pinned(i, v.pinned);
  if (n.marked) { return; }
  n.marked = true;
  if (n.pinned) { return; }
  if (i == p1_) { p1_ = first_unmarked(n.next, npos); }
  if (i == p2_) { p2_ = first_unmarked(n.next, hand_); }
}

void hand_queue::erase(index_t i) noexcept
{
  index_.erase(nodes_[i].id);  // first, while its cell is hot
  if (!nodes_[i].pinned) {
    index_t const victim = p1_ != npos ? p1_ : (p2_ != npos ? p2_ : hand_);
    if (i == victim) {
      evict(i);
    } else {
      leave(i);
    }
  }
  nodes_[i].marked = false;
  free_slot(i);
}

void hand_queue::propose(eviction_request const& req, eviction_proposal& out) const
{
  std::size_t const need = req.bytes_needed;
  std::size_t freed = 0;
  auto const take = [&](index_t i) {
    out.add(nodes_[i].id, nodes_[i].bytes);
    freed = saturating_add(freed, nodes_[i].bytes);
  };
  // First lap: the unmarked tensors in the hand's order (A, then B); the marked ones are
  // passed (and would be cleared).
  for (index_t i = p1_; i != npos && freed < need; i = nodes_[i].next) {
    if (!nodes_[i].marked) { take(i); }
  }
  for (index_t i = p2_; i != npos && i != hand_ && freed < need; i = nodes_[i].next) {
    if (!nodes_[i].marked) { take(i); }
  }
  // Second lap: the tensors that were marked, now cleared, in the same order.
  for (index_t i = hand_; i != npos && freed < need; i = nodes_[i].next) {
    if (nodes_[i].marked) { take(i); }
  }
  for (index_t i = queue_.front; i != npos && i != hand_ && freed < need; i = nodes_[i].next) {
    if (nodes_[i].marked) { take(i); }
  }
}

bool hand_queue::order_ok(std::size_t& held) const noexcept
{
  bool hand_seen = false;
  bool const ok = slab_list_ok(nodes_, queue_, index_, [&](node const& n) {
    if (hand_ != npos && &n == &nodes_[hand_]) { hand_seen = true; }
    return !n.pinned;
  });
  if (!ok) { return false; }
  held = queue_.count;
  if ((queue_.count == 0) != (hand_ == npos) || (hand_ != npos && !hand_seen)) { return false; }
  if (p1_ != first_unmarked(hand_, npos)) { return false; }
  return p2_ == (hand_ == npos ? npos : first_unmarked(queue_.front, hand_));
}

}  // namespace tierpool::policies::detail

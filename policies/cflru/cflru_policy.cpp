// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// cflru_policy.cpp — owns tierpool::cflru_policy (the recency list over a slab with a dirty
// bit per tensor, the two-pass clean-first proposal) and its registration as "cflru"
// (register_cflru). See cflru_policy.hpp for the algorithm and policies/cflru/README.md.
#include "cflru_policy.hpp"

#include <cmath>
#include <cstdint>
#include <string>

#include <tierpool/error.hpp>
#include <tierpool/policies/saturating.hpp>

namespace tierpool {

namespace pd = policies::detail;

cflru_policy::cflru_policy() noexcept : cfg_{} {}

cflru_policy::cflru_policy(config cfg) : cfg_(cfg)
{
  TIERPOOL_EXPECTS(std::isfinite(cfg.window) && cfg.window >= 0.0 && cfg.window <= 1.0,
                   "cflru: window must be in [0, 1] (a fraction of the evictable bytes), got " +
                     std::to_string(cfg.window));
}

void cflru_policy::on_insert(tensor_view const& v) noexcept
{
  slot i = find(v.id);
  if (i == pd::no_slot) {
    // Hooks are noexcept: if the host cannot grow the slab or the index, std::terminate runs.
    i = admit(v);
    nodes_[i].dirty = v.write_access;
    if (!v.pinned) { order_enter(i); }
    return;
  }
  node& n = nodes_[i];  // known: a new copy, promoted, dirty or clean as the view says
  set_bytes(i, v.bytes);  // while in its list: the list's sum follows
  if (n.pinned != v.pinned) {
    if (n.pinned) {  // out of the lists: the flag first, then it enters the list it names
      n.dirty = v.write_access;
      set_pinned(i, false);
    } else {  // leaves the list its old flag names
      set_pinned(i, true);
      n.dirty = v.write_access;
    }
  } else if (!n.pinned) {
    order_leave(i);
    n.dirty = v.write_access;
    order_enter(i);
  } else {
    n.dirty = v.write_access;
  }
}

void cflru_policy::access(slot i, tensor_view const& v) noexcept
{
  node& n = nodes_[i];
  set_bytes(i, v.bytes);
  bool const dirty = n.dirty || v.write_access;
  if (n.pinned != v.pinned) {  // the view is the truth at this event
    if (n.pinned) {
      n.dirty = dirty;
      set_pinned(i, false);
    } else {
      set_pinned(i, true);
      n.dirty = dirty;
    }
    return;
  }
  if (n.pinned) {
    n.dirty = dirty;
    return;
  }
  if (n.dirty == dirty && n.stamp == stamp_) { return; }  // the most recent of both lists already
  order_leave(i);  // promoted, onto the dirty list if the access wrote
  n.dirty = dirty;
  order_enter(i);
}

bool cflru_policy::is_dirty(tensor_id id) const noexcept
{
  slot const i = find(id);
  return i != pd::no_slot && nodes_[i].dirty;
}

std::size_t cflru_policy::evictable_bytes() const noexcept
{
  return pd::saturating_add(clean_.bytes(), dirty_.bytes());
}

cflru_policy::slot cflru_policy::older_of(slot& a, slot& b) const noexcept
{
  if (a == pd::no_slot && b == pd::no_slot) { return pd::no_slot; }
  bool const from_a = b == pd::no_slot || (a != pd::no_slot && nodes_[a].stamp < nodes_[b].stamp);
  slot& cursor = from_a ? a : b;
  slot const i = cursor;
  cursor = nodes_[i].prev;
  return i;
}

bool cflru_policy::order_ok(std::size_t& held) const noexcept
{
  held = clean_.count + dirty_.count;
  auto const stamps_fall = [this](pd::slab_list const& l) {  // most recent at the front
    for (slot i = l.front; i != pd::no_slot && nodes_[i].next != pd::no_slot; i = nodes_[i].next) {
      if (nodes_[nodes_[i].next].stamp >= nodes_[i].stamp) { return false; }
    }
    return true;
  };
  return pd::slab_list_ok(nodes_, clean_, index_, [](node const& n) { return !n.pinned && !n.dirty; }) &&
         pd::slab_list_ok(nodes_, dirty_, index_, [](node const& n) { return !n.pinned && n.dirty; }) &&
         stamps_fall(clean_) && stamps_fall(dirty_);
}

void cflru_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  if (req.bytes_needed == 0) { return; }
  std::size_t freed = 0;
  auto take = [&](slot i) {
    node const& n = nodes_[i];
    index_.prefetch(n.id);
    out.add(n.id, n.bytes);
    freed = pd::saturating_add(freed, n.bytes);
  };
  if (cfg_.window >= 1.0) {  // every clean tensor, least recent first, then every dirty one
    for (slot i = clean_.back; i != pd::no_slot && freed < req.bytes_needed; i = nodes_[i].prev) { take(i); }
    for (slot i = dirty_.back; i != pd::no_slot && freed < req.bytes_needed; i = nodes_[i].prev) { take(i); }
    return;
  }
  // The window: the least recent `window` of the evictable bytes, walked by merging the two
  // lists by recency. Its clean tensors first.
  auto const window = static_cast<std::size_t>(cfg_.window * static_cast<double>(evictable_bytes()));
  std::size_t seen = 0;
  slot edge = pd::no_slot;  // the first tensor past the window (none: the window is all of them)
  slot a = clean_.back;
  slot b = dirty_.back;
  for (slot i = older_of(a, b); i != pd::no_slot; i = older_of(a, b)) {
    if (seen >= window) {
      edge = i;
      break;
    }
    seen = pd::saturating_add(seen, nodes_[i].bytes);
    if (nodes_[i].dirty) { continue; }
    take(i);
    if (freed >= req.bytes_needed) { return; }
  }
  // Then the window's dirty tensors and everything past it, in LRU order.
  a = clean_.back;
  b = dirty_.back;
  bool past = false;
  for (slot i = older_of(a, b); i != pd::no_slot && freed < req.bytes_needed; i = older_of(a, b)) {
    past = past || i == edge;
    if (!past && !nodes_[i].dirty) { continue; }  // a clean tensor of the window: proposed above
    take(i);
  }
}

namespace policies {

void register_cflru(policy_registry& registry)
{
  registry.add("cflru",
               "Clean-first LRU (Park et al., CASES 2006): the least recent part of the LRU order gives up its clean "
               "tensors before its dirty ones",
               {
                 {"window", parameter_type::real, "1",
                  "the clean-first window: the least recent fraction of the evictable bytes, in [0, 1]"},
               },
               [](policy_params const& p) {
                 cflru_policy::config cfg;
                 cfg.window = p.get<double>("window");
                 return any_eviction_policy{cflru_policy{cfg}};
               });
}

}  // namespace policies
}  // namespace tierpool

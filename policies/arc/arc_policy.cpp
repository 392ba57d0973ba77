// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// arc_policy.cpp — owns tierpool::arc_policy (T1/T2/B1/B2 over a slab, byte-sized
// adaptation of p, REPLACE in propose, ghost trimming) and its registration as "arc"
// (register_arc). See arc_policy.hpp for the algorithm and policies/arc/README.md.
#include "arc_policy.hpp"

#include <utility>

#include <tierpool/policies/saturating.hpp>

#include <algorithm>
#include <string>

namespace tierpool {
namespace {

using policies::detail::saturating_add;

}  // namespace

arc_policy::arc_policy() noexcept : arc_policy(config{}) {}

arc_policy::arc_policy(config cfg) noexcept : cfg_(cfg) {}

arc_policy::list& arc_policy::list_of(list_id which) noexcept
{
  return const_cast<list&>(std::as_const(*this).list_of(which));  // one switch, below
}

arc_policy::list const& arc_policy::list_of(list_id which) const noexcept
{
  switch (which) {
    case list_id::t1: return t1_;
    case list_id::t2: return t2_;
    case list_id::b1: return b1_;
    case list_id::b2: break;
  }
  return b2_;
}

void arc_policy::link_front(list_id which, index_t i) noexcept
{
  nodes_[i].list = which;
  policies::detail::link_front(nodes_, list_of(which), i);
}

void arc_policy::unlink(index_t i) noexcept { policies::detail::unlink(nodes_, list_of(nodes_[i].list), i); }

std::uint64_t arc_policy::capacity_bytes() const noexcept { return cfg_.capacity != 0 ? cfg_.capacity : high_water_; }

void arc_policy::touch(index_t i, tensor_view const& v) noexcept
{
  node& n = nodes_[i];
  bool const correlated = cfg_.correlation_window != 0 && clock_ - n.last_event <= cfg_.correlation_window;
  list_id const to = correlated ? n.list : list_id::t2;
  unlink(i);  // out of the list's sums with the old bytes
  set_pinned(i, v.pinned);
  set_bytes(i, v.bytes);
  n.last_event = clock_;
  link_front(to, i);
}

void arc_policy::drop(index_t i) noexcept
{
  unlink(i);
  release(i);
}

void arc_policy::trim_ghosts() noexcept
{
  // |T1| + |B1| <= c and |T1| + |T2| + |B1| + |B2| <= 2c, in bytes (the paper's case IV).
  double const c = static_cast<double>(capacity_bytes());
  while (b1_.back != npos && t1_.wide() + b1_.wide() > c) { drop(b1_.back); }
  auto total = [&] { return t1_.wide() + t2_.wide() + b1_.wide() + b2_.wide(); };
  while (b2_.back != npos && total() > 2.0 * c) { drop(b2_.back); }
  while (b1_.back != npos && total() > 2.0 * c) { drop(b1_.back); }
}

double arc_policy::adapted_p(node const& n, double size) const noexcept
{
  double const c = static_cast<double>(capacity_bytes());
  double const b1 = evicting_ ? b1_at_miss_ : b1_.wide();  // as when the miss arrived
  double const b2 = evicting_ ? b2_at_miss_ : b2_.wide();
  if (n.list == list_id::b1) {
    double const ratio = b1 > 0.0 ? std::max(b2 / b1, 1.0) : 1.0;
    return std::min(c, p_ + ratio * size);
  }
  double const ratio = b2 > 0.0 ? std::max(b1 / b2, 1.0) : 1.0;
  return std::max(0.0, p_ - ratio * size);
}

void arc_policy::on_insert(tensor_view const& v) noexcept
{
  ++clock_;
  index_t const i = find(v.id);
  if (i != npos && !is_ghost(nodes_[i].list)) {  // known resident: update, count as an access
    touch(i, v);
  } else if (i != npos) {  // ghost hit: adapt p towards the side that hit, then into T2
    node& n = nodes_[i];
    p_ = adapted_p(n, static_cast<double>(v.bytes));
    unlink(i);
    n.bytes = v.bytes;
    if (v.pinned) { adopt_pinned(i); }
    n.last_event = clock_;
    link_front(list_id::t2, i);
  } else {  // new: T1 (pinned or not). Hooks are noexcept: out of host memory here terminates.
    index_t const j = admit(v);
    nodes_[j].last_event = clock_;
    link_front(list_id::t1, j);
  }
  high_water_ = std::max<std::uint64_t>(high_water_, saturating_add(t1_.bytes(), t2_.bytes()));
  p_ = std::min(p_, static_cast<double>(capacity_bytes()));
  evicting_ = false;
  trim_ghosts();
}

void arc_policy::access(index_t i, tensor_view const& v) noexcept
{
  ++clock_;
  evicting_ = false;
  touch(i, v);
  high_water_ = std::max<std::uint64_t>(high_water_, saturating_add(t1_.bytes(), t2_.bytes()));
}

void arc_policy::erase(index_t i) noexcept
{
  node& n = nodes_[i];
  list_id const ghost = n.list == list_id::t1 ? list_id::b1 : list_id::b2;
  if (!evicting_) {  // the first eviction for this miss: remember the ghost lists before it
    b1_at_miss_ = b1_.wide();
    b2_at_miss_ = b2_.wide();
    evicting_ = true;
  }
  unlink(i);
  set_pinned(i, false);
  link_front(ghost, i);
  trim_ghosts();
}

void arc_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  if (req.bytes_needed == 0) { return; }
  // REPLACE(x, p) for the incoming x: a ghost hit adapts p before REPLACE (Figure 4, cases
  // II and III), and a B2 hit takes from T1 when |T1| = p too. Without x: the current p.
  double p = p_;
  bool x_in_b2 = false;
  if (req.incoming != tensor_id{}) {
    if (index_t const x = find(req.incoming); x != npos && is_ghost(nodes_[x].list)) {
      p = adapted_p(nodes_[x], static_cast<double>(nodes_[x].bytes));
      x_in_b2 = nodes_[x].list == list_id::b2;
    }
  }
  // REPLACE, repeated without changing state: `t1_left` is |T1| minus what was taken.
  double t1_left = t1_.wide();
  index_t a = t1_.back;
  index_t b = t2_.back;
  std::size_t freed = 0;
  while (freed < req.bytes_needed) {
    while (a != npos && nodes_[a].pinned) {
      t1_left -= static_cast<double>(nodes_[a].bytes);
      a = nodes_[a].prev;
    }
    while (b != npos && nodes_[b].pinned) { b = nodes_[b].prev; }
    if (a == npos && b == npos) { break; }
    bool const from_t1 = a != npos && (b == npos || t1_left > p || (x_in_b2 && t1_left == p));
    index_t& cur = from_t1 ? a : b;
    node const& n = nodes_[cur];
    out.add(n.id, n.bytes);
    freed = saturating_add(freed, n.bytes);
    if (from_t1) { t1_left -= static_cast<double>(n.bytes); }
    cur = n.prev;
  }
}

std::vector<tensor_id> arc_policy::contents(list_id which) const
{
  std::vector<tensor_id> out;
  for (index_t i = list_of(which).front; i != npos; i = nodes_[i].next) { out.push_back(nodes_[i].id); }
  return out;
}

bool arc_policy::order_ok(std::size_t& held) const noexcept
{
  std::size_t linked = 0;
  for (list_id const which : {list_id::t1, list_id::t2, list_id::b1, list_id::b2}) {
    list const& l = list_of(which);
    bool const ok = policies::detail::slab_list_ok(nodes_, l, index_, [&](node const& n) {
      return n.list == which && !(is_ghost(which) && n.pinned);
    });
    if (!ok) { return false; }
    linked += l.count;
  }
  if (linked < pinned_.count) { return false; }
  held = linked - pinned_.count;  // pinned tensors stay linked in T1 / T2; the base counts them
  double const c = static_cast<double>(capacity_bytes());
  return p_ >= 0.0 && p_ <= c;
}

namespace policies {

void register_arc(policy_registry& registry)
{
  registry.add(
    "arc", "Adaptive Replacement Cache (Megiddo & Modha, FAST 2003): recency and frequency lists with ghost-driven balance",
    {
      {"capacity", parameter_type::bytes, "0",
       "cache size c in bytes (0 = the largest resident bytes seen, i.e. the tier once full)"},
      {"correlation_window", parameter_type::unsigned_integer, "1",
       "a re-access within this many policy events is the same reference, not a promotion to T2 (0 = the paper)"},
    },
    [](policy_params const& p) {
      arc_policy::config cfg;
      cfg.capacity = p.get<std::uint64_t>("capacity");
      cfg.correlation_window = p.get<std::uint64_t>("correlation_window");
      return any_eviction_policy{arc_policy{cfg}};
    });
}

}  // namespace policies
}  // namespace tierpool

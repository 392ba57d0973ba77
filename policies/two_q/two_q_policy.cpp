// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// two_q_policy.cpp — owns tierpool::two_q_policy (A1in, A1out, Am over one slab, the
// byte-sized reclaim rule, ghosts made on erase) and its registration as "two_q"
// (register_two_q). See two_q_policy.hpp for the algorithm and
// Note [2Q ghosts are made on erase].
#include "two_q_policy.hpp"

#include <cmath>
#include <string>

#include <tierpool/policies/saturating.hpp>

namespace tierpool {

two_q_policy::two_q_policy() noexcept : cfg_{} {}

two_q_policy::two_q_policy(config cfg) : cfg_(cfg)
{
  TIERPOOL_EXPECTS(std::isfinite(cfg.kin) && cfg.kin > 0.0 && cfg.kin < 1.0,
                   "two_q: kin must be in (0, 1) (the paper uses 0.25), got " + std::to_string(cfg.kin));
  TIERPOOL_EXPECTS(std::isfinite(cfg.kout) && cfg.kout >= 0.0 && cfg.kout <= 16.0,
                   "two_q: kout must be in [0, 16] (the paper uses 0.5), got " + std::to_string(cfg.kout));
}

two_q_policy::list& two_q_policy::queue_of(node const& n) noexcept
{
  switch (n.q) {
    case queue::a1in: return a1in_;
    case queue::am: return am_;
    case queue::a1out: break;
  }
  return a1out_;
}

// reclaimfor's test: "if |A1in| > Kin, page out the tail of A1in, else the tail of Am",
// with Kin a fraction of the held bytes, and the non-empty queue when the other is empty.
bool two_q_policy::evict_from_a1in(list const& a1in, list const& am) const noexcept
{
  if (a1in.count == 0) { return false; }
  if (am.count == 0) { return true; }
  return a1in.wide() > cfg_.kin * (a1in.wide() + am.wide());
}

void two_q_policy::trim_ghosts() noexcept
{
  policies::detail::drop_front_while_over(nodes_, a1out_, cfg_.kout * (a1in_.wide() + am_.wide()),
                                          [this](index_t g) { release(g); });
}

void two_q_policy::on_insert(tensor_view const& v) noexcept
{
  if (index_t const i = find(v.id); i != npos) {
    node& n = nodes_[i];
    if (n.q == queue::a1out) {  // a miss on a remembered id: a second reference, into Am
      policies::detail::unlink(nodes_, a1out_, i);
      n.bytes = v.bytes;
      n.q = queue::am;
      if (v.pinned) {
        adopt_pinned(i);
      } else {
        order_enter(i);
      }
      return;
    }
    on_access(v);  // resident: an access
    return;
  }
  index_t const i = admit(v);  // hooks are noexcept: terminate if out of memory
  if (!v.pinned) { order_enter(i); }  // the back of A1in
}

void two_q_policy::access(index_t i, tensor_view const& v) noexcept
{
  node& n = nodes_[i];
  set_bytes(i, v.bytes);
  if (n.pinned != v.pinned) {
    set_pinned(i, v.pinned);
    return;
  }
  if (!n.pinned && n.q == queue::am && am_.back != i) {  // Am is LRU; A1in ignores the access
    order_leave(i);
    order_enter(i);
  }
}

void two_q_policy::erase(index_t i) noexcept
{
  node& n = nodes_[i];
  // See Note [2Q ghosts are made on erase].
  if (!n.pinned && n.q == queue::a1in && a1in_.front == i && evict_from_a1in(a1in_, am_)) {
    policies::detail::unlink(nodes_, a1in_, i);
    n.q = queue::a1out;
    policies::detail::link_back(nodes_, a1out_, i);
    trim_ghosts();
    return;
  }
  if (!n.pinned) { order_leave(i); }
  release(i);
}

void two_q_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  list a1in = a1in_;  // byte sums and counts as the victims leave (links unused)
  list am = am_;
  index_t next_in = a1in_.front;
  index_t next_m = am_.front;
  std::size_t freed = 0;
  while (freed < req.bytes_needed && (a1in.count != 0 || am.count != 0)) {
    bool const from_a1in = evict_from_a1in(a1in, am);
    index_t& cursor = from_a1in ? next_in : next_m;
    list& l = from_a1in ? a1in : am;
    node const& n = nodes_[cursor];
    out.add(n.id, n.bytes);
    freed = policies::detail::saturating_add(freed, n.bytes);
    --l.count;
    l.sub(n.bytes);
    cursor = n.next;
  }
}

bool two_q_policy::order_ok(std::size_t& held) const noexcept
{
  held = 0;
  for (list const* l : {&a1in_, &am_, &a1out_}) {
    queue const q = l == &a1in_ ? queue::a1in : (l == &am_ ? queue::am : queue::a1out);
    if (!policies::detail::slab_list_ok(nodes_, *l, index_, [&](node const& n) { return !n.pinned && n.q == q; })) {
      return false;
    }
    held += l->count;
  }
  return true;
}

namespace policies {

void register_two_q(policy_registry& registry)
{
  registry.add(
    "two_q",
    "2Q, full version (Johnson & Shasha, VLDB 1994): FIFO A1in for new tensors, ghost A1out, LRU Am for re-referenced ones",
    {
      {"kin", parameter_type::real, "0.25",
       "fraction of the held bytes above which A1in (new tensors) is evicted from first, in (0, 1)"},
      {"kout", parameter_type::real, "0.5",
       "size of the ghost queue A1out as a fraction of the held bytes (bytes of remembered tensors), in [0, 16]"},
    },
    [](policy_params const& p) {
      two_q_policy::config cfg;
      cfg.kin = p.get<double>("kin");
      cfg.kout = p.get<double>("kout");
      return any_eviction_policy{two_q_policy{cfg}};
    });
}

}  // namespace policies
}  // namespace tierpool

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

void two_q_policy::link_back(list& l, index_t i) noexcept { policies::detail::link_back(nodes_, l, i); }

void two_q_policy::unlink(list& l, index_t i) noexcept { policies::detail::unlink(nodes_, l, i); }

two_q_policy::list& two_q_policy::list_of(node const& n) noexcept
{
  if (n.pinned) { return pinned_; }
  switch (n.q) {
    case queue::a1in: return a1in_;
    case queue::am: return am_;
    case queue::a1out: break;
  }
  return a1out_;
}

two_q_policy::index_t two_q_policy::lookup_resident(tensor_id id) const noexcept
{
  index_t const it = index_.find(id);
  if (it == npos || nodes_[it].q == queue::a1out) { return npos; }
  return it;
}

bool two_q_policy::contains(tensor_id id) const noexcept { return lookup_resident(id) != npos; }

bool two_q_policy::is_ghost(tensor_id id) const noexcept
{
  index_t const it = index_.find(id);
  return it != npos && nodes_[it].q == queue::a1out;
}

// reclaimfor's test: "if |A1in| > Kin, page out the tail of A1in, else the tail of Am",
// with Kin a fraction of the held bytes, and the non-empty queue when the other is empty.
bool two_q_policy::evict_from_a1in(list const& a1in, list const& am) const noexcept
{
  if (a1in.count == 0) { return false; }
  if (am.count == 0) { return true; }
  return a1in.wide() > cfg_.kin * (a1in.wide() + am.wide());
}

void two_q_policy::free_slot(index_t i) noexcept
{
  node& n = nodes_[i];
  n.live = false;
  n.pinned = false;
  n.bytes = 0;
  policies::detail::slab_release(nodes_, free_head_, i);
}

void two_q_policy::trim_ghosts() noexcept
{
  policies::detail::drop_front_while_over(nodes_, a1out_, cfg_.kout * (a1in_.wide() + am_.wide()), [this](index_t g) {
    index_.erase(nodes_[g].id);
    free_slot(g);
  });
}

void two_q_policy::set_pinned(index_t i, bool pinned) noexcept
{
  node& n = nodes_[i];
  if (n.pinned == pinned) { return; }
  unlink(list_of(n), i);
  n.pinned = pinned;
  link_back(list_of(n), i);  // unpinned: the newest end of its own queue
}

void two_q_policy::on_insert(tensor_view const& v) noexcept
{
  if (index_t const i = index_.find(v.id); i != npos) {
    node& n = nodes_[i];
    if (n.q == queue::a1out) {  // a miss on a remembered id: a second reference, into Am
      unlink(a1out_, i);
      n.bytes = v.bytes;
      n.q = queue::am;
      n.pinned = v.pinned;
      link_back(list_of(n), i);
      return;
    }
    on_access(v);  // resident: an access
    return;
  }
  index_t const i = policies::detail::slab_acquire(nodes_, free_head_);  // hooks are noexcept: terminate if out of memory
  node& n = nodes_[i];
  n = node{v.id, v.bytes, npos, npos, queue::a1in, v.pinned, true};
  index_.insert(v.id, i);
  link_back(list_of(n), i);
}

void two_q_policy::on_access(tensor_view const& v) noexcept
{
  index_t const i = lookup_resident(v.id);
  if (i == npos) { return; }
  node& n = nodes_[i];
  if (n.bytes != v.bytes) {
    list_of(n).resize(n.bytes, v.bytes);
    n.bytes = v.bytes;
  }
  if (n.pinned != v.pinned) {
    set_pinned(i, v.pinned);
    return;
  }
  if (!n.pinned && n.q == queue::am && am_.back != i) {  // Am is LRU; A1in ignores the access
    unlink(am_, i);
    link_back(am_, i);
  }
}

void two_q_policy::on_erase(tensor_id id) noexcept
{
  index_t const i = lookup_resident(id);
  if (i == npos) { return; }
  node& n = nodes_[i];
  // See Note [2Q ghosts are made on erase].
  if (!n.pinned && n.q == queue::a1in && a1in_.front == i && evict_from_a1in(a1in_, am_)) {
    unlink(a1in_, i);
    n.q = queue::a1out;
    link_back(a1out_, i);
    trim_ghosts();
    return;
  }
  unlink(list_of(n), i);
  index_.erase(id);
  free_slot(i);
}

void two_q_policy::on_pin(tensor_id id) noexcept
{
  index_t const i = lookup_resident(id);
  if (i != npos) { set_pinned(i, true); }
}

void two_q_policy::on_unpin(tensor_id id) noexcept
{
  index_t const i = lookup_resident(id);
  if (i != npos) { set_pinned(i, false); }
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

bool two_q_policy::validate() const noexcept
{
  struct expect {
    list const* l;
    queue q;
    bool pinned;
  };
  std::size_t reachable = 0;
  for (expect const e : {expect{&a1in_, queue::a1in, false}, expect{&am_, queue::am, false},
                         expect{&a1out_, queue::a1out, false}, expect{&pinned_, queue::a1in, true}}) {
    bool const ok = policies::detail::slab_list_ok(nodes_, *e.l, index_, [&](node const& n) {
      return n.pinned == e.pinned && (e.pinned ? n.q != queue::a1out : n.q == e.q);
    });
    if (!ok) { return false; }
    reachable += e.l->count;
  }
  if (reachable != index_.size()) { return false; }
  return policies::detail::slab_accounted(nodes_, free_head_, reachable);
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

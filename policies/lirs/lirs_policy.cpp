// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// lirs_policy.cpp — owns tierpool::lirs_policy (stack S with pruning, the LIR list kept in
// S order, queue Q of resident HIR tensors, bounded non-resident entries, all over one
// slab) and its registration as "lirs" (register_lirs). See lirs_policy.hpp for the
// algorithm and policies/lirs/README.md for the design.
#include "lirs_policy.hpp"

#include <utility>

#include <algorithm>
#include <string>

#include <tierpool/policies/saturating.hpp>

namespace tierpool {

lirs_policy::lirs_policy() noexcept : lirs_policy(config{}) {}

lirs_policy::lirs_policy(config cfg) noexcept : cfg_(cfg) {}

template <lirs_policy::index_t lirs_policy::node::*Prev, lirs_policy::index_t lirs_policy::node::*Next>
void lirs_policy::link_front(list& l, index_t i) noexcept
{
  policies::detail::link_front_via<Prev, Next>(nodes_, l, i);
}

template <lirs_policy::index_t lirs_policy::node::*Prev, lirs_policy::index_t lirs_policy::node::*Next>
void lirs_policy::unlink(list& l, index_t i) noexcept
{
  policies::detail::unlink_via<Prev, Next>(nodes_, l, i);
}

lirs_policy::list& lirs_policy::list_of(status st) noexcept
{
  return const_cast<list&>(std::as_const(*this).list_of(st));  // one switch, below
}

lirs_policy::list const& lirs_policy::list_of(status st) const noexcept
{
  switch (st) {
    case status::lir: return lir_;
    case status::hir: return q_;
    case status::non_resident: break;
  }
  return ghosts_;
}

std::optional<lirs_policy::status> lirs_policy::status_of(tensor_id id) const noexcept
{
  index_t const i = find(id);
  if (i == npos) { return std::nullopt; }
  return nodes_[i].st;
}

double lirs_policy::lir_limit() const noexcept
{
  double const c = static_cast<double>(capacity_bytes());
  return c - cfg_.hir_ratio * c;
}

void lirs_policy::note_resident() noexcept
{
  high_water_ = std::max<std::uint64_t>(high_water_, policies::detail::saturating_add(lir_.bytes(), q_.bytes()));
}

void lirs_policy::s_to_top(index_t i) noexcept
{
  if (nodes_[i].in_s) { unlink<&node::s_prev, &node::s_next>(s_, i); }
  link_front<&node::s_prev, &node::s_next>(s_, i);
  nodes_[i].in_s = true;
}

// Move a node between the status lists. LIR: to the head of lir_ (the caller puts it on
// top of S, keeping lir_ in S order); HIR: to the end of Q; non-resident: newest ghost.
void lirs_policy::set_status(index_t i, status st) noexcept
{
  node& n = nodes_[i];
  unlink<&node::l_prev, &node::l_next>(list_of(n.st), i);
  n.st = st;
  link_front<&node::l_prev, &node::l_next>(list_of(st), i);
}

void lirs_policy::order_resize(index_t i, std::size_t from, std::size_t to) noexcept
{
  node const& n = nodes_[i];
  list_of(n.st).resize(from, to);
  if (n.in_s) { s_.resize(from, to); }
}

void lirs_policy::forget(index_t i) noexcept
{
  node& n = nodes_[i];
  if (n.in_s) { unlink<&node::s_prev, &node::s_next>(s_, i); }
  unlink<&node::l_prev, &node::l_next>(list_of(n.st), i);
  n.in_s = false;
  release(i);
}

void lirs_policy::prune() noexcept
{
  // Invariant afterwards: S is empty or its bottom is an LIR tensor.
  while (s_.back != npos && nodes_[s_.back].st != status::lir) {
    index_t const b = s_.back;
    if (nodes_[b].st == status::non_resident) {
      forget(b);  // a non-resident entry lives only in S
    } else {
      unlink<&node::s_prev, &node::s_next>(s_, b);  // a resident HIR tensor stays in Q
      nodes_[b].in_s = false;
    }
  }
}

void lirs_policy::fit_lir(index_t keep) noexcept
{
  double const limit = lir_limit();
  while (lir_.wide() > limit && lir_.back != npos && lir_.back != keep) {
    set_status(lir_.back, status::hir);  // the bottom LIR tensor becomes HIR, end of Q
    prune();                             // ... and leaves the bottom of S
  }
}

void lirs_policy::trim_ghosts() noexcept
{
  double const limit = cfg_.ghost_ratio * static_cast<double>(capacity_bytes());
  while (ghosts_.back != npos && ghosts_.wide() > limit) { forget(ghosts_.back); }  // never S's bottom
}

void lirs_policy::access_resident(index_t i, tensor_view const& v) noexcept
{
  node& n = nodes_[i];
  set_bytes(i, v.bytes);
  set_pinned(i, v.pinned);
  bool const correlated = cfg_.correlation_window != 0 && clock_ - n.last_event <= cfg_.correlation_window;
  n.last_event = clock_;
  if (n.st == status::lir) {
    unlink<&node::l_prev, &node::l_next>(lir_, i);  // keep lir_ in S order
    link_front<&node::l_prev, &node::l_next>(lir_, i);
    s_to_top(i);
    prune();
    return;
  }
  // Resident HIR.
  if (n.in_s && !correlated) {  // its IRR is below the bottom LIR's recency: it becomes LIR
    set_status(i, status::lir);
    s_to_top(i);
    fit_lir(i);
    prune();
    return;
  }
  s_to_top(i);
  set_status(i, status::hir);  // to the end of Q
  prune();                     // with no LIR tensor in S it leaves S again at once
}

void lirs_policy::on_insert(tensor_view const& v) noexcept
{
  ++clock_;
  index_t const i = find(v.id);
  if (i != npos && nodes_[i].st != status::non_resident) {
    access_resident(i, v);
    note_resident();
    return;
  }
  if (i != npos) {  // a remembered tensor returns: its IRR is low, it becomes LIR
    node& n = nodes_[i];
    set_bytes(i, v.bytes);
    if (v.pinned) { adopt_pinned(i); }
    n.last_event = clock_;
    set_status(i, status::lir);
    s_to_top(i);
    note_resident();
    fit_lir(i);
    prune();
    trim_ghosts();
    return;
  }
  // New. Hooks are noexcept: out of host memory here terminates.
  index_t const j = admit(v);
  node& n = nodes_[j];
  n.last_event = clock_;
  high_water_ = std::max<std::uint64_t>(high_water_, policies::detail::saturating_add(policies::detail::saturating_add(lir_.bytes(), q_.bytes()), v.bytes));
  bool const lir = lir_.wide() + static_cast<double>(v.bytes) <= lir_limit();
  n.st = lir ? status::lir : status::hir;
  link_front<&node::l_prev, &node::l_next>(list_of(n.st), j);
  s_to_top(j);
  prune();  // a HIR tensor with no LIR below it leaves S at once (the bottom must be LIR)
  trim_ghosts();
}

void lirs_policy::access(index_t i, tensor_view const& v) noexcept
{
  ++clock_;
  access_resident(i, v);
  note_resident();
}

void lirs_policy::erase(index_t i) noexcept
{
  node& n = nodes_[i];
  set_pinned(i, false);
  if (n.st == status::hir && n.in_s) {
    set_status(i, status::non_resident);
    trim_ghosts();
    return;
  }
  forget(i);
  prune();
}

void lirs_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  std::size_t freed = 0;
  for (list const* l : {&q_, &lir_}) {
    for (index_t i = l->back; i != npos && freed < req.bytes_needed; i = nodes_[i].l_prev) {
      node const& n = nodes_[i];
      if (n.pinned) { continue; }
      out.add(n.id, n.bytes);
      freed = policies::detail::saturating_add(freed, n.bytes);
    }
  }
}

std::vector<tensor_id> lirs_policy::stack() const
{
  std::vector<tensor_id> out;
  for (index_t i = s_.front; i != npos; i = nodes_[i].s_next) { out.push_back(nodes_[i].id); }
  return out;
}

std::vector<tensor_id> lirs_policy::queue() const
{
  std::vector<tensor_id> out;
  for (index_t i = q_.back; i != npos; i = nodes_[i].l_prev) { out.push_back(nodes_[i].id); }
  return out;
}

bool lirs_policy::order_ok(std::size_t& held) const noexcept
{
  // The status lists: links, membership, sums, index.
  std::size_t live = 0;
  for (status const st : {status::lir, status::hir, status::non_resident}) {
    list const& l = list_of(st);
    bool const ok = policies::detail::slab_list_ok_via<&node::l_prev, &node::l_next>(nodes_, l, index_, [&](node const& n) {
      if (n.st != st) { return false; }
      if (st == status::non_resident && (!n.in_s || n.pinned)) { return false; }
      return st != status::lir || n.in_s;
    });
    if (!ok) { return false; }
    live += l.count;
  }
  if (live < pinned_.count) { return false; }
  held = live - pinned_.count;  // pinned tensors stay linked; the base counts them
  // S: links, in_s flags, the LIR tensors in the same order as lir_, an LIR bottom.
  std::size_t in_s = 0;
  index_t prev = npos;
  index_t lir_cursor = lir_.front;
  for (index_t i = s_.front; i != npos; i = nodes_[i].s_next) {
    if (i >= nodes_.size() || in_s > nodes_.size()) { return false; }
    node const& n = nodes_[i];
    if (!n.live || !n.in_s || n.s_prev != prev) { return false; }
    if (n.st == status::lir) {
      if (lir_cursor != i) { return false; }
      lir_cursor = nodes_[i].l_next;
    }
    prev = i;
    ++in_s;
  }
  if (s_.back != prev || s_.count != in_s || lir_cursor != npos) { return false; }
  if (s_.back != npos && nodes_[s_.back].st != status::lir) { return false; }
  std::size_t flagged = 0;
  for (node const& n : nodes_) {
    if (n.live && n.in_s) { ++flagged; }
  }
  return flagged == in_s;
}

namespace policies {

void register_lirs(policy_registry& registry)
{
  registry.add(
    "lirs",
    "Low Inter-reference Recency Set (Jiang & Zhang, SIGMETRICS 2002): evicts from a small queue of rarely reused tensors",
    {
      {"capacity", parameter_type::bytes, "0", "cache size c in bytes (0 = the largest resident bytes seen)"},
      {"hir_ratio", parameter_type::real, "0.01", "share of c for resident HIR tensors, in [0, 1) (the paper: 1%)"},
      {"ghost_ratio", parameter_type::real, "1.0",
       "bytes of evicted HIR tensors the stack remembers, as a multiple of c (>= 0)"},
      {"correlation_window", parameter_type::unsigned_integer, "1",
       "a re-access within this many policy events is the same reference, no status change (0 = the paper)"},
    },
    [](policy_params const& p) {
      lirs_policy::config cfg;
      cfg.capacity = p.get<std::uint64_t>("capacity");
      cfg.hir_ratio = p.get<double>("hir_ratio");
      cfg.ghost_ratio = p.get<double>("ghost_ratio");
      cfg.correlation_window = p.get<std::uint64_t>("correlation_window");
      if (!(cfg.hir_ratio >= 0.0 && cfg.hir_ratio < 1.0)) {
        throw logic_error("lirs: hir_ratio must be in [0, 1), got " + std::to_string(cfg.hir_ratio));
      }
      if (!(cfg.ghost_ratio >= 0.0) || cfg.ghost_ratio > 1e6) {
        throw logic_error("lirs: ghost_ratio must be in [0, 1e6], got " + std::to_string(cfg.ghost_ratio));
      }
      return any_eviction_policy{lirs_policy{cfg}};
    });
}

}  // namespace policies
}  // namespace tierpool

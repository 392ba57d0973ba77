// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// fifo_policy.cpp — owns tierpool::fifo_policy (the insertion-order queue over a slab, pin
// handling, sized proposals) and its registration as "fifo" (register_fifo). See
// fifo_policy.hpp for the algorithm and policies/fifo/README.md for the design.
#include "fifo_policy.hpp"

#include <tierpool/policies/saturating.hpp>

namespace tierpool {

fifo_policy::fifo_policy() noexcept : fifo_policy(config{}) {}

fifo_policy::fifo_policy(config cfg) noexcept : cfg_(cfg) {}

void fifo_policy::link_back(list& l, index_t i) noexcept { policies::detail::link_back(nodes_, l, i); }

void fifo_policy::unlink(list& l, index_t i) noexcept { policies::detail::unlink(nodes_, l, i); }

fifo_policy::index_t fifo_policy::lookup(tensor_id id) const noexcept
{
  return index_.find(id);
}

void fifo_policy::set_bytes(index_t i, std::size_t bytes) noexcept
{
  node& n = nodes_[i];
  if (n.bytes == bytes) { return; }
  list_of(n).resize(n.bytes, bytes);
  n.bytes = bytes;
}

void fifo_policy::set_pinned(index_t i, bool pinned) noexcept
{
  node& n = nodes_[i];
  if (n.pinned == pinned) { return; }
  unlink(list_of(n), i);
  n.pinned = pinned;
  link_back(list_of(n), i);  // an unpinned tensor re-enters at the newest end
}

void fifo_policy::on_insert(tensor_view const& v) noexcept
{
  index_t i = lookup(v.id);
  if (i != npos) {  // known: an access, which FIFO ignores; adopt size and pin state
    set_bytes(i, v.bytes);
    set_pinned(i, v.pinned);
    return;
  }
  // Hooks are noexcept: if the host cannot grow the slab or the index, std::terminate runs.
  i = policies::detail::slab_acquire(nodes_, free_head_);
  node& n = nodes_[i];
  n = node{v.id, v.bytes, npos, npos, v.pinned, true};
  index_.insert(v.id, i);
  link_back(list_of(n), i);
}

void fifo_policy::on_access(tensor_view const& v) noexcept
{
  index_t const i = lookup(v.id);
  if (i == npos) { return; }
  set_bytes(i, v.bytes);
  set_pinned(i, v.pinned);  // the view is the truth at this event
}

void fifo_policy::on_erase(tensor_id id) noexcept
{
  index_t const i = index_.find(id);
  if (i == npos) { return; }
  index_.erase(id);
  node& n = nodes_[i];
  unlink(list_of(n), i);
  n.live = false;
  n.pinned = false;
  n.bytes = 0;
  policies::detail::slab_release(nodes_, free_head_, i);
}

void fifo_policy::on_pin(tensor_id id) noexcept
{
  index_t const i = lookup(id);
  if (i != npos) { set_pinned(i, true); }
}

void fifo_policy::on_unpin(tensor_id id) noexcept
{
  index_t const i = lookup(id);
  if (i != npos) { set_pinned(i, false); }
}

void fifo_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  std::size_t freed = 0;
  for (index_t i = queue_.front; i != npos && freed < req.bytes_needed; i = nodes_[i].next) {
    node const& n = nodes_[i];
    out.add(n.id, n.bytes);
    freed = policies::detail::saturating_add(freed, n.bytes);
  }
}

bool fifo_policy::validate() const noexcept
{
  std::size_t live = 0;
  for (bool const pinned : {false, true}) {
    list const& l = pinned ? pinned_ : queue_;
    if (!policies::detail::slab_list_ok(nodes_, l, index_, [&](node const& n) { return n.pinned == pinned; })) { return false; }
    live += l.count;
  }
  if (live != index_.size()) { return false; }
  return policies::detail::slab_accounted(nodes_, free_head_, live);
}

namespace policies {

void register_fifo(policy_registry& registry)
{
  registry.add("fifo", "First in, first out: the tensor resident longest is proposed first; accesses do not reorder",
               {}, [](policy_params const&) { return any_eviction_policy{fifo_policy{}}; });
}

}  // namespace policies
}  // namespace tierpool

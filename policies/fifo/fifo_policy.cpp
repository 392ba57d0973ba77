// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// fifo_policy.cpp — owns tierpool::fifo_policy (the insertion-order queue over a slab, pin
// handling, sized proposals) and its registration as "fifo" (register_fifo). See
// fifo_policy.hpp for the algorithm and policies/fifo/README.md for the design.
#include "fifo_policy.hpp"

namespace tierpool {

namespace pd = policies::detail;

fifo_policy::fifo_policy() noexcept : fifo_policy(config{}) {}

fifo_policy::fifo_policy(config cfg) noexcept : cfg_(cfg) {}

void fifo_policy::on_insert(tensor_view const& v) noexcept
{
  slot const i = find(v.id);
  if (i != pd::no_slot) {  // known: an access, which FIFO ignores; adopt size and pin state
    set_bytes(i, v.bytes);
    set_pinned(i, v.pinned);
    return;
  }
  // Hooks are noexcept: if the host cannot grow the slab or the index, std::terminate runs.
  slot const j = admit(v);
  if (!v.pinned) { order_enter(j); }
}

void fifo_policy::access(slot i, tensor_view const& v) noexcept
{
  set_bytes(i, v.bytes);
  set_pinned(i, v.pinned);  // the view is the truth at this event
}

void fifo_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  propose_walk(req, out, queue_.front, [this](slot i) { return nodes_[i].next; });
}

namespace policies {

void register_fifo(policy_registry& registry)
{
  registry.add("fifo", "First in, first out: the tensor resident longest is proposed first; accesses do not reorder",
               {}, [](policy_params const&) { return any_eviction_policy{fifo_policy{}}; });
}

}  // namespace policies
}  // namespace tierpool

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// clock_policy.cpp — owns tierpool::clock_policy, a thin face over
// policies::detail::hand_queue (policies/detail/hand_queue.cpp, shared with the other
// hand policy), and its registration as "clock" (register_clock). See clock_policy.hpp for
// the algorithm and Note [CLOCK's hand moves on erase].
#include "clock_policy.hpp"

namespace tierpool {

clock_policy::clock_policy() noexcept : clock_policy(config{}) {}

clock_policy::clock_policy(config cfg) noexcept : cfg_(cfg) {}

void clock_policy::on_insert(tensor_view const& v) noexcept { impl_.on_insert(v); }

void clock_policy::on_access(tensor_view const& v) noexcept { impl_.on_access(v); }

void clock_policy::on_erase(tensor_id id) noexcept { impl_.on_erase(id); }

void clock_policy::on_pin(tensor_id id) noexcept { impl_.on_pin(id); }

void clock_policy::on_unpin(tensor_id id) noexcept { impl_.on_unpin(id); }

void clock_policy::propose(eviction_request const& req, eviction_proposal& out) const { impl_.propose(req, out); }

namespace policies {

void register_clock(policy_registry& registry)
{
  registry.add("clock",
               "CLOCK (second chance, Corbato 1968): a circular queue with one reference bit per tensor and a sweeping hand",
               {}, [](policy_params const&) { return any_eviction_policy{clock_policy{}}; });
}

}  // namespace policies
}  // namespace tierpool

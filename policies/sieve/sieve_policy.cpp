// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// sieve_policy.cpp — owns tierpool::sieve_policy, a thin face over
// policies::detail::hand_queue (policies/detail/hand_queue.cpp, shared with the other
// hand policy), and its registration as "sieve" (register_sieve). See sieve_policy.hpp for
// the algorithm and Note [SIEVE's hand moves on erase].
#include "sieve_policy.hpp"

namespace tierpool {

sieve_policy::sieve_policy() noexcept : sieve_policy(config{}) {}

sieve_policy::sieve_policy(config cfg) noexcept : cfg_(cfg) {}

void sieve_policy::on_insert(tensor_view const& v) noexcept { impl_.on_insert(v); }

void sieve_policy::on_access(tensor_view const& v) noexcept { impl_.on_access(v); }

void sieve_policy::on_erase(tensor_id id) noexcept { impl_.on_erase(id); }

void sieve_policy::on_pin(tensor_id id) noexcept { impl_.on_pin(id); }

void sieve_policy::on_unpin(tensor_id id) noexcept { impl_.on_unpin(id); }

void sieve_policy::propose(eviction_request const& req, eviction_proposal& out) const { impl_.propose(req, out); }

namespace policies {

void register_sieve(policy_registry& registry)
{
  registry.add("sieve",
               "SIEVE (Zhang et al., NSDI 2024): FIFO with a visited bit and a hand that keeps survivors in place",
               {}, [](policy_params const&) { return any_eviction_policy{sieve_policy{}}; });
}

}  // namespace policies
}  // namespace tierpool

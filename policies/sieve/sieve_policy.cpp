// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// sieve_policy.cpp — registers tierpool::sieve_policy, a thin face over
// policies::detail::hand_queue (policies/detail/hand_queue.cpp, shared with the other
// hand policy), and its registration as "sieve" (register_sieve). See sieve_policy.hpp for
// the algorithm and Note [SIEVE's hand moves on erase].
#include "sieve_policy.hpp"

namespace tierpool {

namespace policies {

void register_sieve(policy_registry& registry)
{
  registry.add("sieve",
               "SIEVE (Zhang et al., NSDI 2024): FIFO with a visited bit and a hand that keeps survivors in place",
               {}, [](policy_params const&) { return any_eviction_policy{sieve_policy{}}; });
}

}  // namespace policies
}  // namespace tierpool

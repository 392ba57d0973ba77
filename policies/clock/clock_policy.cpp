// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// clock_policy.cpp — registers tierpool::clock_policy, a thin face over
// policies::detail::hand_queue (policies/detail/hand_queue.cpp, shared with the other
// hand policy), and its registration as "clock" (register_clock). See clock_policy.hpp for
// the algorithm and Note [CLOCK's hand moves on erase].
#include "clock_policy.hpp"

namespace tierpool {

namespace policies {

void register_clock(policy_registry& registry)
{
  registry.add("clock",
               "CLOCK (second chance, Corbato 1968): a circular queue with one reference bit per tensor and a sweeping hand",
               {}, [](policy_params const&) { return any_eviction_policy{clock_policy{}}; });
}

}  // namespace policies
}  // namespace tierpool

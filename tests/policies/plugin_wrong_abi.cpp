// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// plugin_wrong_abi.cpp — a policy plug-in for plugin_tests.cpp that claims to be built
// against the next policy interface version; the loader must refuse it before running
// its registration (which would fail the test if it ran).
#include <tierpool/policy.hpp>

#include <cstdint>
#include <stdexcept>

extern "C" TIERPOOL_EXPORT std::uint32_t tierpool_policy_abi_version();
extern "C" TIERPOOL_EXPORT void tierpool_register_policies(tierpool::policy_registry&);

extern "C" std::uint32_t tierpool_policy_abi_version() { return tierpool::policy_abi_version + 1; }
extern "C" void tierpool_register_policies(tierpool::policy_registry&)
{
  throw std::runtime_error("plugin_wrong_abi: registration must not run");
}

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// plugin_no_register.cpp — a broken policy plug-in for plugin_tests.cpp: it exports
// tierpool_policy_abi_version() but no tierpool_register_policies().
#include <tierpool/policy.hpp>

#include <cstdint>

extern "C" TIERPOOL_EXPORT std::uint32_t tierpool_policy_abi_version();
extern "C" std::uint32_t tierpool_policy_abi_version() { return tierpool::policy_abi_version; }

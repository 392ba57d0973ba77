// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file pool_config.hpp
 * @brief Internal: how pool_options, the TIERPOOL_* environment and what the backend and
 *        the machine offer become one pool's configuration — its tiers (kind, capacity,
 *        chunk, alignment, policy), copy streams and contention bounds.
 *
 * Pure functions: the environment is read through a lookup the caller passes (getenv for a
 * pool, a map in tests), and the machine's facts (free device memory, host memory, far
 * NUMA nodes) are inputs, so that every rule here can be tested without a device.
 * The rules are the ones docs/chapters/tiers.md ("Default tiers") and pool_options.hpp
 * describe.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/pool_options.hpp>

#include "tiers/tier.hpp"

namespace tierpool::detail {

/// @brief Reads one environment variable: its value, or null when unset or empty.
using environment_lookup = std::function<char const*(char const* name)>;

/// @brief The lookup of the process environment (std::getenv, empty values as unset).
[[nodiscard]] environment_lookup process_environment();

/// @brief What the environment set (so that an error can name the variable it came from).
struct environment_overrides {
  std::optional<std::size_t> device_bytes;  ///< TIERPOOL_DEVICE_BYTES
  std::optional<std::string> policy;        ///< TIERPOOL_POLICY
  std::optional<std::string> prefetch;      ///< TIERPOOL_PREFETCH
  std::optional<std::string> trace_path;    ///< TIERPOOL_TRACE
  bool backend{false};                      ///< TIERPOOL_BACKEND may choose the backend
};

/**
 * @brief Apply the TIERPOOL_* variables `options` lets the pool read to `options` (a set
 *        variable wins over the option, explicit or default; read_environment = false reads
 *        none; ignore_environment names those the program decides itself).
 * @throws tierpool::logic_error for an unknown name in ignore_environment or a malformed
 *         value (the message names the variable)
 */
environment_overrides apply_environment(pool_options& options, environment_lookup const& lookup);

/// @brief What the machine offers, gathered by the caller.
struct platform_facts {
  std::optional<std::size_t> device_free_bytes;  ///< free device memory (CUDA), if known
  std::size_t host_memory_share{0};              ///< the default host tier: half the physical memory
  std::vector<tier_options> far_host_tiers;      ///< default tiers below DRAM (far NUMA nodes)
};

/// @brief One tier as the pool will build it.
struct tier_plan {
  tier_config config;       ///< kind, NUMA node, capacity, chunk, alignment, name
  std::string policy_spec;  ///< for the policy registry
  std::map<std::uint32_t, std::size_t> tenant_shares;  ///< tier_options::tenant_shares
  storage_options storage{};  ///< a storage tier's file and engine (kind storage only)
};

/// @brief A pool's configuration.
struct pool_config {
  std::vector<tier_plan> tiers;       ///< fastest first
  std::uint32_t h2d_streams{1};       ///< copy streams towards the device, >= 1
  std::uint32_t d2h_streams{1};       ///< copy streams away from it, >= 1
  contention_options contention{};    ///< bounds of busy retries
};

/// @brief Share of the free device memory a default device tier takes on CUDA: room is
///        left for the CUDA context, cuBLAS workspaces and other allocators.
inline constexpr double kDeviceFreeFraction = 0.9;

/**
 * @brief Resolve `options` (after apply_environment) for a backend with `caps` on a machine
 *        with `facts`.
 * @throws tierpool::logic_error for more than 64 tiers, a tier below 256 bytes (the message
 *         says why a managed tier got nothing), or contention.busy_attempts == 0
 */
[[nodiscard]] pool_config resolve_pool_config(pool_options const& options, backend_caps const& caps,
                                              platform_facts const& facts, environment_overrides const& env);

/// @brief The default far host tiers of this machine (hwloc; none without a topology).
[[nodiscard]] std::vector<tier_options> discover_far_host_tiers(backend_caps const& caps);

/// @brief Half the physical memory (64 GiB when the system does not say).
[[nodiscard]] std::size_t default_host_memory_share();

}  // namespace tierpool::detail

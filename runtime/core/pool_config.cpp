// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_config.cpp — owns the resolution of pool_options into a pool's configuration
// (pool_config.hpp): the environment overrides, the default tiers and their capacities.
#include "core/pool_config.hpp"

#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/topology.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <exception>
#include <string_view>

namespace tierpool::detail {
namespace {

// Default chunk size: big enough that a tier grows rarely, small enough that a mostly
// empty tier does not hold much (the tier README's growth step).
constexpr std::size_t kDefaultChunkBytes = 64_MiB;

/// The variables pool_options::ignore_environment may name (pool_options.hpp).
constexpr std::array<std::string_view, 8> kEnvironmentVariables = {
  "TIERPOOL_BACKEND", "TIERPOOL_DEVICE_BYTES", "TIERPOOL_POLICY", "TIERPOOL_PREFETCH", "TIERPOOL_TRACE",
  "TIERPOOL_PUBLISH", "TIERPOOL_PUBLISH_GROUP", "TIERPOOL_COMPACTION"};

// "0" / "off" / "false" or "1" / "on" / "true"; anything else names the variable.
bool parse_switch(char const* name, std::string_view v)
{
  if (v == "1" || v == "on" || v == "true") { return true; }
  if (v == "0" || v == "off" || v == "false") { return false; }
  throw logic_error(std::string(name) + ": expected 0 or 1 (or off / on), got '" + std::string(v) + "'");
}

}  // namespace

environment_lookup process_environment()
{
  return [](char const* name) -> char const* {
    char const* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read once at construction
    return (v != nullptr && *v != '\0') ? v : nullptr;
  };
}

environment_overrides apply_environment(pool_options& options, environment_lookup const& lookup)
{
  // Rule (pool_options.hpp, docs/chapters/tiers.md): with read_environment a set TIERPOOL_*
  // variable always wins over the options, explicit or default (like CUDA_VISIBLE_DEVICES);
  // read_environment = false ignores them all, and ignore_environment the ones a program
  // decides itself (its flags win over those).
  for (std::string const& name : options.ignore_environment) {
    if (std::find(kEnvironmentVariables.begin(), kEnvironmentVariables.end(), name) == kEnvironmentVariables.end()) {
      std::string valid;
      for (std::string_view const v : kEnvironmentVariables) { valid += (valid.empty() ? "" : ", ") + std::string(v); }
      throw logic_error("pool_options::ignore_environment: unknown variable '" + name + "' (valid: " + valid + ")");
    }
  }
  auto const reads = [&options](std::string_view name) {
    return options.read_environment && std::find(options.ignore_environment.begin(), options.ignore_environment.end(),
                                                 name) == options.ignore_environment.end();
  };
  auto const read = [&](char const* name) { return reads(name) ? lookup(name) : nullptr; };
  environment_overrides env;
  env.backend = reads("TIERPOOL_BACKEND");
  if (!options.read_environment) { return env; }
  if (char const* v = read("TIERPOOL_DEVICE_BYTES")) {
    try {
      env.device_bytes = parse_byte_size(v);
    } catch (logic_error const& e) {
      throw logic_error(std::string("TIERPOOL_DEVICE_BYTES: ") + e.what());
    }
    // A simulated device the pool builds itself is exactly as large as asked.
    options.sim.device_bytes = *env.device_bytes;
  }
  if (char const* v = read("TIERPOOL_POLICY")) {
    env.policy = v;
    options.policy = v;
  }
  if (char const* v = read("TIERPOOL_PREFETCH")) {
    env.prefetch = v;
    options.prefetch = v;
  }
  if (char const* v = read("TIERPOOL_PUBLISH")) { options.publish.enabled = parse_switch("TIERPOOL_PUBLISH", v); }
  if (char const* v = read("TIERPOOL_COMPACTION")) { options.compaction = parse_switch("TIERPOOL_COMPACTION", v); }
  if (char const* v = read("TIERPOOL_PUBLISH_GROUP")) { options.publish.group = v; }
  if (char const* v = read("TIERPOOL_TRACE")) {
    env.trace_path = v;
    options.trace_path = v;
  }
  return env;
}

std::size_t default_host_memory_share()
{
  long const pages = ::sysconf(_SC_PHYS_PAGES);
  long const page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) { return 64_GiB; }
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 2;
}

// Default tiers: one far host tier below DRAM per far NUMA node (CPU-less or CXL), bound
// to that node, with half its memory. Only where binding there can work: the running
// system (an hwloc XML of another machine describes nodes this one lacks), or the sim
// backend, which models the layout without binding. No topology: no far tiers.
std::vector<tier_options> discover_far_host_tiers(backend_caps const& caps)
{
  std::vector<tier_options> tiers;
  try {
    topology const topo = topology::discover();
    if (!topo.is_this_system() && caps.name != "sim") { return tiers; }
    for (numa_node_info const& n : topo.numa_nodes()) {
      if (!n.is_far || n.bytes < 2 * 256) { continue; }
      tier_options t{};
      t.kind = tier_kind::host;
      t.numa_node = static_cast<int>(n.os_index);
      t.capacity_bytes = static_cast<std::size_t>(n.bytes / 2);
      t.name = "far host (node " + std::to_string(n.os_index) + (n.subtype.empty() ? "" : ", " + n.subtype) + ")";
      tiers.push_back(std::move(t));
    }
  } catch (std::exception const&) {  // hwloc unavailable or a bad XML: DRAM only
  }
  return tiers;
}

pool_config resolve_pool_config(pool_options const& options, backend_caps const& caps, platform_facts const& facts,
                                environment_overrides const& env)
{
  pool_config cfg;
  if (options.contention.busy_attempts == 0) {
    throw logic_error("pool_options::contention.busy_attempts: expected at least 1 (attempts of a request), got 0");
  }
  cfg.contention = options.contention;

  // Default tiers: device, pinned_host (2x device), host (half the physical memory), then
  // the far host tiers.
  std::vector<tier_options> tiers = options.tiers;
  if (tiers.empty()) {
    tiers.push_back({.kind = tier_kind::device});
    tiers.push_back({.kind = tier_kind::pinned_host});
    tiers.push_back({.kind = tier_kind::host});
    tiers.insert(tiers.end(), facts.far_host_tiers.begin(), facts.far_host_tiers.end());
  }
  TIERPOOL_EXPECTS(tiers.size() <= 64, "pool_options::tiers: at most 64 tiers");

  std::size_t device_default = env.device_bytes.value_or(caps.device_bytes);
  if (facts.device_free_bytes) {
    device_default =
      std::min(device_default, static_cast<std::size_t>(static_cast<double>(*facts.device_free_bytes) * kDeviceFreeFraction));
  }

  // Capacities first: a managed tier's default depends on every device tier's.
  std::vector<std::size_t> caps_of(tiers.size(), 0);
  std::size_t device_cap_seen = 0;
  std::size_t device_caps_sum = 0;
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    tier_options& to = tiers[i];
    if (env.policy) { to.policy = *env.policy; }
    if (env.device_bytes && to.kind == tier_kind::device) { to.capacity_bytes = *env.device_bytes; }
    std::size_t cap = to.capacity_bytes;
    if (cap == 0) {
      switch (to.kind) {
        case tier_kind::device: cap = device_default; break;
        case tier_kind::pinned_host:
          cap = 2 * (device_cap_seen != 0 ? device_cap_seen : device_default);
          if (caps.pinned_host_bytes != 0) { cap = std::min(cap, caps.pinned_host_bytes); }
          break;
        case tier_kind::managed: break;  // below
        case tier_kind::host: cap = facts.host_memory_share; break;
        case tier_kind::storage:  // no default: the disk is the user's to give
          throw storage_error(storage_failure::bad_capacity,
                              "pool_options::tiers[" + std::to_string(i) +
                                "] (storage): capacity_bytes is 0; a storage tier needs a capacity");
      }
    }
    // A device tier never exceeds the device: past it the backend fails every allocation.
    if (to.kind == tier_kind::device && caps.device_bytes != 0) { cap = std::min(cap, caps.device_bytes); }
    if (to.kind == tier_kind::device && device_cap_seen == 0) { device_cap_seen = cap; }
    if (to.kind == tier_kind::device) { device_caps_sum += cap; }
    caps_of[i] = cap;
  }
  // Managed memory on a GPU lives in the same device memory as the device tiers: by
  // default a managed tier gets what they leave, so that the pool never asks for more
  // managed memory than the device has (oversubscribed managed memory can stall the GPU).
  std::size_t const managed_default =
    caps.managed_shares_device ? (caps.managed_bytes > device_caps_sum ? caps.managed_bytes - device_caps_sum : 0)
                               : caps.managed_bytes;
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    tier_options const& to = tiers[i];
    std::size_t const cap = to.kind == tier_kind::managed && caps_of[i] == 0 ? managed_default : caps_of[i];
    TIERPOOL_EXPECTS(cap >= 256, "pool_options::tiers[" + std::to_string(i) + "] (" + std::string(to_string(to.kind)) +
                                   "): capacity is 0 or below 256 bytes" +
                                   (to.kind != tier_kind::managed || to.capacity_bytes != 0 ? std::string{}
                                    : caps.managed_bytes == 0
                                      ? std::string(" (the backend has no managed memory)")
                                      : " (the device tiers take the device memory managed memory would use: give "
                                        "the managed tier a capacity, or the device tiers less)"));
    // Without concurrent managed access the host may not touch managed memory while any
    // kernel runs, which the pool cannot promise (a host lease may overlap any kernel): no
    // managed tier there (docs/chapters/tiers.md, "The managed tier").
    TIERPOOL_EXPECTS(to.kind != tier_kind::managed || !caps.has_managed || caps.concurrent_managed_access,
                     "pool_options::tiers[" + std::to_string(i) + "] (managed): the " + caps.name + " device '" +
                       caps.device_name +
                       "' has no concurrent managed access (backend_caps::concurrent_managed_access is false): the "
                       "host may not touch managed memory while any kernel runs, so the pool refuses a managed "
                       "tier there; use a pinned_host tier instead");
    // A storage tier sits below the host tiers, and a host tier above it stages its copies
    // (device <-> storage goes through host memory).
    if (to.kind == tier_kind::storage) {
      bool host_above = false;
      for (std::size_t j = 0; j < i; ++j) { host_above = host_above || is_host_accessible(tiers[j].kind); }
      TIERPOOL_EXPECTS(host_above, "pool_options::tiers[" + std::to_string(i) +
                                     "] (storage): a storage tier needs a host tier (pinned_host, host or managed) "
                                     "above it, through which its copies go");
    } else {
      for (std::size_t j = 0; j < i; ++j) {
        TIERPOOL_EXPECTS(tiers[j].kind != tier_kind::storage,
                         "pool_options::tiers[" + std::to_string(i) + "] (" + std::string(to_string(to.kind)) +
                           "): comes after a storage tier; storage tiers go last, below every memory tier");
      }
    }
    tier_plan plan;
    plan.config.kind = to.kind;
    plan.config.numa_node = to.numa_node;
    plan.config.capacity_bytes = cap;
    plan.config.chunk_bytes = to.chunk_bytes != 0 ? to.chunk_bytes : std::min(cap, kDefaultChunkBytes);
    plan.config.initial_bytes = 0;
    plan.config.alignment = std::min<std::size_t>(256, caps.allocation_alignment);
    plan.config.name = to.name.empty() ? std::string(to_string(to.kind)) : to.name;
    plan.policy_spec = to.policy.empty() ? options.policy : to.policy;
    plan.tenant_shares = to.tenant_shares;
    if (to.kind == tier_kind::storage) { plan.storage = to.storage; }
    cfg.tiers.push_back(std::move(plan));
  }

  // Copy streams: at least one per direction, and one retire stream, within the backend's.
  std::uint32_t const cap_streams = std::max<std::uint32_t>(caps.max_copy_streams, 3);
  cfg.h2d_streams = std::clamp<std::uint32_t>(options.h2d_streams, 1, cap_streams - 2);
  cfg.d2h_streams = std::clamp<std::uint32_t>(options.d2h_streams, 1, cap_streams - 1 - cfg.h2d_streams);
  return cfg;
}

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// info_command.cpp — owns `tierpool info`: which backend is in use and why, the device
// from its caps, the hwloc topology (source, NUMA nodes, far / CXL nodes) and the default
// tiers with their capacities, as text or as one Boost.JSON object (--json).
// Entry point: tierpool::cli::info_command().

// GCC 12 reports a false -Wnull-dereference inside std::string assignment when it inlines
// Boost.ProgramOptions' typed_value<std::string>::notify; the pragma must precede the
// includes because the diagnostic is located in the library headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include "commands.hpp"
#include "device_facts.hpp"

#include <tierpool/backend_factory.hpp>
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/topology.hpp>
#include <tierpool/version.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tierpool::cli {
namespace {

namespace po = boost::program_options;
namespace json = boost::json;
using detail::format_byte_size;

// One tier this machine offers, as `tierpool info` derives it from the backend and the
// topology (docs/chapters/tiers.md, "Default tiers"); the pool's own defaults are printed separately.
struct tier_row {
  tier_kind kind{tier_kind::device};
  std::uint64_t bytes{0};
  std::optional<unsigned> numa_node;
  bool far{false};
  std::string note;  // where the capacity comes from
};

struct info_report {
  std::string requested;
  backend_selection selection;
  std::size_t free_device_bytes{0};
  std::size_t total_device_bytes{0};
  std::optional<topology> topo;
  std::vector<tier_row> tiers;
  std::vector<tier_stats> pool_tiers;  // what a default-constructed pool builds here
};

// The tiers of `tierpool::pool{}` on this backend: built by the pool itself, so this
// section can never disagree with what a program gets (environment variables included).
std::vector<tier_stats> pool_default_tiers(backend& be)
{
  pool_options opts;
  opts.backend_object = std::shared_ptr<backend>(&be, [](backend*) {});  // not owned
  pool p(std::move(opts));
  return p.stats().tiers;
}

std::vector<tier_row> default_tiers(backend_caps const& caps, std::size_t free_device, topology const& topo)
{
  std::vector<tier_row> rows;

  tier_row dev{tier_kind::device, caps.device_bytes, std::nullopt, false, "device memory"};
  if (char const* env = std::getenv("TIERPOOL_DEVICE_BYTES"); env != nullptr && *env != '\0') {
    dev.bytes = detail::parse_byte_size(env);  // throws logic_error on a bad value
    dev.note = std::string("TIERPOOL_DEVICE_BYTES=") + env;
  }
  rows.push_back(dev);

  auto const& near = topo.nearest_node_for_device(caps.host_numa_node);
  tier_row pinned{tier_kind::pinned_host, near.bytes, near.os_index, false, "the device's nearest NUMA node"};
  if (caps.pinned_host_bytes != 0) {
    pinned.bytes = std::min<std::uint64_t>(caps.pinned_host_bytes, near.bytes);
    pinned.note = "backend pinned limit on the nearest NUMA node";
  }
  rows.push_back(pinned);

  if (caps.has_managed && caps.managed_bytes != 0) {
    tier_row managed{tier_kind::managed, caps.managed_bytes, std::nullopt, false, "backend managed capacity"};
    if (caps.name == "cuda") {
      managed.bytes = std::min<std::uint64_t>(caps.managed_bytes, free_device);
      managed.note = "bounded by free device memory";
    }
    rows.push_back(managed);
  }

  for (auto const& n : topo.numa_nodes()) {
    if (!n.is_far) { rows.push_back({tier_kind::host, n.bytes, n.os_index, false, "DRAM NUMA node"}); }
  }
  for (auto const& n : topo.numa_nodes()) {
    if (n.is_far) {
      rows.push_back({tier_kind::host, n.bytes, n.os_index, true,
                      n.subtype.empty() ? std::string("CPU-less NUMA node") : n.subtype + " NUMA node"});
    }
  }
  return rows;
}

std::string node_flags(numa_node_info const& n)
{
  std::string s = n.has_cpus ? "cpus" : "cpu-less";
  if (n.is_far) { s += ", far"; }
  if (!n.subtype.empty()) { s += ", subtype " + n.subtype; }
  if (n.bandwidth_mbps) { s += ", bandwidth " + std::to_string(*n.bandwidth_mbps) + " MiB/s"; }
  if (n.latency_ns) { s += ", latency " + std::to_string(*n.latency_ns) + " ns"; }
  return s;
}

void print_text(info_report const& r)
{
  auto const& caps = r.selection.backend->caps();
  std::printf("tierpool %s\n", version_string);
  std::printf("backend: %s (requested: %s)\n", caps.name.c_str(), r.requested.c_str());
  std::printf("  why: %s\n", r.selection.reason.c_str());
  std::printf("device %d: %s\n", caps.device_ordinal, caps.device_name.c_str());
  std::printf("  memory: %s total, %s free\n", format_byte_size(r.total_device_bytes).c_str(),
              format_byte_size(r.free_device_bytes).c_str());
  if (caps.compute_capability_major != 0) {
    std::printf("  compute capability: %d.%d\n", caps.compute_capability_major, caps.compute_capability_minor);
  } else {
    std::printf("  compute capability: n/a\n");
  }
  if (caps.driver_version != 0) {
    std::printf("  CUDA driver %s, runtime %s%s%s\n", json::serialize(cuda_version_json(caps.driver_version)).c_str(),
                json::serialize(cuda_version_json(caps.runtime_version)).c_str(),
                caps.pci_bus_id.empty() ? "" : ", PCI ", caps.pci_bus_id.c_str());
  }
  std::printf("  managed memory: %s (concurrent access: %s, prefetch: %s)\n", caps.has_managed ? "yes" : "no",
              caps.concurrent_managed_access ? "yes" : "no", caps.has_managed_prefetch ? "yes" : "no");
  if (caps.host_numa_node >= 0) {
    std::printf("  nearest NUMA node: %d\n", caps.host_numa_node);
  } else {
    std::printf("  nearest NUMA node: unknown\n");
  }
  std::printf("topology: %s\n", r.topo->source().c_str());
  std::printf("numa nodes:\n");
  for (auto const& n : r.topo->numa_nodes()) {
    std::printf("  node %u (L#%u): %s, %s\n", n.os_index, n.logical_index, format_byte_size(n.bytes).c_str(),
                node_flags(n).c_str());
  }
  std::printf("pool defaults (the tiers tierpool::pool{} builds here):\n");
  int width = 18;
  for (auto const& t : r.pool_tiers) { width = std::max(width, static_cast<int>(t.name.size())); }
  for (std::size_t i = 0; i < r.pool_tiers.size(); ++i) {
    auto const& t = r.pool_tiers[i];
    std::printf("  %zu %-*s %12s  [%s%s]\n", i, width, t.name.c_str(), format_byte_size(t.capacity_bytes).c_str(),
                std::string(to_string(t.kind)).c_str(),
                t.numa_node >= 0 ? (", node " + std::to_string(t.numa_node)).c_str() : "");
  }
  std::printf("tiers this machine offers (one per memory kind and NUMA node):\n");
  for (std::size_t i = 0; i < r.tiers.size(); ++i) {
    auto const& t = r.tiers[i];
    std::string name(to_string(t.kind));
    if (t.far) { name += " (far)"; }
    std::string where = t.numa_node ? " on node " + std::to_string(*t.numa_node) : std::string{};
    std::printf("  %zu %-18s %12s%s  [%s]\n", i, name.c_str(), format_byte_size(t.bytes).c_str(), where.c_str(),
                t.note.c_str());
  }
}

json::value opt_u64(std::optional<std::uint64_t> v) { return v ? json::value(*v) : json::value(nullptr); }

void print_json(info_report const& r)
{
  auto const& caps = r.selection.backend->caps();
  json::object out;
  out["version"] = version_string;
  out["backend"] = json::object{{"name", caps.name},
                                {"requested", r.requested},
                                {"reason", r.selection.reason},
                                {"fell_back", r.selection.fell_back}};
  json::object dev{{"ordinal", caps.device_ordinal},
                   {"name", caps.device_name},
                   {"total_bytes", static_cast<std::uint64_t>(r.total_device_bytes)},
                   {"free_bytes", static_cast<std::uint64_t>(r.free_device_bytes)},
                   {"compute_capability",
                    caps.compute_capability_major != 0
                      ? json::value(std::to_string(caps.compute_capability_major) + "." +
                                    std::to_string(caps.compute_capability_minor))
                      : json::value(nullptr)},
                   {"managed", caps.has_managed},
                   {"managed_bytes", static_cast<std::uint64_t>(caps.managed_bytes)},
                   {"concurrent_managed_access", caps.concurrent_managed_access},
                   {"managed_prefetch", caps.has_managed_prefetch},
                   {"host_numa_node", caps.host_numa_node},
                   {"driver_version", cuda_version_json(caps.driver_version)},
                   {"runtime_version", cuda_version_json(caps.runtime_version)}};
  for (auto const& [k, v] : pcie_json(caps)) { dev[k] = v; }
  out["devices"] = json::array{dev};
  json::array nodes;
  for (auto const& n : r.topo->numa_nodes()) {
    nodes.push_back(json::object{{"os_index", n.os_index},
                                 {"logical_index", n.logical_index},
                                 {"bytes", n.bytes},
                                 {"has_cpus", n.has_cpus},
                                 {"is_far", n.is_far},
                                 {"subtype", n.subtype},
                                 {"bandwidth_mbps", opt_u64(n.bandwidth_mbps)},
                                 {"latency_ns", opt_u64(n.latency_ns)}});
  }
  out["topology"] = json::object{{"source", r.topo->source()}, {"numa_nodes", std::move(nodes)}};
  json::array tiers;
  for (std::size_t i = 0; i < r.tiers.size(); ++i) {
    auto const& t = r.tiers[i];
    tiers.push_back(json::object{{"id", i},
                                 {"kind", to_string(t.kind)},
                                 {"bytes", t.bytes},
                                 {"numa_node", t.numa_node ? json::value(*t.numa_node) : json::value(nullptr)},
                                 {"far", t.far},
                                 {"source", t.note}});
  }
  out["tiers"] = std::move(tiers);
  json::array pool_tiers;
  for (std::size_t i = 0; i < r.pool_tiers.size(); ++i) {
    auto const& t = r.pool_tiers[i];
    pool_tiers.push_back(json::object{{"id", i},
                                      {"name", t.name},
                                      {"kind", to_string(t.kind)},
                                      {"capacity_bytes", static_cast<std::uint64_t>(t.capacity_bytes)}});
  }
  out["pool_tiers"] = std::move(pool_tiers);
  std::cout << json::serialize(out) << '\n';
}

}  // namespace

int info_command(int argc, char** argv)
{
  po::options_description desc(
    "usage: tierpool info [options]\n\n"
    "Show the backend in use and why, the device, the NUMA topology and the default tiers.\n"
    "Honours TIERPOOL_BACKEND, TIERPOOL_DEVICE_BYTES and HWLOC_XMLFILE.\n\noptions");
  std::string backend_name;
  std::string topology_file;
  int device = 0;
  desc.add_options()
    ("help,h", "show this help")
    ("backend", po::value(&backend_name), "auto|sim|cuda (default: TIERPOOL_BACKEND, else auto)")
    ("device", po::value(&device)->default_value(0), "CUDA device ordinal")
    ("topology", po::value(&topology_file), "hwloc XML file to use instead of the system (or HWLOC_XMLFILE)")
    ("json", "print one JSON object instead of text");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool info: %s\n\n", e.what());
    std::cerr << desc << '\n';
    return 2;
  }
  if (vm.count("help") != 0U) {
    std::cout << desc << '\n';
    return 0;
  }

  info_report r;
  // As the pool does: TIERPOOL_DEVICE_BYTES also sizes a simulated device.
  sim_options sim;
  if (char const* v = std::getenv("TIERPOOL_DEVICE_BYTES"); v != nullptr && *v != '\0') {
    sim.device_bytes = detail::parse_byte_size(v);
  }
  // info prints the selection reason itself: no separate fallback line on stderr.
  if (vm.count("backend") != 0U) {
    auto const choice = parse_backend_choice(backend_name);  // logic_error lists valid names
    r.requested = std::string(to_string(choice));
    r.selection = select_backend(choice, sim, device, fallback_notice::silent);
  } else {
    auto const env = backend_choice_from_env();
    r.requested = env ? "TIERPOOL_BACKEND=" + std::string(to_string(*env)) : std::string("auto");
    r.selection = select_backend_from_env(sim, device, fallback_notice::silent);
  }
  backend& be = *r.selection.backend;
  if (be.device_memory_info(&r.free_device_bytes, &r.total_device_bytes) != status::ok) {
    r.total_device_bytes = be.caps().device_bytes;
    r.free_device_bytes = 0;
  }
  topology_options topt;
  topt.xml_file = topology_file;
  r.topo.emplace(topology::discover(topt));
  r.tiers = default_tiers(be.caps(), r.free_device_bytes, *r.topo);
  r.pool_tiers = pool_default_tiers(be);

  if (vm.count("json") != 0U) {
    print_json(r);
  } else {
    print_text(r);
  }
  return 0;
}

}  // namespace tierpool::cli

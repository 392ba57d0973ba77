// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// topology.cpp — owns the hwloc topology behind tierpool::topology: discovery (system,
// explicit XML, or HWLOC_XMLFILE), the NUMA node table (sizes, CPU-less / CXL detection,
// bandwidth and latency memory attributes) and binding host memory to a node.
// Entry point: topology::discover().
//
// Note [CPU-less nodes in hwloc 2.x]
// Rationale: hwloc 2.x attaches a memory-only node (CXL, KMEM DAX) to the object whose
//   CPUs it is "near", usually the Machine root, and gives it that object's cpuset; the
//   cpuset alone therefore never says "no CPUs".
// Approach: a node has CPUs when it is the *local* node of some PU, i.e. one of the
//   memory children of the PU's nearest ancestor that has memory children. A node
//   attached above the packages whose PUs all have their own nodes is CPU-less. On the
//   running system (Linux) /sys/devices/system/node/nodeN/cpulist, when readable, is
//   authoritative instead.
// Limitations: two nodes attached to the same object (e.g. KNL DRAM + MCDRAM) both count
//   as having CPUs; a subtype naming CXL still marks such a node far.
#include <tierpool/error.hpp>
#include <tierpool/topology.hpp>

#include <hwloc.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace tierpool {

struct topology::impl {
  hwloc_topology_t topo{nullptr};
  std::vector<numa_node_info> nodes;
  std::vector<hwloc_obj_t> node_objs;  // parallel to nodes
  std::string source;
  bool this_system{false};

  impl() = default;
  impl(impl const&) = delete;
  impl& operator=(impl const&) = delete;
  ~impl()
  {
    if (topo != nullptr) { hwloc_topology_destroy(topo); }
  }

  [[nodiscard]] hwloc_obj_t obj_for(unsigned os_index) const noexcept
  {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].os_index == os_index) { return node_objs[i]; }
    }
    return nullptr;
  }
};

namespace {

// Mark every NUMA node reachable through the memory children of `obj` (through MemCache
// objects too) as local to some CPU.
void mark_memory_children(hwloc_obj_t obj, std::vector<bool>& has_cpus)
{
  for (hwloc_obj_t m = obj->memory_first_child; m != nullptr; m = m->next_sibling) {
    if (m->type == HWLOC_OBJ_NUMANODE) {
      if (m->logical_index < has_cpus.size()) { has_cpus[m->logical_index] = true; }
    } else {
      mark_memory_children(m, has_cpus);
    }
  }
}

// See Note [CPU-less nodes in hwloc 2.x].
std::vector<bool> nodes_local_to_some_pu(hwloc_topology_t topo, std::size_t node_count)
{
  std::vector<bool> has_cpus(node_count, false);
  int const pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  for (int i = 0; i < pus; ++i) {
    hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, static_cast<unsigned>(i));
    while (o != nullptr && o->memory_arity == 0) { o = o->parent; }
    if (o != nullptr) { mark_memory_children(o, has_cpus); }
  }
  return has_cpus;
}

// Linux: /sys/devices/system/node/nodeN/cpulist; nullopt when unreadable.
std::optional<bool> sysfs_node_has_cpus(unsigned os_index)
{
  std::ifstream in("/sys/devices/system/node/node" + std::to_string(os_index) + "/cpulist");
  if (!in) { return std::nullopt; }
  std::string line;
  std::getline(in, line);
  return line.find_first_not_of(" \t\r\n") != std::string::npos;
}

std::optional<std::uint64_t> best_memattr(hwloc_topology_t topo, hwloc_memattr_id_t id, hwloc_obj_t node)
{
  hwloc_location initiator{};
  hwloc_uint64_t value = 0;
  if (hwloc_memattr_get_best_initiator(topo, id, node, 0, &initiator, &value) == 0) {
    return static_cast<std::uint64_t>(value);
  }
  return std::nullopt;
}

bool names_cxl(std::string const& subtype)
{
  std::string upper = subtype;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); });
  return upper.find("CXL") != std::string::npos;
}

}  // namespace

topology topology::discover(topology_options const& options)
{
  auto p = std::make_unique<impl>();
  if (hwloc_topology_init(&p->topo) != 0) {
    p->topo = nullptr;
    throw backend_error(status::device_error, "topology: hwloc_topology_init failed");
  }

  // An explicit file wins; otherwise HWLOC_XMLFILE. We load the variable's file ourselves
  // so that a missing or bad file is a typed error instead of a silent fallback.
  std::string xml = options.xml_file.string();
  bool from_env = false;
  if (xml.empty()) {
    if (char const* env = std::getenv("HWLOC_XMLFILE"); env != nullptr && *env != '\0') {
      xml = env;
      from_env = true;
    }
  }
  std::string const origin = from_env ? " (HWLOC_XMLFILE)" : "";
  if (!xml.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(xml, ec)) {
      throw logic_error("topology: cannot read hwloc XML file '" + xml + "'" + origin +
                        ": no such regular file");
    }
    if (hwloc_topology_set_xml(p->topo, xml.c_str()) != 0) {
      throw logic_error("topology: cannot use hwloc XML file '" + xml + "'" + origin + ": " +
                        std::strerror(errno));
    }
    p->source = "xml:" + xml + origin;
  } else {
    p->source = "system";
  }
  if (hwloc_topology_load(p->topo) != 0) {
    int const err = errno;
    if (!xml.empty()) {
      throw logic_error("topology: cannot parse hwloc XML file '" + xml + "'" + origin + ": " +
                        std::strerror(err));
    }
    throw backend_error(status::device_error,
                        std::string("topology: hwloc could not discover this system: ") + std::strerror(err));
  }
  p->this_system = hwloc_topology_is_thissystem(p->topo) != 0;

  int const count = hwloc_get_nbobjs_by_type(p->topo, HWLOC_OBJ_NUMANODE);
  if (count <= 0) {
    throw logic_error("topology: " + p->source + " has no NUMA node");
  }
  auto const n = static_cast<std::size_t>(count);
  std::vector<bool> const local = nodes_local_to_some_pu(p->topo, n);
  p->nodes.reserve(n);
  p->node_objs.reserve(n);
  for (unsigned i = 0; i < static_cast<unsigned>(count); ++i) {
    hwloc_obj_t o = hwloc_get_obj_by_type(p->topo, HWLOC_OBJ_NUMANODE, i);
    if (o == nullptr) { continue; }  // cannot happen for i < count; keeps the analyzer quiet
    numa_node_info info;
    info.os_index = o->os_index;
    info.logical_index = o->logical_index;
    info.bytes = o->attr != nullptr ? o->attr->numanode.local_memory : 0;
    info.has_cpus = local[i];
    if (p->this_system) {
      if (auto const sys = sysfs_node_has_cpus(o->os_index)) { info.has_cpus = *sys; }
    }
    if (o->subtype != nullptr) { info.subtype = o->subtype; }
    info.bandwidth_mbps = best_memattr(p->topo, HWLOC_MEMATTR_ID_BANDWIDTH, o);
    info.latency_ns = best_memattr(p->topo, HWLOC_MEMATTR_ID_LATENCY, o);
    info.is_far = !info.has_cpus || names_cxl(info.subtype);
    p->nodes.push_back(std::move(info));
    p->node_objs.push_back(o);
  }
  return topology(std::move(p));
}

topology::topology(std::unique_ptr<impl> p) noexcept : impl_(std::move(p)) {}
topology::topology(topology&&) noexcept = default;
topology& topology::operator=(topology&&) noexcept = default;
topology::~topology() = default;

std::vector<numa_node_info> const& topology::numa_nodes() const noexcept { return impl_->nodes; }

numa_node_info const* topology::find_node(unsigned os_index) const noexcept
{
  for (auto const& n : impl_->nodes) {
    if (n.os_index == os_index) { return &n; }
  }
  return nullptr;
}

numa_node_info const& topology::nearest_node_for_device(int host_numa_node) const noexcept
{
  if (host_numa_node >= 0) {
    if (auto const* n = find_node(static_cast<unsigned>(host_numa_node))) { return *n; }
  }
  for (auto const& n : impl_->nodes) {
    if (n.has_cpus && !n.is_far) { return n; }
  }
  return impl_->nodes.front();  // discover() guarantees at least one node
}

bool topology::bind(void* p, std::size_t bytes, unsigned node) const noexcept
{
  hwloc_obj_t const obj = impl_->obj_for(node);
  if (obj == nullptr || p == nullptr || bytes == 0) { return false; }
  if (!impl_->this_system) { return true; }  // XML topology: nothing real to bind
  return hwloc_set_area_membind(impl_->topo, p, bytes, obj->nodeset, HWLOC_MEMBIND_BIND,
                                HWLOC_MEMBIND_BYNODESET) == 0;
}

void* topology::allocate_on_node(std::size_t bytes, unsigned node) const noexcept
{
  hwloc_obj_t const obj = impl_->obj_for(node);
  if (obj == nullptr || bytes == 0) { return nullptr; }
  if (!impl_->this_system) { return hwloc_alloc(impl_->topo, bytes); }
  // Not STRICT: where the kernel cannot bind, hwloc still returns (unbound) memory.
  return hwloc_alloc_membind(impl_->topo, bytes, obj->nodeset, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET);
}

void topology::deallocate_on_node(void* p, std::size_t bytes) const noexcept
{
  if (p == nullptr) { return; }
  hwloc_free(impl_->topo, p, bytes);
}

std::string const& topology::source() const noexcept { return impl_->source; }

bool topology::is_this_system() const noexcept { return impl_->this_system; }

}  // namespace tierpool

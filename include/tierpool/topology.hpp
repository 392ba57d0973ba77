// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file topology.hpp
 * @brief The host's NUMA layout (hwloc): DRAM nodes, CPU-less / CXL (far) nodes, their
 *        sizes and memory attributes, and binding host memory to a node.
 *
 * No hwloc header is included here: the hwloc topology lives behind a pimpl, so a
 * consumer of the installed headers needs neither hwloc nor its include path.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tierpool/export.hpp>

namespace tierpool {

/// @brief Where to discover the topology from.
struct topology_options {
  /**
   * @brief An hwloc XML file to load instead of the running system.
   *
   * Empty: use `HWLOC_XMLFILE` when that variable is set and non-empty, otherwise
   * discover the running system.
   */
  std::filesystem::path xml_file{};
};

/// @brief One NUMA node as the runtime sees it.
struct numa_node_info {
  unsigned os_index{0};       ///< OS (physical) index: the id Linux, libnuma and CUDA use
  unsigned logical_index{0};  ///< hwloc logical index (dense, 0-based)
  std::uint64_t bytes{0};     ///< local memory of the node in bytes
  /**
   * @brief True when some CPU has this node as its local memory. A node reached only
   *        from CPUs that have a closer node of their own (e.g. CXL memory) has none.
   */
  bool has_cpus{true};
  std::string subtype;  ///< hwloc subtype, e.g. "CXL-DRAM", "HBM", "NVM"; empty when none
  /// @brief Best bandwidth to this node from any initiator in MiB/s (hwloc memattr), if known.
  std::optional<std::uint64_t> bandwidth_mbps;
  /// @brief Best latency to this node from any initiator in nanoseconds (hwloc memattr), if known.
  std::optional<std::uint64_t> latency_ns;
  /// @brief Far memory: a CPU-less node, or a subtype naming CXL. Gets its own far host tier.
  bool is_far{false};
};

/**
 * @brief A discovered hwloc topology: the NUMA nodes and memory binding on them.
 *
 * Thread safety: after discover() returns, every const member and bind(),
 * allocate_on_node() and deallocate_on_node() may be called concurrently.
 *
 * Ownership: move-only; owns the hwloc topology, which it destroys.
 *
 * On a topology loaded from XML (not the running system) binding is a no-op that
 * reports success: allocate_on_node() returns ordinary page-aligned memory. Callers
 * test their placement decisions on such topologies, not the kernel's.
 *
 * @code
 * auto topo = tierpool::topology::discover({.xml_file = "two_sockets_cxl.xml"});
 * for (auto const& n : topo.numa_nodes())
 *   if (n.is_far) std::printf("far node %u: %llu bytes\n", n.os_index, (unsigned long long)n.bytes);
 * @endcode
 */
class TIERPOOL_EXPORT topology {
 public:
  /**
   * @brief Discover the topology.
   * @param options Where from (an XML file, `HWLOC_XMLFILE`, or the running system).
   * @return The loaded topology; it always has at least one NUMA node.
   * @throws tierpool::logic_error   if an XML file (option or `HWLOC_XMLFILE`) cannot be
   *                                 read or parsed; the message names the file.
   * @throws tierpool::backend_error if hwloc cannot discover the running system.
   */
  [[nodiscard]] static topology discover(topology_options const& options = {});

  /// @brief Take over another topology; the source may then only be destroyed or assigned to.
  topology(topology&&) noexcept;
  /// @brief Take over another topology; the source may then only be destroyed or assigned to.
  topology& operator=(topology&&) noexcept;
  topology(topology const&) = delete;
  topology& operator=(topology const&) = delete;
  /// @brief Destroys the hwloc topology. Memory from allocate_on_node() must be freed first.
  ~topology();

  /// @brief NUMA nodes in logical order (logical_index == position).
  [[nodiscard]] std::vector<numa_node_info> const& numa_nodes() const noexcept;

  /**
   * @brief The node with this OS index.
   * @param os_index OS index (as in `/sys/devices/system/node/nodeN`).
   * @return The node, or null when there is none.
   */
  [[nodiscard]] numa_node_info const* find_node(unsigned os_index) const noexcept;

  /**
   * @brief The NUMA node nearest a GPU.
   * @param host_numa_node The device's `cudaDevAttrHostNumaId` (backend_caps::host_numa_node);
   *                       -1 or an index this topology lacks means unknown.
   * @return That node when it exists; otherwise the first node with CPUs that is not
   *         far; otherwise the first node.
   */
  [[nodiscard]] numa_node_info const& nearest_node_for_device(int host_numa_node) const noexcept;

  /**
   * @brief Bind the pages of an existing range to a node (hwloc_set_area_membind).
   * @param p     Start of the range.
   * @param bytes Length of the range.
   * @param node  OS index of the target node.
   * @return false when the node is unknown, the range is empty or null, or the kernel
   *         refused; true otherwise (always true on an XML topology with a known node).
   */
  [[nodiscard]] bool bind(void* p, std::size_t bytes, unsigned node) const noexcept;

  /**
   * @brief Allocate page-aligned memory bound to a node (hwloc_alloc_membind).
   * @param bytes Size in bytes (> 0).
   * @param node  OS index of the node.
   * @return The memory, or null when bytes is 0, the node is unknown or allocation failed.
   *         Free it with deallocate_on_node() on this same topology.
   */
  [[nodiscard]] void* allocate_on_node(std::size_t bytes, unsigned node) const noexcept;

  /// @brief Free memory from allocate_on_node(); `bytes` is the size allocated. Null is a no-op.
  void deallocate_on_node(void* p, std::size_t bytes) const noexcept;

  /// @brief Where the topology came from: "system", or "xml:<path>" (with " (HWLOC_XMLFILE)" when from the variable).
  [[nodiscard]] std::string const& source() const noexcept;

  /// @brief True when the topology describes the running system (binding is real).
  [[nodiscard]] bool is_this_system() const noexcept;

 private:
  struct impl;
  explicit topology(std::unique_ptr<impl> p) noexcept;
  std::unique_ptr<impl> impl_;
};

}  // namespace tierpool

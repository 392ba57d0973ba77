// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// topology_tests.cpp — tierpool::topology on the committed hwloc XML fixtures
// (tests/fixtures/README.md says how they were made) and on the running system.
#include <tierpool/error.hpp>
#include <tierpool/topology.hpp>

#include <gtest/gtest.h>

#include "support/scoped_env.hpp"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace {

// Appended, not `std::string(...) + "/" + name`: with the tests' precompiled header GCC 12
// reports a false -Warray-bounds in that concatenation's inlined copy.
std::string fixture(char const* name)
{
  std::string path = TIERPOOL_TEST_FIXTURES;
  path += '/';
  path += name;
  return path;
}

using tierpool::test::scoped_env;

void expect_cxl_fixture(tierpool::topology const& topo)
{
  auto const& nodes = topo.numa_nodes();
  ASSERT_EQ(nodes.size(), 3U);
  for (unsigned i = 0; i < nodes.size(); ++i) { EXPECT_EQ(nodes[i].logical_index, i); }

  // Two DRAM nodes, one per package, 32 GB each.
  for (unsigned os : {0U, 1U}) {
    auto const* n = topo.find_node(os);
    ASSERT_NE(n, nullptr) << "node " << os;
    EXPECT_EQ(n->bytes, 32'000'000'000ULL);
    EXPECT_TRUE(n->has_cpus);
    EXPECT_FALSE(n->is_far);
    EXPECT_TRUE(n->subtype.empty());
  }
  // One CPU-less node attached to the machine: the CXL expander.
  auto const* cxl = topo.find_node(2);
  ASSERT_NE(cxl, nullptr);
  EXPECT_EQ(cxl->bytes, 16'000'000'000ULL);
  EXPECT_FALSE(cxl->has_cpus);
  EXPECT_TRUE(cxl->is_far);
  EXPECT_EQ(cxl->subtype, "CXL-DRAM");
  ASSERT_TRUE(cxl->bandwidth_mbps.has_value());
  EXPECT_EQ(*cxl->bandwidth_mbps, 24000U);
  ASSERT_TRUE(cxl->latency_ns.has_value());
  EXPECT_EQ(*cxl->latency_ns, 350U);

  auto const* n0 = topo.find_node(0);
  ASSERT_TRUE(n0->bandwidth_mbps.has_value());
  EXPECT_EQ(*n0->bandwidth_mbps, 180000U);
  EXPECT_EQ(n0->latency_ns, std::optional<std::uint64_t>(90U));
  // Node 1 carries no memory attributes in the fixture.
  EXPECT_FALSE(topo.find_node(1)->bandwidth_mbps.has_value());
  EXPECT_FALSE(topo.find_node(1)->latency_ns.has_value());
  EXPECT_FALSE(topo.is_this_system());
}

TEST(Topology, LoadsCxlFixtureFromOption)
{
  scoped_env no_env("HWLOC_XMLFILE", nullptr);
  auto const path = fixture("two_sockets_cxl.xml");
  auto const topo = tierpool::topology::discover({.xml_file = path});
  expect_cxl_fixture(topo);
  EXPECT_EQ(topo.source(), "xml:" + path);
}

TEST(Topology, LoadsCxlFixtureFromHwlocXmlfile)
{
  auto const path = fixture("two_sockets_cxl.xml");
  scoped_env env("HWLOC_XMLFILE", path.c_str());
  auto const topo = tierpool::topology::discover();
  expect_cxl_fixture(topo);
  EXPECT_EQ(topo.source(), "xml:" + path + " (HWLOC_XMLFILE)");
}

TEST(Topology, OptionWinsOverHwlocXmlfile)
{
  scoped_env env("HWLOC_XMLFILE", fixture("single_node.xml").c_str());
  auto const topo = tierpool::topology::discover({.xml_file = fixture("two_sockets_cxl.xml")});
  EXPECT_EQ(topo.numa_nodes().size(), 3U);
}

TEST(Topology, CpulessNodeWithoutAnnotationsIsFar)
{
  scoped_env no_env("HWLOC_XMLFILE", nullptr);
  auto const topo = tierpool::topology::discover({.xml_file = fixture("two_sockets_cpuless.xml")});
  ASSERT_EQ(topo.numa_nodes().size(), 3U);
  auto const* far = topo.find_node(2);
  ASSERT_NE(far, nullptr);
  EXPECT_FALSE(far->has_cpus);
  EXPECT_TRUE(far->is_far);
  EXPECT_TRUE(far->subtype.empty());
  EXPECT_FALSE(far->bandwidth_mbps.has_value());
  EXPECT_FALSE(far->latency_ns.has_value());
  EXPECT_TRUE(topo.find_node(0)->has_cpus);
  EXPECT_TRUE(topo.find_node(1)->has_cpus);
}

TEST(Topology, SingleNodeMachineHasCpus)
{
  scoped_env no_env("HWLOC_XMLFILE", nullptr);
  auto const topo = tierpool::topology::discover({.xml_file = fixture("single_node.xml")});
  ASSERT_EQ(topo.numa_nodes().size(), 1U);
  auto const& n = topo.numa_nodes()[0];
  EXPECT_EQ(n.bytes, 8'000'000'000ULL);
  EXPECT_TRUE(n.has_cpus);
  EXPECT_FALSE(n.is_far);
}

TEST(Topology, NearestNodeForDevice)
{
  scoped_env no_env("HWLOC_XMLFILE", nullptr);
  auto const topo = tierpool::topology::discover({.xml_file = fixture("two_sockets_cxl.xml")});
  EXPECT_EQ(topo.nearest_node_for_device(1).os_index, 1U);
  EXPECT_EQ(topo.nearest_node_for_device(2).os_index, 2U);  // reported by the device: honoured
  // Unknown (-1) or absent: the first DRAM node with CPUs, never the CXL node (logical 0).
  EXPECT_EQ(topo.nearest_node_for_device(-1).os_index, 0U);
  EXPECT_EQ(topo.nearest_node_for_device(7).os_index, 0U);
  EXPECT_FALSE(topo.nearest_node_for_device(-1).is_far);
}

TEST(Topology, AllocateAndBindOnXmlTopology)
{
  scoped_env no_env("HWLOC_XMLFILE", nullptr);
  auto const topo = tierpool::topology::discover({.xml_file = fixture("two_sockets_cxl.xml")});
  constexpr std::size_t bytes = 3 * 4096 + 17;
  void* p = topo.allocate_on_node(bytes, 2);
  ASSERT_NE(p, nullptr);
  std::memset(p, 0x5A, bytes);  // the memory is real and writable
  EXPECT_EQ(static_cast<unsigned char*>(p)[bytes - 1], 0x5A);
  EXPECT_TRUE(topo.bind(p, bytes, 0));
  EXPECT_FALSE(topo.bind(p, bytes, 9));        // unknown node
  EXPECT_FALSE(topo.bind(nullptr, bytes, 0));  // null range
  EXPECT_FALSE(topo.bind(p, 0, 0));            // empty range
  topo.deallocate_on_node(p, bytes);
  topo.deallocate_on_node(nullptr, 0);  // no-op

  EXPECT_EQ(topo.allocate_on_node(bytes, 9), nullptr);
  EXPECT_EQ(topo.allocate_on_node(0, 0), nullptr);
}

TEST(Topology, MissingXmlOptionIsLogicError)
{
  scoped_env no_env("HWLOC_XMLFILE", nullptr);
  try {
    (void)tierpool::topology::discover({.xml_file = "/nonexistent/tierpool/topo.xml"});
    FAIL() << "expected tierpool::logic_error";
  } catch (tierpool::logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tierpool/topo.xml"), std::string::npos) << e.what();
  }
}

TEST(Topology, MissingHwlocXmlfileIsLogicErrorNamingTheVariable)
{
  scoped_env env("HWLOC_XMLFILE", "/nonexistent/tierpool/env.xml");
  try {
    (void)tierpool::topology::discover();
    FAIL() << "expected tierpool::logic_error";
  } catch (tierpool::logic_error const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("/nonexistent/tierpool/env.xml"), std::string::npos) << what;
    EXPECT_NE(what.find("HWLOC_XMLFILE"), std::string::npos) << what;
  }
}

TEST(Topology, GarbageXmlIsLogicError)
{
  scoped_env no_env("HWLOC_XMLFILE", nullptr);
  // A file that exists but is not an hwloc topology: the fixtures README.
  EXPECT_THROW((void)tierpool::topology::discover({.xml_file = fixture("README.md")}), tierpool::logic_error);
}

TEST(Topology, RunningSystemHasNodesAndBinds)
{
  scoped_env no_env("HWLOC_XMLFILE", nullptr);
  auto const topo = tierpool::topology::discover();
  EXPECT_EQ(topo.source(), "system");
  EXPECT_TRUE(topo.is_this_system());
  ASSERT_FALSE(topo.numa_nodes().empty());
  std::uint64_t total = 0;
  for (auto const& n : topo.numa_nodes()) { total += n.bytes; }
  EXPECT_GT(total, 0U);
  auto const& near = topo.nearest_node_for_device(-1);
  void* p = topo.allocate_on_node(1 << 20, near.os_index);
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, 1 << 20);
  topo.deallocate_on_node(p, 1 << 20);
}

TEST(Topology, MoveKeepsNodes)
{
  scoped_env no_env("HWLOC_XMLFILE", nullptr);
  auto a = tierpool::topology::discover({.xml_file = fixture("two_sockets_cxl.xml")});
  tierpool::topology b = std::move(a);
  expect_cxl_fixture(b);
}

}  // namespace

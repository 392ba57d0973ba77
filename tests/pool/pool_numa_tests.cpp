// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_numa_tests.cpp — host tiers bound to NUMA nodes: a far (CPU-less, CXL) node becomes a
// far host tier in the default tiers (hwloc XML fixture), and evictions cascade into it.
#include "support/scoped_env.hpp"
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>
#include <tierpool/topology.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace tierpool::test {
namespace {

// A CPU-less (CXL) NUMA node becomes a far host tier below DRAM in the default tiers.
TEST(PoolNuma, DefaultTiersAddAFarHostTierPerFarNode)
{
  scoped_env xml("HWLOC_XMLFILE", TIERPOOL_TEST_FIXTURES "/two_sockets_cxl.xml");
  auto be = make_sim(sim_clock_mode::wall, 8_MiB);
  pool_options o;
  o.backend_object = be;
  o.read_environment = false;
  pool p{o};
  ASSERT_EQ(p.tier_count(), 4U);
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[2].kind, tier_kind::host);
  EXPECT_EQ(st.tiers[2].numa_node, -1);
  EXPECT_EQ(st.tiers[3].kind, tier_kind::host);
  EXPECT_EQ(st.tiers[3].numa_node, 2);
  EXPECT_EQ(st.tiers[3].name, "far host (node 2, CXL-DRAM)");
  topology const topo = topology::discover();
  ASSERT_NE(topo.find_node(2), nullptr);
  EXPECT_EQ(st.tiers[3].capacity_bytes, topo.find_node(2)->bytes / 2);
}

// Tiers bound to NUMA nodes, end to end: evictions cascade device -> DRAM host -> far host
// and every byte comes back.
TEST(PoolNuma, EvictionsCascadeIntoTheFarTier)
{
  auto be = make_sim();
  pool_options o;
  o.backend_object = be;
  o.read_environment = false;
  o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = 1_MiB, .chunk_bytes = 1_MiB});
  o.tiers.push_back({.kind = tier_kind::host, .numa_node = 0, .capacity_bytes = 2_MiB, .chunk_bytes = 1_MiB});
  o.tiers.push_back({.kind = tier_kind::host, .numa_node = 2, .capacity_bytes = 16_MiB, .chunk_bytes = 4_MiB,
                     .name = "far"});
  pool p{o};
  stream_handle s = p.create_stream();
  std::vector<std::unique_ptr<modify_job>> jobs;
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 16; ++i) {  // 4 MiB: beyond device + DRAM tiers
    ts.push_back(p.allocate(256_KiB));
    fill(p, ts.back(), i, 1);
  }
  for (std::uint64_t i = 0; i < 16; ++i) { ASSERT_EQ(modify_on_stream(p, ts[i], s, i, 2, jobs), status::ok); }
  p.synchronize(s);
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[2].name, "far");
  EXPECT_EQ(st.tiers[2].numa_node, 2);
  EXPECT_GT(st.tiers[2].resident_tensors, 0U);
  EXPECT_GT(st.tiers[1].evictions, 0U) << "the DRAM tier spilled into the far tier";
  for (std::uint64_t i = 0; i < 16; ++i) { EXPECT_TRUE(check(p, ts[i], i, 2)) << i; }
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

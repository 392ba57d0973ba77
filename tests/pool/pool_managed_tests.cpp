// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_managed_tests.cpp — a managed tier: its default capacity beside the device tiers,
// leases that use managed copies in place (pages steered to the device), host accesses
// that wait for device writes, and device evictions into it.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tierpool::test {
namespace {

// device 1 MiB, managed 4 MiB, host 16 MiB.
pool_options managed_tiers(std::shared_ptr<sim_backend>& be)
{
  sim_options so;
  so.device_bytes = 64_MiB;
  so.managed_bytes = 8_MiB;
  so.memory = sim_memory_mode::real;
  be = std::make_shared<sim_backend>(so);
  pool_options o;
  o.backend_object = be;
  o.read_environment = false;
  o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = 1_MiB, .chunk_bytes = 1_MiB});
  o.tiers.push_back({.kind = tier_kind::managed, .capacity_bytes = 4_MiB, .chunk_bytes = 4_MiB});
  o.tiers.push_back({.kind = tier_kind::host, .capacity_bytes = 16_MiB, .chunk_bytes = 4_MiB});
  return o;
}

// Where managed memory is device memory (a GPU), a managed tier without a capacity gets
// what the device tiers leave of the managed bytes, never the whole: the pool must not
// ask for more managed memory than the device has. Where it is separate, it gets it all.
TEST(PoolManaged, DefaultManagedCapacityLeavesTheDeviceTiersTheirShare)
{
  auto capacities = [](bool shares, std::size_t device_tier) {
    sim_options so;
    so.device_bytes = 64_MiB;
    so.managed_bytes = 64_MiB;
    so.managed_shares_device = shares;
    pool_options o;
    o.backend_object = std::make_shared<sim_backend>(so);
    o.read_environment = false;
    o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = device_tier});
    o.tiers.push_back({.kind = tier_kind::managed});
    o.tiers.push_back({.kind = tier_kind::host, .capacity_bytes = 16_MiB});
    pool p{o};
    pool_stats const st = p.stats();
    return std::pair{st.tiers[0].capacity_bytes, st.tiers[1].capacity_bytes};
  };
  EXPECT_EQ(capacities(true, 48_MiB), std::pair(48_MiB, 16_MiB));
  EXPECT_EQ(capacities(false, 48_MiB), std::pair(48_MiB, 64_MiB));
  try {
    (void)capacities(true, 0);  // the default device tier takes all 64 MiB
    ADD_FAILURE() << "no managed memory was left, yet the pool was built";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("the device tiers take the device memory managed memory would use"),
              std::string::npos)
        << e.what();
  }
}

// A tensor whose valid copy is in the managed tier is used in place: the lease gets the
// managed pointer (no copy into the device tier) and its pages are steered to the device
// once, on the lease's stream; a host access sends them back.
TEST(PoolManaged, LeaseGetsTheManagedPointerAndPagesAreSteered)
{
  std::shared_ptr<sim_backend> be;
  pool p{managed_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(256_KiB, {.name = "m", .preferred_tier = tier_id{1}});
  void* managed_ptr = nullptr;
  {
    lease h = p.acquire_host(t, access_mode::write_discard);  // managed is host-accessible
    write_pattern(h.data(), h.bytes(), 3, 1);
    managed_ptr = h.data();
  }
  std::uint64_t const copies = be->call_count(sim_call::copy);
  std::uint64_t const prefetches = be->call_count(sim_call::prefetch);
  {
    lease l = p.acquire(t, access_mode::read, s);
    EXPECT_EQ(l.data(), managed_ptr);
  }
  {
    lease l = p.acquire(t, access_mode::read, s);  // pages already steered: no second prefetch
    EXPECT_EQ(l.data(), managed_ptr);
  }
  EXPECT_EQ(be->call_count(sim_call::copy), copies) << "a managed copy is used in place";
  EXPECT_EQ(be->call_count(sim_call::prefetch), prefetches + 1);
  EXPECT_EQ(p.stats().managed_prefetches, 1U);
  EXPECT_EQ(p.stats().managed_prefetch_bytes, 256_KiB);
  EXPECT_EQ(p.stats().tiers[0].resident_tensors, 0U);
  EXPECT_TRUE(check(p, t, 3, 1));  // the host touches the pages
  { lease l = p.acquire(t, access_mode::read, s); }
  EXPECT_EQ(p.stats().managed_prefetches, 2U);
  p.synchronize(s);
  EXPECT_TRUE(p.validate());
}

// The same when the stream that writes was destroyed before acquire_host: the pool can
// record nothing on it any more, so the host waits for the last mark destroy_stream
// recorded (as stream-ordered waits do). Before, the backend refused the record and the
// host synchronize on the destroyed stream, and acquire_host returned at once, before the
// write.
TEST(PoolManaged, AcquireHostWaitsForWritesOnADestroyedStream)
{
  for (bool const wrapped : {false, true}) {
    SCOPED_TRACE(wrapped ? "wrapped stream" : "the pool's own stream");
    std::shared_ptr<sim_backend> be;
    pool p{managed_tiers(be)};
    stream_handle raw{};
    stream_handle s{};
    if (wrapped) {
      ASSERT_EQ(be->create_stream(&raw), status::ok);
      s = p.wrap_native_stream(reinterpret_cast<void*>(raw.value));
    } else {
      s = p.create_stream();
    }
    tensor t = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
    fill(p, t, 6, 1);
    stream_gate gate;
    ASSERT_EQ(p.backend().launch_host_func(s, &stream_gate::run, &gate), status::ok);
    std::vector<std::unique_ptr<modify_job>> jobs;
    ASSERT_EQ(modify_on_stream(p, t, s, 6, 2, jobs), status::ok);  // runs after the gate
    p.destroy_stream(s);
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      gate.open = true;
    });
    EXPECT_TRUE(check(p, t, 6, 2)) << "acquire_host returned before the write on the destroyed stream";
    opener.join();
    if (wrapped) {
      EXPECT_EQ(be->synchronize_stream(raw), status::ok);
      be->destroy_stream(raw);
    }
    EXPECT_TRUE(p.validate());
  }
}

// Device work on a managed copy may still be writing when acquire_host comes: the host
// waits for it (a host-accessible copy that device work uses in place).
TEST(PoolManaged, AcquireHostWaitsForDeviceWritesInPlace)
{
  std::shared_ptr<sim_backend> be;
  pool p{managed_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  fill(p, t, 5, 1);
  stream_gate gate;
  ASSERT_EQ(p.backend().launch_host_func(s, &stream_gate::run, &gate), status::ok);
  std::vector<std::unique_ptr<modify_job>> jobs;
  ASSERT_EQ(modify_on_stream(p, t, s, 5, 2, jobs), status::ok);  // runs after the gate
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.open = true;
  });
  EXPECT_TRUE(check(p, t, 5, 2)) << "acquire_host returned before the device write";
  opener.join();
  p.synchronize(s);
  EXPECT_TRUE(p.validate());
}

// Eviction from the device tier lands in the managed tier below it; the bytes survive.
TEST(PoolManaged, DeviceEvictionsGoToManagedAndComeBack)
{
  std::shared_ptr<sim_backend> be;
  pool p{managed_tiers(be)};
  stream_handle s = p.create_stream();
  std::vector<std::unique_ptr<modify_job>> jobs;
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 8; ++i) {  // 8 x 256 KiB: twice the device tier
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{0}}));
    fill(p, ts.back(), i, 1);
  }
  for (int round = 0; round < 3; ++round) {
    for (std::uint64_t i = 0; i < 8; ++i) {
      ASSERT_EQ(modify_on_stream(p, ts[i], s, i, static_cast<std::uint32_t>(round + 2), jobs), status::ok);
    }
  }
  p.synchronize(s);
  for (std::uint64_t i = 0; i < 8; ++i) { EXPECT_TRUE(check(p, ts[i], i, 4)) << i; }
  pool_stats const st = p.stats();
  EXPECT_GT(st.tiers[0].evictions, 0U);
  EXPECT_GT(st.misses, 8U) << "evicted tensors come back into the device tier";
  EXPECT_EQ(st.managed_prefetches, 0U) << "only tensors placed in the managed tier are used in place";
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

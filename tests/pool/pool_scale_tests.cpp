// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_scale_tests.cpp — a pool of a million tensors (a paged KV cache's blocks): fits()
// answers from the tier's register of pinned copies and its blocks, and validate() walks
// every record, both on the whole pool in a test; the answers agree with what leases,
// misses and frees did. Phantom memory and the virtual clock, so that the test costs the
// pool's bookkeeping only (docs/chapters/architecture.md, "What one tensor costs the pool").
// No figure here is timed: `tierpool bench scale` measures them.
#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "unit/pool_test_util.hpp"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TIERPOOL_SCALE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TIERPOOL_SCALE_SANITIZED 1
#endif
#endif
#ifndef TIERPOOL_SCALE_SANITIZED
#define TIERPOOL_SCALE_SANITIZED 0
#endif

namespace tierpool::test {
namespace {

constexpr std::size_t kBlock = 4_KiB;
constexpr std::size_t kDeviceBytes = 64_MiB;
constexpr std::size_t kDeviceSlots = kDeviceBytes / kBlock;  // 16,384
constexpr tier_id kDevice{0};

pool_options million_options(std::size_t n)
{
  pool_options o;
  o.backend = backend_choice::sim;
  o.read_environment = false;
  o.notice = fallback_notice::silent;
  o.publish.enabled = false;
  o.sim.memory = sim_memory_mode::phantom;
  o.sim.clock = sim_clock_mode::virtual_clock;
  o.sim.device_bytes = kDeviceBytes + 64_MiB;
  o.tiers = {tier_options{.kind = tier_kind::device, .capacity_bytes = kDeviceBytes, .name = "device"},
             tier_options{.kind = tier_kind::host, .capacity_bytes = (n + kDeviceSlots) * kBlock * 2, .name = "host"}};
  return o;
}

// A million 4 KiB tensors (100,000 under sanitizers): the device tier full of them, the rest
// on the host tier. fits() and validate() on the whole pool, after allocation, with a
// thousand leases held on the device, after a pass of misses, and after freeing half.
TEST(PoolScale, AMillionTensorsFitAndValidate)
{
  std::size_t const n = TIERPOOL_SCALE_SANITIZED ? 100'000 : 1'000'000;
  pool p{million_options(n)};
  stream_handle const s = p.create_stream();
  std::vector<tensor> ts;
  ts.reserve(n);
  for (std::size_t i = 0; i < n; ++i) { ts.push_back(p.allocate(kBlock)); }

  // The first 16,384 filled the device tier; the rest went to the host tier.
  pool_stats st = p.stats();
  EXPECT_EQ(st.tiers[0].resident_tensors, kDeviceSlots);
  EXPECT_EQ(st.tiers[1].resident_tensors, n - kDeviceSlots);
  fit_report f = p.fits(64_KiB, kDevice);
  EXPECT_EQ(f.slot_bytes, 64_KiB);
  EXPECT_EQ(f.fits_now, 0U);
  EXPECT_EQ(f.evictable_bytes, kDeviceBytes);
  EXPECT_EQ(f.pinned_bytes, 0U);
  EXPECT_EQ(f.fits_after_eviction, kDeviceBytes / 64_KiB);
  ASSERT_TRUE(p.validate());

  // A thousand host tensors leased on the device, spread over the pool: each copy-in
  // evicts a device tensor, and the leased copies are not evictable.
  constexpr std::size_t kLeased = 1000;
  std::vector<lease> held;
  held.reserve(kLeased);
  for (std::size_t k = 0; k < kLeased; ++k) {
    held.push_back(p.acquire(ts[kDeviceSlots + (k * 997) % (n - kDeviceSlots)], access_mode::read, s));
  }
  p.synchronize(s);
  f = p.fits(64_KiB, kDevice);
  EXPECT_EQ(f.pinned_bytes, kLeased * kBlock);
  EXPECT_EQ(f.evictable_bytes, kDeviceBytes - kLeased * kBlock);
  // Each pinned block spoils at most one 64 KiB slot of the layout.
  EXPECT_LE(f.fits_after_eviction, (kDeviceBytes - kLeased * kBlock) / 64_KiB);
  EXPECT_GE(f.fits_after_eviction, kDeviceBytes / 64_KiB - kLeased);
  EXPECT_EQ(f.limit, fit_limit::pinned);
  ASSERT_TRUE(p.validate());
  held.clear();
  f = p.fits(64_KiB, kDevice);
  EXPECT_EQ(f.pinned_bytes, 0U);
  EXPECT_EQ(f.evictable_bytes, kDeviceBytes);

  // A pass over 100,000 host tensors: each misses and evicts one device tensor, but for
  // the few leased above that are still on the device.
  pool_stats const st0 = p.stats();
  for (std::size_t i = n - 100'000; i < n; ++i) { (void)p.acquire(ts[i], access_mode::read, s); }
  p.synchronize(s);
  st = p.stats();
  EXPECT_EQ((st.misses - st0.misses) + (st.hits - st0.hits), 100'000U);
  EXPECT_GE(st.misses - st0.misses, 100'000U - kLeased);
  EXPECT_EQ(st.tiers[0].evictions - st0.tiers[0].evictions, st.misses - st0.misses);
  EXPECT_EQ(st.tiers[0].resident_tensors, kDeviceSlots);
  ASSERT_TRUE(p.validate());

  // Free every other tensor: the device tier has room for the freed half of its blocks.
  for (std::size_t i = 0; i < n; i += 2) { ts[i] = tensor{}; }
  st = p.stats();
  EXPECT_EQ(st.tensors, n / 2);
  f = p.fits(kBlock, kDevice);
  EXPECT_EQ(f.fits_now + st.tiers[0].resident_tensors, kDeviceSlots);
  EXPECT_EQ(f.fits_after_eviction, kDeviceSlots);
  ASSERT_TRUE(p.validate());
  p.destroy_stream(s);
}

}  // namespace
}  // namespace tierpool::test

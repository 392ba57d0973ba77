// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_fit_tests.cpp — pool::fits(), "how much still fits": the counts agree with what
// allocate then does (fits_now tensors place with no eviction and one more evicts;
// fits_after_eviction tensors place with every earlier one leased and one more is
// out_of_memory), free space is counted by its layout (fragmentation), leases, deferred
// frees and quotas bound the answer and are named, and bad arguments are typed errors.
// Every tensor's bytes are checked at the end.
#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "unit/pool_test_util.hpp"

namespace tierpool::test {
namespace {

constexpr tier_id kDevice{0};

std::uint64_t evictions(pool const& p)
{
  std::uint64_t n = 0;
  for (tier_stats const& t : p.stats().tiers) { n += t.evictions; }
  return n;
}

std::uint64_t resident(pool const& p, std::size_t k = 0) { return p.stats().tiers[k].resident_tensors; }

/// Wait until every freed or vacated block of the device tier is past its streams (frees
/// are ordered on the pool's retire stream; bounded poll, not a timing assertion).
void settle(pool const& p, std::size_t probe)
{
  auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (p.fits(probe).in_flight_bytes != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(p.fits(probe).in_flight_bytes, 0U);
}

/// Device-tier tensors of `bytes`, filled (key = index) and placed in the device tier.
struct filled {
  std::vector<tensor> ts;
  std::vector<std::uint64_t> keys;
  void add(pool& p, std::size_t bytes, tensor_options o = {})
  {
    o.preferred_tier = kDevice;
    ts.push_back(p.allocate(bytes, o));
    keys.push_back(keys.size() + 1000);
    fill(p, ts.back(), keys.back(), 1);
    (void)p.acquire(ts.back(), access_mode::read);  // back in the device tier if fill moved it
  }
  void check_all(pool& p)
  {
    for (std::size_t i = 0; i < ts.size(); ++i) {
      if (ts[i].valid()) { EXPECT_TRUE(check(p, ts[i], keys[i], 1)) << "tensor " << i; }
    }
    EXPECT_TRUE(p.validate());
  }
};

TEST(PoolFits, AnEmptyTierCountsItsBudget)
{
  pool p(small_tiers(make_sim()));
  fit_report const r = p.fits(256_KiB);
  EXPECT_EQ(r.tier, "device");
  EXPECT_EQ(r.bytes, 256_KiB);
  EXPECT_EQ(r.slot_bytes, 256_KiB);
  EXPECT_EQ(r.fits_now, 4U);
  EXPECT_EQ(r.fits_after_eviction, 4U);
  EXPECT_EQ(r.largest_now, 1_MiB);
  EXPECT_EQ(r.free_bytes, 0U);
  EXPECT_EQ(r.growable_bytes, 1_MiB);
  EXPECT_EQ(r.evictable_bytes, 0U);
  EXPECT_EQ(r.quota_left, std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(r.limit, tierpool::fit_limit::capacity);
  // Sizes round up to the tier's alignment (256 bytes): 300,001 bytes take 300,032.
  fit_report const odd = p.fits(300'001);
  EXPECT_EQ(odd.slot_bytes, 300'032U);
  EXPECT_EQ(odd.fits_now, 3U);
  EXPECT_EQ(p.fits(2_MiB).fits_after_eviction, 0U);
  EXPECT_EQ(p.fits(2_MiB).largest_after_eviction, 1_MiB);
  // Lower tiers: pinned_host 2 MiB in 1 MiB chunks, host 16 MiB in 4 MiB chunks.
  EXPECT_EQ(p.fits(768_KiB, tier_id{1}).fits_now, 2U);  // one per 1 MiB chunk
  EXPECT_EQ(p.fits(1536_KiB, tier_id{1}).fits_now, 1U);  // a chunk of its own size
  EXPECT_EQ(p.fits(3_MiB, tier_id{2}).fits_now, 4U);     // 4 chunks of 4 MiB hold one each
}

// fits_now is what allocate places without evicting, on a layout left by random frees;
// one more tensor evicts.
TEST(PoolFits, FitsNowIsWhatPlacesWithoutEviction)
{
  for (std::size_t const b : {16_KiB, 40_KiB, 100_KiB, 256_KiB}) {
    SCOPED_TRACE(b);
    pool p(small_tiers(make_sim()));
    filled f;
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<std::size_t> size(4_KiB, 120_KiB);
    while (p.stats().tiers[0].used_bytes.current < static_cast<std::int64_t>(800_KiB)) { f.add(p, size(rng) / 256 * 256); }
    for (std::size_t i = 0; i < f.ts.size(); i += 2) { p.free(f.ts[i]); }
    settle(p, b);
    std::uint64_t const ev0 = evictions(p);
    std::uint64_t const res0 = resident(p);
    fit_report const r = p.fits(b);
    if (b <= 40_KiB) { ASSERT_GT(r.fits_now, 0U); }  // larger ones may find no hole: then the next one evicts
    EXPECT_GE(r.fits_after_eviction, r.fits_now);
    EXPECT_EQ(r.limit, tierpool::fit_limit::capacity);  // every copy is evictable and b is small: capacity bounds it
    for (std::size_t i = 0; i < r.fits_now; ++i) { f.add(p, b); }
    EXPECT_EQ(evictions(p), ev0);
    EXPECT_EQ(resident(p), res0 + r.fits_now);
    EXPECT_EQ(p.fits(b).fits_now, 0U);
    f.add(p, b);
    EXPECT_GT(evictions(p), ev0) << "one more than fits_now placed without evicting";
    f.check_all(p);
  }
}

// fits_after_eviction tensors place in the device tier while every earlier one is held by a
// lease; one more is out_of_memory there.
TEST(PoolFits, FitsAfterEvictionIsWhatPlacesWithEverythingElseLeased)
{
  pool p(small_tiers(make_sim()));
  filled f;
  for (int i = 0; i < 3; ++i) { f.add(p, 200_KiB); }
  std::vector<lease> held;
  held.push_back(p.acquire(f.ts[1], access_mode::read));
  fit_report const r = p.fits(128_KiB);
  EXPECT_EQ(r.pinned_bytes, 200_KiB);
  EXPECT_EQ(r.evictable_bytes, 400_KiB);
  ASSERT_GT(r.fits_after_eviction, r.fits_now);
  std::size_t const n = r.fits_after_eviction;
  std::size_t const first = f.ts.size();
  for (std::size_t i = 0; i < n; ++i) {
    f.add(p, 128_KiB);
    held.push_back(p.acquire(f.ts.back(), access_mode::read));
  }
  fit_report const full = p.fits(128_KiB);
  EXPECT_EQ(full.fits_after_eviction, 0U);
  EXPECT_EQ(full.evictable_bytes, 0U);
  // Room for another is free in total, but in pieces (the evicted blocks' leftovers).
  EXPECT_GE(full.free_bytes, 128_KiB);
  EXPECT_LT(full.largest_after_eviction, 128_KiB);
  EXPECT_EQ(full.limit, tierpool::fit_limit::fragmentation);
  try {
    tensor extra = p.allocate(128_KiB, {.preferred_tier = kDevice});
    ADD_FAILURE() << "placed one more than fits_after_eviction";
  } catch (out_of_memory const& e) {
    EXPECT_NE(std::string(e.what()).find("device"), std::string::npos) << e.what();
  }
  for (std::size_t i = first; i < f.ts.size(); ++i) { EXPECT_EQ(held[1 + i - first].id(), f.ts[i].id()); }
  held.clear();
  f.check_all(p);
}

// Free space that exists but is not contiguous is counted by its layout, and named.
TEST(PoolFits, FragmentationIsCountedAndNamed)
{
  pool p(small_tiers(make_sim()));
  filled f;
  for (int i = 0; i < 4; ++i) { f.add(p, 256_KiB); }
  // Lease the 2nd and 4th in address order: the evictable space is two separate 256 KiB.
  std::vector<std::pair<std::uintptr_t, std::size_t>> by_addr;
  for (std::size_t i = 0; i < 4; ++i) {
    lease l = p.acquire(f.ts[i], access_mode::read);
    by_addr.emplace_back(reinterpret_cast<std::uintptr_t>(l.data()), i);
  }
  std::sort(by_addr.begin(), by_addr.end());
  std::vector<lease> held;
  held.push_back(p.acquire(f.ts[by_addr[1].second], access_mode::read));
  held.push_back(p.acquire(f.ts[by_addr[3].second], access_mode::read));
  fit_report const big = p.fits(512_KiB);
  EXPECT_EQ(big.fits_now, 0U);
  EXPECT_EQ(big.fits_after_eviction, 0U);
  EXPECT_EQ(big.largest_after_eviction, 256_KiB);
  EXPECT_EQ(big.evictable_bytes, 512_KiB);
  EXPECT_EQ(big.limit, tierpool::fit_limit::fragmentation);
  fit_report const small = p.fits(256_KiB);
  EXPECT_EQ(small.fits_after_eviction, 2U);
  EXPECT_EQ(small.limit, tierpool::fit_limit::pinned);  // the leases hold the other half
  held.clear();
  fit_report const freed = p.fits(512_KiB);
  EXPECT_EQ(freed.fits_after_eviction, 2U);
  EXPECT_EQ(freed.largest_after_eviction, 1_MiB);
  f.check_all(p);
}

// A freed block whose stream has not got there yet is not free now; it is after waiting.
TEST(PoolFits, DeferredFreesCountOnceTheirStreamsGetThere)
{
  auto be = make_sim();
  pool p(small_tiers(be));
  stream_handle const s = p.create_stream();
  filled f;
  for (int i = 0; i < 4; ++i) { f.add(p, 256_KiB); }
  std::atomic<bool> open{false};
  struct gate {
    static void run(void* self)
    {
      auto* o = static_cast<std::atomic<bool>*>(self);
      auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!o->load() && std::chrono::steady_clock::now() < deadline) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }
    }
  };
  {
    lease l = p.acquire(f.ts[0], access_mode::read, s);
    ASSERT_EQ(be->launch_host_func(s, &gate::run, &open), status::ok);
  }
  p.free(f.ts[0]);  // its block waits for s
  fit_report const held = p.fits(256_KiB);
  EXPECT_EQ(held.in_flight_bytes, 256_KiB);
  EXPECT_EQ(held.fits_now, 0U);
  EXPECT_EQ(held.fits_after_eviction, 4U);
  open = true;
  p.synchronize(s);
  settle(p, 256_KiB);  // the free's event is on the pool's retire stream, behind s
  fit_report const after = p.fits(256_KiB);
  EXPECT_EQ(after.fits_now, 1U);
  f.add(p, 256_KiB);
  EXPECT_EQ(evictions(p), 0U);
  f.check_all(p);
  p.destroy_stream(s);
}

TEST(PoolFits, TheTenantsQuotaBoundsTheAnswer)
{
  pool_options o = small_tiers(make_sim());
  o.tenant_quotas = {{5, 600_KiB}};
  pool p(o);
  fit_report const r = p.fits(256_KiB, kDevice, 5);
  EXPECT_EQ(r.quota_left, 600_KiB);
  EXPECT_EQ(r.fits_now, 2U);
  EXPECT_EQ(r.fits_after_eviction, 2U);
  EXPECT_EQ(r.limit, tierpool::fit_limit::quota);
  EXPECT_EQ(p.fits(256_KiB, kDevice, 6).fits_now, 4U);  // no quota
  filled f;
  f.add(p, 256_KiB, {.tenant = 5});
  EXPECT_EQ(p.fits(256_KiB, kDevice, 5).quota_left, 344_KiB);
  EXPECT_EQ(p.fits(256_KiB, kDevice, 5).fits_now, 1U);
  f.add(p, 256_KiB, {.tenant = 5});
  EXPECT_EQ(p.fits(256_KiB, kDevice, 5).fits_after_eviction, 0U);
  EXPECT_THROW((void)p.allocate(256_KiB, {.tenant = 5}), quota_exceeded);
  f.check_all(p);
}

TEST(PoolFits, BadArgumentsAreTypedErrors)
{
  pool p(small_tiers(make_sim()));
  auto message = [&](auto&& call) {
    try {
      call();
    } catch (logic_error const& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message([&] { (void)p.fits(0); }), "pool::fits: bytes must be > 0");
  EXPECT_EQ(message([&] { (void)p.fits(1_KiB, tier_id{7}); }), "pool::fits: tier 7 out of range (the pool has 3)");
  p.close();
  EXPECT_EQ(message([&] { (void)p.fits(1_KiB); }), "pool::fits: the pool is closed");
}


// Note [A register of pinned copies]: leases taken before the first fits() (found by the
// walk that turns the register on) and after it (added at the pin) both hold their blocks
// out of fits_after_eviction, at their offsets; releases and frees take them out again.
// A control with different offsets pinned gives a different answer, so the offsets count.
TEST(PoolFits, TheRegisterOfPinnedCopiesFollowsEveryLease)
{
  pool p(small_tiers(make_sim()));
  filled f;
  for (int i = 0; i < 4; ++i) { f.add(p, 256_KiB); }  // the 1 MiB device tier, full, in order
  settle(p, 256_KiB);
  {
    lease a = p.acquire(f.ts[0], access_mode::read);
    lease c = p.acquire(f.ts[2], access_mode::read);  // 0 and 512 KiB pinned: no 512 KiB run left
    fit_report const r = p.fits(512_KiB);           // the first fits(): the walk finds both
    EXPECT_EQ(r.fits_after_eviction, 0U);
    EXPECT_EQ(r.pinned_bytes, 512_KiB);
    EXPECT_EQ(p.fits(256_KiB).fits_after_eviction, 2U);
    EXPECT_EQ(r.limit, fit_limit::fragmentation) << "512 KiB of space, in two runs between the leased blocks";
    EXPECT_TRUE(p.validate());
  }
  {
    lease a = p.acquire(f.ts[0], access_mode::read);
    lease b = p.acquire(f.ts[1], access_mode::read);  // 0 and 256 KiB: [512 KiB, 1 MiB) is one run
    EXPECT_EQ(p.fits(512_KiB).fits_after_eviction, 1U);
    lease b2 = p.acquire(f.ts[1], access_mode::read);  // a second lease: still one entry
    b = lease{};
    EXPECT_EQ(p.fits(512_KiB).fits_after_eviction, 1U) << "t1 still has a lease";
    b2 = lease{};
    EXPECT_EQ(p.fits(512_KiB).fits_after_eviction, 1U) << "t0 pinned at 0: [256 KiB, 1 MiB) holds one";
    EXPECT_TRUE(p.validate());
  }
  EXPECT_EQ(p.fits(512_KiB).fits_after_eviction, 2U);
  EXPECT_EQ(p.fits(256_KiB).fits_after_eviction, 4U);
  EXPECT_EQ(p.fits(256_KiB).pinned_bytes, 0U);
  f.check_all(p);
}

// The register under threads: six threads take and drop leases on their own tensors (more
// threads than cores) while this one asks fits(); at the end nothing is pinned, the answer
// is the whole tier, and validate() finds the register consistent with the records.
TEST(PoolFits, TheRegisterOfPinnedCopiesStaysExactUnderThreads)
{
  pool p(small_tiers(make_sim(), 4_MiB, 2_MiB, 16_MiB));
  filled f;
  for (int i = 0; i < 12; ++i) { f.add(p, 256_KiB); }
  (void)p.fits(256_KiB);  // the register is on from here
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int w = 0; w < 6; ++w) {
    ts.emplace_back([&, w] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(w));
      for (int i = 0; i < 3000 && !stop.load(); ++i) {
        tensor const& t = f.ts[static_cast<std::size_t>(w * 2) + rng() % 2];
        lease l = p.acquire(t, access_mode::read);
        if (rng() % 4 == 0) { lease again = p.acquire(t, access_mode::read); }
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    fit_report const r = p.fits(256_KiB);
    EXPECT_LE(r.fits_after_eviction, 16U);
    EXPECT_GE(r.fits_after_eviction, 16U - 6U) << "at most six tensors are pinned at once";
  }
  stop = true;
  for (auto& t : ts) { t.join(); }
  EXPECT_TRUE(p.validate());
  fit_report const r = p.fits(256_KiB);
  EXPECT_EQ(r.pinned_bytes, 0U);
  EXPECT_EQ(r.fits_after_eviction, 16U);
  f.check_all(p);
}

}  // namespace
}  // namespace tierpool::test

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// Tenants' shares of a tier (Note [Tenants' shares of a tier], runtime/migration/eviction.cpp):
// a greedy tenant cannot push out the device copies of a tenant within its share.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

constexpr std::size_t kTensor = 256_KiB;

struct contention_result {
  double protected_hit_rate{0.0};  // over the rounds after the first
  pool_stats stats{};
};

// An 8 MiB device tier (2 MiB pinned, 64 MiB host). The protected tenant reuses 12 tensors
// (3 MiB); the greedy one, unless `greedy_tensors` is 0, streams through 64 (16 MiB: four
// times an equal split of the device tier), rewriting each, two for every protected access.
// Every tensor's bytes are checked at the end and the pool validates after every round.
contention_result contend(std::uint32_t protected_tenant, std::uint32_t greedy_tenant, std::size_t greedy_tensors,
                          std::size_t protected_share = 0)
{
  pool_options o = small_tiers(make_sim(), 8_MiB, 2_MiB, 64_MiB);
  if (protected_share != 0) { o.tiers[0].tenant_shares = {{protected_tenant, protected_share}}; }
  pool p{o};
  stream_handle const s = p.create_stream();
  std::vector<tensor> mine;
  std::vector<tensor> theirs;
  std::vector<std::uint32_t> version;
  for (std::uint64_t i = 0; i < 12; ++i) {
    mine.push_back(p.allocate(kTensor, {.name = "p" + std::to_string(i), .tenant = protected_tenant}));
    fill(p, mine.back(), i, 1);
  }
  for (std::uint64_t i = 0; i < greedy_tensors; ++i) {
    theirs.push_back(p.allocate(kTensor, {.name = "g" + std::to_string(i), .tenant = greedy_tenant}));
    fill(p, theirs.back(), 1000 + i, 1);
    version.push_back(1);
  }
  std::uint64_t hits = 0;
  std::uint64_t counted = 0;
  std::size_t next = 0;
  for (int round = 0; round < 12; ++round) {
    for (std::size_t i = 0; i < mine.size(); ++i) {
      std::uint64_t const before = p.stats().misses;
      {
        lease l = p.acquire(mine[i], access_mode::read, s);
      }
      if (round > 0) {
        hits += p.stats().misses == before ? 1U : 0U;
        ++counted;
      }
      for (int g = 0; g < 2 && !theirs.empty(); ++g, ++next) {
        std::size_t const j = next % theirs.size();
        lease l = p.acquire(theirs[j], access_mode::read_write, s);
        p.synchronize(s);  // the copy-in has landed: the lease's bytes may be rewritten
        write_pattern(l.data(), l.bytes(), 1000 + j, ++version[j]);
      }
    }
    EXPECT_TRUE(p.validate()) << "round " << round;
  }
  p.synchronize(s);
  for (std::size_t i = 0; i < mine.size(); ++i) { EXPECT_TRUE(check(p, mine[i], i, 1)) << "p" << i; }
  for (std::size_t j = 0; j < theirs.size(); ++j) { EXPECT_TRUE(check(p, theirs[j], 1000 + static_cast<std::uint64_t>(j), version[j])) << "g" << j; }
  EXPECT_TRUE(p.validate());
  contention_result r;
  r.protected_hit_rate = static_cast<double>(hits) / static_cast<double>(counted);
  r.stats = p.stats();
  return r;
}

// The target: the protected tenant's device hit rate stays within 5 percentage
// points of its rate alone while the greedy one allocates four times its share. The same
// run with both in one tenant (no shares apply) shows what the shares prevent.
TEST(PoolTenants, AGreedyTenantCannotPushOutOneWithinItsShare)
{
  double const alone = contend(1, 2, 0).protected_hit_rate;
  contention_result const shared = contend(1, 2, 64);
  contention_result const one_tenant = contend(0, 0, 64);
  std::printf("protected tenant's device hit rate: alone %.3f, beside a greedy tenant %.3f, both as one tenant %.3f\n",
              alone, shared.protected_hit_rate, one_tenant.protected_hit_rate);
  EXPECT_GE(alone, 0.99);
  EXPECT_GE(shared.protected_hit_rate, alone - 0.05);
  EXPECT_LT(one_tenant.protected_hit_rate, alone - 0.5) << "without shares the greedy stream pushes it out";
  // The figures: the device tier names both tenants, the greedy one at its share.
  tier_stats const& dev = shared.stats.tiers[0];
  EXPECT_GT(dev.share_skips, 0U);
  ASSERT_EQ(dev.tenants.size(), 2U);
  EXPECT_EQ(dev.tenants[0].tenant, 1U);
  EXPECT_EQ(dev.tenants[0].resident_bytes, 12 * kTensor);
  EXPECT_EQ(dev.tenants[0].share_bytes, 4_MiB);  // an equal split of 8 MiB
  EXPECT_EQ(dev.tenants[1].tenant, 2U);
  EXPECT_LE(dev.tenants[1].resident_bytes, 8_MiB - 12 * kTensor);
  EXPECT_EQ(one_tenant.stats.tiers[0].share_skips, 0U);
}

// A share set for a tier wins over the equal split; a tenant given less than it uses is
// evicted from first, and one over its share takes its own tensors' room.
TEST(PoolTenants, ASetShareDecidesWhoGivesRoom)
{
  // The protected tenant's share is 1 MiB, a third of its 3 MiB: the greedy tenant's
  // equal split is then the larger, and the protected tenant's tensors go first.
  contention_result const small = contend(1, 2, 64, 1_MiB);
  double const alone = contend(1, 2, 0).protected_hit_rate;
  EXPECT_LT(small.protected_hit_rate, alone - 0.3) << small.protected_hit_rate;
  EXPECT_EQ(small.stats.tiers[0].tenants[0].share_bytes, 1_MiB);
}

TEST(PoolTenants, SetTenantShareChecksTheTierAndRemovesWithZero)
{
  pool p{small_tiers(make_sim(), 8_MiB, 2_MiB, 64_MiB)};
  p.set_tenant_share(3, tier_id{0}, 2_MiB);
  pool_stats st = p.stats();
  ASSERT_EQ(st.tiers[0].tenants.size(), 1U);
  EXPECT_EQ(st.tiers[0].tenants[0].tenant, 3U);
  EXPECT_EQ(st.tiers[0].tenants[0].share_bytes, 2_MiB);
  EXPECT_EQ(st.tiers[0].tenants[0].resident_bytes, 0U);
  std::string const json = p.summary_json();
  EXPECT_NE(json.find("\"tenants\":[{\"tenant\":3,\"resident_bytes\":0,\"share_bytes\":2097152}]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"share_skips\":0"), std::string::npos) << json;
  p.set_tenant_share(3, tier_id{0}, 0);
  EXPECT_TRUE(p.stats().tiers[0].tenants.empty());
  try {
    p.set_tenant_share(3, tier_id{9}, 1_MiB);
    FAIL() << "expected logic_error";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("set_tenant_share: tier 9 does not exist (the pool has 3)"), std::string::npos)
      << e.what();
  }
  // A tenant's bytes follow its tensors into and out of a tier.
  tensor t = p.allocate(kTensor, {.tenant = 3, .preferred_tier = tier_id{0}});
  EXPECT_EQ(p.stats().tiers[0].tenants.at(0).resident_bytes, kTensor);
  p.free(t);
  EXPECT_TRUE(p.stats().tiers[0].tenants.empty());
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

namespace tierpool::test {
namespace {

// Two tenants' threads at once (more threads than cores): each rewrites its own tensors
// on the device and checks what it reads; the shares change under them. Every byte holds
// its last version and the counts match the copies (validate) at the end.
TEST(PoolTenants, ThreadsOfTwoTenantsKeepEveryByteWhileSharesChange)
{
  pool p{small_tiers(make_sim(), 4_MiB, 2_MiB, 64_MiB)};
  constexpr std::size_t kThreads = 6;
  constexpr std::size_t kPerThread = 12;
  std::vector<std::vector<tensor>> ts(kThreads);
  std::vector<std::vector<std::uint32_t>> ver(kThreads, std::vector<std::uint32_t>(kPerThread, 1));
  for (std::size_t t = 0; t < kThreads; ++t) {
    for (std::size_t i = 0; i < kPerThread; ++i) {
      ts[t].push_back(p.allocate(128_KiB, {.tenant = static_cast<std::uint32_t>(1 + t % 2)}));
      fill(p, ts[t].back(), t * 100 + i, 1);
    }
  }
  std::atomic<std::uint64_t> bad{0};
  std::vector<std::thread> workers;
  for (std::size_t t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      stream_handle const s = p.create_stream();
      for (int op = 0; op < 300; ++op) {
        std::size_t const i = static_cast<std::size_t>(op * 7 + static_cast<int>(t)) % kPerThread;
        std::uint64_t const key = t * 100 + i;
        lease l = p.acquire(ts[t][i], access_mode::read_write, s);
        p.synchronize(s);
        if (!has_pattern(l.data(), l.bytes(), key, ver[t][i])) { bad.fetch_add(1); }
        write_pattern(l.data(), l.bytes(), key, ++ver[t][i]);
        if (t == 0 && op % 50 == 0) { p.set_tenant_share(1, tier_id{0}, (op % 100 == 0) ? 1_MiB : 0); }
      }
      p.synchronize(s);
      p.destroy_stream(s);
    });
  }
  for (auto& w : workers) { w.join(); }
  EXPECT_EQ(bad.load(), 0U);
  for (std::size_t t = 0; t < kThreads; ++t) {
    for (std::size_t i = 0; i < kPerThread; ++i) { EXPECT_TRUE(check(p, ts[t][i], t * 100 + i, ver[t][i])) << t << " " << i; }
  }
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// Tenants' shares of a tier (Note [Tenants' shares of a tier], runtime/migration/eviction.cpp):
// a greedy tenant cannot push out the device copies of a tenant within its share.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <atomic>
#include <functional>
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
  EXPECT_NE(json.find("\"tenants\":[{\"tenant\":3,\"resident_bytes\":0,\"share_bytes\":2097152,\"priority\":0,"
                      "\"hard_share\":false}]"),
            std::string::npos)
    << json;
  EXPECT_NE(json.find("\"share_refusals\":0"), std::string::npos) << json;
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

// Six threads (more than cores), alternately of tenants 1 and 2, each rewriting its own
// 12 tensors of 128 KiB on the device and checking the version it reads; each_op(thread,
// op) runs after every access. check_all() checks every byte at the end.
class tenant_threads {
 public:
  static constexpr std::size_t kThreads = 6;
  static constexpr std::size_t kPerThread = 12;
  explicit tenant_threads(pool& p) : p_(p), ts_(kThreads), ver_(kThreads, std::vector<std::uint32_t>(kPerThread, 1))
  {
    for (std::size_t t = 0; t < kThreads; ++t) {
      for (std::size_t i = 0; i < kPerThread; ++i) {
        ts_[t].push_back(p_.allocate(128_KiB, {.tenant = static_cast<std::uint32_t>(1 + t % 2)}));
        fill(p_, ts_[t].back(), t * 100 + i, 1);
      }
    }
  }
  /// Runs `ops` accesses in every thread (tensor `(op * stride + thread) % 12`); returns
  /// the reads that found other bytes than the last version written.
  std::uint64_t run(int ops, int stride, std::function<void(std::size_t, int)> const& each_op)
  {
    std::atomic<std::uint64_t> bad{0};
    std::vector<std::thread> workers;
    for (std::size_t t = 0; t < kThreads; ++t) {
      workers.emplace_back([&, t] {
        stream_handle const s = p_.create_stream();
        for (int op = 0; op < ops; ++op) {
          std::size_t const i = static_cast<std::size_t>(op * stride + static_cast<int>(t)) % kPerThread;
          std::uint64_t const key = t * 100 + i;
          lease l = p_.acquire(ts_[t][i], access_mode::read_write, s);
          p_.synchronize(s);
          if (!has_pattern(l.data(), l.bytes(), key, ver_[t][i])) { bad.fetch_add(1); }
          write_pattern(l.data(), l.bytes(), key, ++ver_[t][i]);
          each_op(t, op);
        }
        p_.synchronize(s);
        p_.destroy_stream(s);
      });
    }
    for (auto& w : workers) { w.join(); }
    return bad.load();
  }
  void check_all()
  {
    for (std::size_t t = 0; t < kThreads; ++t) {
      for (std::size_t i = 0; i < kPerThread; ++i) { EXPECT_TRUE(check(p_, ts_[t][i], t * 100 + i, ver_[t][i])) << t << " " << i; }
    }
    EXPECT_TRUE(p_.validate());
  }
  [[nodiscard]] std::vector<tensor> const& of_thread(std::size_t t) const { return ts_[t]; }

 private:
  pool& p_;
  std::vector<std::vector<tensor>> ts_;
  std::vector<std::vector<std::uint32_t>> ver_;
};

// Two tenants' threads at once: the shares change under them. Every byte holds its last
// version and the counts match the copies (validate) at the end.
TEST(PoolTenants, ThreadsOfTwoTenantsKeepEveryByteWhileSharesChange)
{
  pool p{small_tiers(make_sim(), 4_MiB, 2_MiB, 64_MiB)};
  tenant_threads w(p);
  EXPECT_EQ(w.run(300, 7,
                  [&](std::size_t t, int op) {
                    if (t == 0 && op % 50 == 0) { p.set_tenant_share(1, tier_id{0}, (op % 100 == 0) ? 1_MiB : 0); }
                  }),
            0U);
  w.check_all();
}

}  // namespace
}  // namespace tierpool::test

// Hard shares and priorities (Note [Hard shares and priorities], eviction.cpp).
namespace tierpool::test {
namespace {

std::size_t device_bytes_of(pool& p, std::uint32_t tenant)
{
  pool_stats const st = p.stats();  // kept: the loop must not walk a destroyed temporary
  for (tier_tenant_stats const& t : st.tiers[0].tenants) {
    if (t.tenant == tenant) { return t.resident_bytes; }
  }
  return 0;
}

// A hard share is a limit: with the device tier almost empty, the tenant's copies there
// never pass its share. Allocations past it go to a lower tier; copy-ins evict its own
// tensors. Every byte survives.
TEST(PoolTenants, AHardShareIsALimitEvenWithRoomFree)
{
  pool_options o = small_tiers(make_sim(), 8_MiB, 2_MiB, 64_MiB);
  o.tiers[0].tenant_shares = {{1, 1_MiB}};
  o.tenants = {{1, tenant_options{.hard_shares = true}}};
  pool p{o};
  stream_handle const s = p.create_stream();
  std::vector<tensor> t;
  for (std::uint64_t i = 0; i < 10; ++i) {
    t.push_back(p.allocate(kTensor, {.tenant = 1}));
    fill(p, t.back(), i, 1);
    EXPECT_LE(device_bytes_of(p, 1), 1_MiB) << i;
  }
  EXPECT_EQ(p.stats().tiers[0].tenants.at(0).tenant, 1U);
  EXPECT_TRUE(p.stats().tiers[0].tenants.at(0).hard_share);
  EXPECT_GT(p.stats().tiers[0].share_refusals, 0U) << "allocations past the share went lower";
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < t.size(); ++i) {
      {
        lease l = p.acquire(t[i], access_mode::read, s);
      }
      EXPECT_LE(device_bytes_of(p, 1), 1_MiB) << round << " " << i;
    }
  }
  p.synchronize(s);
  EXPECT_EQ(device_bytes_of(p, 1), 1_MiB);
  for (std::size_t i = 0; i < t.size(); ++i) { EXPECT_TRUE(check(p, t[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
  // Another tenant, without a hard share, fills the rest of the tier.
  tensor other = p.allocate(6_MiB, {.tenant = 2, .preferred_tier = tier_id{0}});
  EXPECT_EQ(device_bytes_of(p, 2), 6_MiB);
  p.free(other);
}

// A copy-in the hard share cannot hold fails with a typed error saying so: the tensor is
// larger than the share, or the tenant's own copies there are all leased.
TEST(PoolTenants, AHardShareRefusesACopyInItCannotHoldAndSaysWhy)
{
  pool_options o = small_tiers(make_sim(), 8_MiB, 2_MiB, 64_MiB);
  o.tiers[0].tenant_shares = {{1, 512_KiB}};
  pool p{o};
  p.set_tenant(1, {.hard_shares = true});
  stream_handle const s = p.create_stream();
  tensor big = p.allocate(1_MiB, {.tenant = 1});
  fill(p, big, 7, 1);
  try {
    lease l = p.acquire(big, access_mode::read, s);
    FAIL() << "expected out_of_memory";
  } catch (out_of_memory const& e) {
    EXPECT_EQ(e.figures().cause, oom_cause::share);
    std::string const w = e.what();
    EXPECT_NE(w.find("cause: share — the tenant's hard share of the tier is 512.0 KiB"), std::string::npos) << w;
    EXPECT_NE(w.find("the request alone is larger"), std::string::npos) << w;
  }
  std::vector<tensor> t;
  for (std::uint64_t i = 0; i < 3; ++i) {
    t.push_back(p.allocate(kTensor, {.tenant = 1}));
    fill(p, t.back(), 10 + i, 1);
  }
  {
    lease a = p.acquire(t[0], access_mode::read, s);
    lease b = p.acquire(t[1], access_mode::read, s);
    try {
      lease c = p.acquire(t[2], access_mode::read, s);
      FAIL() << "expected out_of_memory";
    } catch (out_of_memory const& e) {
      EXPECT_EQ(e.figures().cause, oom_cause::share);
      EXPECT_NE(std::string(e.what()).find("none of which could be evicted"), std::string::npos) << e.what();
    }
  }
  // Once the leases end, the same copy-in evicts the tenant's own copy.
  {
    lease c = p.acquire(t[2], access_mode::read, s);
  }
  p.synchronize(s);
  EXPECT_TRUE(check(p, big, 7, 1));
  for (std::size_t i = 0; i < t.size(); ++i) { EXPECT_TRUE(check(p, t[i], 10 + i, 1)) << i; }
  EXPECT_TRUE(p.validate());
}

// A hard share is a reservation: another tenant never evicts what a hard tenant holds
// within it, and is refused instead (here its own copies are leased). Without the hard
// share the same request takes the other tenant's copy.
TEST(PoolTenants, AHardShareIsAReservationOthersCannotEvict)
{
  for (bool const hard : {true, false}) {
    SCOPED_TRACE(hard ? "hard" : "soft");
    pool_options o = small_tiers(make_sim(), 4_MiB, 2_MiB, 64_MiB);
    o.tiers[0].tenant_shares = {{1, 2_MiB}, {2, 2_MiB}};
    if (hard) { o.tenants = {{1, tenant_options{.hard_shares = true}}}; }
    pool p{o};
    stream_handle const s = p.create_stream();
    std::vector<tensor> mine;
    std::vector<tensor> theirs;
    for (std::uint64_t i = 0; i < 8; ++i) {
      mine.push_back(p.allocate(kTensor, {.tenant = 1, .preferred_tier = tier_id{0}}));
      fill(p, mine.back(), i, 1);
    }
    for (std::uint64_t i = 0; i < 9; ++i) {
      theirs.push_back(p.allocate(kTensor, {.tenant = 2, .preferred_tier = tier_id{2}}));
      fill(p, theirs.back(), 100 + i, 1);
    }
    {
      std::vector<lease> held;
      for (std::size_t i = 0; i < 8; ++i) { held.push_back(p.acquire(theirs[i], access_mode::read, s)); }
      p.synchronize(s);
      ASSERT_EQ(device_bytes_of(p, 1), 2_MiB);
      ASSERT_EQ(device_bytes_of(p, 2), 2_MiB);
      if (hard) {
        EXPECT_THROW((void)p.acquire(theirs[8], access_mode::read, s), out_of_memory);
        EXPECT_EQ(device_bytes_of(p, 1), 2_MiB);
      } else {
        lease l = p.acquire(theirs[8], access_mode::read, s);
        EXPECT_EQ(device_bytes_of(p, 1), 2_MiB - kTensor);
      }
    }
    p.synchronize(s);
    for (std::size_t i = 0; i < mine.size(); ++i) { EXPECT_TRUE(check(p, mine[i], i, 1)) << i; }
    for (std::size_t i = 0; i < theirs.size(); ++i) { EXPECT_TRUE(check(p, theirs[i], 100 + i, 1)) << i; }
    EXPECT_TRUE(p.validate());
  }
}

// Priorities: when no tenant is over its share, the tenant that needs room takes it from
// tenants of lower priority first, although the policy (LRU) offers its own oldest
// tensors first; a tenant of lower priority never takes the tensors a higher one holds
// within its share, and evicts its own instead.
TEST(PoolTenants, APriorityDecidesWhoGivesRoomWhenNoOneIsOverItsShare)
{
  for (int const prio : {1, 0}) {
    SCOPED_TRACE("priority " + std::to_string(prio));
    pool_options o = small_tiers(make_sim(), 4_MiB, 2_MiB, 64_MiB);
    o.tiers[0].policy = "lru";
    o.tiers[0].tenant_shares = {{1, 3_MiB}, {2, 3_MiB}};  // both within: 2 MiB each
    o.tenants = {{1, tenant_options{.priority = prio}}};
    pool p{o};
    stream_handle const s = p.create_stream();
    std::vector<tensor> hi;
    std::vector<tensor> lo;
    for (std::uint64_t i = 0; i < 10; ++i) {  // 8 on the device (oldest first), 2 below
      hi.push_back(p.allocate(kTensor, {.tenant = 1, .preferred_tier = tier_id{i < 8 ? 0U : 2U}}));
      fill(p, hi.back(), i, 1);
    }
    for (std::uint64_t i = 0; i < 10; ++i) {
      lo.push_back(p.allocate(kTensor, {.tenant = 2, .preferred_tier = tier_id{i < 8 ? 0U : 2U}}));
      fill(p, lo.back(), 100 + i, 1);
    }
    for (std::size_t i = 0; i < 8; ++i) {  // touch in order: tenant 1's are the least recent
      lease a = p.acquire(hi[i], access_mode::read, s);
    }
    for (std::size_t i = 0; i < 8; ++i) {
      lease b = p.acquire(lo[i], access_mode::read, s);
    }
    ASSERT_EQ(device_bytes_of(p, 1), 2_MiB);
    ASSERT_EQ(device_bytes_of(p, 2), 2_MiB);
    { lease l = p.acquire(hi[8], access_mode::read, s); }  // tenant 1 needs room
    if (prio == 1) {
      EXPECT_EQ(device_bytes_of(p, 1), 2_MiB + kTensor) << "the lower-priority tenant gave room";
      EXPECT_EQ(device_bytes_of(p, 2), 2_MiB - kTensor);
    } else {
      EXPECT_EQ(device_bytes_of(p, 1), 2_MiB) << "LRU took tenant 1's own oldest tensor";
      EXPECT_EQ(device_bytes_of(p, 2), 2_MiB);
    }
    std::size_t const hi_before = device_bytes_of(p, 1);
    { lease l = p.acquire(lo[8], access_mode::read, s); }  // tenant 2 needs room
    if (prio == 1) {
      EXPECT_EQ(device_bytes_of(p, 1), hi_before) << "the higher-priority tenant's tensors are passed over";
    } else {
      EXPECT_EQ(device_bytes_of(p, 1), hi_before - kTensor) << "LRU took tenant 1's oldest tensor";
    }
    p.synchronize(s);
    for (std::size_t i = 0; i < hi.size(); ++i) { EXPECT_TRUE(check(p, hi[i], i, 1)) << i; }
    for (std::size_t i = 0; i < lo.size(); ++i) { EXPECT_TRUE(check(p, lo[i], 100 + i, 1)) << i; }
    EXPECT_TRUE(p.validate());
  }
}

// A tenant's quota is its default share of a device tier (no share set): a greedy tenant
// with a 2 MiB quota is evicted from first once past it.
TEST(PoolTenants, AQuotaIsTheDefaultShareOfADeviceTier)
{
  pool_options o = small_tiers(make_sim(), 8_MiB, 2_MiB, 64_MiB);
  o.tenant_quotas = {{2, 48_MiB}};
  pool p{o};
  EXPECT_EQ(p.stats().tiers[0].tenants.size(), 0U);
  tensor a = p.allocate(kTensor, {.tenant = 2, .preferred_tier = tier_id{0}});
  ASSERT_EQ(p.stats().tiers[0].tenants.size(), 1U);
  EXPECT_EQ(p.stats().tiers[0].tenants[0].share_bytes, 8_MiB) << "at most the capacity";
  p.set_quota(2, 3_MiB);
  EXPECT_EQ(p.stats().tiers[0].tenants[0].share_bytes, 3_MiB);
  EXPECT_EQ(p.stats().tiers[1].tenants.size(), 0U) << "host tiers: no default share";
  p.set_quota(2, 0);
  EXPECT_EQ(p.stats().tiers[0].tenants[0].share_bytes, 8_MiB) << "alone: the whole tier";
  p.free(a);
  EXPECT_TRUE(p.validate());
}

// Threads of a hard-share tenant and a greedy one at once (more threads than cores): the
// hard tenant never holds more than its share of the device, even with copies of its other
// threads in flight (placements count until their copy is in: tenant_rank::placing), and
// every byte holds.
TEST(PoolTenants, ThreadsOfAHardShareTenantAndAGreedyOneKeepEveryByte)
{
  pool_options o = small_tiers(make_sim(), 4_MiB, 2_MiB, 64_MiB);
  o.tiers[0].tenant_shares = {{1, 1_MiB}};
  o.tenants = {{1, tenant_options{.priority = 1, .hard_shares = true}}};
  pool p{o};
  tenant_threads w(p);
  std::atomic<std::uint64_t> over{0};
  EXPECT_EQ(w.run(200, 5,
                  [&](std::size_t, int op) {  // 3 threads of tenant 1: copies in flight beside this one
                    if (op % 5 == 0 && device_bytes_of(p, 1) > 1_MiB) { over.fetch_add(1); }
                  }),
            0U);
  EXPECT_EQ(over.load(), 0U);
  {  // one more placement of tenant 1, alone: within its share again
    stream_handle const s = p.create_stream();
    for (tensor const& t : w.of_thread(0)) {
      lease l = p.acquire(t, access_mode::read, s);
    }
    p.synchronize(s);
    EXPECT_LE(device_bytes_of(p, 1), 1_MiB);
    p.destroy_stream(s);
  }
  w.check_all();
}

}  // namespace
}  // namespace tierpool::test

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_acquire_all_tests.cpp — pool::acquire_all: several tensors leased for one piece of
// work, largest first, all or none. The leases come back in the items' order with every
// byte; the acquires are taken (and recorded) largest first; a small tensor leased first can
// split the room a large one needs, and acquire_all places both where program order fails
// for fragmentation; a failure (an injected copy fault, no room) ends the leases already
// taken and loses nothing; bad items are logic errors with nothing leased.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/trace.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

namespace tierpool::test {
namespace {

constexpr std::size_t kSlot = 64_KiB;

std::size_t pinned(pool& p) { return p.stats().tiers[0].pinned_bytes; }

TEST(PoolAcquireAll, LeasesComeBackInTheItemsOrderAndAreTakenLargestFirst)
{
  auto const path = std::filesystem::temp_directory_path() /
                    ("tierpool_acquire_all_" + std::to_string(::getpid()) + ".tpt");
  std::vector<std::uint64_t> order;  // tensor ids in the order their accesses were recorded
  {
    pool_options o = small_tiers(make_sim(), 2_MiB, 0, 16_MiB);
    o.trace_path = path.string();
    pool p{o};
    std::vector<std::size_t> const sizes{64_KiB, 512_KiB, 128_KiB, 256_KiB, 128_KiB};
    std::vector<tensor> ts;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      ts.push_back(p.allocate(sizes[i], {.preferred_tier = tier_id{1}}));
      fill(p, ts.back(), i, 1);
    }
    stream_handle const s = p.create_stream();
    std::vector<acquire_item> items;
    for (std::size_t i = 0; i < ts.size(); ++i) {
      items.push_back({&ts[i], i == 2 ? access_mode::read_write : access_mode::read});
    }
    std::vector<lease> got = p.acquire_all(items, s);
    ASSERT_EQ(got.size(), ts.size());
    EXPECT_EQ(pinned(p), 64_KiB + 512_KiB + 128_KiB + 256_KiB + 128_KiB);
    for (std::size_t i = 0; i < ts.size(); ++i) {
      EXPECT_EQ(got[i].id(), ts[i].id()) << i;
      EXPECT_EQ(got[i].bytes(), sizes[i]);
      EXPECT_EQ(got[i].stream(), s);
      EXPECT_EQ(got[i].access(), items[i].access);
      EXPECT_TRUE(has_pattern(got[i].data(), got[i].bytes(), i, 1)) << "item " << i;  // sim real memory
    }
    got.clear();
    p.synchronize(s);
    EXPECT_EQ(pinned(p), 0U);
    for (std::size_t i = 0; i < ts.size(); ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
    EXPECT_TRUE(p.validate());
    // The same tensor twice: two leases, as two acquire calls.
    std::vector<acquire_item> const twice{{&ts[0], access_mode::read}, {&ts[0], access_mode::read}};
    std::vector<lease> both = p.acquire_all(twice, s);
    EXPECT_EQ(both[0].data(), both[1].data());
    both.clear();
    EXPECT_TRUE(p.acquire_all({}, s).empty());
    p.destroy_stream(s);
    for (std::size_t i = 0; i < ts.size(); ++i) { order.push_back(static_cast<std::uint64_t>(ts[i].id())); }
  }
  std::vector<trace::event> const ev = trace::read_all(path);
  std::filesystem::remove(path);
  std::vector<std::uint64_t> accessed;
  for (trace::event const& e : ev) {
    if (e.kind == trace::event_kind::access && e.stream != trace::host_stream) { accessed.push_back(e.tensor); }
  }
  ASSERT_GE(accessed.size(), 5U);
  // 512 KiB, 256 KiB, then the two of 128 KiB in the items' order, then 64 KiB.
  EXPECT_EQ(std::vector<std::uint64_t>(accessed.begin(), accessed.begin() + 5),
            (std::vector<std::uint64_t>{order[1], order[3], order[2], order[4], order[0]}));
}

// A 1 MiB device tier full of sixteen 64 KiB tensors, the least recently used in the middle
// of the layout. A kernel needs a 64 KiB tensor A and a 576 KiB tensor B, both on the host.
// In program order A takes the middle block (its victim's), and leased there it leaves no
// run of nine blocks for B: out of memory. acquire_all places B first, then A.
struct middle_victim {
  pool p;
  std::vector<tensor> resident;
  tensor a;
  tensor b;

  middle_victim() : p(small_tiers(make_sim(), 1_MiB, 0, 16_MiB))
  {
    std::vector<std::pair<void*, std::size_t>> where;
    for (std::uint64_t i = 0; i < 16; ++i) {
      resident.push_back(p.allocate(kSlot, {.preferred_tier = tier_id{0}}));
      fill(p, resident.back(), 100 + i, 1);
      lease l = p.acquire(resident.back(), access_mode::read);
      where.emplace_back(l.data(), i);
    }
    std::sort(where.begin(), where.end());
    std::size_t const middle = where[7].second;
    for (std::size_t i = 0; i < resident.size(); ++i) {  // every other one used later: the middle one is LRU
      if (i != middle) { lease l = p.acquire(resident[i], access_mode::read); }
    }
    a = p.allocate(kSlot, {.preferred_tier = tier_id{1}});
    b = p.allocate(9 * kSlot, {.preferred_tier = tier_id{1}});
    fill(p, a, 1, 1);
    fill(p, b, 2, 1);
  }
  void check_all()
  {
    EXPECT_TRUE(check(p, a, 1, 1));
    EXPECT_TRUE(check(p, b, 2, 1));
    for (std::size_t i = 0; i < resident.size(); ++i) { EXPECT_TRUE(check(p, resident[i], 100 + i, 1)) << i; }
    EXPECT_TRUE(p.validate());
  }
};

TEST(PoolAcquireAll, LargestFirstPlacesWhatProgramOrderCannot)
{
  {
    SCOPED_TRACE("program order");
    middle_victim f;
    lease la = f.p.acquire(f.a, access_mode::read);
    try {
      lease lb = f.p.acquire(f.b, access_mode::read);
      ADD_FAILURE() << "B was placed beside A: the layout this test builds did not come about";
    } catch (out_of_memory const& e) {
      EXPECT_EQ(e.figures().cause, oom_cause::fragmentation) << e.what();
    }
    la.release();
    f.check_all();
  }
  {
    SCOPED_TRACE("acquire_all");
    middle_victim f;
    std::vector<acquire_item> const items{{&f.a, access_mode::read}, {&f.b, access_mode::read}};
    std::vector<lease> got = f.p.acquire_all(items);
    ASSERT_EQ(got.size(), 2U);
    EXPECT_TRUE(has_pattern(got[0].data(), kSlot, 1, 1));
    EXPECT_TRUE(has_pattern(got[1].data(), 9 * kSlot, 2, 1));
    got.clear();
    f.check_all();
  }
}

// A copy that fails (the second of three, injected) or a tier too small for all of them:
// the exception propagates, every lease already taken has ended, and no byte is lost.
TEST(PoolAcquireAll, AFailureEndsTheLeasesAlreadyTakenAndLosesNothing)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 3; ++i) {
    ts.push_back(p.allocate((i + 1) * kSlot, {.preferred_tier = tier_id{1}}));
    fill(p, ts.back(), i, 1);
  }
  std::vector<acquire_item> const items{{&ts[0], access_mode::read}, {&ts[1], access_mode::read_write},
                                        {&ts[2], access_mode::read}};
  be->set_faults({.seed = 1, .rules = {{.kind = sim_call::copy, .nth = 2}}});
  EXPECT_THROW((void)p.acquire_all(items), backend_error);
  be->clear_faults();
  EXPECT_EQ(pinned(p), 0U) << "a lease taken before the failure is still held";
  for (std::uint64_t i = 0; i < 3; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
  // Together larger than the device tier: the last one cannot be placed beside the others.
  tensor big = p.allocate(900_KiB, {.preferred_tier = tier_id{1}});
  fill(p, big, 9, 1);
  std::vector<acquire_item> const too_much{{&ts[2], access_mode::read}, {&big, access_mode::read}};
  EXPECT_THROW((void)p.acquire_all(too_much), out_of_memory);
  EXPECT_EQ(pinned(p), 0U);
  EXPECT_TRUE(check(p, big, 9, 1));
  for (std::uint64_t i = 0; i < 3; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
  // It works again once there is room.
  std::vector<lease> ok = p.acquire_all(items);
  EXPECT_EQ(ok.size(), 3U);
}

TEST(PoolAcquireAll, BadItemsAreLogicErrorsWithNothingLeased)
{
  pool p{small_tiers(make_sim(), 1_MiB, 0, 16_MiB)};
  pool other{small_tiers(make_sim(), 1_MiB, 0, 16_MiB)};
  tensor t = p.allocate(kSlot);
  tensor theirs = other.allocate(kSlot);
  fill(p, t, 1, 1);
  std::vector<acquire_item> const null_item{{&t, access_mode::read}, {nullptr, access_mode::read}};
  try {
    (void)p.acquire_all(null_item);
    ADD_FAILURE() << "a null item was accepted";
  } catch (logic_error const& e) {
    EXPECT_STREQ(e.what(), "pool::acquire_all: item 1 names no tensor (a null pointer)");
  }
  EXPECT_EQ(pinned(p), 0U);
  std::vector<acquire_item> const foreign{{&t, access_mode::read}, {&theirs, access_mode::read}};
  EXPECT_THROW((void)p.acquire_all(foreign), logic_error);
  EXPECT_EQ(pinned(p), 0U) << "the lease on t was not ended";
  EXPECT_TRUE(check(p, t, 1, 1));
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

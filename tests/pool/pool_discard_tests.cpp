// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_discard_tests.cpp — pool::discard (Note [Discarded contents], tensor_ops.cpp): a
// discarded tensor's only, dirty copy is dropped at eviction with nothing written back (the
// same eviction without discard writes it back); reading it is refused, resident or not,
// until a write_discard lease gives it new bytes, which then survive eviction like any
// others; prefetch skips it and demote drops it; misuse (a live lease, a freed or foreign
// tensor) is a logic error that changes nothing; every other tensor keeps its bytes.
// Discarding a tensor with recipes: pool_recompute_tests.cpp.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

constexpr std::size_t kBytes = 256_KiB;

// A 1 MiB device tier over a host tier; `t` written on the device only (its one valid,
// dirty copy), three others resident beside it.
struct dirty_on_device {
  std::shared_ptr<sim_backend> be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  tensor t = p.allocate(kBytes, {.preferred_tier = tier_id{0}});
  std::vector<tensor> others;

  dirty_on_device()
  {
    {
      lease l = p.acquire(t, access_mode::write_discard);
      write_pattern(l.data(), l.bytes(), 7, 1);  // sim real memory: the device copy is host memory
    }
    for (std::uint64_t i = 0; i < 3; ++i) {
      others.push_back(p.allocate(kBytes, {.preferred_tier = tier_id{0}}));
      lease l = p.acquire(others.back(), access_mode::write_discard);
      write_pattern(l.data(), l.bytes(), 100 + i, 1);
    }
  }
  // One more tensor of the tier's quarter: the least recently used one is evicted.
  std::vector<tensor> push_out()
  {
    std::vector<tensor> more;
    for (std::uint64_t i = 0; i < 1; ++i) {
      more.push_back(p.allocate(kBytes));
      lease l = p.acquire(more.back(), access_mode::write_discard);
      write_pattern(l.data(), l.bytes(), 200 + i, 1);
    }
    return more;
  }
  bool others_intact()
  {
    for (std::uint64_t i = 0; i < others.size(); ++i) {
      if (!check(p, others[i], 100 + i, 1)) { return false; }
    }
    return true;
  }
};

TEST(PoolDiscard, ADiscardedTensorIsDroppedAtEvictionWithNothingWrittenBack)
{
  for (bool const discard : {false, true}) {
    SCOPED_TRACE(discard ? "discarded" : "kept");
    dirty_on_device f;
    ASSERT_TRUE(f.p.residency(f.t).dirty);
    if (discard) { f.p.discard(f.t); }
    std::size_t const d2h_before = f.p.stats().bytes_d2h;
    std::vector<tensor> const more = f.push_out();
    pool_stats const st = f.p.stats();
    tensor_residency const r = f.p.residency(f.t);
    if (discard) {
      EXPECT_EQ(st.bytes_d2h, d2h_before) << "dead bytes were written back";
      EXPECT_EQ(st.evicted_discarded, 1U);
      EXPECT_EQ(st.evicted_discarded_bytes, kBytes);
      EXPECT_EQ(st.discards, 1U);
      EXPECT_TRUE(r.discarded);
      for (tensor_copy const& c : r.copies) { EXPECT_FALSE(c.valid) << "tier " << static_cast<std::uint32_t>(c.tier); }
    } else {
      EXPECT_EQ(st.bytes_d2h, d2h_before + kBytes);
      EXPECT_EQ(st.evicted_discarded, 0U);
      EXPECT_FALSE(r.discarded);
      EXPECT_TRUE(check(f.p, f.t, 7, 1));
    }
    EXPECT_TRUE(f.others_intact());
    for (std::uint64_t i = 0; i < more.size(); ++i) { EXPECT_TRUE(check(f.p, more[i], 200 + i, 1)); }
    EXPECT_TRUE(f.p.validate());
  }
}

TEST(PoolDiscard, ReadsAreRefusedUntilAWriteDiscardLeaseGivesNewBytes)
{
  dirty_on_device f;
  f.p.discard(f.t);
  f.p.discard(f.t);  // twice is once
  EXPECT_EQ(f.p.stats().discards, 1U);
  std::string const id = std::to_string(static_cast<std::uint64_t>(f.t.id()));
  // Still resident: refused all the same.
  EXPECT_EQ(logic_message([&] { lease l = f.p.acquire(f.t, access_mode::read); }),
            "pool::acquire: tensor " + id +
              " was discarded (pool::discard) and has no contents to read; lease it with write_discard to give it new ones");
  EXPECT_EQ(logic_message([&] { lease l = f.p.acquire_host(f.t, access_mode::read_write); }),
            "pool::acquire_host: tensor " + id +
              " was discarded (pool::discard) and has no contents to read; lease it with write_discard to give it new ones");
  f.p.demote(f.t, tier_id{1});  // drops the device copy, writes nothing
  EXPECT_EQ(f.p.stats().bytes_d2h, 0U);
  f.p.prefetch(f.t);  // nothing to bring in
  f.p.synchronize(stream_handle{});
  for (tensor_copy const& c : f.p.residency(f.t).copies) { EXPECT_FALSE(c.valid); }
  EXPECT_TRUE(f.p.validate());
  {
    lease l = f.p.acquire(f.t, access_mode::write_discard);
    write_pattern(l.data(), l.bytes(), 8, 2);
  }
  EXPECT_FALSE(f.p.residency(f.t).discarded);
  std::vector<tensor> const more = f.push_out();  // the device is full again: others[0] goes
  EXPECT_TRUE(check(f.p, f.t, 8, 2));
  EXPECT_TRUE(f.others_intact());
  EXPECT_TRUE(f.p.validate());
  // acquire_host with write_discard clears the mark as well.
  f.p.discard(f.t);
  {
    lease h = f.p.acquire_host(f.t, access_mode::write_discard);
    write_pattern(h.data(), h.bytes(), 9, 3);
  }
  EXPECT_TRUE(check(f.p, f.t, 9, 3));
  EXPECT_TRUE(f.p.validate());
}

TEST(PoolDiscard, MisuseIsALogicErrorAndChangesNothing)
{
  dirty_on_device f;
  std::string const id = std::to_string(static_cast<std::uint64_t>(f.t.id()));
  {
    lease l = f.p.acquire(f.t, access_mode::read);
    EXPECT_EQ(logic_message([&] { f.p.discard(f.t); }),
              "pool::discard: tensor " + id + " has 1 live lease(s); end them before discarding its bytes");
  }
  EXPECT_FALSE(f.p.residency(f.t).discarded);
  recompute_options ro;
  ro.fn = [](recompute_call const&) {};
  ro.cost_seconds = 1e-6;
  f.p.discard(f.t);
  EXPECT_NE(logic_message([&] { f.p.set_recompute(f.t, ro); }).find("its bytes were discarded (pool::discard)"),
            std::string::npos);
  pool other{small_tiers(make_sim(), 1_MiB, 0, 16_MiB)};
  EXPECT_THROW(other.discard(f.t), logic_error);
  tensor empty;
  EXPECT_THROW(f.p.discard(empty), logic_error);
  f.p.free(f.t);  // a discarded tensor frees as any other
  EXPECT_TRUE(f.others_intact());
  EXPECT_TRUE(f.p.validate());
}

// More threads than cores, each with three tensors on a device tier that holds about half
// of them: each round checks a tensor's bytes (when it was kept), writes it anew in the
// device tier (write_discard), and discards it or not by turns, while the others' acquires
// evict. A discarded tensor is never read
// before it is rewritten; one kept must come back with its bytes. (Under TSan in .ci/run.)
TEST(PoolDiscardThreads, ManyThreadsDiscardAndRewriteUnderEviction)
{
  unsigned const n_threads = std::max(6U, 3 * std::thread::hardware_concurrency());
  constexpr std::size_t kTensor = 32_KiB;
  constexpr int kRounds = 60;
  pool p{small_tiers(make_sim(), kTensor * (3 * n_threads / 2 + 2), 0, 64_MiB)};
  std::vector<std::vector<tensor>> mine(n_threads);
  for (unsigned i = 0; i < n_threads; ++i) {
    for (int k = 0; k < 3; ++k) { mine[i].push_back(p.allocate(kTensor)); }
  }
  std::uint64_t const evictions_before = p.stats().tiers[0].evictions;
  std::atomic<int> bad{0};
  auto const body = [&](unsigned i) {
    std::vector<std::uint32_t> version(3, 0);
    std::vector<bool> dead(3, true);  // never written: no contents to check
    for (int r = 0; r < kRounds; ++r) {
      std::size_t const k = static_cast<std::size_t>(r) % 3;
      tensor const& t = mine[i][k];
      std::uint64_t const key = i * 3 + k;
      if (!dead[k]) {  // kept last time: its bytes must be there
        lease h = p.acquire_host(t, access_mode::read);
        if (!has_pattern(h.data(), h.bytes(), key, version[k])) { ++bad; }
      }
      {
        // Written in the device tier (sim real memory: a host pointer),
        // evicting others: its only valid copy is there, dirty. The
        // stream's wait for the block is settled first.
        lease w = p.acquire(t, access_mode::write_discard);
        p.synchronize(stream_handle{});
        write_pattern(w.data(), w.bytes(), key, ++version[k]);
      }
      dead[k] = r % 2 == 0;
      if (dead[k]) { p.discard(t); }
    }
  };
  EXPECT_EQ(run_threads(n_threads, body), 0);
  EXPECT_EQ(bad.load(), 0) << "a tensor kept came back with other bytes";
  pool_stats const st = p.stats();
  EXPECT_GT(st.tiers[0].evictions, evictions_before) << "no eviction pressure";
  EXPECT_GT(st.evicted_discarded, 0U) << "no discarded tensor was evicted";
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// lirs_policy_tests.cpp — POLICY_LIRS_TEST: the conformance suite for lirs_policy (direct,
// with the paper's settings on a fixed capacity, and type-erased), a hand-worked trace
// with L_lirs = 2 and L_hirs = 1 unit tensors (the set-up of the paper's examples) that
// exercises every case (LIR hit, HIR hit in and out of S, miss on a remembered tensor,
// pruning), the derived capacity, the loop a LIRS cache handles and LRU does not, and
// the registry entry with its rejected values.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <tierpool/policies/lirs_policy.hpp>
#include <tierpool/policies/lru_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"

namespace {

using tierpool::any_eviction_policy;
using tierpool::eviction_proposal;
using tierpool::eviction_request;
using tierpool::lirs_policy;
using tierpool::tensor_view;
using status = tierpool::lirs_policy::status;

struct LirsFixture : ::testing::Test {
  static lirs_policy make() { return lirs_policy{}; }
};
struct LirsPaperFixture : ::testing::Test {
  static lirs_policy make() { return lirs_policy{{.capacity = 2048, .hir_ratio = 0.01, .ghost_ratio = 3.0, .correlation_window = 0}}; }
};
struct AnyLirsFixture : ::testing::Test {
  static any_eviction_policy make() { return tierpool::policy_registry::with_builtins().create("lirs:hir_ratio=0.25"); }
};
using lirs_fixtures = ::testing::Types<LirsFixture, LirsPaperFixture, AnyLirsFixture>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Lirs, PolicyConformance, lirs_fixtures);

namespace {

tierpool::tensor_id tid(std::uint64_t v) { return tierpool::tensor_id{v}; }

tensor_view view(std::uint64_t id, std::size_t bytes = 1, bool pinned = false)
{
  tensor_view v{};
  v.id = tid(id);
  v.bytes = bytes;
  v.pinned = pinned;
  return v;
}

std::vector<tierpool::tensor_id> ids(std::initializer_list<std::uint64_t> raw)
{
  std::vector<tierpool::tensor_id> out;
  for (auto r : raw) { out.push_back(tid(r)); }
  return out;
}

template <class P>
std::vector<tierpool::tensor_id> propose(P const& p, std::size_t need)
{
  eviction_proposal out;
  p.propose(eviction_request{tierpool::tier_id{0}, need, 0, 0}, out);
  return out.victims;
}

template <class P>
std::size_t misses(P& p, std::vector<std::uint64_t> const& seq, std::size_t capacity)
{
  std::set<std::uint64_t> resident;
  std::size_t count = 0;
  for (std::uint64_t const id : seq) {
    if (resident.count(id) != 0) {
      p.on_access(view(id));
      continue;
    }
    ++count;
    if (resident.size() == capacity) {
      auto const v = propose(p, 1);
      EXPECT_FALSE(v.empty());
      if (v.empty()) { return count; }
      p.on_erase(v.front());
      resident.erase(static_cast<std::uint64_t>(v.front()));
    }
    p.on_insert(view(id));
    resident.insert(id);
  }
  return count;
}

// Tensors A..E are 1..5. c = 3 bytes, hir_ratio 0.3: L_lirs = 2.1 (two unit tensors),
// L_hirs one; the paper's rule (correlation_window = 0).
constexpr std::uint64_t A = 1, B = 2, C = 3, D = 4;

TEST(LirsPolicy, HandWorkedTrace)
{
  lirs_policy p{{.capacity = 3, .hir_ratio = 0.3, .ghost_ratio = 1.0, .correlation_window = 0}};
  //  event              S (top first)   Q (front first)  statuses
  //  insert A, B        B A             -                A B lir
  p.on_insert(view(A));
  p.on_insert(view(B));
  EXPECT_EQ(p.status_of(tid(A)), status::lir);
  EXPECT_EQ(p.status_of(tid(B)), status::lir);
  //  insert C           C B A           C                C hir (the LIR set is full)
  p.on_insert(view(C));
  EXPECT_EQ(p.stack(), ids({C, B, A}));
  EXPECT_EQ(p.queue(), ids({C}));
  EXPECT_EQ(p.status_of(tid(C)), status::hir);
  EXPECT_EQ(propose(p, 1), ids({C}));  // victims come from Q
  //  access A (LIR)     A C B           C                A to the top; B is the bottom
  p.on_access(view(A));
  EXPECT_EQ(p.stack(), ids({A, C, B}));
  //  miss D: evict C    A C B           -                C non-resident, still in S
  ASSERT_EQ(propose(p, 1), ids({C}));
  p.on_erase(tid(C));
  EXPECT_EQ(p.status_of(tid(C)), status::non_resident);
  EXPECT_EQ(p.stack(), ids({A, C, B}));
  EXPECT_TRUE(p.queue().empty());
  //  insert D           D A C B         D                D hir
  p.on_insert(view(D));
  EXPECT_EQ(p.stack(), ids({D, A, C, B}));
  EXPECT_EQ(p.queue(), ids({D}));
  //  miss C: evict D    D A C B         -                D non-resident
  ASSERT_EQ(propose(p, 1), ids({D}));
  p.on_erase(tid(D));
  //  insert C           C D A           B                C was in S: LIR; the bottom LIR B
  //                                                      becomes HIR (end of Q), pruned
  p.on_insert(view(C));
  EXPECT_EQ(p.status_of(tid(C)), status::lir);
  EXPECT_EQ(p.status_of(tid(B)), status::hir);
  EXPECT_EQ(p.status_of(tid(D)), status::non_resident);
  EXPECT_EQ(p.stack(), ids({C, D, A}));
  EXPECT_EQ(p.queue(), ids({B}));
  EXPECT_EQ(propose(p, 1), ids({B}));
  EXPECT_EQ(propose(p, 3), ids({B, A, C}));  // Q, then LIR from the bottom of S up
  //  access B (HIR, not in S)  B C D A   B              stays HIR, to the top of S
  p.on_access(view(B));
  EXPECT_EQ(p.stack(), ids({B, C, D, A}));
  EXPECT_EQ(p.status_of(tid(B)), status::hir);
  //  access B (HIR, in S)      B C       A              B becomes LIR; the bottom LIR A
  //                                                      becomes HIR; pruning drops A and
  //                                                      the non-resident D
  p.on_access(view(B));
  EXPECT_EQ(p.status_of(tid(B)), status::lir);
  EXPECT_EQ(p.status_of(tid(A)), status::hir);
  EXPECT_EQ(p.status_of(tid(D)), std::nullopt);
  EXPECT_EQ(p.stack(), ids({B, C}));
  EXPECT_EQ(p.queue(), ids({A}));
  EXPECT_EQ(propose(p, 1), ids({A}));
  EXPECT_TRUE(p.validate());
}

TEST(LirsPolicy, ErasingAnLirTensorForgetsItAndPrunes)
{
  lirs_policy p{{.capacity = 3, .hir_ratio = 0.3, .ghost_ratio = 1.0, .correlation_window = 0}};
  p.on_insert(view(A));
  p.on_insert(view(B));
  p.on_insert(view(C));  // S: C B A, Q: C
  p.on_erase(tid(A));    // the bottom LIR tensor leaves (freed): forgotten, S pruned to B
  EXPECT_EQ(p.status_of(tid(A)), std::nullopt);
  EXPECT_EQ(p.stack(), ids({C, B}));
  p.on_erase(tid(B));  // the last LIR tensor: C (HIR) is pruned out of S, stays in Q
  EXPECT_TRUE(p.stack().empty());
  EXPECT_EQ(p.queue(), ids({C}));
  EXPECT_TRUE(p.validate());
}

TEST(LirsPolicy, DerivedCapacityKeepsAboutHirRatioAsHir)
{
  lirs_policy p{{.capacity = 0, .hir_ratio = 0.25, .ghost_ratio = 1.0, .correlation_window = 1}};
  for (std::uint64_t i = 1; i <= 8; ++i) { p.on_insert(view(i, 100)); }
  EXPECT_EQ(p.capacity_bytes(), 800U);
  // A new tensor becomes LIR while the LIR bytes stay within 75% of what is resident.
  EXPECT_EQ(p.lir_bytes(), 600U);
  EXPECT_EQ(p.queue().size(), 2U);
  EXPECT_TRUE(p.validate());
}

TEST(LirsPolicy, CorrelatedReaccessKeepsTheStatus)
{
  lirs_policy p{{.capacity = 3, .hir_ratio = 0.3, .ghost_ratio = 1.0, .correlation_window = 1}};
  p.on_insert(view(A));
  p.on_insert(view(B));
  p.on_insert(view(C));  // HIR, in S
  p.on_access(view(C));  // the next event: the same reference
  EXPECT_EQ(p.status_of(tid(C)), status::hir);
  p.on_access(view(A));
  p.on_access(view(C));  // a real reuse while in S: LIR
  EXPECT_EQ(p.status_of(tid(C)), status::lir);
}

TEST(LirsPolicy, PinnedTensorsAreSkipped)
{
  lirs_policy p{{.capacity = 3, .hir_ratio = 0.3, .ghost_ratio = 1.0, .correlation_window = 0}};
  p.on_insert(view(A));
  p.on_insert(view(B));
  p.on_insert(view(C));
  p.on_pin(tid(C));
  EXPECT_EQ(propose(p, 1), ids({A}));  // Q holds only a pinned tensor: bottom LIR next
  EXPECT_EQ(propose(p, 10), ids({A, B}));
  p.on_unpin(tid(C));
  EXPECT_EQ(propose(p, 10), ids({C, A, B}));
}

TEST(LirsPolicy, ALoopLargerThanTheCacheStillHits)
{
  // A loop over 10 tensors with room for 6: LRU misses every access; LIRS keeps an LIR set
  // that the loop's HIR tensors pass through.
  std::vector<std::uint64_t> seq;
  for (int round = 0; round < 30; ++round) {
    for (std::uint64_t i = 1; i <= 10; ++i) { seq.push_back(i); }
  }
  lirs_policy lirs{{.capacity = 6, .hir_ratio = 0.01, .ghost_ratio = 1.0, .correlation_window = 0}};
  tierpool::lru_policy lru;
  std::size_t const lirs_misses = misses(lirs, seq, 6);
  std::size_t const lru_misses = misses(lru, seq, 6);
  EXPECT_EQ(lru_misses, 300U);
  EXPECT_LT(lirs_misses, 200U) << lirs_misses;
  EXPECT_TRUE(lirs.validate());
}

TEST(LirsPolicy, Registry)
{
  auto const r = tierpool::policy_registry::with_builtins();
  ASSERT_TRUE(r.contains("lirs"));
  auto const& info = r.info("lirs");
  ASSERT_EQ(info.parameters.size(), 4U);
  EXPECT_EQ(info.parameters[1].name, "hir_ratio");
  EXPECT_EQ(info.parameters[1].default_value, "0.01");
  auto p = r.create("lirs:capacity=1GiB,hir_ratio=0.05,ghost_ratio=2,correlation_window=0");
  lirs_policy const* const lp = p.target<lirs_policy>();
  ASSERT_NE(lp, nullptr);
  lirs_policy::config const cfg = lp->get_config();
  EXPECT_EQ(cfg.capacity, std::uint64_t{1} << 30U);
  EXPECT_DOUBLE_EQ(cfg.hir_ratio, 0.05);
  EXPECT_DOUBLE_EQ(cfg.ghost_ratio, 2.0);
  EXPECT_EQ(cfg.correlation_window, 0U);
  auto const d = r.create("lirs");
  ASSERT_NE(d.target<lirs_policy>(), nullptr);
  EXPECT_DOUBLE_EQ(d.target<lirs_policy>()->get_config().hir_ratio, 0.01);
  for (char const* bad : {"lirs:hir_ratio=1", "lirs:hir_ratio=-0.1", "lirs:hir_ratio=nan", "lirs:ghost_ratio=-1"}) {
    SCOPED_TRACE(bad);
    try {
      (void)r.create(bad);
      ADD_FAILURE() << "accepted";
    } catch (tierpool::logic_error const& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("lirs: "));
    }
  }
}

}  // namespace

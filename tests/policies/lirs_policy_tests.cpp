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
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <tierpool/policies/lirs_policy.hpp>
#include <tierpool/policies/lru_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"
#include "policy_test_util.hpp"

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

using namespace policy_test;  // NOLINT(google-build-using-namespace): shared test helpers

// Tensors A..E are 1..5. c = 3 bytes, hir_ratio 0.3: L_lirs = 2.1 (two unit tensors),
// L_hirs one; the paper's rule (correlation_window = 0).
constexpr std::uint64_t A = 1, B = 2, C = 3, D = 4;

TEST(LirsPolicy, HandWorkedTrace)
{
  lirs_policy p{{.capacity = 3, .hir_ratio = 0.3, .ghost_ratio = 1.0, .correlation_window = 0}};
  //  event              S (top first)   Q (front first)  statuses
  //  insert A, B        B A             -                A B lir
  p.on_insert(view(A, 1));
  p.on_insert(view(B, 1));
  EXPECT_EQ(p.status_of(tid(A)), status::lir);
  EXPECT_EQ(p.status_of(tid(B)), status::lir);
  //  insert C           C B A           C                C hir (the LIR set is full)
  p.on_insert(view(C, 1));
  EXPECT_EQ(p.stack(), ids({C, B, A}));
  EXPECT_EQ(p.queue(), ids({C}));
  EXPECT_EQ(p.status_of(tid(C)), status::hir);
  EXPECT_EQ(propose(p, 1), ids({C}));  // victims come from Q
  //  access A (LIR)     A C B           C                A to the top; B is the bottom
  p.on_access(view(A, 1));
  EXPECT_EQ(p.stack(), ids({A, C, B}));
  //  miss D: evict C    A C B           -                C non-resident, still in S
  ASSERT_EQ(propose(p, 1), ids({C}));
  p.on_erase(tid(C));
  EXPECT_EQ(p.status_of(tid(C)), status::non_resident);
  EXPECT_EQ(p.stack(), ids({A, C, B}));
  EXPECT_TRUE(p.queue().empty());
  //  insert D           D A C B         D                D hir
  p.on_insert(view(D, 1));
  EXPECT_EQ(p.stack(), ids({D, A, C, B}));
  EXPECT_EQ(p.queue(), ids({D}));
  //  miss C: evict D    D A C B         -                D non-resident
  ASSERT_EQ(propose(p, 1), ids({D}));
  p.on_erase(tid(D));
  //  insert C           C D A           B                C was in S: LIR; the bottom LIR B
  //                                                      becomes HIR (end of Q), pruned
  p.on_insert(view(C, 1));
  EXPECT_EQ(p.status_of(tid(C)), status::lir);
  EXPECT_EQ(p.status_of(tid(B)), status::hir);
  EXPECT_EQ(p.status_of(tid(D)), status::non_resident);
  EXPECT_EQ(p.stack(), ids({C, D, A}));
  EXPECT_EQ(p.queue(), ids({B}));
  EXPECT_EQ(propose(p, 1), ids({B}));
  EXPECT_EQ(propose(p, 3), ids({B, A, C}));  // Q, then LIR from the bottom of S up
  //  access B (HIR, not in S)  B C D A   B              stays HIR, to the top of S
  p.on_access(view(B, 1));
  EXPECT_EQ(p.stack(), ids({B, C, D, A}));
  EXPECT_EQ(p.status_of(tid(B)), status::hir);
  //  access B (HIR, in S)      B C       A              B becomes LIR; the bottom LIR A
  //                                                      becomes HIR; pruning drops A and
  //                                                      the non-resident D
  p.on_access(view(B, 1));
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
  p.on_insert(view(A, 1));
  p.on_insert(view(B, 1));
  p.on_insert(view(C, 1));  // S: C B A, Q: C
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
  p.on_insert(view(A, 1));
  p.on_insert(view(B, 1));
  p.on_insert(view(C, 1));  // HIR, in S
  p.on_access(view(C, 1));  // the next event: the same reference
  EXPECT_EQ(p.status_of(tid(C)), status::hir);
  p.on_access(view(A, 1));
  p.on_access(view(C, 1));  // a real reuse while in S: LIR
  EXPECT_EQ(p.status_of(tid(C)), status::lir);
}

TEST(LirsPolicy, PinnedTensorsAreSkipped)
{
  lirs_policy p{{.capacity = 3, .hir_ratio = 0.3, .ghost_ratio = 1.0, .correlation_window = 0}};
  p.on_insert(view(A, 1));
  p.on_insert(view(B, 1));
  p.on_insert(view(C, 1));
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

namespace {

// The example of the LIRS paper (Jiang & Zhang, SIGMETRICS 2002, §3: the table of blocks
// A..E over virtual times 1..9 with each block's recency R and IRR, L_lirs = 2, L_hirs = 1).
// At time 10 the table gives R / IRR = A 1/1, B 3/1, C 4/inf, D 2/3, E 0/inf; the order of
// references below, D A B C B A D A E, is the one that yields exactly those values (the
// table itself could not be consulted while writing this). The paper's reading of it: the
// LIR set is {A, B} (the two smallest IRRs), C, D and E are HIR and only E is resident;
// if D is referenced at time 10, E is the victim and D, whose new IRR (2) is below B's
// recency (3, the largest of the LIR blocks), becomes LIR while B becomes a resident HIR
// block; if C is referenced instead, E is the victim and C (new IRR 4 > 3) stays HIR.
// Driven with unit tensors, c = 3, hir_ratio 0.3 (L_lirs = 2.1: two LIR tensors) and the
// paper's rule for every re-reference (correlation_window = 0).
constexpr std::uint64_t E = 5;

TEST(LirsPolicy, ThePapersExample)
{
  lirs_policy p{{.capacity = 3, .hir_ratio = 0.3, .ghost_ratio = 1.0, .correlation_window = 0}};
  unit_cache<lirs_policy> cache(p, 3);
  std::vector<std::optional<std::uint64_t>> victims;
  for (std::uint64_t id : {D, A, B, C, B, A, D, A, E}) { victims.push_back(cache.request(id)); }
  // Victims on the way: B at time 4 (C's miss), C at 5 (B's), D at 9 (E's).
  EXPECT_EQ(victims, (std::vector<std::optional<std::uint64_t>>{std::nullopt, std::nullopt, std::nullopt, B, C,
                                                                 std::nullopt, std::nullopt, std::nullopt, D}));
  // Time 10: S in recency order E (R 0), A (1), D (2), B (3); C (R 4) was pruned below B.
  EXPECT_EQ(p.stack(), ids({E, A, D, B}));
  EXPECT_EQ(p.status_of(tid(A)), status::lir);
  EXPECT_EQ(p.status_of(tid(B)), status::lir);
  EXPECT_EQ(p.status_of(tid(E)), status::hir);
  EXPECT_EQ(p.status_of(tid(D)), status::non_resident);
  EXPECT_EQ(p.status_of(tid(C)), std::nullopt);
  EXPECT_EQ(p.queue(), ids({E}));
  EXPECT_EQ(propose(p, 1), ids({E}));

  // D at time 10: E is evicted, D becomes LIR, B a resident HIR block.
  lirs_policy with_d = p;
  ASSERT_EQ(propose(with_d, 1), ids({E}));
  with_d.on_erase(tid(E));
  with_d.on_insert(view(D, 1));
  EXPECT_EQ(with_d.status_of(tid(D)), status::lir);
  EXPECT_EQ(with_d.status_of(tid(B)), status::hir);
  EXPECT_EQ(with_d.status_of(tid(A)), status::lir);
  EXPECT_EQ(with_d.status_of(tid(E)), status::non_resident);
  EXPECT_EQ(with_d.stack(), ids({D, E, A}));  // B left the bottom: pruned
  EXPECT_EQ(with_d.queue(), ids({B}));
  EXPECT_TRUE(with_d.validate());

  lirs_policy with_c = p;  // C at time 10 instead: E is evicted, C stays HIR
  ASSERT_EQ(propose(with_c, 1), ids({E}));
  with_c.on_erase(tid(E));
  with_c.on_insert(view(C, 1));
  EXPECT_EQ(with_c.status_of(tid(C)), status::hir);
  EXPECT_EQ(with_c.status_of(tid(A)), status::lir);
  EXPECT_EQ(with_c.status_of(tid(B)), status::lir);
  EXPECT_EQ(with_c.stack(), ids({C, E, A, D, B}));
  EXPECT_EQ(with_c.queue(), ids({C}));
  EXPECT_TRUE(with_c.validate());
  EXPECT_TRUE(p.validate());
}

}  // namespace

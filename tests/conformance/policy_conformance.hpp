// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file policy_conformance.hpp
 * @brief The eviction policy conformance suite: one typed test suite that every
 *        tierpool::eviction_policy passes (each built-in, and any_eviction_policy around it).
 *
 * A fixture type F (a ::testing::Test) provides a factory for a fresh policy:
 * @code
 * struct LruFixture : ::testing::Test {
 *   static tierpool::lru_policy make() { return tierpool::lru_policy{{}}; }
 * };
 * INSTANTIATE_TYPED_TEST_SUITE_P(Lru, PolicyConformance, ::testing::Types<LruFixture>);
 * @endcode
 *
 * The suite drives the policy through a `policy_driver`, which keeps a model of the tier
 * (id -> bytes, pinned) and checks every proposal against the contract of
 * tierpool::eviction_policy: no pinned or unknown victim, no duplicate, `bytes` is the sum
 * of the victims' bytes, the request is covered when the evictable bytes allow it, every
 * evictable tensor is proposed when they do not, nothing is proposed for 0 bytes. When
 * the policy has `validate()`, it is called after every event. Requests carry the tick of
 * the last event, so the same state and request must give the same answer. Nothing here depends on a
 * particular order of victims: that is each policy's own tests' business.
 *
 * A policy that needs next-use forecasts (`belady`) gets them when its fixture says so:
 * @code
 * struct BeladyFixture : ::testing::Test {
 *   static constexpr bool gives_forecasts = true;   // every view carries tensor_view::next_use
 *   static tierpool::belady_policy make() { return tierpool::belady_policy{}; }
 * };
 * @endcode
 * The forecasts are deterministic pseudo-random ticks after the event (policy_driver::forecast).
 */
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool::conformance {

/// Drives a policy with events and checks each proposal against a model of the tier.
template <class P>
class policy_driver {
 public:
  /// @param policy The policy under test.
  /// @param forecasts Give every view a next-use forecast (see forecast()).
  explicit policy_driver(P policy, bool forecasts = false) : policy_(std::move(policy)), forecasts_(forecasts) {}

  /// The forecast a view of tensor `id` at its `accesses`-th event at tick `now` carries:
  /// a deterministic tick after `now`, or no_next_use for every seventh (id, accesses).
  static tick forecast(std::uint64_t id, std::uint32_t accesses, tick now)
  {
    std::uint64_t const h = (id * 0x9E3779B97F4A7C15ULL) ^ (std::uint64_t{accesses} * 0xC2B2AE3D27D4EB4FULL);
    if (h % 7 == 0) { return no_next_use; }
    return now + 1 + (h >> 32) % 1000;
  }

  void insert(std::uint64_t id, std::size_t bytes, bool pinned = false)
  {
    ++now_;
    model_[id] = state{bytes, pinned, 1};
    policy_.on_insert(view(id));
    check_valid();
  }
  void access(std::uint64_t id, bool write = false)
  {
    ++now_;
    auto it = model_.find(id);
    tensor_view v{};
    if (it != model_.end()) {
      ++it->second.accesses;
      v = view(id);
    } else {
      v.id = tensor_id{id};
      v.last_access = now_;
      if (forecasts_) { v.next_use = forecast(id, 1, now_); }
    }
    v.write_access = write;
    policy_.on_access(v);
    check_valid();
  }
  void erase(std::uint64_t id)
  {
    model_.erase(id);
    policy_.on_erase(tensor_id{id});
    check_valid();
  }
  void pin(std::uint64_t id)
  {
    if (auto it = model_.find(id); it != model_.end()) { it->second.pinned = true; }
    policy_.on_pin(tensor_id{id});
    check_valid();
  }
  void unpin(std::uint64_t id)
  {
    if (auto it = model_.find(id); it != model_.end()) { it->second.pinned = false; }
    policy_.on_unpin(tensor_id{id});
    check_valid();
  }

  /// Ask for `need` bytes; check the answer; return the victims.
  std::vector<tensor_id> propose(std::size_t need)
  {
    eviction_request const req{tier_id{0}, need, 0, now_};
    out_.clear();
    policy_.propose(req, out_);
    check(req);
    check_valid();
    return out_.victims;
  }

  /// Sum of the unpinned tensors' bytes in the model, saturating.
  [[nodiscard]] std::size_t evictable_bytes() const
  {
    std::size_t sum = 0;
    for (auto const& [id, s] : model_) {
      if (!s.pinned) { sum = add_sat(sum, s.bytes); }
    }
    return sum;
  }
  [[nodiscard]] P& policy() { return policy_; }
  [[nodiscard]] eviction_proposal const& last() const { return out_; }

 private:
  struct state {
    std::size_t bytes;
    bool pinned;
    std::uint32_t accesses;
  };

  static std::size_t add_sat(std::size_t a, std::size_t b)
  {
    return b > std::numeric_limits<std::size_t>::max() - a ? std::numeric_limits<std::size_t>::max() : a + b;
  }

  tensor_view view(std::uint64_t id) const
  {
    state const& s = model_.at(id);
    tensor_view v{};
    v.id = tensor_id{id};
    v.tier = tier_id{0};
    v.bytes = s.bytes;
    v.last_access = now_;
    v.access_count = s.accesses;
    v.pinned = s.pinned;
    if (forecasts_) { v.next_use = forecast(id, s.accesses, now_); }
    return v;
  }

  void check_valid()
  {
    if constexpr (requires(P const& p) { { p.validate() } -> std::convertible_to<bool>; }) {
      EXPECT_TRUE(policy_.validate()) << "validate() failed after an event";
    }
  }

  void check(eviction_request const& req)
  {
    std::set<std::uint64_t> seen;
    std::size_t sum = 0;
    for (tensor_id const id : out_.victims) {
      auto const raw = static_cast<std::uint64_t>(id);
      auto const it = model_.find(raw);
      ASSERT_NE(it, model_.end()) << "proposed tensor " << raw << ", which is not resident";
      EXPECT_FALSE(it->second.pinned) << "proposed pinned tensor " << raw;
      EXPECT_TRUE(seen.insert(raw).second) << "proposed tensor " << raw << " twice";
      sum = add_sat(sum, it->second.bytes);
    }
    EXPECT_EQ(out_.bytes, sum) << "eviction_proposal::bytes is not the sum of the victims' bytes";
    if (req.bytes_needed == 0) {
      EXPECT_TRUE(out_.empty()) << "proposed victims for a request of 0 bytes";
      return;
    }
    std::size_t const evictable = evictable_bytes();
    if (evictable >= req.bytes_needed) {
      EXPECT_GE(out_.bytes, req.bytes_needed) << "the proposal does not cover a coverable request";
    } else {
      std::size_t unpinned = 0;
      for (auto const& [raw, s] : model_) {
        if (!s.pinned) {
          ++unpinned;
          EXPECT_TRUE(seen.count(raw) == 1) << "request cannot be covered, yet evictable tensor " << raw
                                            << " was not proposed";
        }
      }
      EXPECT_EQ(seen.size(), unpinned);
    }
  }

  P policy_;
  std::map<std::uint64_t, state> model_;  // ordered: deterministic iteration
  eviction_proposal out_;
  tick now_{0};
  bool forecasts_{false};
};

}  // namespace tierpool::conformance

/// The suite (global namespace, for INSTANTIATE_TYPED_TEST_SUITE_P); TypeParam is the
/// fixture, which provides `static P make()`.
template <class Fixture>
struct PolicyConformance : Fixture {
  static auto driver()
  {
    using P = decltype(Fixture::make());
    if constexpr (requires { Fixture::gives_forecasts; }) {
      return tierpool::conformance::policy_driver<P>(Fixture::make(), Fixture::gives_forecasts);
    } else {
      return tierpool::conformance::policy_driver<P>(Fixture::make());
    }
  }
};

TYPED_TEST_SUITE_P(PolicyConformance);

using tierpool::tensor_id;

TYPED_TEST_P(PolicyConformance, SatisfiesConcept)
{
  using P = decltype(TypeParam::make());
  static_assert(tierpool::eviction_policy<P>);
  auto d = this->driver();
  EXPECT_FALSE(d.policy().name().empty());
}

TYPED_TEST_P(PolicyConformance, EmptyTierProposesNothing)
{
  auto d = this->driver();
  EXPECT_TRUE(d.propose(1).empty());
  EXPECT_TRUE(d.propose(std::numeric_limits<std::size_t>::max()).empty());
  EXPECT_TRUE(d.propose(0).empty());
}

TYPED_TEST_P(PolicyConformance, ZeroBytesNeededProposesNothing)
{
  auto d = this->driver();
  for (std::uint64_t id = 1; id <= 4; ++id) { d.insert(id, 100); }
  EXPECT_TRUE(d.propose(0).empty());
}

TYPED_TEST_P(PolicyConformance, NeverProposesPinned)
{
  auto d = this->driver();
  for (std::uint64_t id = 1; id <= 10; ++id) { d.insert(id, 64); }
  d.pin(1);  // the coldest
  d.pin(2);
  d.pin(7);
  d.access(7);
  d.insert(11, 64, /*pinned=*/true);  // inserted pinned
  for (std::size_t need : {std::size_t{1}, std::size_t{64}, std::size_t{300}, std::size_t{10'000}}) {
    auto const v = d.propose(need);
    for (auto id : {1U, 2U, 7U, 11U}) {
      EXPECT_EQ(std::count(v.begin(), v.end(), tensor_id{id}), 0) << "pinned " << id;
    }
  }
  d.unpin(1);
  auto const all = d.propose(10'000);
  EXPECT_EQ(std::count(all.begin(), all.end(), tensor_id{1}), 1) << "an unpinned tensor is evictable again";
}

TYPED_TEST_P(PolicyConformance, AllPinnedProposesNothing)
{
  auto d = this->driver();
  for (std::uint64_t id = 1; id <= 5; ++id) { d.insert(id, 10, id % 2 == 0); }
  for (std::uint64_t id = 1; id <= 5; id += 2) { d.pin(id); }
  EXPECT_TRUE(d.propose(1).empty());
  EXPECT_TRUE(d.propose(1000).empty());
}

TYPED_TEST_P(PolicyConformance, PinAndUnpinAreIdempotent)
{
  auto d = this->driver();
  d.insert(1, 10);
  d.insert(2, 10);
  d.pin(1);
  d.pin(1);
  EXPECT_EQ(d.propose(100), std::vector<tensor_id>{tensor_id{2}});
  d.unpin(1);
  d.unpin(1);
  d.unpin(2);  // not pinned: no-op
  EXPECT_EQ(d.propose(100).size(), 2U);
}

TYPED_TEST_P(PolicyConformance, ProposesEnoughBytes)
{
  auto d = this->driver();
  std::size_t const sizes[] = {1, 4096, 100, 1 << 20, 7, 64, 3 << 10, 512};
  std::uint64_t id = 1;
  for (std::size_t s : sizes) { d.insert(id++, s); }
  d.access(3);
  d.access(5, /*write=*/true);
  std::size_t const total = d.evictable_bytes();
  for (std::size_t need : {std::size_t{1}, std::size_t{8}, std::size_t{4096}, std::size_t{5000}, total - 1, total}) {
    (void)d.propose(need);  // the driver checks coverage
    EXPECT_GE(d.last().bytes, need);
  }
}

TYPED_TEST_P(PolicyConformance, ProposesAllEvictableWhenShort)
{
  auto d = this->driver();
  for (std::uint64_t id = 1; id <= 6; ++id) { d.insert(id, 100); }
  d.pin(4);
  auto const v = d.propose(10'000);  // more than the tier holds
  EXPECT_EQ(v.size(), 5U);
  EXPECT_EQ(d.last().bytes, 500U);
}

TYPED_TEST_P(PolicyConformance, TensorLargerThanTier)
{
  auto d = this->driver();
  constexpr std::size_t huge = std::numeric_limits<std::size_t>::max() - 10;
  d.insert(1, 100);
  d.insert(2, huge);  // larger than any tier
  d.insert(3, 100);
  d.insert(4, huge);  // the sum overflows size_t
  (void)d.propose(std::numeric_limits<std::size_t>::max());
  EXPECT_EQ(d.last().bytes, std::numeric_limits<std::size_t>::max()) << "bytes saturate";
  auto const some = d.propose(1000);
  EXPECT_GE(d.last().bytes, 1000U);
  EXPECT_FALSE(some.empty());
  d.erase(2);
  d.erase(4);
  EXPECT_EQ(d.propose(std::numeric_limits<std::size_t>::max()).size(), 2U);
  EXPECT_EQ(d.last().bytes, 200U);
}

TYPED_TEST_P(PolicyConformance, EraseUnknownIsNoop)
{
  auto a = this->driver();
  auto b = this->driver();
  for (auto* d : {&a, &b}) {
    for (std::uint64_t id = 1; id <= 5; ++id) { d->insert(id, 10 * id); }
    d->access(2);
  }
  a.erase(99);       // never inserted
  a.erase(3);
  b.erase(3);
  a.erase(3);        // erased twice
  a.pin(98);         // the other hooks ignore unknown ids too
  a.unpin(98);
  a.access(97);
  EXPECT_EQ(a.propose(25), b.propose(25));
  EXPECT_EQ(a.propose(1000), b.propose(1000));
}

TYPED_TEST_P(PolicyConformance, EraseRemovesFromProposals)
{
  auto d = this->driver();
  for (std::uint64_t id = 1; id <= 4; ++id) { d.insert(id, 10); }
  d.erase(1);
  d.erase(3);
  auto const v = d.propose(1000);
  EXPECT_EQ(v.size(), 2U);
  EXPECT_EQ(std::count(v.begin(), v.end(), tensor_id{1}), 0);
  EXPECT_EQ(std::count(v.begin(), v.end(), tensor_id{3}), 0);
  d.erase(2);
  d.erase(4);
  EXPECT_TRUE(d.propose(1).empty());
}

TYPED_TEST_P(PolicyConformance, ReinsertAfterErase)
{
  auto d = this->driver();
  d.insert(1, 10);
  d.insert(2, 10);
  d.pin(1);
  d.erase(1);
  d.insert(1, 30);  // same id, new size, not pinned any more
  auto const v = d.propose(1000);
  EXPECT_EQ(v.size(), 2U);
  EXPECT_EQ(std::count(v.begin(), v.end(), tensor_id{1}), 1);
  EXPECT_EQ(d.last().bytes, 40U);
}

TYPED_TEST_P(PolicyConformance, ProposeChangesNoState)
{
  auto d = this->driver();
  for (std::uint64_t id = 1; id <= 8; ++id) { d.insert(id, 16 * id); }
  d.access(1);
  auto const first = d.propose(100);
  EXPECT_EQ(d.propose(100), first);
  EXPECT_EQ(d.propose(100), first);
}

TYPED_TEST_P(PolicyConformance, DeterministicUnderReplay)
{
  // One pseudo-random event sequence (engine output only: distributions differ between
  // standard libraries), applied to two fresh policies; every proposal must agree.
  auto run = [](auto& d, std::vector<std::vector<tensor_id>>& log) {
    std::mt19937_64 rng(20260101);
    std::vector<std::uint64_t> live;
    std::uint64_t next_id = 1;
    for (int step = 0; step < 3000; ++step) {
      std::uint64_t const r = rng();
      std::uint64_t const pick = live.empty() ? 0 : live[static_cast<std::size_t>((r >> 8) % live.size())];
      switch (r % 8) {
        case 0:
        case 1:
          live.push_back(next_id);
          d.insert(next_id++, static_cast<std::size_t>(1 + (r >> 20) % 4096), (r >> 40) % 16 == 0);
          break;
        case 2:
        case 3:
          if (pick != 0) { d.access(pick, (r >> 50) % 2 == 0); }
          break;
        case 4:
          if (pick != 0) {
            d.erase(pick);
            live.erase(std::find(live.begin(), live.end(), pick));
          }
          break;
        case 5:
          if (pick != 0) { d.pin(pick); }
          break;
        case 6:
          if (pick != 0) { d.unpin(pick); }
          break;
        default:
          log.push_back(d.propose(static_cast<std::size_t>((r >> 16) % 20'000)));
          break;
      }
    }
  };
  auto a = this->driver();
  auto b = this->driver();
  std::vector<std::vector<tensor_id>> la;
  std::vector<std::vector<tensor_id>> lb;
  run(a, la);
  run(b, lb);
  ASSERT_FALSE(la.empty());
  EXPECT_EQ(la, lb);
}

REGISTER_TYPED_TEST_SUITE_P(PolicyConformance, SatisfiesConcept, EmptyTierProposesNothing,
                            ZeroBytesNeededProposesNothing, NeverProposesPinned, AllPinnedProposesNothing,
                            PinAndUnpinAreIdempotent, ProposesEnoughBytes, ProposesAllEvictableWhenShort,
                            TensorLargerThanTier, EraseUnknownIsNoop, EraseRemovesFromProposals,
                            ReinsertAfterErase, ProposeChangesNoState, DeterministicUnderReplay);

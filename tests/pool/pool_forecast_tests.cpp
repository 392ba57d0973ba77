// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_forecast_tests.cpp — forecasts (pool::set_next_use) reach the policy; a policy that
// refuses to decide (it lacks information, e.g. Belady without a forecast) surfaces as its
// typed error, and the pool stays consistent.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/policy.hpp>
#include <tierpool/pool.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tierpool::test {
namespace {

struct spy_log {
  std::vector<std::pair<std::uint64_t, std::optional<tick>>> seen;  // (id, next_use) per insert/access
  bool refuse{false};
};

/// Least recently inserted/accessed first; logs forecasts; may refuse to propose.
class spy_policy {
 public:
  explicit spy_policy(std::shared_ptr<spy_log> log) : log_(std::move(log)) {}
  void on_insert(tensor_view const& v) noexcept { touch(v); }
  void on_access(tensor_view const& v) noexcept { touch(v); }
  void on_erase(tensor_id id) noexcept { std::erase_if(order_, [&](auto const& e) { return e.first == id; }); }
  void on_pin(tensor_id) noexcept {}
  void on_unpin(tensor_id) noexcept {}
  void propose(eviction_request const& req, eviction_proposal& out)
  {
    if (log_->refuse) { throw logic_error("spy: no forecast for this tensor"); }
    for (auto const& [id, bytes] : order_) {
      if (out.covers(req)) { break; }
      out.add(id, bytes);
    }
  }
  [[nodiscard]] std::string_view name() const noexcept { return "spy"; }

 private:
  void touch(tensor_view const& v) noexcept
  {
    try {
      log_->seen.emplace_back(static_cast<std::uint64_t>(v.id), v.next_use);
    } catch (...) {
    }
    on_erase(v.id);
    try {
      order_.emplace_back(v.id, v.bytes);
    } catch (...) {
    }
  }
  std::shared_ptr<spy_log> log_;
  std::vector<std::pair<tensor_id, std::size_t>> order_;
};

/// A pool whose 1 MiB device tier (16 MiB of host below) runs `policy`, registered in `reg`
/// as `name`, holding `n` tensors of 256 KiB filled with fill(p, t, i, 1).
template <class Policy>
pool pool_with_policy(policy_registry& reg, std::string const& name, Policy policy, std::size_t n, std::vector<tensor>& ts)
{
  reg.add(name, "test policy", {}, [policy](policy_params const&) { return any_eviction_policy{policy}; });
  pool_options o = small_tiers(make_sim(), 1_MiB, 0, 16_MiB);
  o.registry = &reg;
  o.tiers[0].policy = name;
  pool p{o};
  for (std::uint64_t i = 0; i < n; ++i) {
    ts.push_back(p.allocate(256_KiB));
    fill(p, ts.back(), i, 1);
  }
  return p;
}

TEST(PoolForecast, SetNextUseReachesThePolicyAndARefusalIsATypedError)
{
  auto log = std::make_shared<spy_log>();
  policy_registry reg = policy_registry::with_builtins();
  std::vector<tensor> ts;
  pool p = pool_with_policy(reg, "spy", spy_policy{log}, 4, ts);
  stream_handle s = p.create_stream();
  p.set_next_use(ts[0], tick{42});
  { lease l = p.acquire(ts[0], access_mode::read, s); }
  { lease l = p.acquire(ts[1], access_mode::read, s); }
  p.set_next_use(ts[0], no_next_use);
  { lease l = p.acquire(ts[0], access_mode::read, s); }  // a hit: reported through the access buffer
  { lease l = p.acquire(ts[1], access_mode::read, s); }  // (back-to-back hits of one tensor merge)
  p.set_next_use(ts[0], std::nullopt);
  { lease l = p.acquire(ts[0], access_mode::read, s); }
  for (std::uint64_t i = 1; i < 4; ++i) {  // fill the 1 MiB device tier
    lease l = p.acquire(ts[i], access_mode::read, s);
  }
  tensor extra = p.allocate(256_KiB);
  fill(p, extra, 9, 1);
  log->refuse = true;
  try {
    lease l = p.acquire(extra, access_mode::read, s);
    FAIL() << "expected the policy's refusal";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("spy: no forecast"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(p.validate());
  log->refuse = false;
  {
    lease l = p.acquire(extra, access_mode::read, s);  // now it evicts and succeeds
  }
  p.synchronize(s);
  EXPECT_TRUE(p.validate());
  for (std::uint64_t i = 0; i < 4; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_TRUE(check(p, extra, 9, 1));
  // The forecasts, in order, for tensor 0 (the spy sees hits once the pool drains them).
  std::vector<std::optional<tick>> t0;
  for (auto const& [id, nu] : log->seen) {
    if (id == static_cast<std::uint64_t>(ts[0].id())) { t0.push_back(nu); }
  }
  // (allocate placed it on the device before any forecast: the first views carry none)
  auto const first = std::find(t0.begin(), t0.end(), std::optional<tick>{42});
  ASSERT_NE(first, t0.end());
  ASSERT_GE(t0.end() - first, 3);
  EXPECT_EQ(first[1], std::optional<tick>{no_next_use});
  EXPECT_EQ(first[2], std::nullopt);
  tensor empty;
  EXPECT_THROW(p.set_next_use(empty, tick{1}), logic_error);
}

/// Logs what each insert and access tells the policy: (id, insert or not, tensor_view::prefetch).
struct told {
  std::uint64_t id{0};
  bool insert{false};
  bool prefetch{false};
  friend bool operator==(told const&, told const&) = default;
};

/// Least recently inserted/accessed first, like spy_policy; logs every insert and access.
class told_policy {
 public:
  explicit told_policy(std::shared_ptr<std::vector<told>> log) : log_(std::move(log)) {}
  void on_insert(tensor_view const& v) noexcept { touch(v, true); }
  void on_access(tensor_view const& v) noexcept { touch(v, false); }
  void on_erase(tensor_id id) noexcept { std::erase_if(order_, [&](auto const& e) { return e.first == id; }); }
  void on_pin(tensor_id) noexcept {}
  void on_unpin(tensor_id) noexcept {}
  void propose(eviction_request const& req, eviction_proposal& out) const
  {
    for (auto const& [id, bytes] : order_) {
      if (out.covers(req)) { break; }
      out.add(id, bytes);
    }
  }
  [[nodiscard]] std::string_view name() const noexcept { return "told"; }

 private:
  void touch(tensor_view const& v, bool insert) noexcept
  {
    try {
      log_->push_back({static_cast<std::uint64_t>(v.id), insert, v.prefetch});
      on_erase(v.id);
      order_.emplace_back(v.id, v.bytes);
    } catch (...) {
    }
  }
  std::shared_ptr<std::vector<told>> log_;
  std::vector<std::pair<tensor_id, std::size_t>> order_;
};

TEST(PoolForecast, APrefetchTellsThePolicyItsCopyInIsNotAUse)
{
  auto log = std::make_shared<std::vector<told>>();
  policy_registry reg = policy_registry::with_builtins();
  std::vector<tensor> ts;
  pool p = pool_with_policy(reg, "told", told_policy{log}, 5, ts);  // 5 x 256 KiB in 1 MiB: the first two go down
  stream_handle s = p.create_stream();
  for (std::uint64_t i = 2; i < 5; ++i) { lease l = p.acquire(ts[i], access_mode::read, s); }
  p.synchronize(s);
  ASSERT_NE(p.residency(ts[0]).home, tier_id{0});
  ASSERT_NE(p.residency(ts[1]).home, tier_id{0});
  auto const id0 = static_cast<std::uint64_t>(ts[0].id());
  auto const id1 = static_cast<std::uint64_t>(ts[1].id());
  log->clear();
  p.prefetch(ts[0]);  // a prefetch: the insert says so
  p.synchronize(s);
  ASSERT_EQ(p.residency(ts[0]).home, tier_id{0});
  EXPECT_TRUE(p.residency(ts[0]).prefetched);
  { lease l = p.acquire(ts[0], access_mode::read, s); }  // its use: an access
  { lease l = p.acquire(ts[1], access_mode::read, s); }  // a demand miss: an insert that is a use
  p.synchronize(s);
  { lease l = p.acquire(ts[2], access_mode::read, s); }  // drains the access buffer into the policy
  std::vector<told> of0;
  std::vector<told> of1;
  for (told const& t : *log) {
    if (t.id == id0) { of0.push_back(t); }
    if (t.id == id1) { of1.push_back(t); }
  }
  ASSERT_FALSE(of0.empty());
  EXPECT_EQ(of0.front(), (told{id0, true, true}));
  for (std::size_t i = 1; i < of0.size(); ++i) { EXPECT_EQ(of0[i], (told{id0, false, false})) << i; }
  EXPECT_EQ(of0.size(), 2U);  // the prefetch's insert, then the acquire's access
  ASSERT_FALSE(of1.empty());
  EXPECT_EQ(of1.front(), (told{id1, true, false}));
  EXPECT_TRUE(p.validate());
  for (std::uint64_t i = 0; i < 5; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
}

// A prefetch that refreshes a stale device copy (the host wrote the tensor, its device block
// stayed) is not a use either: the policy already holds the copy and hears nothing of the
// refresh; the acquire after it is the use (Note [Prefetches are not uses], repeat_policy.cpp;
// migration_engine::ensure_valid_locked). A demand refresh is an access.
TEST(PoolForecast, APrefetchRefreshingAStaleCopyIsNotAUse)
{
  auto log = std::make_shared<std::vector<told>>();
  policy_registry reg = policy_registry::with_builtins();
  std::vector<tensor> ts;
  pool p = pool_with_policy(reg, "told", told_policy{log}, 3, ts);  // 3 x 256 KiB in the 1 MiB device tier
  stream_handle s = p.create_stream();
  for (tensor const& t : ts) { lease l = p.acquire(t, access_mode::read, s); }
  p.synchronize(s);
  auto stale_on_device = [&](tensor const& t) {
    tensor_residency const r = p.residency(t);
    tensor_copy const* c = r.copy_in(tier_id{0});
    return c != nullptr && !c->valid;
  };
  for (std::uint64_t i : {1U, 2U}) {
    {  // the host writes it in place: its device copy goes stale, its block stays
      lease h = p.acquire_host(ts[i], access_mode::read_write);
      write_pattern(h.data(), h.bytes(), 10 + i, 2);
    }
    ASSERT_TRUE(stale_on_device(ts[i])) << i;
  }
  // The device tier's buffered accesses reach the policy when a tensor enters or leaves it.
  auto drain = [&] {
    tensor x = p.allocate(64_KiB);
    ASSERT_EQ(p.residency(x).home, tier_id{0});
    p.free(x);
  };
  auto const id1 = static_cast<std::uint64_t>(ts[1].id());
  auto const id2 = static_cast<std::uint64_t>(ts[2].id());
  auto told_of = [&](std::uint64_t id) {
    std::vector<told> out;
    for (told const& t : *log) {
      if (t.id == id) { out.push_back(t); }
    }
    return out;
  };
  drain();  // the acquires above
  log->clear();
  p.prefetch(ts[1]);  // the refresh ahead of its use
  p.synchronize(s);
  ASSERT_FALSE(stale_on_device(ts[1]));
  drain();
  EXPECT_TRUE(told_of(id1).empty()) << "a prefetch's refresh is not an access";
  { lease l = p.acquire(ts[1], access_mode::read, s); }  // its use
  drain();
  { lease l = p.acquire(ts[2], access_mode::read, s); }  // a demand refresh: an access
  p.synchronize(s);
  drain();
  std::vector<told> const of1 = told_of(id1);
  std::vector<told> const of2 = told_of(id2);
  ASSERT_EQ(of1.size(), 1U);
  EXPECT_EQ(of1[0], (told{id1, false, false}));
  ASSERT_EQ(of2.size(), 1U);
  EXPECT_EQ(of2[0], (told{id2, false, false}));
  EXPECT_TRUE(p.validate());
  EXPECT_TRUE(check(p, ts[0], 0, 1));
  for (std::uint64_t i : {1U, 2U}) { EXPECT_TRUE(check(p, ts[i], 10 + i, 2)) << i; }
}

}  // namespace
}  // namespace tierpool::test

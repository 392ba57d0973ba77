// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// policy_test_util.hpp — helpers shared by tests/policies/*_policy_tests.cpp: the conformance
// fixtures (direct, type-erased, built by the registry), tensor_view / id builders, proposal
// shorthands, the determinism replay, the registry check of a policy without parameters and
// the reference-model driver (cross_check) used by the CLOCK, SIEVE, S3-FIFO and 2Q tests, and
// unit_cache / misses(), a tier of unit tensors for hand-worked and published examples.
// Test-only; every function is inline or a template.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/policy.hpp>

namespace policy_test {

using tierpool::any_eviction_policy;
using tierpool::eviction_proposal;
using tierpool::eviction_request;
using tierpool::policy_registry;
using tierpool::tensor_view;
using tierpool::tick;

/// A string usable as a template argument (the registry spec of a conformance fixture).
template <std::size_t N>
struct fixed_string {
  char chars[N]{};
  constexpr fixed_string(char const (&s)[N]) noexcept  // NOLINT(google-explicit-constructor)
  {
    for (std::size_t i = 0; i < N; ++i) { chars[i] = s[i]; }
  }
  [[nodiscard]] constexpr std::string_view view() const noexcept { return {chars, N - 1}; }
};

/// Conformance fixture: a default-constructed P.
template <class P>
struct direct_fixture : ::testing::Test {
  static P make() { return P{}; }
};
/// Conformance fixture: a default-constructed P behind any_eviction_policy.
template <class P>
struct any_fixture : ::testing::Test {
  static any_eviction_policy make() { return any_eviction_policy{P{}}; }
};
/// Conformance fixture: the policy the built-in registry makes from `Spec`.
template <fixed_string Spec>
struct registry_fixture : ::testing::Test {
  static any_eviction_policy make() { return policy_registry::with_builtins().create(Spec.view()); }
};
/// The three conformance fixtures of a policy P registered as `Spec`.
template <class P, fixed_string Spec>
using conformance_fixtures = ::testing::Types<direct_fixture<P>, any_fixture<P>, registry_fixture<Spec>>;

inline tierpool::tensor_id tid(std::uint64_t v) { return tierpool::tensor_id{v}; }

inline tensor_view view(std::uint64_t id, std::size_t bytes, tick t = 0, bool pinned = false, bool write = false)
{
  tensor_view v{};
  v.id = tid(id);
  v.bytes = bytes;
  v.last_access = t;
  v.pinned = pinned;
  v.write_access = write;
  return v;
}

// A view with a next-use forecast (Belady, Repeat); std::nullopt: no forecast.
inline tensor_view forecast_view(std::uint64_t id, std::size_t bytes = 1, std::optional<tick> next = std::nullopt,
                                 bool pinned = false)
{
  tensor_view v = view(id, bytes, 0, pinned);
  v.next_use = next;
  return v;
}

inline std::vector<tierpool::tensor_id> ids(std::initializer_list<std::uint64_t> raw)
{
  std::vector<tierpool::tensor_id> out;
  for (auto r : raw) { out.push_back(tid(r)); }
  return out;
}

// Victims for `need` bytes, and the whole eviction order for SIZE_MAX; `incoming`: the
// tensor the room is for (eviction_request::incoming), if named.
template <class P>
std::vector<tierpool::tensor_id> propose(P const& p, std::size_t need, tierpool::tensor_id incoming = {})
{
  eviction_proposal out;
  p.propose(eviction_request{.from = tierpool::tier_id{0}, .bytes_needed = need, .incoming = incoming}, out);
  return out.victims;
}
template <class P>
std::vector<tierpool::tensor_id> order(P const& p)
{
  return propose(p, SIZE_MAX);
}

// A tier with room for `capacity` unit tensors, one request at a time: a hit is an access;
// a miss, when the tier is full, erases the policy's first victim (asked for with the
// missing id as eviction_request::incoming, unless name_incoming is false), then inserts. A
// paper's worked example (one page per object) runs through it unchanged.
template <class P>
class unit_cache {
 public:
  unit_cache(P& policy, std::size_t capacity, bool name_incoming = true)
    : p_(policy), capacity_(capacity), name_incoming_(name_incoming)
  {
  }
  // The request; returns the victim it evicted, if any. `next`: the forecast to report.
  std::optional<std::uint64_t> request(std::uint64_t id, std::optional<tick> next = std::nullopt)
  {
    tensor_view const v = forecast_view(id, 1, next);
    if (resident_.contains(id)) {
      p_.on_access(v);
      return std::nullopt;
    }
    ++misses_;
    std::optional<std::uint64_t> victim;
    if (resident_.size() == capacity_) {
      auto const victims = propose(p_, 1, name_incoming_ ? tierpool::tensor_id{id} : tierpool::tensor_id{});
      if (victims.empty()) {
        ADD_FAILURE() << "no victim for a full tier";
        return std::nullopt;
      }
      victim = static_cast<std::uint64_t>(victims.front());
      EXPECT_TRUE(resident_.contains(*victim)) << "victim " << *victim << " is not resident";
      p_.on_erase(victims.front());
      resident_.erase(*victim);
    }
    p_.on_insert(v);
    resident_.insert(id);
    return victim;
  }
  [[nodiscard]] std::size_t misses() const { return misses_; }
  [[nodiscard]] bool resident(std::uint64_t id) const { return resident_.contains(id); }

 private:
  P& p_;
  std::size_t capacity_;
  bool name_incoming_;
  std::set<std::uint64_t> resident_;
  std::size_t misses_{0};
};

// Misses of a unit_cache of `capacity` over `seq`; with `forecast`, every view carries the
// true next use (the index of the id's next occurrence, no_next_use for the last one).
template <class P>
std::size_t misses(P& p, std::vector<std::uint64_t> const& seq, std::size_t capacity, bool forecast = false)
{
  std::vector<tick> next(seq.size(), tierpool::no_next_use);
  std::map<std::uint64_t, tick> seen;
  for (std::size_t i = seq.size(); i-- > 0;) {
    if (auto const it = seen.find(seq[i]); it != seen.end()) { next[i] = it->second; }
    seen[seq[i]] = i;
  }
  unit_cache<P> cache(p, capacity);
  for (std::size_t i = 0; i < seq.size(); ++i) {
    (void)cache.request(seq[i], forecast ? std::optional<tick>{next[i]} : std::nullopt);
  }
  return cache.misses();
}

// Insert, access, pin... from a compact script, then the proposals for `needs`: the same
// script on two fresh policies must give the same answers.
template <class P>
std::vector<std::vector<tierpool::tensor_id>> replay(P p)
{
  std::vector<std::vector<tierpool::tensor_id>> log;
  std::uint64_t x = 12345;
  for (int step = 0; step < 2000; ++step) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG: engine output only
    std::uint64_t const id = 1 + (x >> 33) % 64;
    switch ((x >> 60) % 6) {
      case 0:
      case 1: p.on_insert(view(id, static_cast<std::size_t>(1 + (x >> 20) % 100), static_cast<tick>(step))); break;
      case 2: p.on_access(view(id, 0 + static_cast<std::size_t>(1 + (x >> 20) % 100), static_cast<tick>(step))); break;
      case 3: {
        auto const v = propose(p, static_cast<std::size_t>((x >> 8) % 500));
        log.push_back(v);
        if (!v.empty()) { p.on_erase(v.front()); }
        break;
      }
      case 4: p.on_erase(tid(id)); break;
      default: p.on_pin(tid(id)); p.on_unpin(tid(1 + (x >> 40) % 64)); break;
    }
    EXPECT_TRUE(p.validate());
  }
  return log;
}

// The built-in registry knows `name`, makes a P from it, and rejects `bad_spec` (a parameter
// the policy does not have). Call under ASSERT_NO_FATAL_FAILURE.
template <class P>
void expect_registered(std::string_view name, std::string_view bad_spec)
{
  auto const r = policy_registry::with_builtins();
  ASSERT_TRUE(r.contains(name));
  EXPECT_NE(r.create(name).template target<P>(), nullptr);
  EXPECT_THROW((void)r.create(bad_spec), tierpool::logic_error);
}

// Eight tensors of 16, 32, ... bytes (tensor 1 accessed when `access_first`): proposing
// twice gives the same answer (propose changes no state).
template <class P>
void expect_propose_twice_same(P p, bool access_first)
{
  for (std::uint64_t i = 1; i <= 8; ++i) { p.on_insert(view(i, 16 * i)); }
  if (access_first) { p.on_access(view(1, 16)); }
  EXPECT_EQ(propose(p, 100), propose(p, 100));
}

// Drives a reference model (the algorithm as published: it mutates while it evicts) and
// the policy with the same random events. An eviction asks the policy for `need` bytes,
// checks its victims against those the reference evicts one by one, then erases them in
// order, which applies the policy's deferred moves. Frees erase tensors out of order.
template <class Ref, class P>
void cross_check(Ref ref, P p, std::uint64_t seed)
{
  std::vector<std::size_t> bytes(49, 0);  // 0 = not resident
  std::uint64_t x = seed;
  int evictions = 0;
  for (int step = 0; step < 4000; ++step) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    std::uint64_t const id = 1 + (x >> 33) % 48;
    switch ((x >> 59) % 8) {
      case 0:
      case 1:
      case 2:
        if (bytes[id] == 0) {
          bytes[id] = static_cast<std::size_t>(1 + (x >> 20) % 50);
          ref.insert(id, bytes[id]);
          p.on_insert(view(id, bytes[id]));
        }
        break;
      case 3:
      case 4:
        if (bytes[id] != 0) {
          ref.access(id);
          p.on_access(view(id, bytes[id]));
        }
        break;
      case 5:
        if (bytes[id] != 0) {
          ref.free(id);
          p.on_erase(tid(id));
          bytes[id] = 0;
        }
        break;
      default: {
        std::size_t const need = static_cast<std::size_t>(1 + (x >> 8) % 200);
        std::vector<tierpool::tensor_id> expected;
        std::size_t freed = 0;
        while (freed < need && !ref.empty()) {
          std::uint64_t const v = ref.evict();
          expected.push_back(tid(v));
          freed += bytes[v];
        }
        auto const got = propose(p, need);
        ASSERT_EQ(got, expected) << "step " << step;
        for (auto const v : got) {
          p.on_erase(v);
          bytes[static_cast<std::uint64_t>(v)] = 0;
        }
        ++evictions;
        break;
      }
    }
    ASSERT_TRUE(p.validate()) << "step " << step;
  }
  EXPECT_GT(evictions, 500);
}

// The reference model CLOCK and SIEVE share (on a vector, the hand an index into it): a bit
// per object, evict() sweeps from the hand clearing set bits and removes the first object
// whose bit is clear. The tests derive from it and add insert(), where the two differ.
struct bit_hand_reference {
  struct obj {
    std::uint64_t id;
    bool bit;
  };
  std::vector<obj> q;
  std::size_t hand{0};
  [[nodiscard]] bool empty() const { return q.empty(); }
  std::size_t find(std::uint64_t id) const
  {
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (q[i].id == id) { return i; }
    }
    return q.size();
  }
  void access(std::uint64_t id) { q[find(id)].bit = true; }
  void remove_at(std::size_t i)
  {
    q.erase(q.begin() + static_cast<std::ptrdiff_t>(i));
    if (i < hand) { --hand; }
    if (hand >= q.size()) { hand = 0; }
  }
  void plain_free(std::uint64_t id) { remove_at(find(id)); }
  // A free of the tensor the algorithm would evict next is indistinguishable from its
  // eviction for the policy (see its Note): it applies the same moves.
  void free(std::uint64_t id)
  {
    bit_hand_reference copy = *this;
    if (copy.evict() == id) {
      (void)evict();
    } else {
      plain_free(id);
    }
  }
  std::uint64_t evict()
  {
    while (q[hand].bit) {
      q[hand].bit = false;
      hand = hand + 1 == q.size() ? 0 : hand + 1;
    }
    std::uint64_t const v = q[hand].id;
    remove_at(hand);
    return v;
  }
};

}  // namespace policy_test

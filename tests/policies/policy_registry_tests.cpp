// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// policy_registry_tests.cpp — POLICY_REGISTRY_TEST: policy_registry (spec parsing, error
// messages that list what exists, parameter types), the generated built-in list, and the
// user-written policy that docs/chapters/writing_a_policy.md shows (between the
// [writing_a_policy] markers), which also runs the conformance suite.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <tierpool/policies/concrete_policies.hpp>
#include <tierpool/policies/lru_policy.hpp>
#include <tierpool/policy.hpp>

#include "conformance/policy_conformance.hpp"

// [writing_a_policy]
#include <tierpool/policy.hpp>

#include <map>
#include <set>
#include <string_view>
#include <tuple>

namespace my {

/// Evicts the largest unpinned tensor first: the fewest moves free the most room.
/// Ties go to the oldest insertion (`ties = age`) or the smallest id (`ties = id`).
class largest_first_policy {
 public:
  struct config {
    bool ties_by_age{true};  ///< break ties by insertion order (else by tensor id)
  };
  largest_first_policy() = default;
  explicit largest_first_policy(config cfg) : cfg_(cfg) {}

  void on_insert(tierpool::tensor_view const& v) noexcept
  {
    on_erase(v.id);  // a known id is re-inserted
    auto const tie = cfg_.ties_by_age ? next_seq_++ : static_cast<std::uint64_t>(v.id);
    key const k{v.bytes, tie, v.id};
    tensors_.emplace(v.id, state{k, v.pinned});
    if (!v.pinned) { order_.insert(k); }
  }
  void on_access(tierpool::tensor_view const& v) noexcept
  {
    if (v.pinned) { on_pin(v.id); } else { on_unpin(v.id); }  // the view's flag wins
  }
  void on_erase(tierpool::tensor_id id) noexcept
  {
    auto it = tensors_.find(id);
    if (it == tensors_.end()) { return; }
    order_.erase(it->second.k);
    tensors_.erase(it);
  }
  void on_pin(tierpool::tensor_id id) noexcept
  {
    auto it = tensors_.find(id);
    if (it == tensors_.end() || it->second.pinned) { return; }
    it->second.pinned = true;
    order_.erase(it->second.k);  // pinned tensors leave the order: propose never sees them
  }
  void on_unpin(tierpool::tensor_id id) noexcept
  {
    auto it = tensors_.find(id);
    if (it == tensors_.end() || !it->second.pinned) { return; }
    it->second.pinned = false;
    order_.insert(it->second.k);
  }
  void propose(tierpool::eviction_request const& req, tierpool::eviction_proposal& out) const
  {
    std::size_t freed = 0;
    for (auto it = order_.begin(); it != order_.end() && freed < req.bytes_needed; ++it) {
      out.add(it->id, it->bytes);
      freed = out.bytes;  // saturating sum (the caller passes `out` empty)
    }
  }
  [[nodiscard]] std::string_view name() const noexcept { return "largest_first"; }

 private:
  struct key {
    std::size_t bytes;
    std::uint64_t tie;
    tierpool::tensor_id id;
    bool operator<(key const& o) const noexcept  // largest first, then the smaller tie
    {
      return std::tie(o.bytes, tie) < std::tie(bytes, o.tie);
    }
  };
  struct state {
    key k;
    bool pinned;
  };
  config cfg_{};
  std::uint64_t next_seq_{0};
  std::map<tierpool::tensor_id, state> tensors_;  // ordered containers: deterministic
  std::set<key> order_;                           // unpinned tensors, eviction order
};
static_assert(tierpool::eviction_policy<largest_first_policy>);

/// Registers "largest_first" with one string parameter, `ties` (age or id).
void register_largest_first(tierpool::policy_registry& registry)
{
  registry.add("largest_first", "Largest unpinned tensor first",
               {{"ties", tierpool::parameter_type::string, "age", "tie-break: age (oldest first) or id"}},
               [](tierpool::policy_params const& p) {
                 auto const ties = p.get<std::string>("ties");
                 if (ties != "age" && ties != "id") {
                   throw tierpool::logic_error("largest_first: ties must be 'age' or 'id', got '" + ties + "'");
                 }
                 return tierpool::any_eviction_policy{largest_first_policy{{.ties_by_age = ties == "age"}}};
               });
}

}  // namespace my

// Using it: the built-ins plus one's own, then by name as from a configuration file.
TEST(WritingAPolicy, RegisterAndCreate)
{
  auto registry = tierpool::policy_registry::with_builtins();
  my::register_largest_first(registry);
  tierpool::any_eviction_policy policy = registry.create("largest_first:ties=id");

  policy.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100});
  policy.on_insert({.id = tierpool::tensor_id{2}, .bytes = 300});
  policy.on_insert({.id = tierpool::tensor_id{3}, .bytes = 200});
  policy.on_pin(tierpool::tensor_id{2});

  tierpool::eviction_proposal out;  // reused across rounds: no allocation once warm
  policy.propose({.bytes_needed = 250}, out);
  EXPECT_EQ(out.victims, (std::vector{tierpool::tensor_id{3}, tierpool::tensor_id{1}}));
}
// [writing_a_policy]

namespace {

using ::testing::HasSubstr;
using tierpool::any_eviction_policy;
using tierpool::logic_error;
using tierpool::lru_policy;
using tierpool::parameter_type;
using tierpool::policy_params;
using tierpool::policy_registry;

struct LargestFirstFixture : ::testing::Test {
  static my::largest_first_policy make() { return my::largest_first_policy{}; }
};
struct LargestFirstByIdFixture : ::testing::Test {
  static any_eviction_policy make()
  {
    policy_registry r;
    my::register_largest_first(r);
    return r.create("largest_first:ties=id");
  }
};
struct RegistryLruFixture : ::testing::Test {
  static any_eviction_policy make()
  {
    return policy_registry::with_builtins().create("lru:refresh_interval=2,promote_on_write=false");
  }
};
using registry_fixtures = ::testing::Types<LargestFirstFixture, LargestFirstByIdFixture, RegistryLruFixture>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(Registry, PolicyConformance, registry_fixtures);

namespace {

// The message of the logic_error `f` throws (fails the test when it does not throw).
template <class F>
std::string error_of(F&& f)
{
  try {
    f();
  } catch (logic_error const& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected tierpool::logic_error";
  return {};
}

policy_registry registry_with_probe(std::map<std::string, std::string>* seen)
{
  policy_registry r;
  r.add("probe", "records its parameters",
        {
          {"flag", parameter_type::boolean, "false", "a boolean"},
          {"delta", parameter_type::integer, "-3", "a signed integer"},
          {"count", parameter_type::unsigned_integer, "7", "a count"},
          {"ratio", parameter_type::real, "0.5", "a fraction"},
          {"budget", parameter_type::bytes, "1MiB", "a byte size"},
          {"label", parameter_type::string, "none", "text"},
        },
        [seen](policy_params const& p) {
          (*seen)["flag"] = p.get<bool>("flag") ? "true" : "false";
          (*seen)["delta"] = std::to_string(p.get<std::int64_t>("delta"));
          (*seen)["count"] = std::to_string(p.get<std::uint64_t>("count"));
          (*seen)["ratio"] = std::to_string(p.get<double>("ratio"));
          (*seen)["budget"] = std::to_string(p.get<std::uint64_t>("budget"));
          (*seen)["label"] = p.get<std::string>("label");
          (*seen)["given"] = std::string(p.given("count") ? "count " : "") + (p.given("label") ? "label" : "");
          return any_eviction_policy{lru_policy{}};
        });
  return r;
}

TEST(PolicyRegistry, AbiVersionIsTwo) { static_assert(tierpool::policy_abi_version == 2); }  // 2: eviction_request::incoming

TEST(PolicyRegistry, BuiltinsHoldLru)
{
  auto const r = policy_registry::with_builtins();
  EXPECT_TRUE(r.contains("lru"));
  EXPECT_FALSE(r.contains("nope"));
  auto const list = r.list();
  ASSERT_FALSE(list.empty());
  bool found = false;
  for (auto const& info : list) {
    if (info.name != "lru") { continue; }
    found = true;
    ASSERT_EQ(info.parameters.size(), 3U);
    EXPECT_EQ(info.parameters[0].name, "refresh_interval");
    EXPECT_EQ(info.parameters[0].type, parameter_type::unsigned_integer);
    EXPECT_EQ(info.parameters[0].default_value, "0");
    EXPECT_FALSE(info.description.empty());
  }
  EXPECT_TRUE(found);
  policy_registry other;
  tierpool::register_builtin_policies(other);
  EXPECT_EQ(other.size(), r.size());
  EXPECT_THROW(tierpool::register_builtin_policies(other), logic_error);  // already there
}

TEST(PolicyRegistry, CreatesLruWithDefaults)
{
  auto p = policy_registry::with_builtins().create("lru");
  EXPECT_EQ(p.name(), "lru");
  ASSERT_NE(p.target<lru_policy>(), nullptr);
  auto const& cfg = p.target<lru_policy>()->get_config();
  EXPECT_EQ(cfg.refresh_interval, 0U);
  EXPECT_TRUE(cfg.promote_on_read);
  EXPECT_TRUE(cfg.promote_on_write);
}

TEST(PolicyRegistry, CreatesLruWithParameters)
{
  auto const r = policy_registry::with_builtins();
  for (std::string_view spec : {"lru:refresh_interval=1000,promote_on_write=false",
                                "  lru : refresh_interval = 1000 , promote_on_write = off ,",
                                "lru:promote_on_write=0,refresh_interval=+1000"}) {
    SCOPED_TRACE(spec);
    auto p = r.create(spec);
    ASSERT_NE(p.target<lru_policy>(), nullptr);
    auto const& cfg = p.target<lru_policy>()->get_config();
    EXPECT_EQ(cfg.refresh_interval, 1000U);
    EXPECT_FALSE(cfg.promote_on_write);
    EXPECT_TRUE(cfg.promote_on_read);
  }
  EXPECT_NE(r.create("lru:").target<lru_policy>(), nullptr);
}

TEST(PolicyRegistry, UnknownNameListsRegisteredNames)
{
  auto const r = policy_registry::with_builtins();
  std::string const msg = error_of([&] { (void)r.create("lruu:refresh_interval=1"); });
  EXPECT_THAT(msg, HasSubstr("unknown policy 'lruu'"));
  EXPECT_THAT(msg, HasSubstr("registered policies: "));
  EXPECT_THAT(msg, HasSubstr("lru"));
  EXPECT_THAT(error_of([&] { (void)r.info("nope"); }), HasSubstr("lru"));
  EXPECT_THAT(error_of([&] { (void)r.create(""); }), HasSubstr("lru"));
  EXPECT_THAT(error_of([&] { (void)r.create(":refresh_interval=1"); }), HasSubstr("lru"));
  EXPECT_THAT(error_of([] { (void)policy_registry{}.create("lru"); }), HasSubstr("(none)"));
}

TEST(PolicyRegistry, UnknownParameterListsParametersWithDefaults)
{
  auto const r = policy_registry::with_builtins();
  std::string const msg = error_of([&] { (void)r.create("lru:refresh=5"); });
  EXPECT_THAT(msg, HasSubstr("no parameter 'refresh'"));
  EXPECT_THAT(msg, HasSubstr("refresh_interval=0 (unsigned_integer"));
  EXPECT_THAT(msg, HasSubstr("promote_on_read=true (boolean"));
  EXPECT_THAT(msg, HasSubstr("promote_on_write=true (boolean"));
}

TEST(PolicyRegistry, IllTypedValuesAreRejected)
{
  auto const r = policy_registry::with_builtins();
  std::string const b = error_of([&] { (void)r.create("lru:promote_on_write=maybe"); });
  EXPECT_THAT(b, HasSubstr("'promote_on_write' expects a boolean"));
  EXPECT_THAT(b, HasSubstr("got 'maybe'"));
  EXPECT_THAT(b, HasSubstr("refresh_interval=0"));  // and lists the parameters
  for (std::string_view spec : {"lru:refresh_interval=-1", "lru:refresh_interval=abc", "lru:refresh_interval=1.5",
                                "lru:refresh_interval=", "lru:refresh_interval=99999999999999999999"}) {
    SCOPED_TRACE(spec);
    EXPECT_THAT(error_of([&] { (void)r.create(spec); }), HasSubstr("expects an unsigned decimal integer"));
  }
}

TEST(PolicyRegistry, MalformedSpecsAreRejected)
{
  auto const r = policy_registry::with_builtins();
  EXPECT_THAT(error_of([&] { (void)r.create("lru:refresh_interval"); }), HasSubstr("is not key=value"));
  EXPECT_THAT(error_of([&] { (void)r.create("lru:=3"); }), HasSubstr("is not key=value"));
  EXPECT_THAT(error_of([&] { (void)r.create("lru:refresh_interval=1,,promote_on_read=true"); }),
              HasSubstr("is not key=value"));
  EXPECT_THAT(error_of([&] { (void)r.create("lru:refresh_interval=1,refresh_interval=2"); }),
              HasSubstr("twice"));
}

TEST(PolicyRegistry, EveryParameterTypeParses)
{
  std::map<std::string, std::string> seen;
  auto const r = registry_with_probe(&seen);
  (void)r.create("probe");
  EXPECT_EQ(seen["flag"], "false");
  EXPECT_EQ(seen["delta"], "-3");
  EXPECT_EQ(seen["count"], "7");
  EXPECT_EQ(seen["ratio"], std::to_string(0.5));
  EXPECT_EQ(seen["budget"], std::to_string(1U << 20U));
  EXPECT_EQ(seen["label"], "none");
  EXPECT_EQ(seen["given"], "");

  (void)r.create("probe:flag=YES,delta=42,count=9,ratio=2.25,budget=2GiB,label=hot tensors");
  EXPECT_EQ(seen["flag"], "true");
  EXPECT_EQ(seen["delta"], "42");
  EXPECT_EQ(seen["count"], "9");
  EXPECT_EQ(seen["ratio"], std::to_string(2.25));
  EXPECT_EQ(seen["budget"], std::to_string(std::uint64_t{2} << 30U));
  EXPECT_EQ(seen["label"], "hot tensors");
  EXPECT_EQ(seen["given"], "count label");

  EXPECT_THAT(error_of([&] { (void)r.create("probe:budget=lots"); }), HasSubstr("expects a byte size"));
  EXPECT_THAT(error_of([&] { (void)r.create("probe:ratio=x"); }), HasSubstr("expects a decimal number"));
  EXPECT_THAT(error_of([&] { (void)r.create("probe:delta=1e3"); }), HasSubstr("expects a signed decimal integer"));
}

TEST(PolicyRegistry, ParseReturnsParametersWithoutCreating)
{
  auto const r = policy_registry::with_builtins();
  std::string name;
  policy_params const p = r.parse("lru:refresh_interval=9", &name);
  EXPECT_EQ(name, "lru");
  EXPECT_EQ(p.size(), 3U);
  EXPECT_EQ(p.get<std::uint64_t>("refresh_interval"), 9U);
  EXPECT_TRUE(p.given("refresh_interval"));
  EXPECT_FALSE(p.given("promote_on_read"));
  EXPECT_THAT(error_of([&] { (void)p.get<bool>("refresh_interval"); }), HasSubstr("unsigned_integer"));
  EXPECT_THAT(error_of([&] { (void)p.get<bool>("nope"); }), HasSubstr("refresh_interval"));
}

TEST(PolicyRegistry, AddRejectsBadRegistrations)
{
  auto factory = [](policy_params const&) { return any_eviction_policy{lru_policy{}}; };
  policy_registry r;
  r.add("mine", "d", {}, factory);
  EXPECT_THAT(error_of([&] { r.add("mine", "d", {}, factory); }), HasSubstr("already registered"));
  EXPECT_THROW(r.add("", "d", {}, factory), logic_error);
  EXPECT_THROW(r.add("Bad-Name", "d", {}, factory), logic_error);
  EXPECT_THROW(r.add("x", "d", {}, nullptr), logic_error);
  EXPECT_THAT(error_of([&] { r.add("y", "d", {{"n", parameter_type::unsigned_integer, "-1", ""}}, factory); }),
              HasSubstr("default '-1'"));
  EXPECT_THAT(error_of([&] {
                r.add("z", "d", {{"n", parameter_type::boolean, "true", ""}, {"n", parameter_type::boolean, "true", ""}},
                      factory);
              }),
              HasSubstr("declared twice"));
  EXPECT_EQ(r.size(), 1U);
  EXPECT_THAT(error_of([&] { (void)r.create("mine:anything=1"); }), HasSubstr("takes no parameters"));
}

TEST(PolicyRegistry, FactoryErrorsPropagate)
{
  policy_registry r;
  my::register_largest_first(r);
  EXPECT_THAT(error_of([&] { (void)r.create("largest_first:ties=size"); }), HasSubstr("ties must be"));
  EXPECT_EQ(r.create("largest_first").name(), "largest_first");
}

TEST(PolicyRegistry, ListIsSortedByName)
{
  auto r = policy_registry::with_builtins();
  my::register_largest_first(r);
  auto const list = r.list();
  for (std::size_t i = 1; i < list.size(); ++i) { EXPECT_LT(list[i - 1].name, list[i].name); }
}

TEST(PolicyParams, SetChecksTheAlternative)
{
  policy_params p;
  p.set("a", parameter_type::bytes, std::uint64_t{5});
  EXPECT_EQ(p.get<std::uint64_t>("a"), 5U);
  EXPECT_THROW(p.set("b", parameter_type::bytes, std::int64_t{5}), logic_error);
  EXPECT_EQ(tierpool::to_string(parameter_type::unsigned_integer), "unsigned_integer");
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The concrete-type opt-in (Note [Calling a policy through its concrete type]): lru opts in
// with CONCRETE_TYPE in policies/CMakeLists.txt, so visit_concrete() hands it over as
// lru_policy; a policy that does not opt in (fifo) is left to the erased path.
// ---------------------------------------------------------------------------------------

TEST(ConcreteTypes, LruIsHandedOverAsItsConcreteType)
{
  auto p = policy_registry::with_builtins().create("lru:refresh_interval=7");
  int calls = 0;
  bool const visited = tierpool::policies::visit_concrete(p, [&](auto& concrete) {
    ++calls;
    EXPECT_TRUE((std::is_same_v<std::decay_t<decltype(concrete)>, lru_policy>));
    if constexpr (std::is_same_v<std::decay_t<decltype(concrete)>, lru_policy>) {
      EXPECT_EQ(concrete.get_config().refresh_interval, 7U);  // the held object, not a copy
      concrete.on_insert({.id = tierpool::tensor_id{5}, .bytes = 10});
    }
  });
  EXPECT_TRUE(visited);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(p.propose({.bytes_needed = 10}).victims, std::vector<tierpool::tensor_id>{tierpool::tensor_id{5}});
}

TEST(ConcreteTypes, PoliciesThatDidNotOptInStayErased)
{
  for (char const* spec : {"fifo", "arc", "belady"}) {
    auto p = policy_registry::with_builtins().create(spec);
    int calls = 0;
    EXPECT_FALSE(tierpool::policies::visit_concrete(p, [&](auto&) { ++calls; })) << spec;
    EXPECT_EQ(calls, 0) << spec;
  }
  tierpool::any_eviction_policy moved = policy_registry::with_builtins().create("lru");
  tierpool::any_eviction_policy taken = std::move(moved);
  EXPECT_FALSE(tierpool::policies::visit_concrete(moved, [](auto&) {}));  // NOLINT(bugprone-use-after-move): empty
  EXPECT_TRUE(tierpool::policies::visit_concrete(taken, [](auto&) {}));
}

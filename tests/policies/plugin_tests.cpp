// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// plugin_tests.cpp — POLICY_PLUGIN_TEST: policy plug-ins. The example plug-in
// (examples/custom_policy, "mru") is loaded with policy_registry::load_plugin() and through
// a spec "path.so:mru:spare=0"; a tierpool::pool on the sim backend uses it (from
// pool_options::policy and from TIERPOOL_POLICY) and its victims are the plug-in's; every
// loader error has a clear message: a missing file (dlerror's text), a shared object
// without the registration symbol, one built against another interface version, a name
// already registered. The paths come from compile definitions (see tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <tierpool/policies/lru_policy.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/pool.hpp>

#include "unit/pool_test_util.hpp"

namespace {

using ::testing::HasSubstr;
using tierpool::plugin_error;
using tierpool::policy_registry;

std::string const mru_plugin = TIERPOOL_TEST_MRU_PLUGIN;
std::string const no_register_plugin = TIERPOOL_TEST_NO_REGISTER_PLUGIN;
std::string const wrong_abi_plugin = TIERPOOL_TEST_WRONG_ABI_PLUGIN;

template <class E = tierpool::logic_error, class F>
std::string error_of(F&& f)
{
  try {
    f();
  } catch (E const& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

TEST(PolicyPlugin, LoadPluginAddsItsPolicies)
{
  auto r = policy_registry::with_builtins();
  std::size_t const builtins = r.size();
  EXPECT_FALSE(r.contains("mru"));
  EXPECT_EQ(r.load_plugin(mru_plugin), std::vector<std::string>{"mru"});
  EXPECT_TRUE(r.contains("mru"));
  EXPECT_EQ(r.size(), builtins + 1);
  EXPECT_EQ(r.load_plugin(mru_plugin), std::vector<std::string>{"mru"});  // again: a no-op
  EXPECT_EQ(r.size(), builtins + 1);
  auto const& info = r.info("mru");
  EXPECT_THAT(info.description, HasSubstr("Most recently used first"));
  ASSERT_EQ(info.parameters.size(), 1U);
  EXPECT_EQ(info.parameters[0].name, "spare");

  tierpool::any_eviction_policy p = r.create("mru:spare=0");
  EXPECT_EQ(p.name(), "mru");
  p.on_insert({.id = tierpool::tensor_id{1}, .bytes = 10});
  p.on_insert({.id = tierpool::tensor_id{2}, .bytes = 10});
  p.on_insert({.id = tierpool::tensor_id{3}, .bytes = 10});
  p.on_access({.id = tierpool::tensor_id{1}, .bytes = 10});
  EXPECT_EQ(p.propose({.bytes_needed = 25}).victims,
            (std::vector{tierpool::tensor_id{1}, tierpool::tensor_id{3}, tierpool::tensor_id{2}}));
}

TEST(PolicyPlugin, SpecLoadsThePlugin)
{
  EXPECT_TRUE(tierpool::is_plugin_spec(mru_plugin + ":mru"));
  EXPECT_TRUE(tierpool::is_plugin_spec("libmine.so:mine"));
  EXPECT_TRUE(tierpool::is_plugin_spec(" ./x:mine"));
  EXPECT_FALSE(tierpool::is_plugin_spec("lru:refresh_interval=3"));
  EXPECT_FALSE(tierpool::is_plugin_spec(".so"));

  policy_registry const r;  // empty: the plug-in's own policies serve the spec
  auto p = r.create(mru_plugin + ":mru:spare=0");
  EXPECT_EQ(p.name(), "mru");
  EXPECT_FALSE(r.contains("mru"));  // create() does not add to the registry
  std::string name;
  auto const params = r.parse(" " + mru_plugin + " : mru : spare = 3", &name);
  EXPECT_EQ(name, "mru");
  EXPECT_EQ(params.get<std::uint64_t>("spare"), 3U);

  std::string const unknown = error_of([&] { (void)r.create(mru_plugin + ":mry"); });
  EXPECT_THAT(unknown, HasSubstr("policy plug-in '" + mru_plugin + "': unknown policy 'mry'"));
  EXPECT_THAT(unknown, HasSubstr("registered policies: mru"));
  EXPECT_THAT(error_of([&] { (void)r.create(mru_plugin + ":mru:spare=-1"); }),
              HasSubstr("parameter 'spare' expects an unsigned decimal integer"));
  EXPECT_THAT(error_of([&] { (void)r.create(mru_plugin); }), HasSubstr("names no policy"));
}

// Four 256 KiB tensors fill a 1 MiB device tier; a fifth must evict one. LRU evicts the
// least recently used (t[0]); the plug-in's MRU evicts the most recently used (t[3]).
// Returns which of t[0] and t[3] are still device-resident (a re-acquire hits).
std::pair<bool, bool> first_and_last_survive(tierpool::pool_options opts)
{
  using namespace tierpool;
  tierpool::pool p{std::move(opts)};
  stream_handle const s = p.create_stream();
  std::vector<tensor> t;
  for (int i = 0; i < 4; ++i) { t.push_back(p.allocate(256_KiB)); }
  for (auto const& x : t) { (void)p.acquire(x, access_mode::read_write, s); }  // order 0 1 2 3
  tensor const extra = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  (void)p.acquire(extra, access_mode::read, s);  // the device tier evicts one
  EXPECT_EQ(p.stats().tiers[0].evictions, 1U);
  std::uint64_t const hits0 = p.stats().hits;
  (void)p.acquire(t[0], access_mode::read, s);
  bool const first = p.stats().hits == hits0 + 1;
  std::uint64_t const hits1 = p.stats().hits;
  (void)p.acquire(t[3], access_mode::read, s);
  bool const last = p.stats().hits == hits1 + 1;
  p.synchronize(s);
  EXPECT_TRUE(p.validate());
  return {first, last};
}

TEST(PolicyPlugin, APoolEvictsWhatThePluginProposes)
{
  auto be = tierpool::test::make_sim();
  tierpool::pool_options lru = tierpool::test::small_tiers(be);
  lru.policy = "lru";
  EXPECT_EQ(first_and_last_survive(lru), std::make_pair(false, true));

  tierpool::pool_options mru = tierpool::test::small_tiers(tierpool::test::make_sim());
  mru.policy = mru_plugin + ":mru:spare=0";
  EXPECT_EQ(first_and_last_survive(mru), std::make_pair(true, false));
}

TEST(PolicyPlugin, TierpoolPolicyEnvironmentVariableLoadsThePlugin)
{
  std::string const spec = mru_plugin + ":mru:spare=0";
  ASSERT_EQ(::setenv("TIERPOOL_POLICY", spec.c_str(), 1), 0);
  tierpool::pool_options opts = tierpool::test::small_tiers(tierpool::test::make_sim());
  opts.read_environment = true;
  opts.policy = "lru";  // the variable wins
  auto const survivors = first_and_last_survive(opts);
  ::unsetenv("TIERPOOL_POLICY");
  EXPECT_EQ(survivors, std::make_pair(true, false));
}

TEST(PolicyPlugin, MissingFileIsAClearError)
{
  auto r = policy_registry::with_builtins();
  std::string const msg = error_of<plugin_error>([&] { (void)r.load_plugin("/nonexistent/libnothing.so"); });
  EXPECT_THAT(msg, HasSubstr("policy plug-in '/nonexistent/libnothing.so' could not be loaded: "));
  EXPECT_THAT(msg, HasSubstr("No such file or directory"));  // dlerror()'s text
  EXPECT_THAT(error_of<plugin_error>([] { (void)policy_registry{}.create("./nowhere/libnothing.so:x"); }),
              HasSubstr("could not be loaded"));
}

TEST(PolicyPlugin, MissingRegistrationSymbolIsAClearError)
{
  policy_registry r;
  std::string const msg = error_of<plugin_error>([&] { (void)r.load_plugin(no_register_plugin); });
  EXPECT_THAT(msg, HasSubstr("does not export tierpool_register_policies(tierpool::policy_registry&)"));
  EXPECT_THAT(msg, HasSubstr("TIERPOOL_POLICY_PLUGIN"));
  EXPECT_EQ(r.size(), 0U);
}

TEST(PolicyPlugin, WrongInterfaceVersionIsRefused)
{
  policy_registry r;
  std::string const msg = error_of<plugin_error>([&] { (void)r.load_plugin(wrong_abi_plugin); });
  EXPECT_THAT(msg, HasSubstr("was built against policy interface v" + std::to_string(tierpool::policy_abi_version + 1) +
                             ", this tierpool has v" + std::to_string(tierpool::policy_abi_version)));
  EXPECT_EQ(r.size(), 0U);
  // A spec naming it fails the same way, every time (a failed load is not cached).
  EXPECT_THAT(error_of<plugin_error>([&] { (void)r.create(wrong_abi_plugin + ":x"); }), HasSubstr("policy interface"));
}

TEST(PolicyPlugin, ATakenNameLeavesTheRegistryUnchanged)
{
  policy_registry r;
  r.add("mru", "mine", {}, [](tierpool::policy_params const&) { return tierpool::any_eviction_policy{tierpool::lru_policy{}}; });
  std::string const msg = error_of<plugin_error>([&] { (void)r.load_plugin(mru_plugin); });
  EXPECT_THAT(msg, HasSubstr("registers policy 'mru', which this registry already holds"));
  EXPECT_EQ(r.size(), 1U);
  EXPECT_EQ(r.info("mru").description, "mine");
}

}  // namespace

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_recompute_tests.cpp — eviction actions (Note [Choosing an eviction action],
// runtime/migration/eviction.cpp) and recompute (Note [Recompute as an eviction action],
// runtime/core/detail/recompute.cpp): a tensor with a cheap recipe is dropped instead of
// written back and comes back with the right bytes (host and device recipes); a dear one
// is written back; with no room below a recipe is the last resort; writes to the tensor
// or its input, freeing the input, a failing recipe and misuse; compressed tiers passed
// over for a tensor not compressible; and threads that keep dropping and rebuilding
// (PoolRecomputeThreads, under TSan in .ci/run). Sim real memory: device pointers are
// host memory, so every check reads the bytes.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

constexpr std::size_t kT = 256_KiB;  // a quarter of the 1 MiB device tier

// The recipe of the tests: out[i] = in[i] ^ 0x5a.
void derive(void* out, void const* in, std::size_t n)
{
  auto* o = static_cast<std::uint8_t*>(out);
  auto const* s = static_cast<std::uint8_t const*>(in);
  for (std::size_t i = 0; i < n; ++i) { o[i] = static_cast<std::uint8_t>(s[i] ^ 0x5aU); }
}

// Whether `t` holds derive(pattern(key, version)), read through a host lease, or a device
// lease with `device`.
bool holds_derived(pool& p, tensor const& t, std::uint64_t key, std::uint32_t version, bool device = false)
{
  std::vector<std::uint8_t> src(t.bytes());
  write_pattern(src.data(), src.size(), key, version);
  std::vector<std::uint8_t> want(t.bytes());
  derive(want.data(), src.data(), src.size());
  lease l = device ? p.acquire(t, access_mode::read) : p.acquire_host(t, access_mode::read);
  return std::memcmp(l.data(), want.data(), want.size()) == 0;
}

bool holds_derived_on_device(pool& p, tensor const& t, std::uint64_t key, std::uint32_t version)
{
  return holds_derived(p, t, key, version, true);
}

struct counted_recipe {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  recompute_options make(tensor const& in, double cost, bool on_device = false) const
  {
    recompute_options o;
    auto c = calls;
    o.fn = [c](recompute_call const& call) {
      ASSERT_EQ(call.inputs.size(), 1U);
      derive(call.out, call.inputs[0], call.bytes);
      c->fetch_add(1);
    };
    o.inputs = {in.id()};
    o.on_device = on_device;
    o.cost_seconds = cost;
    return o;
  }
};

// x: the input (key 1) in the host tier; a = derive(x), written on the device.
struct pair_of {
  tensor x;
  tensor a;
};

pair_of make_pair_of(pool& p, std::uint64_t key = 1)
{
  pair_of r;
  r.x = p.allocate(kT, {.preferred_tier = tier_id{1}});
  fill(p, r.x, key, 1);
  r.a = p.allocate(kT, {.preferred_tier = tier_id{0}});
  {
    std::vector<std::uint8_t> src(kT);
    write_pattern(src.data(), src.size(), key, 1);
    lease d = p.acquire(r.a, access_mode::write_discard);
    derive(d.data(), src.data(), kT);
  }
  return r;
}

// Fill the 1 MiB device tier with four fresh tensors: every older copy there is evicted.
std::vector<tensor> push_out(pool& p, std::uint64_t key = 100)
{
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(kT, {.preferred_tier = tier_id{0}}));
    lease d = p.acquire(ts.back(), access_mode::write_discard);
    write_pattern(d.data(), d.bytes(), key + i, 1);
  }
  return ts;
}

pool_options device_host(std::size_t host = 16_MiB)
{
  pool_options o = small_tiers(make_sim(), 1_MiB, 0, host);
  o.publish.enabled = false;
  return o;
}

// a = derive(x) with a host recipe of `cost` seconds, then four fresh tensors fill the
// device tier: a is evicted (dropped when the recipe is cheap, else written back).
struct dropped_pair {
  pool p{device_host()};
  pair_of t = make_pair_of(p);
  counted_recipe r;
  std::vector<tensor> pushed;
  explicit dropped_pair(double cost = 1e-9)
  {
    p.set_recompute(t.a, r.make(t.x, cost));
    pushed = push_out(p);
  }
};

// pool::discard of a tensor that was dropped for recompute: its recipe ends and nothing is
// rebuilt (its bytes are dead); a write_discard lease gives it new bytes that are written
// back like any others from then on.
TEST(PoolRecompute, DiscardEndsTheRecipeWithoutRebuildingTheDroppedTensor)
{
  dropped_pair f;
  pool& p = f.p;
  pair_of const& t = f.t;
  counted_recipe const& r = f.r;
  ASSERT_EQ(p.stats().evicted_recompute, 1U) << "a was dropped, its recipe holds its bytes";
  std::uint64_t const ended = p.stats().recipes_ended;
  p.discard(t.a);
  EXPECT_EQ(r.calls->load(), 0) << "dead bytes are not rebuilt";
  EXPECT_EQ(p.stats().recipes_ended, ended + 1);
  EXPECT_TRUE(p.residency(t.a).discarded);
  EXPECT_TRUE(p.validate());
  EXPECT_THROW((void)p.acquire_host(t.a, access_mode::read), logic_error);
  fill(p, t.a, 9, 1);  // new contents (write_discard)
  auto const again = push_out(p, 200);
  EXPECT_EQ(p.stats().evicted_recompute, 1U) << "no recipe any more: written back, not dropped";
  EXPECT_TRUE(check(p, t.a, 9, 1));
  EXPECT_TRUE(check(p, t.x, 1, 1));
  EXPECT_TRUE(p.validate());
}

// Discarding a recipe's input: the recipes that read it end first, and a dependent that
// was dropped is rebuilt from the input's bytes before they are declared dead.
TEST(PoolRecompute, DiscardingAnInputRebuildsItsDroppedDependentsFirst)
{
  dropped_pair f;
  pool& p = f.p;
  pair_of const& t = f.t;
  counted_recipe const& r = f.r;
  ASSERT_EQ(p.stats().evicted_recompute, 1U);
  p.discard(t.x);
  EXPECT_EQ(r.calls->load(), 1) << "a was rebuilt while x still held its bytes";
  EXPECT_TRUE(p.residency(t.x).discarded);
  EXPECT_FALSE(p.residency(t.a).discarded);
  auto const again = push_out(p, 200);
  EXPECT_EQ(p.stats().evicted_recompute, 1U) << "a's recipe ended: written back, not dropped";
  EXPECT_TRUE(holds_derived(p, t.a, 1, 1));
  EXPECT_EQ(r.calls->load(), 1);
  EXPECT_TRUE(p.validate());
}

TEST(PoolRecompute, CheapRecipeIsDroppedInsteadOfWrittenBackAndRebuiltOnUse)
{
  for (bool const on_device : {false, true}) {
    SCOPED_TRACE(on_device ? "device recipe" : "host recipe");
    pool p{device_host()};
    pair_of const t = make_pair_of(p);
    counted_recipe r;
    p.set_recompute(t.a, r.make(t.x, 1e-9, on_device));
    EXPECT_TRUE(p.residency(t.a).recomputable);
    auto const keep = push_out(p);
    pool_stats st = p.stats();
    EXPECT_EQ(st.evicted_recompute, 1U);
    EXPECT_EQ(st.evicted_recompute_bytes, kT);
    EXPECT_EQ(st.recipes, 1U);
    EXPECT_TRUE(p.residency(t.a).dropped_for_recompute);
    EXPECT_TRUE(p.residency(t.a).copies.empty());
    ASSERT_TRUE(p.validate());
    EXPECT_EQ(r.calls->load(), 0);
    std::uint64_t const misses = st.misses;
    std::uint64_t const hits = st.hits;
    EXPECT_TRUE(holds_derived_on_device(p, t.a, 1, 1));
    EXPECT_EQ(r.calls->load(), 1);
    st = p.stats();
    EXPECT_EQ(st.misses + st.hits, misses + hits + 1);  // the recipe's own leases count as no acquire
    EXPECT_EQ(st.rebuilds, 1U);
    EXPECT_FALSE(p.residency(t.a).dropped_for_recompute);
    EXPECT_TRUE(p.residency(t.a).recomputable);  // a read keeps the recipe
    EXPECT_TRUE(holds_derived(p, t.a, 1, 1));
    EXPECT_EQ(r.calls->load(), 1);  // resident now: no second rebuild
    EXPECT_TRUE(check(p, t.x, 1, 1));  // the input is untouched
    ASSERT_TRUE(p.validate());
    std::string const sum = p.summary();
    EXPECT_NE(sum.find("for recompute 1 (256.0 KiB); rebuilt 1 (failed 0"), std::string::npos) << sum;
    EXPECT_NE(p.summary_json().find("\"evicted_recompute\":1"), std::string::npos) << p.summary_json();
  }
}

// A device recipe rebuilds into the device tier only: the rebuilt copy is dirty there and
// is dropped again at the next eviction. A host recipe rebuilds into a host tier, whose
// copy stays valid: the device copy made from it is clean, and dropped as any clean copy.
TEST(PoolRecompute, DeviceRecipesDropAgainAfterUseHostRecipesLeaveAHostCopy)
{
  for (bool const on_device : {true, false}) {
    SCOPED_TRACE(on_device ? "device recipe" : "host recipe");
    pool p{device_host()};
    pair_of const t = make_pair_of(p);
    counted_recipe r;
    p.set_recompute(t.a, r.make(t.x, 1e-9, on_device));
    for (std::uint64_t round = 0; round < 3; ++round) {
      auto const keep = push_out(p, 100 + 10 * round);
      bool const dropped = p.residency(t.a).dropped_for_recompute;
      EXPECT_EQ(dropped, on_device || round == 0) << round;
      EXPECT_TRUE(holds_derived_on_device(p, t.a, 1, 1)) << round;
      ASSERT_TRUE(p.validate());
    }
    EXPECT_EQ(r.calls->load(), on_device ? 3 : 1);
    EXPECT_EQ(p.stats().evicted_recompute, on_device ? 3U : 1U);
    EXPECT_TRUE(holds_derived(p, t.a, 1, 1));
  }
}

TEST(PoolRecompute, DearRecipeIsWrittenBack)
{
  dropped_pair f{10.0};  // 10 s: far more than a 256 KiB round trip
  pool& p = f.p;
  pair_of const& t = f.t;
  counted_recipe const& r = f.r;
  pool_stats const st = p.stats();
  EXPECT_EQ(st.evicted_recompute, 0U);
  EXPECT_GE(st.evicted_moved, 1U);
  EXPECT_FALSE(p.residency(t.a).dropped_for_recompute);
  EXPECT_TRUE(holds_derived_on_device(p, t.a, 1, 1));
  EXPECT_EQ(r.calls->load(), 0);
}

TEST(PoolRecompute, RecomputeOffNeverDrops)
{
  pool_options o = device_host();
  o.actions.recompute = false;
  pool p{o};
  pair_of const t = make_pair_of(p);
  counted_recipe r;
  p.set_recompute(t.a, r.make(t.x, 0.0));
  auto const keep = push_out(p);
  EXPECT_EQ(p.stats().evicted_recompute, 0U);
  EXPECT_TRUE(holds_derived_on_device(p, t.a, 1, 1));
  EXPECT_EQ(r.calls->load(), 0);
}

// With no room below (the host tier full of leased tensors), a tensor with a recipe is
// dropped, however dear, rather than failing the request that needs the room.
TEST(PoolRecompute, NoRoomBelowMakesTheRecipeTheLastResort)
{
  pool p{device_host(512_KiB)};
  pair_of const t = make_pair_of(p);
  tensor y = p.allocate(kT, {.preferred_tier = tier_id{1}});
  fill(p, y, 2, 1);
  counted_recipe r;
  p.set_recompute(t.a, r.make(t.x, 10.0, true));  // rebuilt on the device: the host tier stays full
  {
    lease hx = p.acquire_host(t.x, access_mode::read);  // the host tier: x and y, both leased
    lease hy = p.acquire_host(y, access_mode::read);
    tensor b = p.allocate(kT, {.preferred_tier = tier_id{0}});
    lease db = p.acquire(b, access_mode::write_discard);
    std::vector<tensor> more;
    for (int i = 0; i < 3; ++i) { more.push_back(p.allocate(kT, {.preferred_tier = tier_id{0}})); }
    EXPECT_EQ(p.stats().evicted_recompute, 1U);
  }
  EXPECT_TRUE(holds_derived_on_device(p, t.a, 1, 1));
  EXPECT_TRUE(check(p, y, 2, 1));
  ASSERT_TRUE(p.validate());
}

TEST(PoolRecompute, AWriteEndsTheRecipe)
{
  pool p{device_host()};
  pair_of const t = make_pair_of(p);
  counted_recipe r;
  p.set_recompute(t.a, r.make(t.x, 1e-9));
  {
    lease d = p.acquire(t.a, access_mode::read_write);
    write_pattern(d.data(), d.bytes(), 7, 2);
  }
  pool_stats st = p.stats();
  EXPECT_EQ(st.recipes, 0U);
  EXPECT_EQ(st.recipes_ended, 1U);
  EXPECT_FALSE(p.residency(t.a).recomputable);
  auto const keep = push_out(p);
  st = p.stats();
  EXPECT_EQ(st.evicted_recompute, 0U);  // written back: the recipe no longer gives its bytes
  EXPECT_TRUE(check(p, t.a, 7, 2));
  EXPECT_EQ(r.calls->load(), 0);
}

TEST(PoolRecompute, ReadWriteOfADroppedTensorRebuildsFirst)
{
  dropped_pair f;
  pool& p = f.p;
  pair_of const& t = f.t;
  counted_recipe const& r = f.r;
  ASSERT_TRUE(p.residency(t.a).dropped_for_recompute);
  {
    lease h = p.acquire_host(t.a, access_mode::read_write);  // reads the rebuilt bytes
    std::vector<std::uint8_t> src(kT);
    write_pattern(src.data(), kT, 1, 1);
    std::vector<std::uint8_t> want(kT);
    derive(want.data(), src.data(), kT);
    EXPECT_EQ(std::memcmp(h.data(), want.data(), kT), 0);
  }
  EXPECT_EQ(r.calls->load(), 1);
  EXPECT_FALSE(p.residency(t.a).recomputable);
}

TEST(PoolRecompute, WriteDiscardOfADroppedTensorSkipsTheRebuild)
{
  dropped_pair f;
  pool& p = f.p;
  pair_of const& t = f.t;
  counted_recipe const& r = f.r;
  ASSERT_TRUE(p.residency(t.a).dropped_for_recompute);
  fill(p, t.a, 9, 3);
  EXPECT_EQ(r.calls->load(), 0);
  EXPECT_FALSE(p.residency(t.a).recomputable);
  EXPECT_TRUE(check(p, t.a, 9, 3));
  ASSERT_TRUE(p.validate());
}

// Writing or freeing the input first rebuilds what was dropped from the old input's bytes.
TEST(PoolRecompute, WritingOrFreeingTheInputRebuildsDependentsFirst)
{
  for (bool const free_it : {false, true}) {
    SCOPED_TRACE(free_it ? "free" : "write");
    pool p{device_host()};
    pair_of t = make_pair_of(p);
    counted_recipe r;
    p.set_recompute(t.a, r.make(t.x, 1e-9));
    auto const keep = push_out(p);
    ASSERT_TRUE(p.residency(t.a).dropped_for_recompute);
    if (free_it) {
      p.free(t.x);
    } else {
      fill(p, t.x, 5, 5);
    }
    EXPECT_EQ(r.calls->load(), 1);
    EXPECT_FALSE(p.residency(t.a).recomputable);
    EXPECT_EQ(p.stats().recipes, 0U);
    EXPECT_TRUE(holds_derived(p, t.a, 1, 1));  // from x's bytes before the write / free
    ASSERT_TRUE(p.validate());
  }
}

TEST(PoolRecompute, AFailingRecipeLeavesTheTensorDroppedAndCanBeRetried)
{
  pool p{device_host()};
  pair_of const t = make_pair_of(p);
  auto fail_first = std::make_shared<std::atomic<bool>>(true);
  recompute_options o;
  o.fn = [fail_first](recompute_call const& call) {
    if (fail_first->exchange(false)) { throw std::runtime_error("recipe failed on purpose"); }
    derive(call.out, call.inputs[0], call.bytes);
  };
  o.inputs = {t.x.id()};
  o.cost_seconds = 0.0;
  p.set_recompute(t.a, o);
  auto const keep = push_out(p);
  try {
    lease d = p.acquire(t.a, access_mode::read);
    ADD_FAILURE() << "a failing recipe gave a lease";
  } catch (std::runtime_error const& e) {
    EXPECT_STREQ(e.what(), "recipe failed on purpose");
  }
  EXPECT_EQ(p.stats().rebuild_failures, 1U);
  EXPECT_TRUE(p.residency(t.a).dropped_for_recompute);
  ASSERT_TRUE(p.validate());
  EXPECT_TRUE(holds_derived_on_device(p, t.a, 1, 1));
  EXPECT_EQ(p.stats().rebuilds, 1U);
}

TEST(PoolRecompute, ClearRecomputeRebuildsADroppedTensor)
{
  dropped_pair f;
  pool& p = f.p;
  pair_of const& t = f.t;
  counted_recipe const& r = f.r;
  p.clear_recompute(t.a);
  EXPECT_EQ(r.calls->load(), 1);
  EXPECT_FALSE(p.residency(t.a).dropped_for_recompute);
  EXPECT_FALSE(p.residency(t.a).recomputable);
  p.clear_recompute(t.a);  // no recipe: nothing
  EXPECT_TRUE(holds_derived(p, t.a, 1, 1));
}

void expect_logic_error(auto&& f, std::string const& part)
{
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(PoolRecompute, MisuseIsRefusedWithReasons)
{
  pool p{device_host()};
  pair_of const t = make_pair_of(p);
  counted_recipe r;
  recompute_options none;
  none.inputs = {t.x.id()};
  expect_logic_error([&] { p.set_recompute(t.a, none); }, "no recompute function");
  expect_logic_error([&] { p.set_recompute(t.a, r.make(t.a, 0.0)); }, "is the tensor itself");
  recompute_options unknown = r.make(t.x, 0.0);
  unknown.inputs = {tensor_id{999999}};
  expect_logic_error([&] { p.set_recompute(t.a, unknown); }, "not a live tensor of this pool");
  recompute_options many = r.make(t.x, 0.0);
  many.inputs.assign(65, t.x.id());
  expect_logic_error([&] { p.set_recompute(t.a, many); }, "65 inputs (at most 64)");
  p.set_recompute(t.a, r.make(t.x, 0.0));
  tensor b = p.allocate(kT);
  expect_logic_error([&] { p.set_recompute(b, r.make(t.a, 0.0)); }, "has a recipe itself");
  expect_logic_error([&] { p.set_recompute(t.x, r.make(b, 0.0)); }, "is an input of another tensor's recipe");
  tensor empty;
  expect_logic_error([&] { p.set_recompute(empty, r.make(t.x, 0.0)); }, "empty tensor handle");
  pool other{device_host()};
  tensor foreign = other.allocate(kT);
  expect_logic_error([&] { p.set_recompute(foreign, r.make(t.x, 0.0)); }, "belongs to another pool");
  EXPECT_EQ(p.stats().recipes, 1U);  // the refused calls changed nothing
  ASSERT_TRUE(p.validate());
}

TEST(PoolRecompute, CloseLetsGoOfTheRecipes)
{
  pool p{device_host()};
  pair_of const t = make_pair_of(p);
  auto held = std::make_shared<int>(1);  // what a recipe's function holds (a Python closure: the pool)
  recompute_options o;
  o.fn = [held](recompute_call const&) {};
  o.inputs = {t.x.id()};
  p.set_recompute(t.a, std::move(o));
  EXPECT_EQ(held.use_count(), 2);
  p.close();
  EXPECT_EQ(held.use_count(), 1);
}

TEST(PoolRecompute, NegativeBandwidthIsRefused)
{
  pool_options o = device_host();
  o.actions.h2d_bytes_per_s = -1.0;
  expect_logic_error([&] { pool p{o}; }, "pool_options::actions.h2d_bytes_per_s");
}

// 1 MiB device and host tiers over a 64 MiB lz4-compressed storage tier ("packed", tier 2).
pool_options over_a_compressed_tier()
{
  pool_options o = small_tiers(make_sim(), 1_MiB, 0, 1_MiB);
  o.publish.enabled = false;
  tier_options st{.kind = tier_kind::storage, .capacity_bytes = 64_MiB, .chunk_bytes = 16_MiB, .name = "packed"};
  st.storage.engine = storage_engine::compressed;
  st.storage.codec = codec_kind::lz4;
  o.tiers.push_back(std::move(st));
  return o;
}

// Compressed tiers are passed over for a tensor marked not compressible; the others go
// there and are counted as compressed.
TEST(PoolEvictionActions, CompressedTierOnlyForCompressibleTensors)
{
  pool p{over_a_compressed_tier()};
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 16; ++i) {  // 4 MiB through 2 MiB of memory tiers
    ts.push_back(p.allocate(kT, {.compressible = i % 8 != 0}));  // two stay in the memory tiers
    fill(p, ts.back(), i, 1);
  }
  for (std::uint64_t i = 0; i < ts.size(); ++i) {
    tensor_residency const r = p.residency(ts[i]);
    bool in_packed = false;
    for (auto const& c : r.copies) { in_packed = in_packed || c.tier == tier_id{2}; }
    if (i % 8 == 0) { EXPECT_FALSE(in_packed) << i; }
    EXPECT_TRUE(check(p, ts[i], i, 1)) << i;
  }
  pool_stats const s = p.stats();
  EXPECT_GT(s.evicted_compressed, 0U);
  std::uint64_t evictions = 0;
  for (auto const& t : s.tiers) { evictions += t.evictions; }
  EXPECT_EQ(s.evicted_dropped + s.evicted_moved + s.evicted_compressed + s.evicted_recompute, evictions);
  ASSERT_TRUE(p.validate());
}

// A tensor that may not be compressed, whose only copy is in the host tier above a
// compressed one, stays there (nothing may hold it below) — unless it was discarded: its
// bytes are dead, so it leaves with nothing written, and the host tier makes room.
TEST(PoolEvictionActions, ADiscardedTensorLeavesAboveOnlyCompressedTiers)
{
  for (bool const discarded : {false, true}) {
    SCOPED_TRACE(discarded ? "discarded" : "kept");
    pool p{over_a_compressed_tier()};
    tensor const t = p.allocate(kT, {.preferred_tier = tier_id{1}, .compressible = false});
    fill(p, t, 7, 1);  // its only copy: the host tier's
    if (discarded) { p.discard(t); }
    std::vector<tensor> ts;
    for (std::uint64_t i = 0; i < 4; ++i) {  // a full host tier's worth beside it
      ts.push_back(p.allocate(kT, {.preferred_tier = tier_id{1}}));
      fill(p, ts.back(), i, 1);
    }
    tensor_residency const r = p.residency(t);
    EXPECT_EQ(r.copies.empty(), discarded);
    EXPECT_EQ(p.stats().evicted_discarded, discarded ? 1U : 0U);
    if (!discarded) { EXPECT_TRUE(check(p, t, 7, 1)); }
    for (std::uint64_t i = 0; i < ts.size(); ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
    ASSERT_TRUE(p.validate());
  }
}

// Write-backs go to the cheapest lower tier first: below the host tier, a file on the
// drive (GB/s) before a compressed tier (lz4, a fraction of a GB/s), though the compressed
// tier comes first in the pool's order; actions.by_cost = false keeps that order.
TEST(PoolEvictionActions, WriteBacksGoToTheCheapestTierFirst)
{
  for (bool const by_cost : {true, false}) {
    SCOPED_TRACE(by_cost ? "by cost" : "fastest first");
    pool_options o = small_tiers(make_sim(), 1_MiB, 0, 1_MiB);
    o.publish.enabled = false;
    o.actions.by_cost = by_cost;
    tier_options packed{.kind = tier_kind::storage, .capacity_bytes = 64_MiB, .chunk_bytes = 16_MiB, .name = "packed"};
    packed.storage.engine = storage_engine::compressed;
    packed.storage.codec = codec_kind::lz4;
    o.tiers.push_back(std::move(packed));
    tier_options disk{.kind = tier_kind::storage, .capacity_bytes = 64_MiB, .chunk_bytes = 16_MiB, .name = "disk"};
    disk.storage.path = std::filesystem::temp_directory_path().string();
    disk.storage.engine = storage_engine::pread;
    o.tiers.push_back(std::move(disk));
    pool p{o};
    std::vector<tensor> ts;
    // 1.75 MiB, of which 768 KiB goes below the memory tiers: less than the MiB after
    // which a storage tier is priced by its own measured rates (those depend on the drive
    // the test runs on; a slow first write could make the disk dearer than lz4).
    for (std::uint64_t i = 0; i < 7; ++i) {
      ts.push_back(p.allocate(kT));
      fill(p, ts.back(), i, 1);
    }
    pool_stats const s = p.stats();
    if (by_cost) {
      EXPECT_EQ(s.evicted_compressed, 0U);
      EXPECT_EQ(s.tiers[3].bytes_written, 768_KiB);
    } else {
      EXPECT_EQ(s.evicted_compressed, 3U);
      EXPECT_EQ(s.tiers[3].bytes_written, 0U);
    }
    for (std::uint64_t i = 0; i < ts.size(); ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
    ASSERT_TRUE(p.validate());
  }
}

// The sim backend's link models, as the pool prices copies with them (sim_backend::links).
TEST(PoolEvictionActions, SimBackendGivesItsResolvedLinks)
{
  sim_backend virt(sim_options{.clock = sim_clock_mode::virtual_clock});
  EXPECT_EQ(virt.links(), sim_links::from_host_link(link_model::pcie4()));
  sim_backend wall(sim_options{.clock = sim_clock_mode::wall});
  EXPECT_EQ(wall.links(), sim_links::unthrottled());
  sim_options o;
  o.links = sim_links::from_host_link(link_model::pcie5());
  EXPECT_EQ(sim_backend(o).links().h2d, link_model::pcie5());
}

// Threads (more than cores) read their own dropped-and-rebuilt tensors while the device
// tier keeps evicting: every read sees the recipe's bytes.
TEST(PoolRecomputeThreads, ConcurrentDropsAndRebuildsKeepEveryByte)
{
  // 3.5 MiB: each thread leases at most 512 KiB at once (a rebuild: x and a), while the
  // threads' tensors (a, x, two scratch each) are 6 MiB: the tier keeps evicting.
  pool_options o = small_tiers(make_sim(), 3584_KiB, 0, 32_MiB);
  o.publish.enabled = false;
  pool p{o};
  constexpr int kThreads = 6;
  std::vector<pair_of> pairs;
  counted_recipe r;
  for (int i = 0; i < kThreads; ++i) {  // device recipes: a rebuilt copy is dirty, dropped again
    pairs.push_back(make_pair_of(p, static_cast<std::uint64_t>(i + 1)));
    p.set_recompute(pairs.back().a, r.make(pairs.back().x, 1e-9, true));
  }
  // Every thread's scratch is made and written before the threads start: 6 MiB live on a
  // 3.5 MiB tier, and the pairs, used least recently, are the first victims, so some `a`
  // is dropped and rebuilt however the threads are scheduled (made inside the threads,
  // run one after another on a busy machine, they fitted and nothing was evicted).
  std::vector<std::vector<tensor>> scratches(kThreads);
  for (auto& sc : scratches) {
    for (int k = 0; k < 2; ++k) {
      sc.push_back(p.allocate(kT, {.preferred_tier = tier_id{0}}));
      lease d = p.acquire(sc.back(), access_mode::write_discard);
      std::memset(d.data(), 0xee, d.bytes());
    }
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      try {
        std::vector<tensor> const& scratch = scratches[static_cast<std::size_t>(i)];
        for (int k = 0; k < 30; ++k) {
          for (tensor const& s : scratch) {  // churn: dirty copies the tier must make room for
            lease d = p.acquire(s, access_mode::write_discard);
            std::memset(d.data(), k, d.bytes());
          }
          bool const ok = k % 5 != 4 ? holds_derived_on_device(p, pairs[static_cast<std::size_t>(i)].a,
                                                               static_cast<std::uint64_t>(i + 1), 1)
                                     : holds_derived(p, pairs[static_cast<std::size_t>(i)].a,
                                                     static_cast<std::uint64_t>(i + 1), 1);
          if (!ok) { bad.fetch_add(1); }
        }
      } catch (std::exception const& e) {
        ADD_FAILURE() << e.what();
        bad.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) { th.join(); }
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(p.stats().rebuilds, 0U);
  ASSERT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

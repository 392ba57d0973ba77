// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_snapshot_tests.cpp — pool::residency() (after allocate, a host write, device
// acquires for read and write, eviction, a prefetch in flight, demotion, with leases
// live), printable ids, pool::snapshot() (its tensors and blocks agree with stats() and
// fits(), the blocks tile every chunk, every used block names a tensor whose copy it is),
// its JSON (parses, names the tensors, reads back equal; corrupt input is a typed error),
// the layout SVG, arena::for_each_block, and snapshots taken while more threads than cores
// use the pool (no crash, every snapshot whole, validate() true after).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <tierpool/arena.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/snapshot.hpp>
#include <tierpool/tierpool.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "unit/pool_test_util.hpp"

namespace tierpool::test {
namespace {

constexpr tier_id kDevice{0};
constexpr tier_id kPinned{1};
constexpr tier_id kHost{2};

/// The copy of `r` in tier `t`; a test failure (and a blank copy) when it holds none there.
tensor_copy const& copy(tensor_residency const& r, tier_id t)
{
  static tensor_copy const none{};
  tensor_copy const* c = r.copy_in(t);
  if (c == nullptr) {
    ADD_FAILURE() << "tensor " << r.id << " holds no copy in tier " << t;
    return none;
  }
  return *c;
}

// ---- printable ids ----------------------------------------------------------------------

TEST(TensorIdPrinting, ToStringAndStreamGiveTheNumber)
{
  EXPECT_EQ(to_string(tensor_id{42}), "42");
  EXPECT_EQ(to_string(tier_id{2}), "2");
  std::ostringstream os;
  os << tensor_id{7} << ' ' << tier_id{1};
  EXPECT_EQ(os.str(), "7 1");
#if defined(__cpp_lib_format)
  EXPECT_EQ(std::format("{} {:>3}", tensor_id{9}, tier_id{1}), "9   1");
#endif
}

// ---- residency ---------------------------------------------------------------------------

TEST(PoolResidency, AfterAllocateTheDeviceCopyIsHomeAndDirty)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  tensor t = p.allocate(64_KiB, {.name = "w"});
  tensor_residency const r = p.residency(t);
  EXPECT_EQ(r.id, t.id());
  EXPECT_EQ(r.bytes, 64_KiB);
  EXPECT_EQ(r.home, kDevice);
  ASSERT_EQ(r.copies.size(), 1U);
  EXPECT_EQ(r.copies[0].tier, kDevice);
  EXPECT_TRUE(r.copies[0].valid);
  EXPECT_TRUE(r.copies[0].dirty);  // slower tiers exist and hold none of it
  EXPECT_EQ(r.copies[0].block_bytes, 64_KiB);
  EXPECT_TRUE(r.dirty);
  EXPECT_FALSE(r.in_flight);
  EXPECT_FALSE(r.leased());
  EXPECT_EQ(r.access_count, 1U);
  EXPECT_LE(r.last_use, be->now());
  EXPECT_TRUE(r.valid_in(kDevice));
  EXPECT_FALSE(r.valid_in(kPinned));
  EXPECT_EQ(r.copy_in(kHost), nullptr);
}

TEST(PoolResidency, HostWriteMovesHomeToTheHostTierWithItsLease)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  tensor t = p.allocate(64_KiB);
  {
    lease h = p.acquire_host(t, access_mode::write_discard);
    write_pattern(h.data(), h.bytes(), 1, 1);
    tensor_residency const r = p.residency(t);
    EXPECT_EQ(r.home, kPinned);  // the fastest host-accessible tier
    EXPECT_TRUE(r.leased());
    EXPECT_EQ(r.leases, 1U);
    EXPECT_EQ(r.write_leases, 1U);
    ASSERT_NE(r.copy_in(kPinned), nullptr);
    EXPECT_EQ(copy(r, kPinned).leases, 1U);
    EXPECT_TRUE(copy(r, kPinned).dirty);
    ASSERT_NE(r.copy_in(kDevice), nullptr);
    EXPECT_FALSE(copy(r, kDevice).valid);  // stale: the host copy is newer
    EXPECT_FALSE(copy(r, kDevice).dirty);
    EXPECT_EQ(copy(r, kDevice).leases, 0U);
    EXPECT_TRUE(r.dirty);
  }
  tensor_residency const r = p.residency(t);
  EXPECT_FALSE(r.leased());
  EXPECT_EQ(r.write_leases, 0U);
  EXPECT_EQ(r.access_count, 2U);
  EXPECT_TRUE(p.validate());
}

TEST(PoolResidency, DeviceReadKeepsTheHostCopyDeviceWriteMakesItStale)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(64_KiB, {.preferred_tier = kPinned});
  fill(p, t, 3, 1);
  {
    lease l = p.acquire(t, access_mode::read, s);
    tensor_residency const r = p.residency(t);
    EXPECT_EQ(r.home, kDevice);
    EXPECT_EQ(r.leases, 1U);
    EXPECT_EQ(r.write_leases, 0U);
    ASSERT_NE(r.copy_in(kDevice), nullptr);
    EXPECT_EQ(copy(r, kDevice).leases, 1U);
    EXPECT_TRUE(r.valid_in(kDevice));
    EXPECT_TRUE(r.valid_in(kPinned));
    EXPECT_FALSE(copy(r, kDevice).dirty);  // the pinned copy below holds the same bytes
    EXPECT_TRUE(copy(r, kPinned).dirty);   // ... and nothing below it does
    EXPECT_FALSE(r.dirty);                    // evicting the home copy needs no write-back
  }
  p.synchronize(s);
  EXPECT_FALSE(p.residency(t).in_flight);
  {
    lease l = p.acquire(t, access_mode::read_write, s);
    tensor_residency const r = p.residency(t);
    EXPECT_EQ(r.home, kDevice);
    EXPECT_EQ(r.write_leases, 1U);
    EXPECT_FALSE(r.valid_in(kPinned));  // stale now
    EXPECT_TRUE(r.dirty);
  }
  p.synchronize(s);
  EXPECT_TRUE(check(p, t, 3, 1));
  EXPECT_TRUE(p.validate());
}

TEST(PoolResidency, EvictionMovesHomeDown)
{
  four_resident f;  // t0..t3 fill the 1 MiB device tier, t4..t7 in pinned_host
  tensor_residency const before = f.p.residency(f.t[0]);
  EXPECT_EQ(before.home, kDevice);
  for (std::size_t i = 4; i < 8; ++i) { lease l = f.p.acquire(f.t[i], access_mode::read, f.s); }  // evicts t0..t3
  f.p.synchronize(f.s);
  tensor_residency const after = f.p.residency(f.t[0]);
  EXPECT_NE(after.home, kDevice);
  EXPECT_EQ(after.copy_in(kDevice), nullptr);
  EXPECT_TRUE(after.valid_in(after.home));
  EXPECT_EQ(f.p.residency(f.t[4]).home, kDevice);
  EXPECT_TRUE(check(f.p, f.t[0], 0, 1));
  EXPECT_TRUE(f.p.validate());
}

TEST(PoolResidency, PrefetchIsInFlightUntilItsCopyCompletes)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);  // copies complete only when time moves
  pool p{small_tiers(be)};
  tensor t = p.allocate(256_KiB, {.preferred_tier = kHost});
  fill(p, t, 5, 1);
  p.prefetch(t);
  tensor_residency const r = p.residency(t);
  EXPECT_TRUE(r.in_flight);
  ASSERT_NE(r.copy_in(kDevice), nullptr);
  EXPECT_TRUE(copy(r, kDevice).in_flight);
  EXPECT_TRUE(copy(r, kDevice).valid);
  EXPECT_FALSE(copy(r, kHost).in_flight);
  EXPECT_EQ(r.home, kDevice);
  EXPECT_FALSE(r.dirty);  // the host copy holds the bytes
  ASSERT_EQ(be->advance_by(1'000'000'000), status::ok);
  tensor_residency const done = p.residency(t);
  EXPECT_FALSE(done.in_flight);
  EXPECT_FALSE(copy(done, kDevice).in_flight);
  EXPECT_TRUE(done.prefetched);  // no acquire used it yet
  EXPECT_TRUE(check(p, t, 5, 1));
  EXPECT_TRUE(p.validate());
}

TEST(PoolResidency, DemoteDropsTheCopiesAbove)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  tensor t = p.allocate(64_KiB);
  fill(p, t, 6, 1);
  p.demote(t, kHost);
  tensor_residency r = p.residency(t);
  EXPECT_EQ(r.home, kHost);
  ASSERT_EQ(r.copies.size(), 1U);
  EXPECT_FALSE(r.dirty);  // the slowest tier: nothing below to write back to
  p.demote(t, kHost);
  p.prefetch(t, kPinned);
  EXPECT_TRUE(check(p, t, 6, 1));  // reads the pinned copy, once its copy is done
  r = p.residency(t);
  EXPECT_EQ(r.home, kPinned);
  EXPECT_FALSE(r.in_flight);
  EXPECT_FALSE(r.dirty);
}

TEST(PoolResidency, MisuseIsATypedError)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  pool q{small_tiers(make_sim())};
  tensor t = p.allocate(4_KiB);
  tensor empty;
  EXPECT_THROW((void)p.residency(empty), logic_error);
  EXPECT_THROW((void)q.residency(t), logic_error);
  t = tensor{};
  p.close();
  EXPECT_THROW((void)p.snapshot(), logic_error);
}

TEST(PoolResidency, LastUseFollowsAcquires)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  tensor a = p.allocate(4_KiB);
  tensor b = p.allocate(4_KiB);
  ASSERT_EQ(be->advance_by(1000), status::ok);
  { lease l = p.acquire_host(b, access_mode::write_discard); }  // a miss: the clock is read
  EXPECT_EQ(p.residency(a).last_use, 0U);
  EXPECT_EQ(p.residency(b).last_use, 1000U);
  p.synchronize(s);
  ASSERT_EQ(be->advance_by(1000), status::ok);
  { lease l = p.acquire(b, access_mode::read, s); }  // a miss again (b is newest on the host)
  EXPECT_GE(p.residency(b).last_use, 2000U);
  EXPECT_GT(p.residency(b).access_count, p.residency(a).access_count);
}

// ---- snapshots ---------------------------------------------------------------------------

/// Every block of every tier tiles its chunk; used blocks and tensor copies match one to
/// one; the tier figures are the sums of its blocks. Reports through gtest.
void expect_whole(pool_snapshot const& s)
{
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::pair<tensor_id, std::uint64_t>> copies;  // (tier, offset)
  for (tensor_snapshot const& t : s.tensors) {
    ASSERT_FALSE(t.copies.empty()) << "tensor " << t.id;
    EXPECT_TRUE(t.valid_in(t.home)) << "tensor " << t.id;
    for (tensor_copy const& c : t.copies) {
      bool const fresh = copies.emplace(std::make_pair(static_cast<std::uint32_t>(c.tier), c.offset),
                                        std::make_pair(t.id, c.block_bytes))
                           .second;
      EXPECT_TRUE(fresh) << "two copies at one offset, tensor " << t.id;
    }
  }
  std::size_t used_blocks = 0;
  for (tier_snapshot const& t : s.tiers) {
    std::uint64_t used = 0;
    std::uint64_t free = 0;
    std::uint64_t pending = 0;
    std::uint64_t largest = 0;
    std::vector<std::uint64_t> next(t.chunks.size());
    std::vector<std::uint64_t> covered(t.chunks.size(), 0);
    for (std::size_t c = 0; c < t.chunks.size(); ++c) { next[c] = t.chunks[c].offset; }
    std::uint64_t prev_end = 0;
    for (block_snapshot const& b : t.blocks) {
      ASSERT_LT(b.chunk, t.chunks.size());
      EXPECT_GE(b.offset, prev_end) << t.name << ": blocks overlap or are out of order";
      EXPECT_EQ(b.offset, next[b.chunk]) << t.name << ": a gap in chunk " << b.chunk;
      EXPECT_EQ(b.chunk_offset, b.offset - t.chunks[b.chunk].offset);
      next[b.chunk] = b.offset + b.bytes;
      covered[b.chunk] += b.bytes;
      prev_end = b.offset + b.bytes;
      switch (b.state) {
        case block_state::used: {
          used += b.bytes;
          ++used_blocks;
          auto const it = copies.find({static_cast<std::uint32_t>(t.tier), b.offset});
          ASSERT_NE(it, copies.end()) << t.name << ": a used block at " << b.offset << " that no tensor holds";
          EXPECT_EQ(it->second.first, b.tensor);
          EXPECT_EQ(it->second.second, b.bytes);
          break;
        }
        case block_state::free:
          free += b.bytes;
          largest = std::max(largest, b.bytes);
          break;
        case block_state::pending: pending += b.bytes; break;
        case block_state::released: EXPECT_TRUE(t.chunks[b.chunk].released); break;
      }
    }
    for (std::size_t c = 0; c < t.chunks.size(); ++c) {
      EXPECT_EQ(covered[c], t.chunks[c].bytes) << t.name << ": chunk " << c << " not covered";
    }
    EXPECT_EQ(used, t.used_bytes) << t.name;
    EXPECT_EQ(free, t.free_bytes) << t.name;
    EXPECT_EQ(pending, t.pending_bytes) << t.name;
    EXPECT_EQ(largest, t.largest_free_block) << t.name;
  }
  EXPECT_EQ(used_blocks, copies.size()) << "a tensor copy without its block";
}

/// A pool with tensors in every state: evicted, leased, dirty, stale copies, freed holes.
struct busy_pool {
  std::shared_ptr<sim_backend> be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  std::vector<tensor> t;
  busy_pool()
  {
    for (std::uint64_t i = 0; i < 12; ++i) {
      t.push_back(p.allocate((1 + i % 3) * 64_KiB, {.name = "t" + std::to_string(i), .tenant = static_cast<std::uint32_t>(i % 2)}));
      fill(p, t.back(), i, 1);
    }
    for (std::size_t i = 0; i < 12; i += 2) { lease l = p.acquire(t[i], access_mode::read_write, s); }
    p.synchronize(s);
    t[3] = tensor{};  // a hole
    t[7] = tensor{};
  }
};

TEST(PoolSnapshot, AgreesWithStatsAndFits)
{
  busy_pool b;
  lease held = b.p.acquire(b.t[0], access_mode::read, b.s);
  pool_snapshot const s = b.p.snapshot();
  pool_stats const st = b.p.stats();
  expect_whole(s);
  EXPECT_EQ(s.backend, "sim");
  EXPECT_EQ(s.version, snapshot_schema_version);
  ASSERT_EQ(s.tensors.size(), st.tensors);
  std::uint64_t bytes = 0;
  for (tensor_snapshot const& t : s.tensors) { bytes += t.bytes; }
  EXPECT_EQ(bytes, st.tensor_bytes);
  ASSERT_EQ(s.tiers.size(), st.tiers.size());
  for (std::size_t k = 0; k < s.tiers.size(); ++k) {
    tier_snapshot const& t = s.tiers[k];
    EXPECT_EQ(t.name, st.tiers[k].name);
    EXPECT_EQ(t.capacity_bytes, st.tiers[k].capacity_bytes);
    EXPECT_EQ(t.reserved_bytes, st.tiers[k].reserved_bytes);
    EXPECT_EQ(static_cast<std::int64_t>(t.used_bytes), st.tiers[k].used_bytes.current);
    EXPECT_EQ(t.pending_bytes, st.tiers[k].in_flight_bytes);
    EXPECT_EQ(t.pinned_bytes, st.tiers[k].pinned_bytes);
    EXPECT_EQ(t.largest_free_block, st.tiers[k].largest_free_block);
    fit_report const f = b.p.fits(64_KiB, t.tier);
    EXPECT_EQ(t.free_bytes, f.free_bytes);
    std::uint64_t resident = 0;
    for (tensor_snapshot const& ts : s.tensors) { resident += ts.copy_in(t.tier) != nullptr ? 1U : 0U; }
    EXPECT_EQ(resident, st.tiers[k].resident_tensors);
  }
  // The names, tenants and the live lease.
  tensor_snapshot const* t0 = s.find(b.t[0].id());
  ASSERT_NE(t0, nullptr);
  EXPECT_EQ(t0->name, "t0");
  EXPECT_TRUE(t0->leased());
  EXPECT_EQ(t0->home, kDevice);
  tensor_snapshot const* t1 = s.find(b.t[1].id());
  ASSERT_NE(t1, nullptr);
  EXPECT_EQ(t1->tenant, 1U);
  EXPECT_EQ(s.find(tensor_id{9999}), nullptr);
  // The same as residency() for each tensor (nothing moved in between).
  for (tensor const& t : b.t) {
    if (!t.valid()) { continue; }
    tensor_residency const r = b.p.residency(t);
    tensor_snapshot const* ts = s.find(t.id());
    ASSERT_NE(ts, nullptr);
    EXPECT_EQ(ts->home, r.home);
    EXPECT_EQ(ts->copies.size(), r.copies.size());
    EXPECT_EQ(ts->dirty, r.dirty);
    EXPECT_EQ(ts->leases, r.leases);
  }
  held.release();
  EXPECT_TRUE(b.p.validate());
}

TEST(PoolSnapshot, ShowsPendingFreesAndChunksOfEveryTier)
{
  busy_pool b;
  // Hold the stream so that a freed tensor's block stays pending.
  held_stream hold(*b.be, b.s);
  {
    lease l = b.p.acquire(b.t[2], access_mode::read, b.s);
  }
  tensor_id const gone = b.t[2].id();
  b.t[2] = tensor{};
  pool_snapshot const s = b.p.snapshot();
  expect_whole(s);
  EXPECT_EQ(s.find(gone), nullptr);
  EXPECT_GT(s.tiers[0].pending_bytes, 0U);
  EXPECT_TRUE(std::any_of(s.tiers[0].blocks.begin(), s.tiers[0].blocks.end(),
                          [](block_snapshot const& x) { return x.state == block_state::pending; }));
  EXPECT_FALSE(s.tiers[0].chunks.empty());
  EXPECT_FALSE(s.tiers[1].chunks.empty());
  EXPECT_TRUE(s.tiers[2].chunks.empty());  // nothing went to the host tier: it never grew
  EXPECT_TRUE(s.tiers[2].blocks.empty());
  hold.open();
  b.p.synchronize(b.s);
  EXPECT_TRUE(b.p.validate());
}

TEST(PoolSnapshot, JsonParsesNamesTheTensorsAndReadsBackEqual)
{
  busy_pool b;
  std::string const js = b.p.snapshot_json();
  boost::json::value const v = boost::json::parse(js);
  boost::json::object const& root = v.as_object();
  EXPECT_EQ(root.at("version").as_int64(), 1);
  EXPECT_EQ(root.at("backend").as_string(), "sim");
  boost::json::array const& tensors = root.at("tensors").as_array();
  ASSERT_EQ(tensors.size(), 10U);
  std::vector<std::string> names;
  for (auto const& t : tensors) { names.emplace_back(t.as_object().at("name").as_string()); }
  EXPECT_NE(std::find(names.begin(), names.end(), "t0"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "t11"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "t3"), names.end());  // freed
  boost::json::object const& t0 = tensors[0].as_object();
  for (char const* key : {"id", "bytes", "tenant", "home", "state", "dirty", "in_flight", "leases", "last_use", "copies"}) {
    EXPECT_TRUE(t0.contains(key)) << key;
  }
  boost::json::array const& tiers = root.at("tiers").as_array();
  ASSERT_EQ(tiers.size(), 3U);
  EXPECT_EQ(tiers[0].as_object().at("name").as_string(), "device");
  EXPECT_EQ(tiers[0].as_object().at("kind").as_string(), "device");
  EXPECT_FALSE(tiers[0].as_object().at("blocks").as_array().empty());

  pool_snapshot const s = parse_snapshot(js, "test");
  pool_snapshot const direct = b.p.snapshot();
  ASSERT_EQ(s.tensors.size(), direct.tensors.size());
  for (std::size_t i = 0; i < s.tensors.size(); ++i) {
    EXPECT_EQ(s.tensors[i].id, direct.tensors[i].id);
    EXPECT_EQ(s.tensors[i].name, direct.tensors[i].name);
    EXPECT_EQ(s.tensors[i].bytes, direct.tensors[i].bytes);
    EXPECT_EQ(s.tensors[i].home, direct.tensors[i].home);
    EXPECT_EQ(s.tensors[i].copies.size(), direct.tensors[i].copies.size());
  }
  ASSERT_EQ(s.tiers.size(), direct.tiers.size());
  for (std::size_t k = 0; k < s.tiers.size(); ++k) {
    EXPECT_EQ(s.tiers[k].blocks.size(), direct.tiers[k].blocks.size());
    EXPECT_EQ(s.tiers[k].used_bytes, direct.tiers[k].used_bytes);
    EXPECT_EQ(s.tiers[k].kind, direct.tiers[k].kind);
  }
  expect_whole(s);
  EXPECT_EQ(to_json(s).size(), js.size());
}

TEST(PoolSnapshot, CorruptOrForeignJsonIsASnapshotError)
{
  auto message = [](std::string const& text) {
    try {
      (void)parse_snapshot(text, "x.json");
    } catch (snapshot_error const& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{\"version\": 1, \"time\": ").find("snapshot 'x.json': not JSON"), std::string::npos);
  EXPECT_NE(message("[1, 2]").find("not a tierpool snapshot"), std::string::npos);
  EXPECT_NE(message("{\"version\": 2}").find("schema version 2, this tierpool reads version 1"), std::string::npos);
  EXPECT_NE(message("{\"version\": 1, \"time\": 0, \"backend\": \"sim\", \"tensors\": [{\"id\": -1}], \"tiers\": []}")
              .find("tensors[0] field 'id' is not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(message("{\"version\": 1, \"time\": 0, \"backend\": \"sim\", \"tensors\": []}").find("has no field 'tiers'"),
            std::string::npos);
  EXPECT_THROW((void)read_snapshot("/nonexistent/snapshot.json"), snapshot_error);
  EXPECT_THROW((void)read_snapshot(TIERPOOL_TEST_BINARY_DIR), snapshot_error);  // a directory
}

TEST(PoolSnapshot, WriteThenReadAFile)
{
  busy_pool b;
  std::string const path = std::string(TIERPOOL_TEST_BINARY_DIR) + "/pool_snapshot_test_write.json";
  write_snapshot(b.p.snapshot(), path);
  pool_snapshot const s = read_snapshot(path);
  EXPECT_EQ(s.tensors.size(), 10U);
  expect_whole(s);
  std::remove(path.c_str());
  EXPECT_THROW(write_snapshot(s, "/nonexistent/dir/x.json"), snapshot_error);
}

TEST(PoolSnapshot, SvgDrawsEveryTierAndNamesTheTensors)
{
  busy_pool b;
  std::vector<pool_snapshot> series;
  series.push_back(b.p.snapshot());
  { lease l = b.p.acquire(b.t[1], access_mode::read, b.s); }
  b.p.synchronize(b.s);
  series.push_back(b.p.snapshot());
  std::string const svg = snapshot_svg(series, "two snapshots");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0U);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("two snapshots"), std::string::npos);
  for (char const* s : {"tier 0: device", "tier 1: pinned_host", "tier 2: host", "t0 (tensor", "t11 (tensor"}) {
    EXPECT_NE(svg.find(s), std::string::npos) << s;
  }
  EXPECT_THROW((void)snapshot_svg({}, "none"), logic_error);
}

TEST(PoolSnapshot, FromALowMemoryCallback)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 0)};  // one tier: no room once it is full
  std::vector<tensor> keep;
  keep.push_back(p.allocate(1_MiB));
  std::size_t seen = 0;
  (void)p.add_low_memory_callback([&](low_memory_event const&) {
    pool_snapshot const s = p.snapshot();
    seen = s.tensors.size();
    keep.clear();
  });
  tensor t = p.allocate(512_KiB);
  EXPECT_EQ(seen, 1U);
  EXPECT_EQ(p.residency(t).home, kDevice);
}

TEST(ArenaForEachBlock, VisitsWhatBlocksLists)
{
  arena a{1_MiB};
  auto x = a.allocate(4096);
  auto y = a.allocate(100000);
  (void)a.allocate(256);
  a.add_region(64_KiB);
  ASSERT_TRUE(x && y);
  a.deallocate(*x);
  std::vector<arena::block_info> seen;
  a.for_each_block([&seen](arena::block_info const& b) { seen.push_back(b); });
  std::vector<arena::block_info> const listed = a.blocks();
  ASSERT_EQ(seen.size(), listed.size());
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].offset, listed[i].offset);
    EXPECT_EQ(seen[i].size, listed[i].size);
    EXPECT_EQ(seen[i].region, listed[i].region);
    EXPECT_EQ(seen[i].free, listed[i].free);
  }
  EXPECT_EQ(seen.back().region, 1U);
}

// ---- under concurrent use ------------------------------------------------------------------

TEST(PoolSnapshotThreads, SnapshotsWhileSixThreadsWorkAreWhole)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  constexpr int kWorkers = 6;  // more threads than the machine's cores
  constexpr int kOps = 300;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      std::mt19937 rng(static_cast<std::uint32_t>(w + 1));
      stream_handle s = p.create_stream();
      std::vector<tensor> mine;
      for (int i = 0; i < kOps; ++i) {
        try {
          auto const op = rng() % 6;
          if (mine.size() < 4 || op == 0) {
            mine.push_back(p.allocate((1 + rng() % 3) * 32_KiB, {.name = "w" + std::to_string(w) + "." + std::to_string(i)}));
          } else if (op == 1 && !mine.empty()) {
            mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(rng() % mine.size()));
          } else if (op == 2) {
            p.prefetch(mine[rng() % mine.size()]);
          } else if (op == 3) {
            p.demote(mine[rng() % mine.size()], tier_id{static_cast<std::uint32_t>(1 + rng() % 2)});
          } else if (op == 4) {
            lease h = p.acquire_host(mine[rng() % mine.size()], access_mode::read_write);
          } else {
            lease l = p.acquire(mine[rng() % mine.size()], access_mode::read, s);
            (void)p.residency(mine[rng() % mine.size()]);
          }
        } catch (out_of_memory const&) {
          if (!mine.empty()) { mine.erase(mine.begin()); }  // full: make room and go on
        } catch (std::exception const& e) {
          ++failures;
          std::fprintf(stderr, "worker %d: %s\n", w, e.what());
        }
      }
      p.synchronize(s);
    });
  }
  std::thread snapper([&] {
    int n = 0;
    while (!stop.load()) {
      pool_snapshot const s = p.snapshot();
      expect_whole(s);
      if (++n % 8 == 0) { (void)parse_snapshot(to_json(s), "live"); }
      std::this_thread::yield();
    }
  });
  for (std::thread& t : workers) { t.join(); }
  stop = true;
  snapper.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(p.validate());
  expect_whole(p.snapshot());
}

}  // namespace
}  // namespace tierpool::test

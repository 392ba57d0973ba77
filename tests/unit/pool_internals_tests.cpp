// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// Unit tests of the pool's miss-path containers (runtime/core/detail): flat_u64_set and
// record_table (open addressing with backward-shift deletion) against std:: references
// under long seeded op sequences and hand-built wrap-around probe runs; use_list past its
// inline capacity, copies and moves; slot_array; record_slab (sizes, alignment, reuse,
// chunk growth, records and control blocks outliving the slab's owner, threads);
// spin_mutex. Run under ASan / TSan too (the concurrent tests are short).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <tierpool/error.hpp>

#include "util/flat_u64_set.hpp"
#include "core/detail/pool_impl.hpp"
#include "util/record_slab.hpp"
#include "util/spin_mutex.hpp"

namespace {

using tierpool::detail::copy_slot;
using tierpool::detail::flat_u64_set;
using tierpool::detail::record_slab;
using tierpool::detail::record_table;
using tierpool::detail::record_ref;
using tierpool::detail::slot_array;
using tierpool::detail::spin_mutex;
using tierpool::detail::stream_entry;
using tierpool::detail::stream_use;
using tierpool::detail::tensor_record;
using tierpool::detail::use_list;

// Home cell of `key` in a table of `cap` cells by plain Fibonacci hashing (flat_u64_set).
std::size_t home_of(std::uint64_t key, std::size_t cap)
{
  auto const shift = 64U - static_cast<unsigned>(std::countr_zero(cap));
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift);
}

// The first `n` keys >= 1 whose home in a table of `cap` cells is `cell` (by `home`).
std::vector<std::uint64_t> keys_with_home(std::size_t cell, std::size_t cap, std::size_t n,
                                          std::size_t (*home)(std::uint64_t, std::size_t) = home_of)
{
  std::vector<std::uint64_t> out;
  for (std::uint64_t k = 1; out.size() < n; ++k) {
    if (home(k, cap) == cell) { out.push_back(k); }
  }
  return out;
}

std::vector<std::uint64_t> members(flat_u64_set const& s)
{
  std::vector<std::uint64_t> v;
  s.for_each([&](std::uint64_t k) { v.push_back(k); });
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::uint64_t> members(std::unordered_set<std::uint64_t> const& s)
{
  std::vector<std::uint64_t> v(s.begin(), s.end());
  std::sort(v.begin(), v.end());
  return v;
}

// ---------------------------------------------------------------------------------------
// flat_u64_set
// ---------------------------------------------------------------------------------------

TEST(FlatU64Set, EmptyInsertEraseContainsAndDuplicates)
{
  flat_u64_set s;
  EXPECT_EQ(s.size(), 0U);
  EXPECT_FALSE(s.contains(0));
  EXPECT_FALSE(s.erase(5));  // empty: no table yet
  EXPECT_TRUE(s.insert(0));  // 0 is an ordinary key (only kEmpty is reserved)
  EXPECT_TRUE(s.insert(flat_u64_set::kEmpty - 1));
  EXPECT_FALSE(s.insert(0));
  EXPECT_EQ(s.size(), 2U);
  EXPECT_TRUE(s.contains(0));
  EXPECT_TRUE(s.contains(flat_u64_set::kEmpty - 1));
  EXPECT_FALSE(s.contains(1));
  EXPECT_FALSE(s.erase(1));
  EXPECT_TRUE(s.erase(0));
  EXPECT_FALSE(s.erase(0));
  EXPECT_FALSE(s.contains(0));
  EXPECT_EQ(s.size(), 1U);
  EXPECT_EQ(members(s), (std::vector<std::uint64_t>{flat_u64_set::kEmpty - 1}));
}

// A probe run that wraps from the last cell to the first: erasing its head must shift the
// wrapped members back (a missing or wrong shift loses them: contains() stops at a hole).
TEST(FlatU64Set, EraseShiftsAProbeRunThatWrapsAroundTheTable)
{
  std::vector<std::uint64_t> const last = keys_with_home(15, 16, 3);  // first table: 16 cells
  std::vector<std::uint64_t> const first = keys_with_home(0, 16, 2);
  for (std::size_t victim = 0; victim < 5; ++victim) {
    flat_u64_set s;
    // Cells 15, 0, 1 hold last[0..2]; first[0..1] (home 0) go to cells 2 and 3.
    std::vector<std::uint64_t> all = {last[0], last[1], last[2], first[0], first[1]};
    for (std::uint64_t k : all) { ASSERT_TRUE(s.insert(k)); }
    ASSERT_EQ(s.size(), 5U);
    ASSERT_TRUE(s.erase(all[victim])) << victim;
    for (std::size_t i = 0; i < all.size(); ++i) {
      EXPECT_EQ(s.contains(all[i]), i != victim) << "victim " << victim << " key " << i;
    }
    all.erase(all.begin() + static_cast<std::ptrdiff_t>(victim));
    std::sort(all.begin(), all.end());
    EXPECT_EQ(members(s), all);
    // Erase the rest in reverse insertion order; the set ends empty and reusable.
    for (auto it = all.rbegin(); it != all.rend(); ++it) { EXPECT_TRUE(s.erase(*it)); }
    EXPECT_EQ(s.size(), 0U);
    EXPECT_TRUE(s.insert(last[0]));
    EXPECT_TRUE(s.contains(last[0]));
  }
}

// Long seeded sequences of inserts and erases over a small key range (long probe runs,
// many backward shifts, growth while full of clusters) against std::unordered_set.
TEST(FlatU64Set, MatchesStdUnorderedSetUnderManyOps)
{
  for (std::uint64_t const range : {24ULL, 300ULL, 5000ULL}) {
    std::mt19937_64 rng(0x5EED0000ULL + range);
    flat_u64_set s;
    std::unordered_set<std::uint64_t> ref;
    for (int op = 0; op < 200000; ++op) {
      std::uint64_t const k = rng() % range;
      // Phases: mostly inserting, then mostly erasing, so the size sweeps up and down.
      bool const inserting = ((op / 20000) % 2 == 0) ? (rng() % 4 != 0) : (rng() % 4 == 0);
      if (inserting) {
        ASSERT_EQ(s.insert(k), ref.insert(k).second) << "op " << op << " key " << k;
      } else {
        ASSERT_EQ(s.erase(k), ref.erase(k) == 1) << "op " << op << " key " << k;
      }
      ASSERT_EQ(s.size(), ref.size());
      std::uint64_t const probe = rng() % range;
      ASSERT_EQ(s.contains(probe), ref.contains(probe)) << "op " << op << " key " << probe;
      if (op % 5000 == 0) { ASSERT_EQ(members(s), members(ref)) << "op " << op; }
    }
    EXPECT_EQ(members(s), members(ref));
  }
}

TEST(FlatU64Set, GrowsToManyKeysAndEmptiesAgain)
{
  flat_u64_set s;
  std::mt19937_64 rng(42);
  std::vector<std::uint64_t> keys;
  for (int i = 0; i < 100000; ++i) { keys.push_back(rng() >> 1U); }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (std::uint64_t k : keys) { ASSERT_TRUE(s.insert(k)); }
  EXPECT_EQ(s.size(), keys.size());
  EXPECT_EQ(members(s), keys);
  for (std::size_t i = 0; i < keys.size(); i += 2) { ASSERT_TRUE(s.erase(keys[i])); }
  for (std::size_t i = 0; i < keys.size(); ++i) { ASSERT_EQ(s.contains(keys[i]), i % 2 == 1) << i; }
  for (std::size_t i = 1; i < keys.size(); i += 2) { ASSERT_TRUE(s.erase(keys[i])); }
  EXPECT_EQ(s.size(), 0U);
  EXPECT_TRUE(members(s).empty());
  // Sequential keys (event handle values are often close together) hash apart.
  for (std::uint64_t k = 1; k <= 4096; ++k) { ASSERT_TRUE(s.insert(k << 8U | 0xE7U)); }
  for (std::uint64_t k = 1; k <= 4096; ++k) { ASSERT_TRUE(s.contains(k << 8U | 0xE7U)); }
  EXPECT_FALSE(s.contains(0xE7U));
}

// ---------------------------------------------------------------------------------------
// record_table (the pool's live records by id)
// ---------------------------------------------------------------------------------------

TEST(RecordTable, FindInsertEraseClearAndReferenceCounts)
{
  record_table t;
  EXPECT_EQ(t.find(1), nullptr);
  EXPECT_FALSE(t.erase(1));
  auto a = tierpool::detail::make_record_ref();
  auto b = tierpool::detail::make_record_ref();
  t.insert(7, a);
  t.insert(9, b);
  EXPECT_EQ(t.size(), 2U);
  ASSERT_NE(t.find(7), nullptr);
  EXPECT_EQ(t.find(7)->get(), a.get());
  EXPECT_EQ(t.find(9)->get(), b.get());
  EXPECT_EQ(t.find(8), nullptr);
  EXPECT_EQ(a->refs.load(), 2U);
  EXPECT_TRUE(t.erase(7));
  EXPECT_EQ(a->refs.load(), 1U) << "an erased cell keeps no reference";
  EXPECT_EQ(t.find(7), nullptr);
  EXPECT_FALSE(t.erase(7));
  std::size_t seen = 0;
  t.for_each([&](record_ref const& r) {
    EXPECT_EQ(r.get(), b.get());
    ++seen;
  });
  EXPECT_EQ(seen, 1U);
  t.clear();
  EXPECT_EQ(t.size(), 0U);
  EXPECT_EQ(b->refs.load(), 1U) << "clear() drops every reference";
  EXPECT_EQ(t.find(9), nullptr);
  t.insert(9, b);  // reusable after clear
  EXPECT_EQ(t.find(9)->get(), b.get());
}

// Pages exist while one of their ids is live (Note [Records indexed by id]): the last erase
// of a page frees it, and its references with it; ids across page boundaries stay apart.
TEST(RecordTable, PagesComeAndGoWithTheirLiveIds)
{
  constexpr std::uint64_t P = record_table::kPageIds;
  record_table t;
  std::vector<record_ref> recs;
  std::vector<std::uint64_t> const ids = {1, P - 1, P, P + 1, 3 * P + 5, 3 * P + 6};
  for (std::uint64_t id : ids) {
    recs.push_back(tierpool::detail::make_record_ref());
    t.insert(id, recs.back());
  }
  EXPECT_EQ(t.size(), ids.size());
  EXPECT_EQ(t.pages(), 3U);  // pages 0, 1 and 3
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ASSERT_NE(t.find(ids[i]), nullptr) << ids[i];
    EXPECT_EQ(t.find(ids[i])->get(), recs[i].get());
  }
  EXPECT_EQ(t.find(2 * P + 5), nullptr);   // a page that never existed
  EXPECT_EQ(t.find(100 * P), nullptr);     // beyond the directory
  std::vector<std::uint64_t> order;
  t.for_each([&](record_ref const& r) {
    for (std::size_t i = 0; i < recs.size(); ++i) {
      if (recs[i] == r) { order.push_back(ids[i]); }
    }
  });
  EXPECT_EQ(order, ids) << "for_each visits records in id order";
  ASSERT_TRUE(t.erase(P));
  EXPECT_EQ(t.pages(), 3U);
  ASSERT_TRUE(t.erase(P + 1));
  EXPECT_EQ(t.pages(), 2U) << "the page's last live id took it";
  EXPECT_EQ(recs[2]->refs.load(), 1U);
  EXPECT_EQ(recs[3]->refs.load(), 1U);
  EXPECT_EQ(t.find(P + 1), nullptr);
  t.insert(P + 1, recs[3]);  // the page comes back
  EXPECT_EQ(t.pages(), 3U);
  EXPECT_EQ(t.find(P + 1)->get(), recs[3].get());
  record_ref taken = t.take(3 * P + 5);  // what a dropped record's free does
  EXPECT_EQ(taken.get(), recs[4].get());
  EXPECT_EQ(recs[4]->refs.load(), 2U) << "handed over, not dropped";
  EXPECT_EQ(t.find(3 * P + 5), nullptr);
  EXPECT_EQ(t.take(3 * P + 5), nullptr);
  EXPECT_EQ(t.size(), ids.size() - 2);  // P erased, P + 1 back, 3P + 5 taken
  ASSERT_TRUE(t.erase(3 * P + 6));
  EXPECT_EQ(t.pages(), 2U) << "a take counts like an erase";
  EXPECT_EQ(t.size(), ids.size() - 3);
}

TEST(RecordTable, MatchesStdUnorderedMapUnderManyOps)
{
  std::mt19937_64 rng(0xDEC0DEULL);
  record_table t;
  std::unordered_map<std::uint64_t, record_ref> ref;
  std::vector<record_ref> pool_of_recs;
  for (int i = 0; i < 64; ++i) { pool_of_recs.push_back(tierpool::detail::make_record_ref()); }
  std::uint64_t next_id = 1;
  std::vector<std::uint64_t> live;
  for (int op = 0; op < 60000; ++op) {
    bool const grow_phase = (op / 6000) % 2 == 0;
    if (live.empty() || (grow_phase ? rng() % 3 != 0 : rng() % 3 == 0)) {
      // The pool hands out increasing ids; sometimes skip some (failed allocations).
      std::uint64_t const id = next_id;
      next_id += 1 + rng() % 3;
      auto const& r = pool_of_recs[rng() % pool_of_recs.size()];
      t.insert(id, r);
      ref.emplace(id, r);
      live.push_back(id);
    } else {
      std::size_t const i = rng() % live.size();
      std::uint64_t const id = live[i];
      live[i] = live.back();
      live.pop_back();
      ASSERT_TRUE(t.erase(id));
      ref.erase(id);
    }
    ASSERT_EQ(t.size(), ref.size());
    std::uint64_t const probe = 1 + rng() % next_id;
    auto const* got = t.find(probe);
    auto const it = ref.find(probe);
    ASSERT_EQ(got != nullptr, it != ref.end()) << "op " << op << " id " << probe;
    if (got != nullptr) { ASSERT_EQ(got->get(), it->second.get()) << "op " << op; }
  }
  std::size_t n = 0;
  t.for_each([&](record_ref const& r) {
    ++n;
    EXPECT_NE(r, nullptr);
  });
  EXPECT_EQ(n, ref.size());
  // References: each record is held by the vector, the reference map and the table.
  long total = 0;
  for (auto const& r : pool_of_recs) { total += static_cast<long>(r->refs.load()) - 1; }
  EXPECT_EQ(total, static_cast<long>(2 * ref.size()));
  t.clear();
  ref.clear();
  for (auto const& r : pool_of_recs) { EXPECT_EQ(r->refs.load(), 1U); }
}

// ---------------------------------------------------------------------------------------
// use_list (a copy slot's stream users) and slot_array
// ---------------------------------------------------------------------------------------

std::vector<std::uint64_t> gens(use_list const& l)
{
  std::vector<std::uint64_t> v;
  for (stream_use const& u : l) { v.push_back(u.gen); }
  return v;
}

TEST(UseList, HoldsEntriesInOrderPastItsInlineCapacity)
{
  std::array<stream_entry, 3> streams;
  use_list l;
  EXPECT_TRUE(l.empty());
  std::vector<std::uint64_t> want;
  for (std::uint64_t i = 0; i < 11; ++i) {  // inline 2, then heap 4, 8, 16
    l.push_back(stream_use{&streams[i % 3], 100 + i});
    want.push_back(100 + i);
    ASSERT_EQ(l.size(), want.size());
    ASSERT_EQ(gens(l), want) << "after " << i + 1 << " pushes";
  }
  std::size_t i = 0;
  for (stream_use const& u : l) { EXPECT_EQ(u.stream, &streams[i++ % 3]); }
  l.clear();
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(l.begin(), l.end());
  for (std::uint64_t j = 0; j < 5; ++j) { l.push_back(stream_use{&streams[0], j}); }  // storage kept
  EXPECT_EQ(gens(l), (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
}

TEST(UseList, CopiesAndMovesInlineAndHeapLists)
{
  stream_entry se;
  auto make = [&](std::uint64_t n) {
    use_list l;
    for (std::uint64_t i = 0; i < n; ++i) { l.push_back(stream_use{&se, i}); }
    return l;
  };
  auto seq = [](std::uint64_t n) {
    std::vector<std::uint64_t> v;
    for (std::uint64_t i = 0; i < n; ++i) { v.push_back(i); }
    return v;
  };
  for (std::uint64_t n : {0ULL, 1ULL, 2ULL, 3ULL, 9ULL}) {
    use_list const src = make(n);
    use_list copy(src);  // NOLINT(performance-unnecessary-copy-initialization): the copy is the test
    EXPECT_EQ(gens(copy), seq(n));
    EXPECT_EQ(gens(src), seq(n));
    copy.push_back(stream_use{&se, 77});  // independent storage
    EXPECT_EQ(src.size(), n);
    use_list moved(std::move(copy));
    EXPECT_EQ(moved.size(), n + 1);
    EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty and usable
    for (std::uint64_t i = 0; i < 5; ++i) { copy.push_back(stream_use{&se, i}); }
    EXPECT_EQ(gens(copy), seq(5));
    for (std::uint64_t m : {0ULL, 2ULL, 7ULL}) {
      use_list a = make(m);
      a = src;  // copy-assign over inline or heap storage
      EXPECT_EQ(gens(a), seq(n)) << n << " over " << m;
      use_list b = make(m);
      use_list c = make(n);
      b = std::move(c);
      EXPECT_EQ(gens(b), seq(n)) << n << " over " << m;
      b.push_back(stream_use{&se, n});
      EXPECT_EQ(gens(b), seq(n + 1));
    }
    use_list self = make(n);
    use_list& alias = self;
    self = alias;  // self-assignment keeps the entries
    EXPECT_EQ(gens(self), seq(n));
  }
}

// What a tensor costs the pool (issue 19; docs/chapters/architecture.md): a record is at
// most 168 bytes (four cache lines at 8-byte alignment), its copy slot at most 88.
TEST(RecordLayout, ARecordAndItsSlotStayWithinTheirBudget)
{
  EXPECT_LE(sizeof(tensor_record), 168U);
  EXPECT_LE(alignof(tensor_record), 8U);
  EXPECT_LE(sizeof(copy_slot), 88U);
  EXPECT_LE(sizeof(use_list), 24U);
  record_slab const s{sizeof(tensor_record), alignof(tensor_record)};
  EXPECT_EQ(s.block_bytes(), sizeof(tensor_record)) << "no padding between a slab's records";
}

TEST(SlotArray, AbsentTiersShareTheReadOnlyAbsentSlotUntilMaterialized)
{
  using tierpool::detail::absent_copy_slot;
  using tierpool::detail::copy_state;
  for (std::size_t n : {1UL, 3UL, 4UL, 7UL}) {
    slot_array a;
    EXPECT_EQ(a.size(), 0U);
    a.resize(n);
    ASSERT_EQ(a.size(), n);
    for (std::size_t k = 0; k < n; ++k) {
      EXPECT_EQ(a[k].state, copy_state::absent);
      EXPECT_EQ(a[k].pins, 0U);
      EXPECT_TRUE(a[k].users.empty());
    }
    // The first copy takes the inline slot, in whatever tier it lands: no heap array.
    std::size_t const first = n - 1;
    copy_slot& f = a.materialize(first);
    f.state = copy_state::valid;
    f.pins = 7;
    EXPECT_EQ(a.home(), first);
    EXPECT_FALSE(a.spilled());
    EXPECT_EQ(&a[first], &f);
    for (std::size_t k = 0; k + 1 < n; ++k) {
      EXPECT_EQ(&a[k], &absent_copy_slot) << k;  // no storage: the shared absent slot
      EXPECT_FALSE(a.has_storage(k));
    }
    if (n == 1) { continue; }
    // A second tier's copy spills the others to one heap array; the inline slot stays put.
    copy_slot& g = a.materialize(0);
    EXPECT_TRUE(a.spilled());
    EXPECT_NE(&g, &absent_copy_slot);
    EXPECT_EQ(&a[first], &f);
    EXPECT_EQ(a[first].pins, 7U);
    g.state = copy_state::stale;
    g.pins = 3;
    for (std::size_t k = 0; k < n; ++k) { EXPECT_TRUE(a.has_storage(k)); }
    EXPECT_EQ(&a.materialize(0), &g);  // again: the same slot
    // Folding onto tier 0 moves its slot inline and gives the array up.
    f = copy_slot{};
    copy_slot& h = a.fold(0);
    EXPECT_FALSE(a.spilled());
    EXPECT_EQ(a.home(), 0U);
    EXPECT_EQ(&a[0], &h);
    EXPECT_EQ(h.state, copy_state::stale);
    EXPECT_EQ(h.pins, 3U);
    EXPECT_EQ(&a[first], &absent_copy_slot);
  }
  // Nothing above wrote the shared slot.
  EXPECT_EQ(absent_copy_slot.state, tierpool::detail::copy_state::absent);
  EXPECT_EQ(absent_copy_slot.pins, 0U);
}

// ---------------------------------------------------------------------------------------
// record_slab, record_ref
// ---------------------------------------------------------------------------------------

TEST(RecordSlab, RoundsBlocksToTheAlignmentAndRejectsBadArguments)
{
  record_slab s{100, 64};
  EXPECT_EQ(s.block_bytes(), 128U);
  EXPECT_EQ(s.block_align(), 64U);
  record_slab tiny{1, 8};
  EXPECT_EQ(tiny.block_bytes(), 8U);  // at least a free-list link
  EXPECT_EQ(s.reserved_bytes(), 0U) << "no chunk before the first allocate";
  EXPECT_THROW((record_slab{64, 24}), tierpool::logic_error);   // not a power of two
  EXPECT_THROW((record_slab{64, 8192}), tierpool::logic_error); // above 4096
  EXPECT_THROW((record_slab{64, 4}), tierpool::logic_error);    // below a pointer
  EXPECT_THROW((record_slab{600 * 1024, 64}), tierpool::logic_error);  // blocks above 512 KiB
}

// Many blocks: each aligned, none overlapping (writing a whole block never touches another:
// ASan sees an overrun), chunks growing geometrically up to 2 MiB.
TEST(RecordSlab, ManyBlocksAreAlignedDistinctAndWritable)
{
  record_slab s{sizeof(tensor_record), alignof(tensor_record)};
  ASSERT_EQ(s.block_bytes() % alignof(tensor_record), 0U);
  std::vector<void*> blocks;
  for (int i = 0; i < 20000; ++i) {
    void* const p = s.allocate();
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignof(tensor_record), 0U) << i;
    std::memset(p, i & 0xFF, s.block_bytes());
    blocks.push_back(p);
  }
  std::vector<void*> sorted = blocks;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    ASSERT_GE(static_cast<char*>(sorted[i]) - static_cast<char*>(sorted[i - 1]),
              static_cast<std::ptrdiff_t>(s.block_bytes()));
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {  // no block was overwritten by another
    auto const* b = static_cast<unsigned char const*>(blocks[i]);
    ASSERT_EQ(b[0], i & 0xFF);
    ASSERT_EQ(b[s.block_bytes() - 1], i & 0xFF);
  }
  std::size_t const reserved = s.reserved_bytes();
  EXPECT_GE(reserved, 20000 * s.block_bytes());
  EXPECT_LE(reserved, 20000 * s.block_bytes() + 4 * 1024 * 1024) << "chunks grow geometrically, capped at 2 MiB";
  for (void* p : blocks) { s.deallocate(p); }
  EXPECT_EQ(s.reserved_bytes(), reserved) << "blocks return to the slab, not the system";
  // Every freed block is reused before any new chunk is taken.
  std::set<void*> const old(blocks.begin(), blocks.end());
  for (std::size_t i = 0; i < blocks.size(); ++i) { ASSERT_TRUE(old.contains(s.allocate())) << i; }
  EXPECT_EQ(s.reserved_bytes(), reserved);
  s.deallocate(nullptr);  // a no-op
}

TEST(RecordSlab, FreedBlocksAreReusedLastInFirstOut)
{
  record_slab s{64, 16};
  void* const a = s.allocate();
  void* const b = s.allocate();
  void* const c = s.allocate();
  EXPECT_NE(a, b);
  EXPECT_NE(b, c);
  s.deallocate(a);
  s.deallocate(c);
  EXPECT_EQ(s.allocate(), c);
  EXPECT_EQ(s.allocate(), a);
  void* const d = s.allocate();  // the free list is empty: a fresh block
  EXPECT_NE(d, a);
  EXPECT_NE(d, b);
  EXPECT_NE(d, c);
}

// Note [A record names its pool in two bytes]: indices are handed out from 1, looked up in
// one load, and reused once given back.
TEST(OwnerRegistry, RegistersLooksUpAndReusesIndices)
{
  struct dummy final : tierpool::detail::record_owner {
    void finish_dropped_locked(tensor_record& /*rec*/, std::shared_ptr<record_owner>& /*keep_alive*/,
                               record_ref& /*keep_self*/) noexcept override
    {
    }
    [[nodiscard]] std::string name_of(tierpool::tensor_id /*id*/) const override { return "d"; }
    [[nodiscard]] double recompute_cost(tensor_record const& /*rec*/) const noexcept override { return -1.0; }
  };
  dummy a;
  dummy b;
  std::uint16_t const ia = tierpool::detail::register_owner(&a);
  std::uint16_t const ib = tierpool::detail::register_owner(&b);
  EXPECT_NE(ia, 0U);
  EXPECT_NE(ib, 0U);
  EXPECT_NE(ia, ib);
  EXPECT_EQ(tierpool::detail::owner_at(ia), &a);
  EXPECT_EQ(tierpool::detail::owner_at(ib), &b);
  EXPECT_EQ(tierpool::detail::owner_at(0), nullptr);
  tierpool::detail::unregister_owner(ia);
  EXPECT_EQ(tierpool::detail::owner_at(ia), nullptr);
  {
    tierpool::detail::owner_registration const again{&a};
    EXPECT_EQ(again.index(), ia) << "a given-back index is reused";
    EXPECT_EQ(tierpool::detail::owner_at(ia), &a);
  }
  EXPECT_EQ(tierpool::detail::owner_at(ia), nullptr);
  tierpool::detail::unregister_owner(ib);
}

// Note [Records count their references]: copies add, drops subtract, the last drop
// returns the record to the process's slab (the next record may take the same block).
TEST(RecordRef, CountsInTheRecordAndTheLastDropFreesIt)
{
  record_ref a = tierpool::detail::make_record_ref();
  tensor_record* const raw = a.get();
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->refs.load(), 1U);
  {
    record_ref b = a;          // copy: +1
    record_ref c = std::move(b);  // move: unchanged
    EXPECT_EQ(b, nullptr);
    EXPECT_EQ(raw->refs.load(), 2U);
    record_ref d;
    d = c;                     // copy-assign: +1
    EXPECT_EQ(raw->refs.load(), 3U);
    d = nullptr;
    EXPECT_EQ(raw->refs.load(), 2U);
  }
  EXPECT_EQ(raw->refs.load(), 1U);
  std::vector<record_ref> many(1000, a);
  EXPECT_EQ(raw->refs.load(), 1001U);
  many.clear();
  a.reset();
  EXPECT_EQ(a, nullptr);
  record_ref again = tierpool::detail::make_record_ref();
  EXPECT_EQ(again.get(), raw) << "the freed block is the slab's next (LIFO)";
  EXPECT_EQ(again->refs.load(), 1U);
  EXPECT_EQ(again->pins, 0U) << "a fresh record";
}

// References taken and dropped from many threads at once (more threads than cores): the
// count ends exact, and the record dies once (ASan/TSan see a double free or a race).
TEST(RecordRef, ConcurrentCopiesAndDropsKeepTheCountExact)
{
  record_ref root = tierpool::detail::make_record_ref();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&root] {
      for (int i = 0; i < 20000; ++i) {
        record_ref x = root;
        record_ref y = x;
        x.reset();
      }
    });
  }
  for (auto& t : threads) { t.join(); }
  EXPECT_EQ(root->refs.load(), 1U);
}

// allocate / deallocate from several threads: every block handed out is unique while held
// (each thread stamps its blocks and checks the stamp before freeing). Under TSan this
// also checks the free list's locking.
TEST(RecordSlab, ConcurrentAllocateAndDeallocateHandOutEachBlockOnce)
{
  record_slab s{128, 64};
  constexpr int kThreads = 4;
  constexpr int kRounds = 3000;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<std::pair<std::uint64_t*, std::uint64_t>> held;
      for (int i = 0; i < kRounds; ++i) {
        if (held.empty() || rng() % 3 != 0) {
          auto* const p = static_cast<std::uint64_t*>(s.allocate());
          std::uint64_t const stamp = (static_cast<std::uint64_t>(t) << 32U) | static_cast<std::uint64_t>(i);
          p[0] = stamp;
          p[15] = stamp;
          held.emplace_back(p, stamp);
        } else {
          std::size_t const j = rng() % held.size();
          auto [p, stamp] = held[j];
          if (p[0] != stamp || p[15] != stamp) { errors.fetch_add(1); }
          s.deallocate(p);
          held[j] = held.back();
          held.pop_back();
        }
      }
      for (auto [p, stamp] : held) {
        if (p[0] != stamp || p[15] != stamp) { errors.fetch_add(1); }
        s.deallocate(p);
      }
    });
  }
  for (auto& th : threads) { th.join(); }
  EXPECT_EQ(errors.load(), 0) << "a block was handed to two holders at once";
}

// ---------------------------------------------------------------------------------------
// spin_mutex
// ---------------------------------------------------------------------------------------

TEST(SpinMutex, TryLockAndMutualExclusionUnderThreads)
{
  spin_mutex m;
  ASSERT_TRUE(m.try_lock());
  EXPECT_FALSE(m.try_lock());
  std::thread other([&] { EXPECT_FALSE(m.try_lock()); });
  other.join();
  m.unlock();
  ASSERT_TRUE(m.try_lock());
  m.unlock();

  std::uint64_t counter = 0;  // plain: only the lock orders the increments
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        std::lock_guard lock(m);
        ++counter;
      }
    });
  }
  for (auto& th : threads) { th.join(); }
  EXPECT_EQ(counter, 80000U);
}

}  // namespace

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_misuse_tests.cpp — misuse of the pool is caught, typed and named: double free, use
// of a freed or foreign tensor, bad options, unknown policy, close() with live leases, a
// lease outliving its pool, tensors larger than every tier.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/pool.hpp>
#include <tierpool/trace.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <vector>

namespace tierpool::test {
namespace {

TEST(PoolMisuse, DoubleFreeAndUseAfterFree)
{
  pool p{small_tiers(make_sim())};
  tensor t = p.allocate(4_KiB);
  p.free(t);
  EXPECT_FALSE(t.valid());
  EXPECT_THROW(p.free(t), logic_error);
  EXPECT_THROW((void)p.acquire(t, access_mode::read), logic_error);
  EXPECT_THROW((void)p.acquire_host(t, access_mode::read), logic_error);
  EXPECT_THROW(p.prefetch(t), logic_error);
  tensor moved = p.allocate(4_KiB);
  tensor other = std::move(moved);
  EXPECT_THROW((void)p.acquire(moved, access_mode::read), logic_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(p.validate());
}

TEST(PoolMisuse, ForeignTensorAndBadArguments)
{
  pool p{small_tiers(make_sim())};
  pool q{small_tiers(make_sim())};
  tensor t = q.allocate(4_KiB);
  EXPECT_THROW((void)p.acquire(t, access_mode::read), logic_error);
  EXPECT_THROW((void)p.allocate(0), logic_error);
  EXPECT_THROW((void)p.allocate(4_KiB, {.preferred_tier = tier_id{7}}), logic_error);
  EXPECT_THROW(q.prefetch(t, tier_id{9}), logic_error);
  EXPECT_THROW(q.demote(t, tier_id{9}), logic_error);
}

TEST(PoolMisuse, UnknownPolicyListsRegisteredNames)
{
  pool_options o = small_tiers(make_sim());
  o.policy = "no_such_policy";
  try {
    pool p{o};
    FAIL() << "expected logic_error";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("lru"), std::string::npos) << e.what();
  }
}

TEST(PoolMisuse, TensorLargerThanEveryTier)
{
  pool p{small_tiers(make_sim(), 1_MiB, 0, 4_MiB)};
  try {
    (void)p.allocate(8_MiB, {.name = "huge"});
    FAIL() << "expected out_of_memory";
  } catch (out_of_memory const& e) {
    std::string const m = e.what();
    EXPECT_NE(m.find("'huge'"), std::string::npos) << m;
    EXPECT_NE(m.find("device 1.0 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("host 4.0 MiB"), std::string::npos) << m;
    EXPECT_EQ(e.requested(), 8_MiB);
  }
}

TEST(PoolMisuse, FreeOrDemoteWithLiveLease)
{
  pool p{small_tiers(make_sim())};
  tensor t = p.allocate(4_KiB);
  lease l = p.acquire(t, access_mode::read);
  EXPECT_THROW(p.free(t), logic_error);
  EXPECT_THROW(p.demote(t, tier_id{2}), logic_error);
  l.release();
  EXPECT_FALSE(l.active());
  l.release();  // idempotent
  p.demote(t, tier_id{2});
  p.free(t);
  EXPECT_TRUE(p.validate());
}

TEST(PoolMisuse, CloseWithLiveLeaseNamesIt)
{
  pool p{small_tiers(make_sim())};
  tensor t = p.allocate(4_KiB, {.name = "weights"});
  lease l = p.acquire_host(t, access_mode::write_discard);
  try {
    p.close();
    FAIL() << "expected logic_error";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("'weights'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(p.validate());  // nothing was freed
  l.release();
  p.close();
  p.close();  // idempotent
  EXPECT_THROW((void)p.allocate(4_KiB), logic_error);
  EXPECT_THROW((void)p.acquire(t, access_mode::read), logic_error);
}

TEST(PoolMisuse, LeaseOutlivesPool)
{
  tensor t;
  lease l;
  testing::internal::CaptureStderr();
  {
    pool p{small_tiers(make_sim())};
    t = p.allocate(4_KiB);
    l = p.acquire_host(t, access_mode::write_discard);
    write_pattern(l.data(), l.bytes(), 1, 1);
  }
  std::string const err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("live leases"), std::string::npos) << err;
  EXPECT_TRUE(has_pattern(l.data(), l.bytes(), 1, 1));  // memory kept alive
  l.release();
  t = tensor{};
}

// The lease holds raw pointers to the pool and the record: once the pool object and every
// tensor handle are gone, the record keeps both alive until the last release (run under
// ASan/TSan this catches a use after free).
TEST(PoolMisuse, LeaseOutlivesPoolAndEveryHandle)
{
  lease host_l;
  lease dev_l;
  {
    pool p{small_tiers(make_sim())};
    tensor a = p.allocate(4_KiB);
    tensor b = p.allocate(4_KiB);
    host_l = p.acquire_host(a, access_mode::write_discard);
    write_pattern(host_l.data(), host_l.bytes(), 2, 1);
    dev_l = p.acquire(b, access_mode::read);
  }  // the handles (freed at the last release), then the pool object, die here
  EXPECT_TRUE(host_l.active());
  EXPECT_TRUE(has_pattern(host_l.data(), host_l.bytes(), 2, 1));  // memory kept alive
  lease moved = std::move(host_l);
  EXPECT_FALSE(host_l.active());
  moved.release();   // the pool lives on through b's record
  dev_l.release();   // the last release ends the pool
  EXPECT_FALSE(dev_l.active());
}

// Records come from a slab that their control blocks keep alive (Note [Tensor records come
// from a slab]): hundreds of leases (records over several slab chunks) outlive the pool and
// every handle, are used, and end in an order unrelated to allocation (ASan: no use after
// free of a record, its control block or the slab).
TEST(PoolMisuse, ManyLeasesOutlivePoolAndHandlesAcrossRecordChunks)
{
  std::vector<lease> leases;
  // An eighth of the handles outlive the pool too. (close() locks every live record at
  // once, leased ones whose handle died included, and ThreadSanitizer's deadlock detector
  // tracks at most 64 held locks: CI's TSan run leaves this test out.)
  std::vector<tensor> survivors;
  testing::internal::CaptureStderr();
  {
    pool p{small_tiers(make_sim())};
    std::vector<tensor> ts;
    for (std::uint64_t i = 0; i < 240; ++i) {  // records: ~0.75 KiB each, slab chunks from 64 KiB
      tensor t = p.allocate(1_KiB);
      leases.push_back(p.acquire_host(t, access_mode::write_discard));
      write_pattern(leases.back().data(), leases.back().bytes(), i, 1);
      (i % 8 == 0 ? survivors : ts).push_back(std::move(t));
    }
  }  // the other handles die while leased, then the pool object (close() finds live leases)
  std::string const err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("live leases"), std::string::npos) << err;
  for (std::uint64_t i = 0; i < leases.size(); ++i) {
    EXPECT_TRUE(has_pattern(leases[i].data(), leases[i].bytes(), i, 1)) << i;
  }
  for (std::size_t i = 0; i < leases.size(); i += 2) { leases[i].release(); }  // evens first
  survivors.clear();  // handles of leased and of unleased tensors
  for (std::size_t i = leases.size() - 1; i < leases.size(); i -= 2) { leases[i].release(); }  // odds, backwards
  for (lease const& l : leases) { EXPECT_FALSE(l.active()); }
}

TEST(PoolMisuse, HandleDestroyedWhileLeasedFreesAtRelease)
{
  pool p{small_tiers(make_sim())};
  lease l;
  {
    tensor t = p.allocate(4_KiB);
    l = p.acquire_host(t, access_mode::write_discard);
  }
  EXPECT_EQ(p.stats().tensors, 1U);
  l.release();
  EXPECT_EQ(p.stats().tensors, 0U);
  EXPECT_TRUE(p.validate());
}

// A tensor whose handle died while leased is a live tensor of the pool until the last
// release: validate() counts its copies (it reported a used-bytes mismatch before), and
// close() refuses while its lease lives (it used to free the memory under the lease).
// A record counts leases that may write in 16 bits (Note [Record layout]): the 65,536th
// is refused with a typed error before anything changes; the tensor's bytes and the pool
// stay valid, and releasing one makes room again.
TEST(PoolMisuse, TheWriteLeaseBoundIsATypedError)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  tensor t = p.allocate(4_KiB, {.name = "busy"});
  fill(p, t, 9, 1);
  std::vector<lease> ls;
  ls.reserve(65535);
  for (int i = 0; i < 65535; ++i) { ls.push_back(p.acquire_host(t, access_mode::read_write)); }
  try {
    (void)p.acquire_host(t, access_mode::read_write);
    FAIL() << "expected logic_error";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("'busy' already has 65535 live leases that may write"), std::string::npos) << e.what();
  }
  lease r = p.acquire_host(t, access_mode::read);  // reads are not bounded by it
  EXPECT_TRUE(has_pattern(r.data(), r.bytes(), 9, 1));
  r.release();
  ls.pop_back();
  ls.push_back(p.acquire_host(t, access_mode::read_write));
  ls.clear();
  EXPECT_TRUE(check(p, t, 9, 1));
  EXPECT_TRUE(p.validate());
}

TEST(PoolMisuse, HandleDroppedWhileLeasedIsStillALiveTensor)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  lease l;
  {
    tensor t = p.allocate(64_KiB, {.name = "dropped"});
    fill(p, t, 3, 1);
    l = p.acquire(t, access_mode::read, s);
  }
  EXPECT_TRUE(p.validate());
  try {
    p.close();
    FAIL() << "expected logic_error";
  } catch (logic_error const& e) {
    EXPECT_NE(std::string(e.what()).find("'dropped' (1)"), std::string::npos) << e.what();
  }
  p.synchronize(s);
  EXPECT_TRUE(has_pattern(l.data(), l.bytes(), 3, 1));
  l.release();
  EXPECT_EQ(p.stats().tensors, 0U);
  EXPECT_TRUE(p.validate());
  p.close();
}

TEST(PoolMisuse, AcquireOnAnUnknownStreamThrows)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  tensor t = p.allocate(64_KiB);
  fill(p, t, 1, 1);
  EXPECT_THROW((void)p.acquire(t, access_mode::read, stream_handle{0xDEAD000}), logic_error);
  stream_handle raw{};
  ASSERT_EQ(be->create_stream(&raw), status::ok);  // made by the backend, not the pool
  EXPECT_THROW((void)p.acquire(t, access_mode::read, raw), logic_error);
  stream_handle s = p.create_stream();
  { lease l = p.acquire(t, access_mode::read, s); }
  { lease l = p.acquire(t, access_mode::read); }  // the default stream
  p.synchronize(s);
  p.destroy_stream(s);
  EXPECT_THROW((void)p.acquire(t, access_mode::read, s), logic_error);
  be->destroy_stream(raw);
  EXPECT_TRUE(p.validate());
}

// A stream the program made itself (on sim: a handle from the backend, as a cudaStream_t
// from cudaStreamCreate on CUDA) works like the pool's own once wrapped: copy-ins are
// ordered before work on it and evictions wait for its last uses. destroy_stream() makes
// the pool forget it without destroying it.
TEST(PoolStreams, WrappedNativeStreamCarriesLeasesThroughEvictions)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  stream_handle raw{};
  ASSERT_EQ(be->create_stream(&raw), status::ok);
  void* const native = reinterpret_cast<void*>(raw.value);
  stream_handle const w = p.wrap_native_stream(native);
  EXPECT_EQ(w, raw);
  EXPECT_EQ(p.wrap_native_stream(native), w) << "wrapping again gives the same handle";

  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 8; ++i) {  // 2 MiB of tensors on a 1 MiB device
    ts.push_back(p.allocate(256_KiB));
    fill(p, ts.back(), i, 1);
  }
  for (std::uint32_t round = 1; round <= 3; ++round) {
    for (std::uint64_t i = 0; i < ts.size(); ++i) {
      lease l = p.acquire(ts[i], access_mode::read_write, w);
      p.synchronize(w);
      ASSERT_TRUE(has_pattern(l.data(), l.bytes(), i, round)) << "tensor " << i << " round " << round;
      write_pattern(l.data(), l.bytes(), i, round + 1);  // sim memory: the device copy is host memory
    }
  }
  pool_stats const st = p.stats();
  EXPECT_GE(st.tiers[0].evictions, 16U);
  EXPECT_GE(st.copies_d2h, 16U) << "every eviction wrote a dirty copy back";
  for (std::uint64_t i = 0; i < ts.size(); ++i) { EXPECT_TRUE(check(p, ts[i], i, 4)) << i; }

  p.destroy_stream(w);
  EXPECT_THROW((void)p.acquire(ts[0], access_mode::read, w), logic_error);
  EXPECT_EQ(be->synchronize_stream(raw), status::ok) << "the native stream is still the caller's";
  be->destroy_stream(raw);
  EXPECT_TRUE(p.validate());
}

TEST(PoolStreams, WrappingAStreamTheBackendCannotUseThrows)
{
  auto be = make_sim();
  pool p{small_tiers(be)};
  auto message = [&](void* native) -> std::string {
    try {
      (void)p.wrap_native_stream(native);
    } catch (logic_error const& e) {
      return e.what();
    }
    return "(no exception)";
  };
  EXPECT_NE(message(reinterpret_cast<void*>(std::uintptr_t{0xDEAD000})).find("not a live stream of this backend"),
            std::string::npos)
      << message(reinterpret_cast<void*>(std::uintptr_t{0xDEAD000}));
  stream_handle const own = p.create_stream();
  EXPECT_NE(message(reinterpret_cast<void*>(own.value)).find("made by create_stream()"), std::string::npos);
  EXPECT_NE(message(nullptr).find("null stream"), std::string::npos);
  EXPECT_THROW(p.destroy_stream(stream_handle{0xDEAD000}), logic_error);
  // Nothing was disturbed: the pool's own stream still works.
  tensor t = p.allocate(64_KiB);
  fill(p, t, 5, 1);
  { lease l = p.acquire(t, access_mode::read, own); }
  EXPECT_TRUE(check(p, t, 5, 1));
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

namespace tierpool::test {

// A tenant over its quota gets quota_exceeded (an out_of_memory whose cause is quota),
// other tenants are untouched, nothing already stored changes, and freeing makes room.
TEST(PoolQuota, AllocationOverQuotaIsRefusedWithADiagnosis)
{
  auto be = make_sim();
  pool_options o = small_tiers(be);
  o.tenant_quotas = {{7, 1_MiB}};
  pool p{o};
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(256_KiB, {.name = "t" + std::to_string(i), .tenant = 7}));
    fill(p, ts.back(), i, 1);
  }
  try {
    (void)p.allocate(256_KiB, {.name = "one too many", .tenant = 7});
    FAIL() << "expected quota_exceeded";
  } catch (quota_exceeded const& e) {
    EXPECT_EQ(e.tenant(), 7U);
    EXPECT_EQ(e.quota(), 1_MiB);
    EXPECT_EQ(e.live(), 1_MiB);
    EXPECT_EQ(e.requested(), 256_KiB);
    std::string const m = e.what();
    EXPECT_NE(m.find("tenant 7 cannot allocate 'one too many' of 256.0 KiB"), std::string::npos) << m;
    EXPECT_NE(m.find("holds 1.0 MiB in 4 live tensors of its quota of 1.0 MiB"), std::string::npos) << m;
    EXPECT_NE(m.find("cause: quota"), std::string::npos) << m;
  }
  EXPECT_THROW((void)p.allocate(256_KiB, {.tenant = 7}), out_of_memory);  // the same, as its base
  tensor other = p.allocate(512_KiB, {.tenant = 8});                      // no quota
  fill(p, other, 99, 1);
  p.free(ts[0]);
  tensor again = p.allocate(256_KiB, {.tenant = 7});  // room again
  fill(p, again, 50, 1);
  p.set_quota(7, 0);  // removed: no limit
  tensor more = p.allocate(512_KiB, {.tenant = 7});
  pool_stats const st = p.stats();
  ASSERT_EQ(st.tenants.size(), 2U);
  EXPECT_EQ(st.tenants[0].tenant, 7U);
  EXPECT_EQ(st.tenants[0].tensors, 5U);
  EXPECT_EQ(st.tenants[0].live_bytes, 1_MiB + 512_KiB);
  EXPECT_EQ(st.tenants[0].peak_bytes, 1_MiB + 512_KiB);
  EXPECT_EQ(st.tenants[0].quota_bytes, 0U);
  EXPECT_EQ(st.tenants[0].quota_refusals, 2U);
  EXPECT_EQ(st.tenants[1].tenant, 8U);
  EXPECT_EQ(st.tenants[1].live_bytes, 512_KiB);
  for (std::uint64_t i = 1; i < 4; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_TRUE(check(p, other, 99, 1));
  EXPECT_TRUE(check(p, again, 50, 1));
  EXPECT_NE(p.summary().find("tenant 7: 5 tensors, live 1.5 MiB"), std::string::npos) << p.summary();
  EXPECT_NE(p.summary_json().find("\"quota_refusals\":2"), std::string::npos);
  EXPECT_TRUE(p.validate());
}

// A placement failure after the quota was charged gives the bytes back.
TEST(PoolQuota, FailedPlacementDoesNotLeakTheCharge)
{
  auto be = make_sim();
  pool_options o = small_tiers(be, 1_MiB, 0, 2_MiB);
  o.tenant_quotas = {{1, 64_MiB}};
  pool p{o};
  EXPECT_THROW((void)p.allocate(4_MiB, {.tenant = 1}), out_of_memory);  // larger than every tier
  tensor a = p.allocate(1_MiB, {.tenant = 1});
  tensor b = p.allocate(2_MiB, {.tenant = 1});
  std::vector<lease> pins;
  pins.push_back(p.acquire_host(b, access_mode::read));
  EXPECT_THROW((void)p.allocate(2_MiB, {.tenant = 1, .preferred_tier = tier_id{1}}), out_of_memory);
  pins.clear();
  pool_stats const st = p.stats();
  ASSERT_EQ(st.tenants.size(), 1U);
  EXPECT_EQ(st.tenants[0].live_bytes, 3_MiB);
  EXPECT_EQ(st.tenants[0].tensors, 2U);
  EXPECT_TRUE(p.validate());
}

}  // namespace tierpool::test

namespace tierpool::test {

// Fills 1 MiB tier `k` with four 256 KiB tensors, each held by a lease (on `s` for the
// device tier 0, on the host otherwise), so that nothing in it can be evicted.
void pin_full(pool& p, tier_id k, stream_handle s, std::vector<tensor>& ts, std::vector<lease>& held)
{
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = k}));
    held.push_back(k == tier_id{0} ? p.acquire(ts.back(), access_mode::read, s)
                                   : p.acquire_host(ts.back(), access_mode::read));
  }
}

// A pool whose 1 MiB device tier is full of leased tensors (pin_full), and a stream.
struct full_device {
  std::shared_ptr<sim_backend> be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  std::vector<lease> held;
  full_device() { pin_full(p, tier_id{0}, s, ts, held); }
  /// A 256 KiB tensor placed in the host tier, holding pattern (9, 1).
  tensor extra(std::string name = {})
  {
    tensor t = p.allocate(256_KiB, {.name = std::move(name), .preferred_tier = tier_id{1}});
    fill(p, t, 9, 1);
    return t;
  }
};

// Ladder step 7: when everything resident is pinned, the callbacks run once, may release
// leases (or free tensors), and the request is retried; without help it still fails.
TEST(PoolLowMemory, CallbackReleasesLeasesAndTheRequestSucceeds)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 16_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  std::vector<lease> held;
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{0}}));
    fill(p, ts.back(), i, 1);
    held.push_back(p.acquire(ts.back(), access_mode::read, s));
  }
  std::vector<low_memory_event> seen;
  std::uint64_t const id = p.add_low_memory_callback([&](low_memory_event const& e) {
    seen.push_back(e);
    if (!held.empty()) { held.pop_back(); }  // give one lease back
  });
  tensor extra = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  fill(p, extra, 9, 1);
  {
    lease l = p.acquire(extra, access_mode::read, s);  // the device is all pinned: the callback helps
  }
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].tier, tier_id{0});
  EXPECT_EQ(seen[0].tier_name, "device");
  EXPECT_EQ(seen[0].bytes_needed, 256_KiB);
  EXPECT_EQ(seen[0].capacity_bytes, 1_MiB);
  EXPECT_EQ(seen[0].pinned_bytes, 1_MiB);
  EXPECT_EQ(held.size(), 3U);
  EXPECT_EQ(p.stats().low_memory_callbacks, 1U);

  // A callback that cannot help: the request fails as before, after one call.
  p.remove_low_memory_callback(id);
  int calls = 0;
  (void)p.add_low_memory_callback([&](low_memory_event const&) { ++calls; });
  held.push_back(p.acquire(ts[3], access_mode::read, s));  // all pinned again
  tensor extra2 = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
  fill(p, extra2, 10, 1);
  EXPECT_THROW({ lease l = p.acquire(extra2, access_mode::read, s); }, out_of_memory);
  EXPECT_EQ(calls, 1);
  held.clear();
  p.synchronize(s);
  for (std::uint64_t i = 0; i < 4; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_TRUE(check(p, extra, 9, 1));
  EXPECT_TRUE(check(p, extra2, 10, 1));
  EXPECT_TRUE(p.validate());
}

// The callbacks run with no pool lock held, the requested tensor's included (Note
// [Low-memory callbacks run unlocked]): a callback may use that tensor too. Here it
// reads it on the host, makes room and prefetches it; the request starts over. The acquire
// counts once (a miss) and the tensor is copied in once.
TEST(PoolLowMemory, CallbackMayUseTheRequestsOwnTensor)
{
  full_device f;
  auto& [be, p, s, ts, held] = f;
  tensor extra = f.extra("extra");
  pool_stats const before = p.stats();
  bool seen_in_callback = false;
  (void)p.add_low_memory_callback([&](low_memory_event const&) {
    {
      lease h = p.acquire_host(extra, access_mode::read);
      seen_in_callback = has_pattern(h.data(), h.bytes(), 9, 1);
    }
    held.pop_back();  // room for one
    p.prefetch(extra);  // issued at once, or queued behind the released lease's work
  });
  {
    lease l = p.acquire(extra, access_mode::read, s);
    p.synchronize(s);
    EXPECT_TRUE(has_pattern(l.data(), l.bytes(), 9, 1));
  }
  pool_stats const after = p.stats();
  EXPECT_TRUE(seen_in_callback);
  EXPECT_EQ(after.misses - before.misses, 1U) << "the acquire, counted once";
  EXPECT_EQ(after.hits - before.hits, 1U) << "the acquire_host found the host copy";
  EXPECT_EQ(after.copies_h2d - before.copies_h2d, 1U) << "one copy-in, by the prefetch or the second attempt";
  EXPECT_EQ(after.low_memory_callbacks, 1U);
  held.clear();
  p.synchronize(s);
  EXPECT_TRUE(check(p, extra, 9, 1));
  EXPECT_TRUE(p.validate());
}

// Regression: the callbacks ran with the request's record locked, so a thread locking
// records in id order (validate, close) blocked on it while holding lower ids, and a
// callback releasing a lease of a lower id then deadlocked. Here validate() runs on
// another thread while the callback waits for it; it used to block for ever.
TEST(PoolLowMemory, ValidateOnAnotherThreadWhileACallbackRuns)
{
  full_device f;
  auto& [be, p, s, ts, held] = f;
  tensor extra = f.extra();
  bool validated = false;
  (void)p.add_low_memory_callback([&](low_memory_event const&) {
    auto v = std::async(std::launch::async, [&] { return p.validate(); });  // locks every record, extra's too
    if (v.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      std::fprintf(stderr, "FATAL: validate() blocked while a low-memory callback ran (a record lock is held)\n");
      std::_Exit(1);  // a deadlocked thread cannot be joined
    }
    validated = v.get();
    held.front() = lease{};  // release the lease of the lowest id (the old deadlock's shape)
  });
  {
    lease l = p.acquire(extra, access_mode::read, s);
    p.synchronize(s);
    EXPECT_TRUE(has_pattern(l.data(), l.bytes(), 9, 1));
  }
  EXPECT_TRUE(validated) << "the pool is consistent while a request waits on its callbacks";
  held.clear();
  p.synchronize(s);
  EXPECT_TRUE(check(p, extra, 9, 1));
  EXPECT_TRUE(p.validate());
}

// A callback calling pool::free on the tensor whose request called it: the free waits for
// the request (as for a lease), which completes; the tensor is freed when its lease ends.
TEST(PoolLowMemory, CallbackFreeingTheRequestsOwnTensorFreesItAfterTheLease)
{
  full_device f;
  auto& [be, p, s, ts, held] = f;
  tensor extra = f.extra();
  tensor const& ref = extra;
  (void)p.add_low_memory_callback([&](low_memory_event const&) {
    p.free(extra);
    held.pop_back();
  });
  lease l = p.acquire(ref, access_mode::read, s);
  EXPECT_FALSE(extra.valid());
  p.synchronize(s);
  EXPECT_TRUE(has_pattern(l.data(), l.bytes(), 9, 1));
  EXPECT_EQ(p.stats().tensors, 5U);
  l.release();
  EXPECT_EQ(p.stats().tensors, 4U);
  EXPECT_TRUE(p.validate());
  held.clear();
}

// Regression: a callback that destroys the handle of the tensor whose acquire called it
// ended in std::terminate (the handle's destructor locked a record its own thread held).
// Now the request completes and the tensor is freed when its lease ends (Note [A handle
// dropped during its own request]).
TEST(PoolLowMemory, CallbackDroppingTheRequestsOwnHandleFreesItAfterTheLease)
{
  full_device f;
  auto& [be, p, s, ts, held] = f;
  std::optional<tensor> extra = f.extra("extra");
  int calls = 0;
  (void)p.add_low_memory_callback([&](low_memory_event const&) {
    ++calls;
    extra.reset();     // the last handle of the tensor being placed
    held.pop_back();   // and room for it
  });
  lease l = p.acquire(*extra, access_mode::read, s);  // the reference dangles once the callback ran; acquire no longer reads it
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(extra.has_value());
  ASSERT_TRUE(l.active());
  p.synchronize(s);
  EXPECT_TRUE(has_pattern(l.data(), l.bytes(), 9, 1)) << "the copy-in the request made is intact";
  EXPECT_EQ(p.stats().tensors, 5U) << "freed at the lease's end, not before";
  l.release();
  EXPECT_EQ(p.stats().tensors, 4U);
  EXPECT_EQ(p.stats().tensor_bytes, 1_MiB);
  EXPECT_TRUE(p.validate());
  held.clear();
}

// The same, recorded (pool_options::trace_path): the tensor's free is recorded when it
// happens, after the request's access and the lease's release, so the trace replays.
TEST(PoolLowMemory, HandleDroppedByACallbackIsRecordedFreedAfterItsAccess)
{
  auto const path = std::filesystem::temp_directory_path() /
                    ("tierpool_lowmem_trace_" + std::to_string(::getpid()) + ".tpt");
  {
    auto be = make_sim();
    pool_options o = small_tiers(be, 1_MiB, 0, 16_MiB);
    o.trace_path = path.string();
    pool p{o};
    stream_handle s = p.create_stream();
    std::vector<tensor> ts;
    std::vector<lease> held;
    pin_full(p, tier_id{0}, s, ts, held);
    std::optional<tensor> extra = p.allocate(256_KiB, {.preferred_tier = tier_id{1}});
    (void)p.add_low_memory_callback([&](low_memory_event const&) {
      extra.reset();
      held.pop_back();
    });
    { lease l = p.acquire(*extra, access_mode::read, s); }
    held.clear();
    p.synchronize(s);
  }
  std::vector<trace::event> const ev = trace::read_all(path);
  std::filesystem::remove(path);
  std::vector<std::string> tail;  // the events of tensor 5 (the four pinned ones are 1..4)
  for (trace::event const& e : ev) {
    if (e.tensor == 5) { tail.push_back(std::string(trace::to_string(e.kind))); }
  }
  EXPECT_EQ(tail, (std::vector<std::string>{"allocate", "access", "release", "free"}));
}

// As above, but the callback cannot make room: the out_of_memory propagates, and the
// tensor whose handle died is freed as the request lets go of it (no leak, no lease).
TEST(PoolLowMemory, CallbackDroppingTheRequestsOwnHandleThenOutOfMemoryFreesIt)
{
  full_device f;
  auto& [be, p, s, ts, held] = f;
  std::vector<tensor> extras;
  extras.push_back(f.extra("extra"));
  tensor const& ref = extras[0];
  (void)p.add_low_memory_callback([&](low_memory_event const&) { extras.clear(); });
  EXPECT_THROW({ lease l = p.acquire(ref, access_mode::read, s); }, out_of_memory);
  EXPECT_TRUE(extras.empty());
  EXPECT_EQ(p.stats().tensors, 4U);
  EXPECT_EQ(p.stats().tensor_bytes, 1_MiB);
  EXPECT_TRUE(p.validate());
  held.clear();
  p.synchronize(s);
}

// A callback that ends a lease of the tensor being placed (here its host copy's lease, then
// its last handle) used to end in std::terminate too (release locked the held record).
TEST(PoolLowMemory, CallbackEndingALeaseOfTheRequestsOwnTensor)
{
  full_device f;
  auto& [be, p, s, ts, held] = f;
  std::optional<tensor> extra = f.extra();
  lease host_view = p.acquire_host(*extra, access_mode::read);
  bool drop_handle = false;
  (void)p.add_low_memory_callback([&](low_memory_event const&) {
    host_view.release();
    if (drop_handle) { extra.reset(); }
    held.pop_back();
  });
  {
    lease l = p.acquire(*extra, access_mode::read, s);  // the handle survives: an ordinary lease
    EXPECT_FALSE(host_view.active());
    p.synchronize(s);
    EXPECT_TRUE(has_pattern(l.data(), l.bytes(), 9, 1));
  }
  EXPECT_TRUE(p.validate());
  EXPECT_EQ(p.stats().tensors, 5U);
  // Again, the callback also dropping the last handle: freed when the new lease ends.
  held.push_back(p.acquire(ts[3], access_mode::read, s));
  p.demote(*extra, tier_id{1});
  host_view = p.acquire_host(*extra, access_mode::read);
  drop_handle = true;
  {
    lease l = p.acquire(*extra, access_mode::read, s);
    EXPECT_FALSE(extra.has_value());
    p.synchronize(s);
    EXPECT_TRUE(has_pattern(l.data(), l.bytes(), 9, 1));
    EXPECT_EQ(p.stats().tensors, 5U);
  }
  EXPECT_EQ(p.stats().tensors, 4U);
  EXPECT_TRUE(p.validate());
  held.clear();
}

// allocate into a preferred tier takes the same step (its placement, outside any record
// lock): it runs once more after the callbacks, and fails as before when they cannot help.
TEST(PoolLowMemory, AllocateRetriesAfterTheCallbacks)
{
  full_device f;
  auto& [be, p, s, ts, held] = f;
  int calls = 0;
  bool help = true;
  (void)p.add_low_memory_callback([&](low_memory_event const& e) {
    ++calls;
    EXPECT_EQ(e.tier, tier_id{0});
    if (help && !held.empty()) { held.pop_back(); }
  });
  tensor a = p.allocate(256_KiB, {.preferred_tier = tier_id{0}});  // the device is all pinned
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(p.stats().tiers[0].resident_tensors, 4U) << "one leased tensor was evicted for it";
  fill(p, a, 7, 1);
  held.push_back(p.acquire(ts[3], access_mode::read, s));  // 0-3 leased again: 1 MiB cannot fit
  help = false;
  EXPECT_THROW((void)p.allocate(1_MiB, {.preferred_tier = tier_id{0}}), out_of_memory);
  EXPECT_EQ(calls, 2) << "one call per failing request";
  held.clear();
  p.synchronize(s);
  EXPECT_TRUE(check(p, a, 7, 1));
  EXPECT_TRUE(p.validate());
}

// demote takes the same step: the pinned tier is full of leased copies, the callback ends
// one lease (its tensor is then written back to the host tier to make room), and the
// demotion is retried once; without help it fails and the tensor stays where it was.
TEST(PoolLowMemory, DemoteRetriesAfterTheCallbacks)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 1_MiB, 16_MiB)};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  std::vector<lease> held;
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{1}}));
    fill(p, ts.back(), i, 1);
    held.push_back(p.acquire_host(ts.back(), access_mode::read));
  }
  auto on_device = [&](std::uint64_t key) {
    tensor t = p.allocate(256_KiB, {.preferred_tier = tier_id{0}});
    {
      lease w = p.acquire(t, access_mode::write_discard, s);
      write_pattern(w.data(), w.bytes(), key, 1);  // sim memory: the device copy is host memory
    }
    p.synchronize(s);
    return t;
  };
  tensor a = on_device(7);
  int calls = 0;
  bool help = true;
  (void)p.add_low_memory_callback([&](low_memory_event const& e) {
    ++calls;
    EXPECT_EQ(e.tier, tier_id{1});
    EXPECT_EQ(e.bytes_needed, 256_KiB);
    EXPECT_EQ(e.pinned_bytes, 1_MiB);
    if (help && !held.empty()) { held.pop_back(); }
  });
  p.demote(a, tier_id{1});
  EXPECT_EQ(calls, 1);
  pool_stats st = p.stats();
  EXPECT_EQ(st.tiers[0].resident_tensors, 0U) << "the device copy was dropped";
  EXPECT_EQ(st.tiers[1].resident_tensors, 4U) << "three leased tensors and a";
  EXPECT_EQ(st.tiers[2].resident_tensors, 1U) << "the unleased one, written back for a";

  held.push_back(p.acquire_host(ts[3], access_mode::read));  // ts[3] is now in the host tier
  held.push_back(p.acquire_host(a, access_mode::read));      // the pinned tier: all leased again
  tensor b = on_device(8);
  help = false;
  EXPECT_THROW(p.demote(b, tier_id{1}), out_of_memory);
  EXPECT_EQ(calls, 2) << "one call per failing request";
  st = p.stats();
  EXPECT_EQ(st.tiers[0].resident_tensors, 1U) << "b stays on the device";
  EXPECT_EQ(st.low_memory_callbacks, 2U);
  held.clear();
  for (std::uint64_t i = 0; i < 4; ++i) { EXPECT_TRUE(check(p, ts[i], i, 1)) << i; }
  EXPECT_TRUE(check(p, a, 7, 1));
  EXPECT_TRUE(check(p, b, 8, 1));
  EXPECT_TRUE(p.validate());
}

// acquire_host: the same with the host tier full of leased copies.
TEST(PoolLowMemory, CallbackDroppingTheOwnHandleDuringAcquireHost)
{
  auto be = make_sim();
  pool p{small_tiers(be, 1_MiB, 0, 1_MiB)};
  std::vector<tensor> ts;
  std::vector<lease> held;
  pin_full(p, tier_id{1}, stream_handle{}, ts, held);
  std::optional<tensor> extra = p.allocate(256_KiB, {.preferred_tier = tier_id{0}});
  stream_handle s = p.create_stream();
  {
    lease w = p.acquire(*extra, access_mode::write_discard, s);
    write_pattern(w.data(), w.bytes(), 5, 1);  // sim memory: the device copy is host memory
  }
  p.synchronize(s);
  (void)p.add_low_memory_callback([&](low_memory_event const& e) {
    EXPECT_EQ(e.tier, tier_id{1});
    extra.reset();
    held.pop_back();  // the host tier is the last: its tensors cannot be evicted, only freed
    ts.pop_back();
  });
  {
    lease h = p.acquire_host(*extra, access_mode::read);
    EXPECT_TRUE(has_pattern(h.data(), h.bytes(), 5, 1));
    EXPECT_EQ(p.stats().tensors, 4U);
  }
  EXPECT_EQ(p.stats().tensors, 3U);
  EXPECT_TRUE(p.validate());
  held.clear();
}

}  // namespace tierpool::test

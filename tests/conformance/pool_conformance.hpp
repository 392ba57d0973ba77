// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file pool_conformance.hpp
 * @brief The pool conformance suite: one typed test suite of tierpool::pool behaviour,
 *        through the public API only, that the pool passes on every backend configuration
 *        (sim with real or phantom memory, on a wall or virtual clock; cuda where a GPU is).
 *
 * A factory type F provides the backend the pools of a test share:
 * @code
 * struct my_factory {
 *   // null (with a reason in *why) -> every test GTEST_SKIP()s
 *   static std::shared_ptr<tierpool::backend> make(std::string* why);
 *   static char const* name();
 * };
 * namespace tierpool::conformance {  // the suite lives there
 * INSTANTIATE_TYPED_TEST_SUITE_P(Mine, PoolConformance, ::testing::Types<my_factory>);
 * }
 * @endcode
 *
 * Each test builds pools of three small tiers (device 1 MiB, pinned_host 2 MiB, host
 * 16 MiB) on that backend. Tensor bytes are patterns derived from (key, version); they are
 * written on the host (acquire_host) and on the device (a copy from a pinned staging
 * buffer into the lease's memory, on the lease's stream: the "kernel" of these tests, so
 * that no test needs device code), and read back on the host (acquire_host) and on the
 * device (a copy of the lease's memory into a staging buffer on the lease's stream).
 *
 * Phantom memory (caps().real_memory false) has no bytes: the suite then runs every call
 * as usual but skips the byte comparisons (check() and check_on_device() succeed without
 * reading), and says so once per test in the test's properties ("byte_checks"). Every
 * other assertion (statistics, placement, validate(), typed errors) holds on every backend.
 *
 * Nothing here is timed, and no test blocks a stream with a host function (on a virtual
 * clock a host function runs when it is enqueued).
 */
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/tier.hpp>
#include <tierpool/types.hpp>

namespace tierpool::conformance {

/// Byte i of the pattern of (key, version).
inline std::uint8_t tensor_byte(std::uint64_t key, std::uint32_t version, std::size_t i) noexcept
{
  return static_cast<std::uint8_t>((key * 131U + version * 17U + i * 7U + (i >> 9U)) & 0xFFU);
}

inline void write_tensor_pattern(void* p, std::size_t n, std::uint64_t key, std::uint32_t version) noexcept
{
  auto* b = static_cast<std::uint8_t*>(p);
  for (std::size_t i = 0; i < n; ++i) { b[i] = tensor_byte(key, version, i); }
}

/// Index of the first byte that differs from the pattern, or n when all match.
inline std::size_t tensor_mismatch(void const* p, std::size_t n, std::uint64_t key, std::uint32_t version) noexcept
{
  auto const* b = static_cast<std::uint8_t const*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (b[i] != tensor_byte(key, version, i)) { return i; }
  }
  return n;
}

/// Pinned host memory of the backend for copies on a stream. Once used (used_on), it is
/// freed only after that stream's work up to the use has completed (an event, which
/// outlives the stream), so a test that stops early never frees a buffer under a copy.
class staging_buffer {
 public:
  staging_buffer(backend& be, std::size_t bytes) : be_(&be), bytes_(bytes)
  {
    status_ = be.allocate(tier_kind::pinned_host, bytes, &ptr_);
  }
  staging_buffer(staging_buffer const&) = delete;
  staging_buffer& operator=(staging_buffer const&) = delete;
  ~staging_buffer()
  {
    if (recorded_) { (void)be_->synchronize_event(done_); }
    if (done_) { be_->destroy_event(done_); }
    if (ptr_ != nullptr) { be_->deallocate(tier_kind::pinned_host, ptr_, bytes_); }
  }
  /// Mark the end of the buffer's use on `s`. @return ok, or the failing status.
  [[nodiscard]] status used_on(stream_handle s)
  {
    if (!done_) {
      if (status const st = be_->create_event(&done_); st != status::ok) { return st; }
    }
    status const st = be_->record_event(done_, s);
    recorded_ = recorded_ || st == status::ok;
    return st;
  }
  [[nodiscard]] status result() const noexcept { return status_; }
  [[nodiscard]] void* get() const noexcept { return ptr_; }

 private:
  backend* be_;
  std::size_t bytes_;
  void* ptr_{nullptr};
  status status_{status::invalid_value};
  event_handle done_{};
  bool recorded_{false};
};

/// Base of the suite's fixture: the backend, pool options, and the byte helpers.
template <class F>
class PoolConformance : public ::testing::Test {
 protected:
  static constexpr std::size_t device_tier = 1_MiB;
  static constexpr std::size_t pinned_tier = 2_MiB;
  static constexpr std::size_t host_tier = 16_MiB;

  void SetUp() override
  {
    std::string why;
    be_ = F::make(&why);
    if (!be_) { GTEST_SKIP() << F::name() << ": " << why; }
    bytes_ = be_->caps().real_memory;
    if (!bytes_) { RecordProperty("byte_checks", "skipped: phantom memory has no bytes"); }
  }

  void TearDown() override { staging_.clear(); }

  /// The backend's memory holds bytes (false: phantom, byte comparisons skipped).
  [[nodiscard]] bool has_bytes() const noexcept { return bytes_; }

  /// Options of a pool on the fixture's backend: device, pinned_host and host tiers (0: none).
  [[nodiscard]] pool_options options(std::size_t dev = device_tier, std::size_t pinned = pinned_tier,
                                     std::size_t host = host_tier) const
  {
    pool_options o;
    o.backend_object = be_;
    o.read_environment = false;
    o.notice = fallback_notice::silent;
    o.publish.enabled = false;
    if (dev != 0) { o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = dev, .chunk_bytes = dev}); }
    if (pinned != 0) {
      o.tiers.push_back({.kind = tier_kind::pinned_host, .capacity_bytes = pinned, .chunk_bytes = 1_MiB});
    }
    if (host != 0) { o.tiers.push_back({.kind = tier_kind::host, .capacity_bytes = host, .chunk_bytes = 4_MiB}); }
    return o;
  }

  /// Write pattern (key, version) on the host.
  void fill(pool& p, tensor const& t, std::uint64_t key, std::uint32_t version) const
  {
    lease h = p.acquire_host(t, access_mode::write_discard);
    ASSERT_EQ(h.bytes(), t.bytes());
    if (bytes_) { write_tensor_pattern(h.data(), h.bytes(), key, version); }
  }

  /// Read the tensor on the host and compare it with pattern (key, version).
  [[nodiscard]] ::testing::AssertionResult check(pool& p, tensor const& t, std::uint64_t key,
                                                 std::uint32_t version) const
  {
    lease h = p.acquire_host(t, access_mode::read);
    if (h.data() == nullptr || h.bytes() != t.bytes()) { return ::testing::AssertionFailure() << "bad host lease"; }
    if (!bytes_) { return ::testing::AssertionSuccess(); }
    std::size_t const at = tensor_mismatch(h.data(), h.bytes(), key, version);
    if (at == h.bytes()) { return ::testing::AssertionSuccess(); }
    return ::testing::AssertionFailure() << "tensor " << static_cast<std::uint64_t>(t.id()) << " (key " << key
                                         << ") differs from version " << version << " at byte " << at << " of "
                                         << h.bytes();
  }

  /// The "kernel": acquire(read_write) on `s` and overwrite the device copy with pattern
  /// (key, version) by a copy from a staging buffer, ordered on `s`; the lease then ends.
  void write_on_device(pool& p, tensor const& t, stream_handle s, std::uint64_t key, std::uint32_t version)
  {
    lease l = p.acquire(t, access_mode::read_write, s);
    ASSERT_NE(l.data(), nullptr);
    auto& buf = staging_.emplace_back(std::make_unique<staging_buffer>(*be_, l.bytes()));
    ASSERT_EQ(buf->result(), status::ok);
    if (bytes_) { write_tensor_pattern(buf->get(), l.bytes(), key, version); }
    copy_desc const d{l.data(), buf->get(), l.bytes(), tier_kind::device, tier_kind::pinned_host};
    ASSERT_EQ(be_->copy_async(d, s), status::ok);
    ASSERT_EQ(buf->used_on(s), status::ok);
  }

  /// acquire(read) on `s`, copy the device copy into a staging buffer on `s`, wait for `s`
  /// and compare with pattern (key, version).
  [[nodiscard]] ::testing::AssertionResult check_on_device(pool& p, tensor const& t, stream_handle s,
                                                           std::uint64_t key, std::uint32_t version)
  {
    staging_buffer buf(*be_, t.bytes());
    if (buf.result() != status::ok) { return ::testing::AssertionFailure() << "no staging buffer"; }
    {
      lease l = p.acquire(t, access_mode::read, s);
      copy_desc const d{buf.get(), l.data(), l.bytes(), tier_kind::pinned_host, tier_kind::device};
      if (be_->copy_async(d, s) != status::ok) { return ::testing::AssertionFailure() << "copy_async failed"; }
      if (buf.used_on(s) != status::ok) { return ::testing::AssertionFailure() << "record_event failed"; }
    }
    p.synchronize(s);
    if (!bytes_) { return ::testing::AssertionSuccess(); }
    std::size_t const at = tensor_mismatch(buf.get(), t.bytes(), key, version);
    if (at == t.bytes()) { return ::testing::AssertionSuccess(); }
    return ::testing::AssertionFailure() << "device copy of key " << key << " differs from version " << version
                                         << " at byte " << at;
  }

  /// Wait for `s` and free the staging buffers of earlier device writes.
  void drain(pool& p, stream_handle s)
  {
    p.synchronize(s);
    staging_.clear();
  }

  std::shared_ptr<backend> be_;
  bool bytes_{true};
  std::vector<std::unique_ptr<staging_buffer>> staging_;
};

/// Evictions of every tier so far.
inline std::uint64_t total_evictions(pool const& p)
{
  std::uint64_t n = 0;
  for (tier_stats const& t : p.stats().tiers) { n += t.evictions; }
  return n;
}

/// The invariants every pool_stats snapshot keeps; `live` and `live_bytes` are the test's own count.
inline void expect_stats_invariants(pool_stats const& st, std::uint64_t live, std::size_t live_bytes,
                                    bool leases_live)
{
  EXPECT_EQ(st.tensors, live);
  EXPECT_EQ(st.tensor_bytes, live_bytes);
  EXPECT_EQ(st.hits + st.misses, st.acquires + st.acquire_failures) << "every acquire call is a hit or a miss";
  EXPECT_LE(st.prefetch_hits + st.prefetch_late, st.prefetches);
  EXPECT_EQ(st.copies_h2d == 0, st.bytes_h2d == 0);
  EXPECT_EQ(st.copies_d2h == 0, st.bytes_d2h == 0);
  EXPECT_EQ(st.copies_up == 0, st.bytes_up == 0);
  EXPECT_EQ(st.copies_down == 0, st.bytes_down == 0);
  EXPECT_LE(st.copies_h2d, st.copies_up) << "a copy into the device is a copy up";
  EXPECT_LE(st.copies_d2h, st.copies_down) << "a copy out of the device is a copy down";
  EXPECT_GE(st.stall_seconds, 0.0);
  std::uint64_t resident = 0;
  for (tier_stats const& t : st.tiers) {
    SCOPED_TRACE(t.name);
    EXPECT_LE(t.used_bytes.current, static_cast<std::int64_t>(t.capacity_bytes));
    EXPECT_GE(t.used_bytes.current, 0);
    EXPECT_GE(t.used_bytes.peak, t.used_bytes.current);
    EXPECT_EQ(t.used_bytes.allocated - t.used_bytes.freed, t.used_bytes.current);
    EXPECT_LE(t.reserved_bytes, t.capacity_bytes);
    EXPECT_LE(t.largest_free_block, t.capacity_bytes);
    EXPECT_LE(t.pinned_bytes, static_cast<std::size_t>(t.used_bytes.current));
    EXPECT_GE(t.fragmentation, 0.0);
    EXPECT_LE(t.fragmentation, 1.0);
    EXPECT_LE(t.evictions_clean, t.evictions);
    if (!leases_live) { EXPECT_EQ(t.pinned_bytes, 0U); }
    resident += t.resident_tensors;
  }
  EXPECT_GE(resident, live) << "every live tensor has a copy in some tier";
}

TYPED_TEST_SUITE_P(PoolConformance);

// Tensors of odd and even sizes are filled and read back; counts follow allocate and free.
TYPED_TEST_P(PoolConformance, AllocateFillReadBackAndFree)
{
  pool p{this->options()};
  std::vector<std::size_t> const sizes{1, 255, 256, 4_KiB, 100'001, 256_KiB, 1_MiB, 3_MiB};
  std::vector<tensor> ts;
  std::size_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ts.push_back(p.allocate(sizes[i], {.name = "t" + std::to_string(i)}));
    ASSERT_TRUE(ts.back().valid());
    EXPECT_EQ(ts.back().bytes(), sizes[i]);
    this->fill(p, ts.back(), i, 1);
    total += sizes[i];
    ASSERT_TRUE(p.validate());
  }
  for (std::size_t i = 0; i < ts.size(); ++i) { EXPECT_TRUE(this->check(p, ts[i], i, 1)); }
  expect_stats_invariants(p.stats(), ts.size(), total, false);
  for (std::size_t i = 0; i < ts.size(); i += 2) {
    total -= ts[i].bytes();
    p.free(ts[i]);
    EXPECT_FALSE(ts[i].valid());
  }
  expect_stats_invariants(p.stats(), ts.size() / 2, total, false);
  for (std::size_t i = 1; i < ts.size(); i += 2) { EXPECT_TRUE(this->check(p, ts[i], i, 1)); }
  EXPECT_TRUE(p.validate());
  ts.clear();  // handles free their tensors
  expect_stats_invariants(p.stats(), 0, 0, false);
  EXPECT_TRUE(p.validate());
}

// A working set four times the device tier, written on the device round after round:
// every eviction writes the newest bytes back, and after each one every tensor is whole.
TYPED_TEST_P(PoolConformance, OversubscribedDeviceWritesSurviveEveryEviction)
{
  pool p{this->options()};
  stream_handle s = p.create_stream();
  constexpr std::uint64_t n = 16;  // 16 x 256 KiB = 4 MiB: more than device + pinned_host
  std::vector<tensor> ts;
  std::vector<std::uint32_t> ver(n, 1);
  for (std::uint64_t i = 0; i < n; ++i) {
    ts.push_back(p.allocate(256_KiB));
    this->fill(p, ts.back(), i, 1);
  }
  std::uint64_t checks = 0;
  for (int round = 0; round < 3; ++round) {
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint64_t const ev = total_evictions(p);
      this->write_on_device(p, ts[i], s, i, ++ver[i]);
      ASSERT_TRUE(p.validate());
      if (total_evictions(p) == ev) { continue; }
      ++checks;
      for (std::uint64_t k = 0; k < n; ++k) {
        ASSERT_TRUE(this->check(p, ts[k], k, ver[k])) << "round " << round << ", after the write of " << i;
      }
    }
    this->drain(p, s);
  }
  EXPECT_GT(checks, 0U) << "no write evicted anything";
  for (std::uint64_t i = 0; i < n; ++i) { EXPECT_TRUE(this->check_on_device(p, ts[i], s, i, ver[i])) << i; }
  pool_stats const st = p.stats();
  EXPECT_GT(st.tiers[0].evictions, 0U);
  EXPECT_GE(st.misses, 3 * n) << "the working set does not fit: every device write copied in";
  EXPECT_GT(st.bytes_d2h, 0U) << "dirty device copies were written back";
  EXPECT_LE(st.tiers[0].used_bytes.peak, static_cast<std::int64_t>(PoolConformance<TypeParam>::device_tier));
  expect_stats_invariants(st, n, n * 256_KiB, false);
  EXPECT_TRUE(p.validate());
}

// prefetch() copies a tensor into the device tier ahead of its acquire: the acquire is a
// hit (or a late prefetch), the device copy holds the bytes; with the device tier full,
// the prefetch evicts and every tensor stays whole.
TYPED_TEST_P(PoolConformance, PrefetchMakesTheBytesResidentOnTheDevice)
{
  pool p{this->options()};
  stream_handle s = p.create_stream();
  tensor a = p.allocate(256_KiB, {.preferred_tier = tier_id{2}});
  this->fill(p, a, 100, 1);
  EXPECT_EQ(p.stats().tiers[0].resident_tensors, 0U);
  p.prefetch(a);
  p.prefetch(a);  // resident or in flight: no second copy
  pool_stats st = p.stats();
  EXPECT_EQ(st.prefetches, 1U);
  EXPECT_EQ(st.tiers[0].resident_tensors, 1U);
  std::uint64_t const misses = st.misses;
  EXPECT_TRUE(this->check_on_device(p, a, s, 100, 1));
  st = p.stats();
  EXPECT_EQ(st.misses, misses) << "the acquire after a prefetch copied in again";
  EXPECT_EQ(st.prefetch_hits + st.prefetch_late, 1U);
  ASSERT_TRUE(p.validate());

  // The device tier full of dirty copies (their writes done): a prefetch evicts one.
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 3; ++i) {
    ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{0}}));
    this->write_on_device(p, ts.back(), s, i, 2);
  }
  this->drain(p, s);
  tensor b = p.allocate(256_KiB, {.preferred_tier = tier_id{2}});
  this->fill(p, b, 101, 1);
  std::uint64_t const ev = total_evictions(p);
  p.prefetch(b);
  st = p.stats();
  EXPECT_GE(st.prefetches + st.prefetch_queued, 2U) << "the prefetch neither issued nor queued";
  ASSERT_TRUE(p.validate());
  EXPECT_TRUE(this->check_on_device(p, b, s, 101, 1));
  EXPECT_GT(total_evictions(p), ev);
  EXPECT_TRUE(this->check(p, a, 100, 1));
  for (std::uint64_t i = 0; i < 3; ++i) { EXPECT_TRUE(this->check(p, ts[i], i, 2)) << i; }
  EXPECT_TRUE(this->check(p, b, 101, 1));
  expect_stats_invariants(p.stats(), 5, 5 * 256_KiB, false);
  EXPECT_TRUE(p.validate());
}

// demote() moves the newest bytes down and drops the copies above; a leased tensor or an
// unknown tier is a logic_error and changes nothing.
TYPED_TEST_P(PoolConformance, DemoteMovesDownAndKeepsTheBytes)
{
  pool p{this->options()};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(256_KiB, {.preferred_tier = tier_id{0}});
  this->write_on_device(p, t, s, 7, 2);  // the newest bytes are on the device only
  p.demote(t, tier_id{2});
  pool_stats st = p.stats();
  EXPECT_EQ(st.tiers[0].resident_tensors, 0U);
  EXPECT_EQ(st.tiers[1].resident_tensors, 0U);
  EXPECT_EQ(st.tiers[2].resident_tensors, 1U);
  EXPECT_GE(st.bytes_d2h, 256_KiB) << "the dirty device copy was not written back";
  ASSERT_TRUE(p.validate());
  EXPECT_TRUE(this->check(p, t, 7, 2));
  {
    lease l = p.acquire(t, access_mode::read, s);
    EXPECT_THROW(p.demote(t, tier_id{2}), logic_error);
  }
  EXPECT_THROW(p.demote(t, tier_id{9}), logic_error);
  p.demote(t, tier_id{1});  // from the device again, to the middle tier
  st = p.stats();
  EXPECT_EQ(st.tiers[0].resident_tensors, 0U);
  EXPECT_EQ(st.tiers[1].resident_tensors, 1U);
  this->drain(p, s);
  EXPECT_TRUE(this->check(p, t, 7, 2));
  EXPECT_TRUE(this->check_on_device(p, t, s, 7, 2));
  EXPECT_TRUE(p.validate());
}

// A seeded mix of host and device writes and reads, prefetches to either tier, demotions,
// frees and reallocations over a working set three times the device tier, checked against
// a model: every tensor is whole after every eviction and every prefetch.
TYPED_TEST_P(PoolConformance, RandomOperationsKeepEveryByte)
{
  pool p{this->options()};
  stream_handle s = p.create_stream();
  constexpr std::size_t n = 12;
  std::mt19937_64 rng(20260301);
  std::vector<tensor> ts(n);
  std::vector<std::uint64_t> key(n);
  std::vector<std::uint32_t> ver(n, 1);
  std::uint64_t next_key = 0;
  auto size_of = [](std::size_t i) { return 64_KiB * (1 + i % 4); };
  for (std::size_t i = 0; i < n; ++i) {
    ts[i] = p.allocate(size_of(i));
    key[i] = next_key++;
    this->fill(p, ts[i], key[i], 1);
  }
  auto check_all = [&](char const* after, int op) {
    for (std::size_t k = 0; k < n; ++k) {
      ASSERT_TRUE(this->check(p, ts[k], key[k], ver[k])) << "after " << after << " (operation " << op << ")";
    }
  };
  for (int op = 0; op < 300; ++op) {
    std::size_t const i = rng() % n;
    std::uint64_t const ev = total_evictions(p);
    std::uint64_t const pf = p.stats().prefetches;
    char const* what = "";
    switch (rng() % 8) {
      case 0:
      case 1:
        what = "a device write";
        this->write_on_device(p, ts[i], s, key[i], ++ver[i]);
        break;
      case 2:
        what = "a host write";
        this->fill(p, ts[i], key[i], ++ver[i]);
        break;
      case 3:
        what = "a device read";
        ASSERT_TRUE(this->check_on_device(p, ts[i], s, key[i], ver[i])) << op;
        break;
      case 4:
        what = "a prefetch";
        p.prefetch(ts[i], tier_id{static_cast<std::uint32_t>(rng() % 2)});
        break;
      case 5:
        what = "a demotion";
        p.demote(ts[i], tier_id{static_cast<std::uint32_t>(1 + rng() % 2)});
        break;
      case 6:
        what = "a free and reallocation";
        p.free(ts[i]);
        ts[i] = p.allocate(size_of(i));
        key[i] = next_key++;
        ver[i] = 1;
        this->fill(p, ts[i], key[i], 1);
        break;
      default:
        what = "a host read";
        ASSERT_TRUE(this->check(p, ts[i], key[i], ver[i])) << op;
        break;
    }
    if (total_evictions(p) != ev || p.stats().prefetches != pf) {
      check_all(what, op);
      if (::testing::Test::HasFatalFailure()) { return; }
    }
    if (op % 8 == 0) { ASSERT_TRUE(p.validate()) << "operation " << op; }
    if (op % 32 == 31) { this->drain(p, s); }
  }
  this->drain(p, s);
  check_all("the last operation", 300);
  std::size_t live_bytes = 0;
  for (std::size_t i = 0; i < n; ++i) { live_bytes += size_of(i); }
  expect_stats_invariants(p.stats(), n, live_bytes, false);
  EXPECT_GT(p.stats().tiers[0].evictions, 0U);
  EXPECT_TRUE(p.validate());
}

// Two streams: tensors written on one are evicted by acquires on the other, and the
// write-back waits (stream-wise) for the write; two read leases of one tensor on two
// streams see the same device copy; a stream ordered after another by an event reads
// what the other wrote.
TYPED_TEST_P(PoolConformance, StreamOrderedAcquiresOnTwoStreams)
{
  pool p{this->options()};
  stream_handle s1 = p.create_stream();
  stream_handle s2 = p.create_stream();
  ASSERT_NE(s1.value, s2.value);
  constexpr std::uint64_t n = 8;  // 2 MiB: twice the device tier
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < n; ++i) {
    ts.push_back(p.allocate(256_KiB));
    this->fill(p, ts.back(), i, 1);
  }
  for (std::uint64_t i = 0; i < n; ++i) { this->write_on_device(p, ts[i], i % 2 == 0 ? s1 : s2, i, 2); }
  // No host wait in between: the second half's acquires evicted the first half while the
  // writes on the other stream may still have been queued.
  EXPECT_GT(p.stats().tiers[0].evictions, 0U);
  ASSERT_TRUE(p.validate());
  for (std::uint64_t i = 0; i < n; ++i) { EXPECT_TRUE(this->check(p, ts[i], i, 2)) << i; }
  p.synchronize(s1);
  p.synchronize(s2);

  {  // Two read leases, one per stream: the same device copy, the same bytes.
    lease a = p.acquire(ts[0], access_mode::read, s1);
    lease b = p.acquire(ts[0], access_mode::read, s2);
    EXPECT_EQ(a.data(), b.data());
    EXPECT_EQ(a.stream().value, s1.value);
    EXPECT_EQ(b.stream().value, s2.value);
    EXPECT_EQ(p.stats().tiers[0].pinned_bytes, 256_KiB);
    EXPECT_THROW(p.free(ts[0]), logic_error);
  }
  EXPECT_TRUE(this->check_on_device(p, ts[0], s1, 0, 2));
  EXPECT_TRUE(this->check_on_device(p, ts[0], s2, 0, 2));

  // Ordering two user streams on one tensor is the user's job: s2 waits for an event
  // recorded on s1 after the write, then reads on s2.
  this->write_on_device(p, ts[1], s1, 1, 3);
  event_handle e{};
  ASSERT_EQ(p.backend().create_event(&e), status::ok);
  ASSERT_EQ(p.backend().record_event(e, s1), status::ok);
  ASSERT_EQ(p.backend().stream_wait_event(s2, e), status::ok);
  EXPECT_TRUE(this->check_on_device(p, ts[1], s2, 1, 3));
  p.backend().destroy_event(e);
  this->drain(p, s1);
  EXPECT_TRUE(this->check(p, ts[1], 1, 3));
  p.destroy_stream(s2);
  EXPECT_THROW((void)p.acquire(ts[2], access_mode::read, s2), logic_error) << "a destroyed stream";
  EXPECT_TRUE(this->check_on_device(p, ts[2], s1, 2, 2));
  expect_stats_invariants(p.stats(), n, n * 256_KiB, false);
  EXPECT_TRUE(p.validate());
}

// stats() keeps its invariants through a workload, with leases live and after they end;
// hits and misses follow residency; the summary and its JSON carry the figures.
TYPED_TEST_P(PoolConformance, StatsInvariantsHold)
{
  pool p{this->options()};
  stream_handle s = p.create_stream();
  expect_stats_invariants(p.stats(), 0, 0, false);
  pool_stats st = p.stats();
  ASSERT_EQ(st.tiers.size(), 3U);
  EXPECT_EQ(st.tiers[0].kind, tier_kind::device);
  EXPECT_EQ(st.tiers[0].capacity_bytes, PoolConformance<TypeParam>::device_tier);
  EXPECT_EQ(st.tiers[1].kind, tier_kind::pinned_host);
  EXPECT_EQ(st.tiers[2].kind, tier_kind::host);
  EXPECT_EQ(st.acquires, 0U);
  std::vector<tensor> ts;
  for (std::uint64_t i = 0; i < 6; ++i) {
    ts.push_back(p.allocate(128_KiB, {.preferred_tier = tier_id{2}}));
    this->fill(p, ts.back(), i, 1);
  }
  st = p.stats();
  expect_stats_invariants(st, 6, 6 * 128_KiB, false);
  std::uint64_t const misses = st.misses;
  std::uint64_t const hits = st.hits;
  { lease l = p.acquire(ts[0], access_mode::read, s); }  // copied in: a miss
  st = p.stats();
  EXPECT_EQ(st.misses, misses + 1);
  EXPECT_GE(st.copies_h2d, 1U);
  EXPECT_GE(st.bytes_h2d, 128_KiB);
  { lease l = p.acquire(ts[0], access_mode::read, s); }  // resident: a hit
  st = p.stats();
  EXPECT_EQ(st.hits, hits + 1);
  EXPECT_EQ(st.misses, misses + 1);
  {
    std::vector<lease> ls;
    for (std::size_t i = 0; i < 3; ++i) { ls.push_back(p.acquire(ts[i], access_mode::read, s)); }
    st = p.stats();
    EXPECT_EQ(st.tiers[0].pinned_bytes, 3 * 128_KiB);
    expect_stats_invariants(st, 6, 6 * 128_KiB, true);
  }
  for (std::uint64_t round = 0; round < 3; ++round) {
    for (std::uint64_t i = 0; i < 6; ++i) { this->write_on_device(p, ts[i], s, i, static_cast<std::uint32_t>(2 + round)); }
  }
  this->drain(p, s);
  st = p.stats();
  expect_stats_invariants(st, 6, 6 * 128_KiB, false);
  EXPECT_GT(st.tiers[0].used_bytes.peak, 0);
  std::string const json = p.summary_json();
  EXPECT_NE(json.find("\"tensors\":6"), std::string::npos) << json;
  EXPECT_NE(json.find("\"tiers\""), std::string::npos) << json;
  EXPECT_NE(p.summary().find("device"), std::string::npos);
  for (std::uint64_t i = 0; i < 6; ++i) { EXPECT_TRUE(this->check(p, ts[i], i, 4)) << i; }
  EXPECT_TRUE(p.validate());
}

// Double free and use after free are logic_errors; the pool is unchanged by them.
TYPED_TEST_P(PoolConformance, DoubleFreeAndUseAfterFreeAreLogicErrors)
{
  pool p{this->options()};
  tensor keep = p.allocate(64_KiB);
  this->fill(p, keep, 1, 1);
  tensor t = p.allocate(64_KiB);
  p.free(t);
  EXPECT_FALSE(t.valid());
  EXPECT_THROW(p.free(t), logic_error);
  EXPECT_THROW((void)p.acquire(t, access_mode::read), logic_error);
  EXPECT_THROW((void)p.acquire_host(t, access_mode::read), logic_error);
  EXPECT_THROW(p.prefetch(t), logic_error);
  EXPECT_THROW(p.demote(t, tier_id{2}), logic_error);
  EXPECT_THROW(p.set_next_use(t, tick{1}), logic_error);
  tensor moved = std::move(keep);
  EXPECT_THROW((void)p.acquire(keep, access_mode::read), logic_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW((void)p.allocate(0), logic_error);
  EXPECT_THROW((void)p.allocate(4_KiB, {.preferred_tier = tier_id{7}}), logic_error);
  EXPECT_THROW((void)p.acquire(moved, access_mode::read, stream_handle{0xDEAD000}), logic_error) << "unknown stream";
  expect_stats_invariants(p.stats(), 1, 64_KiB, false);
  EXPECT_TRUE(this->check(p, moved, 1, 1));
  EXPECT_TRUE(p.validate());
}

// A tensor of another pool is a logic_error in every call that takes one.
TYPED_TEST_P(PoolConformance, ForeignTensorIsALogicError)
{
  pool p{this->options()};
  pool q{this->options()};
  tensor t = p.allocate(64_KiB);
  this->fill(p, t, 3, 1);
  EXPECT_THROW((void)q.acquire(t, access_mode::read), logic_error);
  EXPECT_THROW((void)q.acquire_host(t, access_mode::read), logic_error);
  EXPECT_THROW(q.prefetch(t), logic_error);
  EXPECT_THROW(q.demote(t, tier_id{2}), logic_error);
  EXPECT_THROW(q.free(t), logic_error);
  EXPECT_TRUE(t.valid());
  EXPECT_EQ(q.stats().tensors, 0U);
  EXPECT_TRUE(q.validate());
  EXPECT_TRUE(this->check(p, t, 3, 1));
  EXPECT_TRUE(p.validate());
}

// close() refuses while a lease lives (naming it) and frees nothing; after close every
// call that needs the pool is a logic_error.
TYPED_TEST_P(PoolConformance, ClosedPoolRefusesEveryCall)
{
  pool p{this->options()};
  stream_handle s = p.create_stream();
  tensor t = p.allocate(64_KiB, {.name = "still-leased"});
  this->fill(p, t, 5, 1);
  {
    lease l = p.acquire(t, access_mode::read, s);
    try {
      p.close();
      ADD_FAILURE() << "close() with a live lease";
    } catch (logic_error const& e) {
      EXPECT_NE(std::string(e.what()).find("still-leased"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(this->check(p, t, 5, 1)) << "a refused close changed the tensor";
  EXPECT_TRUE(p.validate());
  p.close();
  EXPECT_THROW((void)p.allocate(4_KiB), logic_error);
  EXPECT_THROW((void)p.acquire(t, access_mode::read, s), logic_error);
  EXPECT_THROW((void)p.acquire_host(t, access_mode::read), logic_error);
  EXPECT_THROW((void)p.fits(4_KiB), logic_error);
}

// out_of_memory says why in cause(), with the tier, the request and the figures: a device
// tier pinned full (cause pinned), a tensor larger than the device tier (cause capacity),
// a tensor larger than every tier (at allocate). The pool stays consistent, and once the
// leases end the same request succeeds.
TYPED_TEST_P(PoolConformance, OutOfMemoryNamesItsCause)
{
  pool p{this->options()};
  stream_handle s = p.create_stream();
  std::vector<tensor> ts;
  std::vector<lease> ls;
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(256_KiB));
    this->fill(p, ts.back(), i, 1);
    ls.push_back(p.acquire(ts.back(), access_mode::read, s));
  }
  tensor extra = p.allocate(256_KiB);
  this->fill(p, extra, 9, 1);
  std::uint64_t const failures = p.stats().acquire_failures;
  try {
    lease l = p.acquire(extra, access_mode::read, s);
    ADD_FAILURE() << "acquired beyond a device tier pinned full";
  } catch (out_of_memory const& e) {
    EXPECT_EQ(e.cause(), oom_cause::pinned) << e.what();
    EXPECT_EQ(e.tier(), tier_id{0});
    EXPECT_EQ(e.requested(), 256_KiB);
    EXPECT_EQ(e.figures().capacity_bytes, PoolConformance<TypeParam>::device_tier);
    EXPECT_EQ(e.figures().pinned_bytes, 1_MiB);
    EXPECT_NE(std::string(e.what()).find("cause: pinned"), std::string::npos) << e.what();
  }
  EXPECT_EQ(p.stats().acquire_failures, failures + 1);
  expect_stats_invariants(p.stats(), 5, 5 * 256_KiB, true);
  ASSERT_TRUE(p.validate());
  ls.clear();
  EXPECT_TRUE(this->check_on_device(p, extra, s, 9, 1)) << "once the leases ended, the acquire evicts";
  for (std::uint64_t i = 0; i < 4; ++i) { EXPECT_TRUE(this->check(p, ts[i], i, 1)) << i; }

  tensor big = p.allocate(2_MiB);  // fits the host tier, never the device tier
  this->fill(p, big, 10, 1);
  try {
    lease l = p.acquire(big, access_mode::read, s);
    ADD_FAILURE() << "acquired a tensor larger than the device tier";
  } catch (out_of_memory const& e) {
    EXPECT_EQ(e.cause(), oom_cause::capacity) << e.what();
    EXPECT_EQ(e.requested(), 2_MiB);
    EXPECT_EQ(e.tier(), tier_id{0});
  }
  EXPECT_TRUE(this->check(p, big, 10, 1));
  EXPECT_THROW((void)p.allocate(64_MiB), out_of_memory) << "larger than every tier";
  p.synchronize(s);
  expect_stats_invariants(p.stats(), 6, 5 * 256_KiB + 2_MiB, false);
  EXPECT_TRUE(p.validate());
}

// fits() agrees with what allocate then does in the device tier: fits_now tensors place
// without evicting, leases bound fits_after_eviction, bad arguments are logic_errors.
TYPED_TEST_P(PoolConformance, FitsAgreesWithAllocate)
{
  pool p{this->options()};
  fit_report r = p.fits(256_KiB);
  EXPECT_EQ(r.bytes, 256_KiB);
  EXPECT_EQ(r.slot_bytes, 256_KiB);
  EXPECT_EQ(r.fits_now, 4U);
  EXPECT_EQ(r.fits_after_eviction, 4U);
  EXPECT_EQ(r.largest_after_eviction, PoolConformance<TypeParam>::device_tier);
  std::vector<tensor> ts;
  for (std::size_t i = 0; i < 2; ++i) { ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{0}})); }
  r = p.fits(256_KiB);
  EXPECT_EQ(r.fits_now, 2U);
  EXPECT_EQ(r.fits_after_eviction, 4U);
  std::uint64_t const ev = total_evictions(p);
  for (std::size_t i = 0; i < r.fits_now; ++i) { ts.push_back(p.allocate(256_KiB, {.preferred_tier = tier_id{0}})); }
  EXPECT_EQ(total_evictions(p), ev) << "fits_now tensors placed with an eviction";
  EXPECT_EQ(p.stats().tiers[0].resident_tensors, 4U);
  EXPECT_EQ(p.fits(256_KiB).fits_now, 0U);
  {
    stream_handle s = p.create_stream();
    std::vector<lease> ls;
    for (std::size_t i = 0; i < 3; ++i) { ls.push_back(p.acquire(ts[i], access_mode::read, s)); }
    r = p.fits(256_KiB);
    EXPECT_EQ(r.fits_after_eviction, 1U) << "three of four slots are leased";
    EXPECT_EQ(r.pinned_bytes, 3 * 256_KiB);
    p.synchronize(s);
  }
  EXPECT_EQ(p.fits(256_KiB).fits_after_eviction, 4U);
  EXPECT_EQ(p.fits(2_MiB).fits_after_eviction, 0U);
  EXPECT_THROW((void)p.fits(0), logic_error);
  EXPECT_THROW((void)p.fits(4_KiB, tier_id{9}), logic_error);
  EXPECT_TRUE(p.validate());
}

REGISTER_TYPED_TEST_SUITE_P(PoolConformance, AllocateFillReadBackAndFree,
                            OversubscribedDeviceWritesSurviveEveryEviction, PrefetchMakesTheBytesResidentOnTheDevice,
                            DemoteMovesDownAndKeepsTheBytes, RandomOperationsKeepEveryByte,
                            StreamOrderedAcquiresOnTwoStreams, StatsInvariantsHold,
                            DoubleFreeAndUseAfterFreeAreLogicErrors, ForeignTensorIsALogicError,
                            ClosedPoolRefusesEveryCall, OutOfMemoryNamesItsCause, FitsAgreesWithAllocate);

}  // namespace tierpool::conformance

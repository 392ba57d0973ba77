// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file backend_conformance.hpp
 * @brief The backend conformance suite: one typed test suite that every tierpool::backend
 *        implementation passes (sim in every mode; cuda where a GPU is present).
 *
 * A factory type F provides:
 * @code
 * struct my_factory {
 *   static bool available();                              // false -> every test GTEST_SKIP()s
 *   static std::unique_ptr<tierpool::backend> make();
 *   static char const* name();
 * };
 * using my_types = ::testing::Types<my_factory>;
 * INSTANTIATE_TYPED_TEST_SUITE_P(Mine, BackendConformance, my_types);
 * @endcode
 *
 * Tests that need a capability check caps() and skip otherwise; tests that read bytes
 * need caps().real_memory (phantom memory has no bytes). Device memory is treated as not
 * host-accessible: bytes are checked after copying them back to pinned host memory.
 * Nothing here is timed; the only clock assertion is monotonicity of now().
 */
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/error.hpp>
#include <tierpool/tier.hpp>
#include <tierpool/types.hpp>

namespace tierpool::conformance {

/// Owns one backend allocation; frees it on scope exit (so failing tests do not leak).
class scoped_allocation {
 public:
  scoped_allocation(backend& be, tier_kind kind, std::size_t bytes) : be_(&be), kind_(kind), bytes_(bytes)
  {
    status_ = be.allocate(kind, bytes, &ptr_);
  }
  scoped_allocation(scoped_allocation const&) = delete;
  scoped_allocation& operator=(scoped_allocation const&) = delete;
  ~scoped_allocation() { reset(); }

  void reset() noexcept
  {
    if (ptr_ != nullptr) {
      be_->deallocate(kind_, ptr_, bytes_);
      ptr_ = nullptr;
    }
  }
  [[nodiscard]] status result() const noexcept { return status_; }
  [[nodiscard]] void* get() const noexcept { return ptr_; }
  [[nodiscard]] std::byte* bytes() const noexcept { return static_cast<std::byte*>(ptr_); }

 private:
  backend* be_;
  tier_kind kind_;
  std::size_t bytes_;
  void* ptr_{nullptr};
  status status_{status::invalid_value};
};

/// Owns one stream; destroys it on scope exit.
class scoped_stream {
 public:
  explicit scoped_stream(backend& be) : be_(&be) { status_ = be.create_stream(&s_); }
  scoped_stream(scoped_stream const&) = delete;
  scoped_stream& operator=(scoped_stream const&) = delete;
  ~scoped_stream()
  {
    if (status_ == status::ok) {
      be_->destroy_stream(s_);
    }
  }
  [[nodiscard]] status result() const noexcept { return status_; }
  [[nodiscard]] stream_handle get() const noexcept { return s_; }

 private:
  backend* be_;
  stream_handle s_{};
  status status_{status::invalid_value};
};

/// Owns one event; destroys it on scope exit.
class scoped_event {
 public:
  explicit scoped_event(backend& be) : be_(&be) { status_ = be.create_event(&e_); }
  scoped_event(scoped_event const&) = delete;
  scoped_event& operator=(scoped_event const&) = delete;
  ~scoped_event()
  {
    if (status_ == status::ok) {
      be_->destroy_event(e_);
    }
  }
  [[nodiscard]] status result() const noexcept { return status_; }
  [[nodiscard]] event_handle get() const noexcept { return e_; }

 private:
  backend* be_;
  event_handle e_{};
  status status_{status::invalid_value};
};

/// Deterministic byte pattern: byte i of pattern `seed`.
inline std::byte pattern_byte(std::size_t i, unsigned seed) noexcept
{
  return static_cast<std::byte>((i * 131U + seed * 17U + (i >> 8U)) & 0xFFU);
}

inline void fill_pattern(std::byte* p, std::size_t n, unsigned seed) noexcept
{
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = pattern_byte(i, seed);
  }
}

/// Index of the first byte differing from pattern `seed`, or n when all match.
inline std::size_t first_mismatch(std::byte const* p, std::size_t n, unsigned seed) noexcept
{
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != pattern_byte(i, seed)) {
      return i;
    }
  }
  return n;
}

/// Host-function payload: appends its tag to a shared log (host functions may not call the backend).
struct host_log {
  std::mutex mtx;
  std::vector<int> order;
};
struct host_log_entry {
  host_log* log;
  int tag;
  std::byte const* watch{nullptr};  ///< when non-null, byte 0 is captured at run time
  std::byte seen{0};
};
inline void host_log_append(void* p) noexcept
{
  auto* e = static_cast<host_log_entry*>(p);
  if (e->watch != nullptr) {
    e->seen = e->watch[0];
  }
  std::lock_guard lock(e->log->mtx);
  e->log->order.push_back(e->tag);
}
inline void host_counter_increment(void* p) noexcept { static_cast<std::atomic<int>*>(p)->fetch_add(1); }

}  // namespace tierpool::conformance

/// The fixture of the conformance suite. `be_` is a fresh backend per test.
template <class F>
class BackendConformance : public ::testing::Test {
 protected:
  void SetUp() override
  {
    if (!F::available()) {
      GTEST_SKIP() << F::name() << ": backend not available on this machine";
    }
    be_ = F::make();
    ASSERT_NE(be_, nullptr) << F::name() << ": factory returned null";
  }
  void TearDown() override { be_.reset(); }

  [[nodiscard]] bool real_memory() const { return be_->caps().real_memory; }

  /// Copy `bytes` from src to dst on `s`; EXPECTs ok.
  void copy(void* dst, tierpool::tier_kind dk, void const* src, tierpool::tier_kind sk, std::size_t bytes,
            tierpool::stream_handle s)
  {
    tierpool::copy_desc d{dst, src, bytes, dk, sk};
    EXPECT_EQ(be_->copy_async(d, s), tierpool::status::ok) << be_->last_error();
  }

  std::unique_ptr<tierpool::backend> be_;
};

TYPED_TEST_SUITE_P(BackendConformance);

TYPED_TEST_P(BackendConformance, CapsAreConsistent)
{
  auto const& c = this->be_->caps();
  EXPECT_FALSE(c.name.empty());
  EXPECT_FALSE(c.device_name.empty());
  EXPECT_GT(c.device_bytes, 0U);
  EXPECT_GE(c.allocation_alignment, 1U);
  EXPECT_EQ(c.allocation_alignment & (c.allocation_alignment - 1), 0U) << "alignment must be a power of two";
  EXPECT_GE(c.max_copy_streams, 1U);
  if (c.has_managed_prefetch) {
    EXPECT_TRUE(c.has_managed);
  }
  if (c.has_managed) {
    EXPECT_GT(c.managed_bytes, 0U);
  }
  std::size_t free_b = 0;
  std::size_t total_b = 0;
  ASSERT_EQ(this->be_->device_memory_info(&free_b, &total_b), tierpool::status::ok);
  EXPECT_LE(free_b, total_b);
  EXPECT_GT(total_b, 0U);
}

TYPED_TEST_P(BackendConformance, AllocateAndFreeEachKind)
{
  using tierpool::tier_kind;
  auto& be = *this->be_;
  std::vector<tier_kind> kinds{tier_kind::device, tier_kind::pinned_host, tier_kind::host};
  if (be.caps().has_managed) {
    kinds.push_back(tier_kind::managed);
  }
  std::size_t const align = be.caps().allocation_alignment;
  for (tier_kind k : kinds) {
    SCOPED_TRACE(std::string(tierpool::to_string(k)));
    for (std::size_t bytes : {std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{4096}, std::size_t{1} << 20U}) {
      tierpool::conformance::scoped_allocation a(be, k, bytes);
      ASSERT_EQ(a.result(), tierpool::status::ok) << bytes << " B: " << be.last_error();
      ASSERT_NE(a.get(), nullptr);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.get()) % align, 0U) << bytes << " B not aligned to " << align;
      if (tierpool::is_host_accessible(k) && this->real_memory()) {
        std::memset(a.get(), 0xA5, bytes);  // host-accessible memory must be writable
        EXPECT_EQ(a.bytes()[bytes - 1], std::byte{0xA5});
      }
    }
    void* p = reinterpret_cast<void*>(std::uintptr_t{1});
    EXPECT_EQ(be.allocate(k, 0, &p), tierpool::status::invalid_value) << "zero bytes must be rejected";
    EXPECT_EQ(be.allocate(k, 64, nullptr), tierpool::status::invalid_value) << "null out must be rejected";
  }
  be.deallocate(tier_kind::device, nullptr, 64);  // null is a no-op
}

TYPED_TEST_P(BackendConformance, DistinctAllocationsDoNotOverlap)
{
  auto& be = *this->be_;
  constexpr std::size_t n = 16;
  constexpr std::size_t bytes = 3000;
  std::vector<std::unique_ptr<tierpool::conformance::scoped_allocation>> as;
  for (std::size_t i = 0; i < n; ++i) {
    as.push_back(std::make_unique<tierpool::conformance::scoped_allocation>(be, tierpool::tier_kind::device, bytes));
    ASSERT_EQ(as.back()->result(), tierpool::status::ok) << be.last_error();
  }
  std::vector<std::uintptr_t> starts;
  for (auto const& a : as) {
    starts.push_back(reinterpret_cast<std::uintptr_t>(a->get()));
  }
  std::sort(starts.begin(), starts.end());
  for (std::size_t i = 1; i < starts.size(); ++i) {
    EXPECT_GE(starts[i] - starts[i - 1], bytes) << "allocations " << i - 1 << " and " << i << " overlap";
  }
}

TYPED_TEST_P(BackendConformance, RoundTripThroughDevicePreservesBytes)
{
  using tierpool::tier_kind;
  if (!this->real_memory()) {
    GTEST_SKIP() << "phantom memory has no bytes to check";
  }
  auto& be = *this->be_;
  constexpr std::size_t bytes = (1U << 20U) + 77;  // not a multiple of the granularity
  tierpool::conformance::scoped_allocation src(be, tier_kind::pinned_host, bytes);
  tierpool::conformance::scoped_allocation dev1(be, tier_kind::device, bytes);
  tierpool::conformance::scoped_allocation dev2(be, tier_kind::device, bytes);
  tierpool::conformance::scoped_allocation dst(be, tier_kind::pinned_host, bytes);
  std::vector<std::byte> pageable(bytes);
  for (auto* a : {&src, &dev1, &dev2, &dst}) {
    ASSERT_EQ(a->result(), tierpool::status::ok) << be.last_error();
  }
  tierpool::conformance::fill_pattern(src.bytes(), bytes, 1);
  std::memset(dst.get(), 0, bytes);
  tierpool::conformance::scoped_stream s(be);
  ASSERT_EQ(s.result(), tierpool::status::ok);
  this->copy(dev1.get(), tier_kind::device, src.get(), tier_kind::pinned_host, bytes, s.get());
  this->copy(dev2.get(), tier_kind::device, dev1.get(), tier_kind::device, bytes, s.get());
  this->copy(dst.get(), tier_kind::pinned_host, dev2.get(), tier_kind::device, bytes, s.get());
  this->copy(pageable.data(), tier_kind::host, dev2.get(), tier_kind::device, bytes, s.get());
  ASSERT_EQ(be.synchronize_stream(s.get()), tierpool::status::ok);
  EXPECT_EQ(tierpool::conformance::first_mismatch(dst.bytes(), bytes, 1), bytes) << "pinned copy-back differs";
  EXPECT_EQ(tierpool::conformance::first_mismatch(pageable.data(), bytes, 1), bytes) << "pageable copy-back differs";
}

TYPED_TEST_P(BackendConformance, DefaultStreamCopies)
{
  using tierpool::tier_kind;
  auto& be = *this->be_;
  constexpr std::size_t bytes = 4096;
  tierpool::conformance::scoped_allocation h(be, tier_kind::pinned_host, bytes);
  tierpool::conformance::scoped_allocation d(be, tier_kind::device, bytes);
  tierpool::conformance::scoped_allocation back(be, tier_kind::pinned_host, bytes);
  ASSERT_EQ(h.result(), tierpool::status::ok);
  ASSERT_EQ(d.result(), tierpool::status::ok);
  ASSERT_EQ(back.result(), tierpool::status::ok);
  if (this->real_memory()) {
    tierpool::conformance::fill_pattern(h.bytes(), bytes, 9);
  }
  this->copy(d.get(), tier_kind::device, h.get(), tier_kind::pinned_host, bytes, tierpool::stream_handle{});
  this->copy(back.get(), tier_kind::pinned_host, d.get(), tier_kind::device, bytes, tierpool::stream_handle{});
  ASSERT_EQ(be.synchronize_stream(tierpool::stream_handle{}), tierpool::status::ok);
  if (this->real_memory()) {
    EXPECT_EQ(tierpool::conformance::first_mismatch(back.bytes(), bytes, 9), bytes);
  }
}

TYPED_TEST_P(BackendConformance, EventOrdersCopiesOnTwoStreams)
{
  using tierpool::tier_kind;
  auto& be = *this->be_;
  constexpr std::size_t bytes = 8U << 20U;
  tierpool::conformance::scoped_allocation src(be, tier_kind::pinned_host, bytes);
  tierpool::conformance::scoped_allocation dev(be, tier_kind::device, bytes);
  tierpool::conformance::scoped_allocation dst(be, tier_kind::pinned_host, bytes);
  for (auto* a : {&src, &dev, &dst}) {
    ASSERT_EQ(a->result(), tierpool::status::ok) << be.last_error();
  }
  tierpool::conformance::scoped_stream a(be);
  tierpool::conformance::scoped_stream b(be);
  tierpool::conformance::scoped_event e(be);
  ASSERT_EQ(a.result(), tierpool::status::ok);
  ASSERT_EQ(b.result(), tierpool::status::ok);
  ASSERT_EQ(e.result(), tierpool::status::ok);
  for (unsigned round = 0; round < 3; ++round) {
    if (this->real_memory()) {
      tierpool::conformance::fill_pattern(src.bytes(), bytes, 20 + round);
      std::memset(dst.get(), 0, bytes);
    }
    this->copy(dev.get(), tier_kind::device, src.get(), tier_kind::pinned_host, bytes, a.get());
    ASSERT_EQ(be.record_event(e.get(), a.get()), tierpool::status::ok);
    ASSERT_EQ(be.stream_wait_event(b.get(), e.get()), tierpool::status::ok);
    this->copy(dst.get(), tier_kind::pinned_host, dev.get(), tier_kind::device, bytes, b.get());
    ASSERT_EQ(be.synchronize_stream(b.get()), tierpool::status::ok);
    EXPECT_EQ(be.query_event(e.get()), tierpool::status::ok) << "b waited on e, so e has completed";
    if (this->real_memory()) {
      EXPECT_EQ(tierpool::conformance::first_mismatch(dst.bytes(), bytes, 20 + round), bytes)
        << "round " << round << ": the second copy did not read what the first wrote";
    }
    ASSERT_EQ(be.synchronize_stream(a.get()), tierpool::status::ok);
  }
}

TYPED_TEST_P(BackendConformance, UnrecordedEventIsComplete)
{
  auto& be = *this->be_;
  tierpool::conformance::scoped_event e(be);
  tierpool::conformance::scoped_stream s(be);
  ASSERT_EQ(e.result(), tierpool::status::ok);
  ASSERT_EQ(s.result(), tierpool::status::ok);
  EXPECT_TRUE(static_cast<bool>(e.get()));
  EXPECT_EQ(be.query_event(e.get()), tierpool::status::ok);
  EXPECT_EQ(be.synchronize_event(e.get()), tierpool::status::ok);
  EXPECT_EQ(be.stream_wait_event(s.get(), e.get()), tierpool::status::ok);
  EXPECT_EQ(be.synchronize_stream(s.get()), tierpool::status::ok);
}

TYPED_TEST_P(BackendConformance, QueryAndSynchronizeEvent)
{
  using tierpool::tier_kind;
  auto& be = *this->be_;
  constexpr std::size_t bytes = 1U << 20U;
  tierpool::conformance::scoped_allocation h(be, tier_kind::pinned_host, bytes);
  tierpool::conformance::scoped_allocation d(be, tier_kind::device, bytes);
  ASSERT_EQ(h.result(), tierpool::status::ok);
  ASSERT_EQ(d.result(), tierpool::status::ok);
  tierpool::conformance::scoped_stream s(be);
  tierpool::conformance::scoped_event e(be);
  ASSERT_EQ(s.result(), tierpool::status::ok);
  ASSERT_EQ(e.result(), tierpool::status::ok);
  this->copy(d.get(), tier_kind::device, h.get(), tier_kind::pinned_host, bytes, s.get());
  ASSERT_EQ(be.record_event(e.get(), s.get()), tierpool::status::ok);
  tierpool::status const q = be.query_event(e.get());
  EXPECT_TRUE(q == tierpool::status::ok || q == tierpool::status::not_ready) << tierpool::to_string(q);
  ASSERT_EQ(be.synchronize_event(e.get()), tierpool::status::ok);
  EXPECT_EQ(be.query_event(e.get()), tierpool::status::ok) << "synchronized event must query complete";
  // Re-recording on an idle stream completes as well.
  ASSERT_EQ(be.record_event(e.get(), s.get()), tierpool::status::ok);
  ASSERT_EQ(be.synchronize_stream(s.get()), tierpool::status::ok);
  EXPECT_EQ(be.query_event(e.get()), tierpool::status::ok);
}

TYPED_TEST_P(BackendConformance, HostFuncRunsInStreamOrder)
{
  using tierpool::tier_kind;
  auto& be = *this->be_;
  constexpr std::size_t bytes = 2U << 20U;
  tierpool::conformance::scoped_allocation src(be, tier_kind::pinned_host, bytes);
  tierpool::conformance::scoped_allocation dev(be, tier_kind::device, bytes);
  tierpool::conformance::scoped_allocation dst(be, tier_kind::pinned_host, bytes);
  for (auto* a : {&src, &dev, &dst}) {
    ASSERT_EQ(a->result(), tierpool::status::ok);
  }
  bool const real = this->real_memory();
  if (real) {
    tierpool::conformance::fill_pattern(src.bytes(), bytes, 3);
    std::memset(dst.get(), 0, bytes);
  }
  tierpool::conformance::scoped_stream s(be);
  ASSERT_EQ(s.result(), tierpool::status::ok);
  tierpool::conformance::host_log log;
  tierpool::conformance::host_log_entry first{&log, 1, real ? dst.bytes() : nullptr};
  tierpool::conformance::host_log_entry second{&log, 2, real ? dst.bytes() : nullptr};
  tierpool::conformance::host_log_entry third{&log, 3};
  ASSERT_EQ(be.launch_host_func(s.get(), &tierpool::conformance::host_log_append, &first), tierpool::status::ok);
  this->copy(dev.get(), tier_kind::device, src.get(), tier_kind::pinned_host, bytes, s.get());
  this->copy(dst.get(), tier_kind::pinned_host, dev.get(), tier_kind::device, bytes, s.get());
  ASSERT_EQ(be.launch_host_func(s.get(), &tierpool::conformance::host_log_append, &second), tierpool::status::ok);
  ASSERT_EQ(be.launch_host_func(s.get(), &tierpool::conformance::host_log_append, &third), tierpool::status::ok);
  ASSERT_EQ(be.synchronize_stream(s.get()), tierpool::status::ok);
  {
    std::lock_guard lock(log.mtx);
    EXPECT_EQ(log.order, (std::vector<int>{1, 2, 3}));
  }
  if (real) {
    EXPECT_EQ(first.seen, std::byte{0}) << "first host func ran after the copy it precedes";
    EXPECT_EQ(second.seen, tierpool::conformance::pattern_byte(0, 3)) << "second host func ran before the copy";
  }
  EXPECT_EQ(be.launch_host_func(s.get(), nullptr, nullptr), tierpool::status::invalid_value);
}

TYPED_TEST_P(BackendConformance, SynchronizeStreamWaitsForAllWork)
{
  auto& be = *this->be_;
  tierpool::conformance::scoped_stream s(be);
  ASSERT_EQ(s.result(), tierpool::status::ok);
  std::atomic<int> counter{0};
  constexpr int n = 50;
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(be.launch_host_func(s.get(), &tierpool::conformance::host_counter_increment, &counter),
              tierpool::status::ok);
  }
  ASSERT_EQ(be.synchronize_stream(s.get()), tierpool::status::ok);
  EXPECT_EQ(counter.load(), n);
  EXPECT_EQ(be.synchronize_stream(s.get()), tierpool::status::ok) << "an idle stream synchronizes at once";
}

TYPED_TEST_P(BackendConformance, DestroyedStreamStillCompletesItsWork)
{
  auto& be = *this->be_;
  std::atomic<int> counter{0};
  tierpool::conformance::scoped_event e(be);
  ASSERT_EQ(e.result(), tierpool::status::ok);
  tierpool::stream_handle s{};
  ASSERT_EQ(be.create_stream(&s), tierpool::status::ok);
  ASSERT_EQ(be.launch_host_func(s, &tierpool::conformance::host_counter_increment, &counter), tierpool::status::ok);
  ASSERT_EQ(be.record_event(e.get(), s), tierpool::status::ok);
  be.destroy_stream(s);
  ASSERT_EQ(be.synchronize_event(e.get()), tierpool::status::ok);
  EXPECT_EQ(counter.load(), 1);
  EXPECT_EQ(be.synchronize_stream(s), tierpool::status::invalid_value) << "a destroyed stream is unknown";
}

TYPED_TEST_P(BackendConformance, ManagedPrefetchAndAdvise)
{
  using tierpool::tier_kind;
  auto& be = *this->be_;
  if (!be.caps().has_managed_prefetch) {
    GTEST_SKIP() << "no managed prefetch";
  }
  constexpr std::size_t bytes = 1U << 20U;
  tierpool::conformance::scoped_allocation m(be, tier_kind::managed, bytes);
  ASSERT_EQ(m.result(), tierpool::status::ok) << be.last_error();
  bool const real = this->real_memory();
  if (real) {
    tierpool::conformance::fill_pattern(m.bytes(), bytes, 5);
  }
  tierpool::conformance::scoped_stream s(be);
  ASSERT_EQ(s.result(), tierpool::status::ok);
  tierpool::memory_location const dev{tier_kind::device, -1};
  tierpool::memory_location const host{tier_kind::host, -1};
  EXPECT_EQ(be.advise(m.get(), bytes, tierpool::mem_advice::set_read_mostly, dev), tierpool::status::ok)
    << be.last_error();
  EXPECT_EQ(be.prefetch_async(m.get(), bytes, dev, s.get()), tierpool::status::ok) << be.last_error();
  EXPECT_EQ(be.prefetch_async(m.get(), bytes, host, s.get()), tierpool::status::ok) << be.last_error();
  EXPECT_EQ(be.advise(m.get(), bytes, tierpool::mem_advice::unset_read_mostly, dev), tierpool::status::ok);
  ASSERT_EQ(be.synchronize_stream(s.get()), tierpool::status::ok);
  if (real) {
    EXPECT_EQ(tierpool::conformance::first_mismatch(m.bytes(), bytes, 5), bytes) << "prefetch changed bytes";
  }
  EXPECT_EQ(be.prefetch_async(m.get(), 0, dev, s.get()), tierpool::status::invalid_value);
  EXPECT_EQ(be.prefetch_async(nullptr, bytes, dev, s.get()), tierpool::status::invalid_value);
}

TYPED_TEST_P(BackendConformance, NowIsMonotonic)
{
  auto& be = *this->be_;
  tierpool::tick prev = be.now();
  for (int i = 0; i < 1000; ++i) {
    tierpool::tick const t = be.now();
    ASSERT_GE(t, prev) << "now() went backwards at sample " << i;
    prev = t;
  }
  tierpool::conformance::scoped_stream s(be);
  ASSERT_EQ(s.result(), tierpool::status::ok);
  std::atomic<int> counter{0};
  ASSERT_EQ(be.launch_host_func(s.get(), &tierpool::conformance::host_counter_increment, &counter),
            tierpool::status::ok);
  ASSERT_EQ(be.synchronize_stream(s.get()), tierpool::status::ok);
  EXPECT_GE(be.now(), prev);
}

TYPED_TEST_P(BackendConformance, DeviceCapacityExhaustedThenRecovers)
{
  using tierpool::tier_kind;
  auto& be = *this->be_;
  std::size_t const cap = be.caps().device_bytes;
  if (cap > (std::size_t{1} << 30U)) {
    GTEST_SKIP() << "device capacity " << cap << " B is over 1 GiB; not exhausting it in a test";
  }
  void* p = nullptr;
  EXPECT_EQ(be.allocate(tier_kind::device, cap + 1, &p), tierpool::status::out_of_memory);
  std::size_t const chunk = cap / 4;
  std::vector<std::unique_ptr<tierpool::conformance::scoped_allocation>> held;
  bool oom = false;
  for (int i = 0; i < 8 && !oom; ++i) {
    auto a = std::make_unique<tierpool::conformance::scoped_allocation>(be, tier_kind::device, chunk);
    if (a->result() == tierpool::status::out_of_memory) {
      oom = true;
    } else {
      ASSERT_EQ(a->result(), tierpool::status::ok) << be.last_error();
      held.push_back(std::move(a));
    }
  }
  ASSERT_TRUE(oom) << "allocating 8 quarters of the capacity never failed";
  EXPECT_GE(held.size(), 3U) << "at least three quarters of the device must be allocatable";
  held.back()->reset();
  tierpool::conformance::scoped_allocation again(be, tier_kind::device, chunk);
  EXPECT_EQ(again.result(), tierpool::status::ok) << "allocation must work again after a free: " << be.last_error();
}

TYPED_TEST_P(BackendConformance, BadHandlesAndArgumentsAreInvalidValue)
{
  using tierpool::status;
  using tierpool::tier_kind;
  auto& be = *this->be_;
  tierpool::stream_handle const bogus_stream{0x5EEDF00DU};
  tierpool::event_handle const bogus_event{0x0BADF00DU};
  tierpool::event_handle const no_event{};
  EXPECT_EQ(be.synchronize_stream(bogus_stream), status::invalid_value);
  EXPECT_EQ(be.query_event(bogus_event), status::invalid_value);
  EXPECT_EQ(be.query_event(no_event), status::invalid_value);
  EXPECT_EQ(be.synchronize_event(bogus_event), status::invalid_value);
  EXPECT_EQ(be.record_event(bogus_event, tierpool::stream_handle{}), status::invalid_value);
  EXPECT_EQ(be.stream_wait_event(tierpool::stream_handle{}, bogus_event), status::invalid_value);
  EXPECT_EQ(be.create_stream(nullptr), status::invalid_value);
  EXPECT_EQ(be.create_event(nullptr), status::invalid_value);
  EXPECT_FALSE(be.last_error().empty()) << "a failure must leave a description";

  tierpool::conformance::scoped_event e(be);
  ASSERT_EQ(e.result(), status::ok);
  EXPECT_EQ(be.record_event(e.get(), bogus_stream), status::invalid_value);
  EXPECT_EQ(be.stream_wait_event(bogus_stream, e.get()), status::invalid_value);
  EXPECT_EQ(be.launch_host_func(bogus_stream, &tierpool::conformance::host_counter_increment, nullptr),
            status::invalid_value);

  tierpool::conformance::scoped_allocation h(be, tier_kind::pinned_host, 256);
  tierpool::conformance::scoped_allocation d(be, tier_kind::device, 256);
  ASSERT_EQ(h.result(), status::ok);
  ASSERT_EQ(d.result(), status::ok);
  tierpool::copy_desc zero{d.get(), h.get(), 0, tier_kind::device, tier_kind::pinned_host};
  EXPECT_EQ(be.copy_async(zero, tierpool::stream_handle{}), status::invalid_value);
  tierpool::copy_desc null_src{d.get(), nullptr, 64, tier_kind::device, tier_kind::pinned_host};
  EXPECT_EQ(be.copy_async(null_src, tierpool::stream_handle{}), status::invalid_value);
  tierpool::copy_desc ok_desc{d.get(), h.get(), 64, tier_kind::device, tier_kind::pinned_host};
  EXPECT_EQ(be.copy_async(ok_desc, bogus_stream), status::invalid_value);

  // A destroyed event is unknown.
  tierpool::event_handle gone{};
  ASSERT_EQ(be.create_event(&gone), status::ok);
  be.destroy_event(gone);
  EXPECT_EQ(be.query_event(gone), status::invalid_value);
}

TYPED_TEST_P(BackendConformance, ManyThreadsCreateStreamsAndCopy)
{
  using tierpool::tier_kind;
  auto& be = *this->be_;
  constexpr int threads = 8;
  constexpr int rounds = 6;
  constexpr std::size_t bytes = 64U << 10U;
  bool const real = this->real_memory();
  std::atomic<int> failures{0};
  std::atomic<int> mismatches{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r) {
        auto const seed = static_cast<unsigned>(t * 100 + r);
        tierpool::conformance::scoped_stream s(be);
        tierpool::conformance::scoped_event e(be);
        tierpool::conformance::scoped_allocation h(be, tier_kind::pinned_host, bytes);
        tierpool::conformance::scoped_allocation d(be, tier_kind::device, bytes);
        tierpool::conformance::scoped_allocation back(be, tier_kind::pinned_host, bytes);
        if (s.result() != tierpool::status::ok || e.result() != tierpool::status::ok ||
            h.result() != tierpool::status::ok || d.result() != tierpool::status::ok ||
            back.result() != tierpool::status::ok) {
          failures.fetch_add(1);
          continue;
        }
        if (real) {
          tierpool::conformance::fill_pattern(h.bytes(), bytes, seed);
        }
        tierpool::copy_desc up{d.get(), h.get(), bytes, tier_kind::device, tier_kind::pinned_host};
        tierpool::copy_desc down{back.get(), d.get(), bytes, tier_kind::pinned_host, tier_kind::device};
        if (be.copy_async(up, s.get()) != tierpool::status::ok ||
            be.copy_async(down, s.get()) != tierpool::status::ok ||
            be.record_event(e.get(), s.get()) != tierpool::status::ok ||
            be.synchronize_event(e.get()) != tierpool::status::ok) {
          failures.fetch_add(1);
          continue;
        }
        if (real && tierpool::conformance::first_mismatch(back.bytes(), bytes, seed) != bytes) {
          mismatches.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : pool) {
    th.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

REGISTER_TYPED_TEST_SUITE_P(BackendConformance, CapsAreConsistent, AllocateAndFreeEachKind,
                            DistinctAllocationsDoNotOverlap, RoundTripThroughDevicePreservesBytes,
                            DefaultStreamCopies, EventOrdersCopiesOnTwoStreams, UnrecordedEventIsComplete,
                            QueryAndSynchronizeEvent, HostFuncRunsInStreamOrder, SynchronizeStreamWaitsForAllWork,
                            DestroyedStreamStillCompletesItsWork, ManagedPrefetchAndAdvise, NowIsMonotonic,
                            DeviceCapacityExhaustedThenRecovers, BadHandlesAndArgumentsAreInvalidValue,
                            ManyThreadsCreateStreamsAndCopy);

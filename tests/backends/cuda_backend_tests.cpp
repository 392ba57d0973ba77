// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// cuda_backend_tests.cpp — the backend conformance suite on the CUDA backend, plus
// CUDA-specific tests (caps probing, NUMA-bound pinned / host memory, stream-ordered
// host copies, error text, the last-error hygiene, advice locations, argument checks,
// several devices and the contexts they leave alone, stream capture, the pool's
// capture-safe acquire on a real graph). Label gpu: every test that needs a device skips
// where make_cuda_backend(0) returns null (no driver or no device). The CudaCheck and
// CudaFactory tests need no device: they check the pure CUDA translations (cuda_check.hpp)
// and the factory's refusal.
#include "conformance/backend_conformance.hpp"

#include "backends/cuda/cuda_check.hpp"

#include <tierpool/backends/cuda_backend.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/topology.hpp>

#include <cuda.h>  // driver types only: the test reaches the driver through entry points, as the backend
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using tierpool::status;
using tierpool::tier_kind;
namespace conf = tierpool::conformance;

struct cuda_factory {
  static bool available()
  {
    static bool const ok = tierpool::make_cuda_backend(0) != nullptr;
    return ok;
  }
  static std::unique_ptr<tierpool::backend> make() { return tierpool::make_cuda_backend(0); }
  static char const* name() { return "cuda"; }
};

}  // namespace

using cuda_types = ::testing::Types<cuda_factory>;
INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, BackendConformance, cuda_types);

namespace {

namespace cu = tierpool::detail::cuda;
using tierpool::mem_advice;
using tierpool::memory_location;

// ---- no device needed ------------------------------------------------------------------

TEST(CudaCheck, StatusMappingSortsErrorsByWhatTheRuntimeCanDo)
{
  std::vector<std::pair<cudaError_t, status>> const expected{
    {cudaSuccess, status::ok},
    {cudaErrorNotReady, status::not_ready},
    {cudaErrorMemoryAllocation, status::out_of_memory},
    {cudaErrorInvalidValue, status::invalid_value},
    {cudaErrorInvalidDevice, status::invalid_value},
    {cudaErrorInvalidDevicePointer, status::invalid_value},
    {cudaErrorInvalidResourceHandle, status::invalid_value},
    {cudaErrorInvalidMemcpyDirection, status::invalid_value},
    {cudaErrorHostMemoryAlreadyRegistered, status::invalid_value},
    {cudaErrorHostMemoryNotRegistered, status::invalid_value},
    {cudaErrorStreamCaptureUnsupported, status::invalid_value},
    {cudaErrorStreamCaptureInvalidated, status::invalid_value},
    {cudaErrorCapturedEvent, status::invalid_value},
    {cudaErrorStreamCaptureWrongThread, status::invalid_value},
    {cudaErrorNotSupported, status::not_supported},
    {cudaErrorNotPermitted, status::not_supported},
    {cudaErrorCompatNotSupportedOnDevice, status::not_supported},
    {cudaErrorCallRequiresNewerDriver, status::not_supported},
    {cudaErrorInsufficientDriver, status::no_device},
    {cudaErrorNoDevice, status::no_device},
    {cudaErrorDevicesUnavailable, status::no_device},
    {cudaErrorStubLibrary, status::no_device},
    {cudaErrorSystemDriverMismatch, status::no_device},
    {cudaErrorSystemNotReady, status::no_device},
    {cudaErrorInitializationError, status::no_device},
    {cudaErrorIllegalAddress, status::device_lost},  // sticky: the context is lost
    {cudaErrorLaunchFailure, status::device_lost},
    {cudaErrorIllegalInstruction, status::device_lost},
    {cudaErrorMisalignedAddress, status::device_lost},
    {cudaErrorECCUncorrectable, status::device_lost},
    {cudaErrorAssert, status::device_lost},
    {cudaErrorNoKernelImageForDevice, status::device_error},
  };
  for (auto const& [e, s] : expected) {
    EXPECT_EQ(cu::to_status(e), s) << cudaGetErrorName(e) << " -> " << tierpool::to_string(cu::to_status(e));
  }
}

TEST(CudaCheck, DescribeGivesTheErrorNameAndItsText)
{
  EXPECT_EQ(cu::describe(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation: out of memory");
  EXPECT_EQ(cu::describe(cudaErrorNotReady), "cudaErrorNotReady: device not ready");
}

TEST(CudaCheck, LocationsUseTheCuda13LocationTypes)
{
  auto check = [](memory_location where, int device, bool numa_ok, cudaMemLocationType type, int id) {
    cudaMemLocation const loc = cu::location_for(where, device, numa_ok);
    EXPECT_EQ(loc.type, type) << tierpool::to_string(where.kind) << " node " << where.numa_node;
    EXPECT_EQ(loc.id, id) << tierpool::to_string(where.kind) << " node " << where.numa_node;
  };
  check({tier_kind::device, -1}, 0, true, cudaMemLocationTypeDevice, 0);
  check({tier_kind::device, 3}, 2, true, cudaMemLocationTypeDevice, 2);  // the backend's ordinal, not 0
  check({tier_kind::managed, -1}, 1, true, cudaMemLocationTypeDevice, 1);
  check({tier_kind::host, -1}, 1, true, cudaMemLocationTypeHost, 0);
  check({tier_kind::pinned_host, -1}, 0, true, cudaMemLocationTypeHost, 0);
  check({tier_kind::host, 1}, 0, true, cudaMemLocationTypeHostNuma, 1);
  check({tier_kind::pinned_host, 0}, 0, true, cudaMemLocationTypeHostNuma, 0);
  // cudaMemAdviseSet/UnsetAccessedBy: Device or Host only.
  check({tier_kind::host, 1}, 0, false, cudaMemLocationTypeHost, 0);
  check({tier_kind::device, -1}, 1, false, cudaMemLocationTypeDevice, 1);
}

TEST(CudaCheck, AdviceMapsOneToOne)
{
  std::vector<std::pair<mem_advice, cudaMemoryAdvise>> const expected{
    {mem_advice::set_read_mostly, cudaMemAdviseSetReadMostly},
    {mem_advice::unset_read_mostly, cudaMemAdviseUnsetReadMostly},
    {mem_advice::set_preferred_location, cudaMemAdviseSetPreferredLocation},
    {mem_advice::unset_preferred_location, cudaMemAdviseUnsetPreferredLocation},
    {mem_advice::set_accessed_by, cudaMemAdviseSetAccessedBy},
    {mem_advice::unset_accessed_by, cudaMemAdviseUnsetAccessedBy},
  };
  for (auto const& [a, c] : expected) {
    cudaMemoryAdvise out{};
    ASSERT_TRUE(cu::to_cuda_advice(a, &out));
    EXPECT_EQ(out, c);
    EXPECT_EQ(cu::is_accessed_by(a), c == cudaMemAdviseSetAccessedBy || c == cudaMemAdviseUnsetAccessedBy);
  }
  cudaMemoryAdvise out = cudaMemAdviseSetReadMostly;
  EXPECT_FALSE(cu::to_cuda_advice(static_cast<mem_advice>(200), &out));
  EXPECT_EQ(out, cudaMemAdviseSetReadMostly) << "left unchanged";
}

// Every pair of kinds has one route: a host function for copies between two host kinds,
// pinned ones too (H: cudaMemcpyAsync would be synchronous), pinned staging between
// pageable memory and the device side (S), else a plain cudaMemcpyAsync (c). No pair may
// take two.
TEST(CudaCheck, CopiesWithAPageableSideNeverUseAPlainCudaMemcpyAsync)
{
  std::vector<tier_kind> const kinds{tier_kind::device, tier_kind::pinned_host, tier_kind::managed, tier_kind::host};
  std::string routes;
  for (tier_kind dst : kinds) {
    for (tier_kind src : kinds) {
      bool const h = cu::copy_runs_on_host(dst, src);
      bool const st = cu::copy_needs_staging(dst, src);
      EXPECT_FALSE(h && st);
      routes += h ? 'H' : st ? 'S' : 'c';
    }
    routes += ' ';
  }
  // Rows: dst device, pinned_host, managed, host; columns: src in the same order.
  EXPECT_EQ(routes, "cccS cHcH cccS SHSH ");
}

TEST(CudaFactory, WithoutAUsableDeviceTheFactoryExplains)
{
  std::string count_reason;
  int const count = tierpool::cuda_device_count(&count_reason);
  std::string why;
  auto be = tierpool::make_cuda_backend(0, &why);
  if (count > 0) {
    EXPECT_NE(be, nullptr) << why;
    return;
  }
  EXPECT_EQ(be, nullptr);
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(why, count_reason) << "the factory passes the probe's reason on";
  EXPECT_TRUE(why.rfind("no CUDA ", 0) == 0 || why.rfind("CUDA initialization failed", 0) == 0) << why;
}

TEST(CudaFactory, OrdinalsOutsideTheVisibleDevicesAreRefused)
{
  int const count = tierpool::cuda_device_count();
  for (int device : {-1, count, count + 7}) {
    std::string why;
    EXPECT_EQ(tierpool::make_cuda_backend(device, &why), nullptr) << device;
    EXPECT_FALSE(why.empty()) << device;
    if (count > 0) { EXPECT_NE(why.find("does not exist"), std::string::npos) << why; }
  }
}

// ---- on a device ----------------------------------------------------------------------

class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override
  {
    std::string why;
    be_ = tierpool::make_cuda_backend(0, &why);
    if (!be_) { GTEST_SKIP() << "no usable CUDA device: " << why; }
  }
  std::unique_ptr<tierpool::backend> be_;
};

TEST_F(CudaBackend, CapsDescribeTheDevice)
{
  auto const& c = be_->caps();
  EXPECT_EQ(c.name, "cuda");
  EXPECT_FALSE(c.device_name.empty());
  EXPECT_EQ(c.device_ordinal, 0);
  EXPECT_GE(c.compute_capability_major * 10 + c.compute_capability_minor, 75) << "CUDA 13 needs sm_75+";
  EXPECT_TRUE(c.real_memory);
  EXPECT_FALSE(c.virtual_clock);
  EXPECT_EQ(c.allocation_alignment, 256U);
  EXPECT_GE(c.host_numa_node, -1);
  // What tierpool info and the suite's fingerprint name the machine by.
  EXPECT_GE(c.driver_version, 13000) << "a CUDA 13 runtime runs on a CUDA 13 driver";
  EXPECT_GE(c.runtime_version, 13000);
  EXPECT_EQ(c.pci_bus_id.size(), 12U) << c.pci_bus_id;  // "0000:5d:00.0"
  EXPECT_EQ(c.pci_bus_id.find_first_of("ABCDEF"), std::string::npos) << "lower case, as sysfs names it";
  std::size_t free_b = 0;
  std::size_t total_b = 0;
  ASSERT_EQ(be_->device_memory_info(&free_b, &total_b), status::ok);
  EXPECT_EQ(c.device_bytes, total_b);
  if (c.has_managed) {
    EXPECT_GT(c.managed_bytes, 0U);
    EXPECT_LE(c.managed_bytes, total_b) << "managed capacity is bounded by device memory";
  }
  EXPECT_EQ(be_->device_memory_info(nullptr, &total_b), status::invalid_value);
}

TEST_F(CudaBackend, FailedAllocationNamesTheCudaError)
{
  void* p = nullptr;
  // Far beyond any device: cudaMalloc fails with cudaErrorMemoryAllocation.
  EXPECT_EQ(be_->allocate(tier_kind::device, std::size_t{1} << 60U, &p), status::out_of_memory);
  EXPECT_EQ(p, nullptr);
  std::string const err = be_->last_error();
  EXPECT_NE(err.find("cudaErrorMemoryAllocation"), std::string::npos) << err;
  EXPECT_NE(err.find("cudaMalloc"), std::string::npos) << err;
  // The error was cleared: the next allocation works.
  conf::scoped_allocation ok(*be_, tier_kind::device, 4096);
  EXPECT_EQ(ok.result(), status::ok) << be_->last_error();
}

TEST_F(CudaBackend, NumaBoundPinnedAndHostMemoryRoundTrip)
{
  if (!be_->caps().has_numa_binding) { GTEST_SKIP() << "no hwloc topology"; }
  auto const topo = tierpool::topology::discover();
  auto const node = static_cast<int>(topo.nearest_node_for_device(be_->caps().host_numa_node).os_index);
  constexpr std::size_t bytes = (4U << 20U) + 123;
  void* pinned = nullptr;
  void* host = nullptr;
  ASSERT_EQ(be_->allocate(tier_kind::pinned_host, bytes, &pinned, node), status::ok) << be_->last_error();
  ASSERT_EQ(be_->allocate(tier_kind::host, bytes, &host, node), status::ok) << be_->last_error();
  conf::scoped_allocation dev(*be_, tier_kind::device, bytes);
  conf::scoped_allocation back(*be_, tier_kind::pinned_host, bytes);
  ASSERT_EQ(dev.result(), status::ok);
  ASSERT_EQ(back.result(), status::ok);

  conf::fill_pattern(static_cast<std::byte*>(pinned), bytes, 41);
  conf::fill_pattern(static_cast<std::byte*>(host), bytes, 42);
  conf::scoped_stream s(*be_);
  ASSERT_EQ(s.result(), status::ok);
  // Bound pinned -> device -> plain pinned.
  ASSERT_EQ(be_->copy_async({dev.get(), pinned, bytes, tier_kind::device, tier_kind::pinned_host}, s.get()), status::ok);
  ASSERT_EQ(be_->copy_async({back.get(), dev.get(), bytes, tier_kind::pinned_host, tier_kind::device}, s.get()),
            status::ok);
  ASSERT_EQ(be_->synchronize_stream(s.get()), status::ok);
  EXPECT_EQ(conf::first_mismatch(back.bytes(), bytes, 41), bytes);
  // Bound pageable host -> device -> bound pinned.
  ASSERT_EQ(be_->copy_async({dev.get(), host, bytes, tier_kind::device, tier_kind::host}, s.get()), status::ok);
  ASSERT_EQ(be_->copy_async({pinned, dev.get(), bytes, tier_kind::pinned_host, tier_kind::device}, s.get()), status::ok);
  ASSERT_EQ(be_->synchronize_stream(s.get()), status::ok);
  EXPECT_EQ(conf::first_mismatch(static_cast<std::byte*>(pinned), bytes, 42), bytes);

  be_->deallocate(tier_kind::pinned_host, pinned, bytes);
  be_->deallocate(tier_kind::host, host, bytes);

  void* p = nullptr;
  EXPECT_EQ(be_->allocate(tier_kind::host, 64, &p, 1 << 20), status::invalid_value) << "unknown NUMA node";
  EXPECT_EQ(be_->allocate(tier_kind::pinned_host, 64, &p, 1 << 20), status::invalid_value);
}

TEST_F(CudaBackend, PageableHostCopiesFollowStreamOrder)
{
  constexpr std::size_t bytes = 16U << 20U;
  conf::scoped_allocation pinned(*be_, tier_kind::pinned_host, bytes);
  conf::scoped_allocation dev(*be_, tier_kind::device, bytes);
  conf::scoped_allocation a(*be_, tier_kind::host, bytes);
  conf::scoped_allocation b(*be_, tier_kind::host, bytes);
  for (auto* x : {&pinned, &dev, &a, &b}) { ASSERT_EQ(x->result(), status::ok) << be_->last_error(); }
  conf::fill_pattern(pinned.bytes(), bytes, 77);
  std::memset(a.get(), 0, bytes);
  std::memset(b.get(), 0, bytes);
  conf::scoped_stream s(*be_);
  ASSERT_EQ(s.result(), status::ok);
  // pinned -> device -> pageable a -> pageable b: the host-to-host step must see the
  // bytes of the device-to-host copy queued before it.
  ASSERT_EQ(be_->copy_async({dev.get(), pinned.get(), bytes, tier_kind::device, tier_kind::pinned_host}, s.get()),
            status::ok);
  ASSERT_EQ(be_->copy_async({a.get(), dev.get(), bytes, tier_kind::host, tier_kind::device}, s.get()), status::ok);
  ASSERT_EQ(be_->copy_async({b.get(), a.get(), bytes, tier_kind::host, tier_kind::host}, s.get()), status::ok);
  ASSERT_EQ(be_->synchronize_stream(s.get()), status::ok);
  EXPECT_EQ(conf::first_mismatch(b.bytes(), bytes, 77), bytes);

  // Overlapping ranges are rejected.
  EXPECT_EQ(be_->copy_async({a.bytes() + 1, a.get(), 64, tier_kind::host, tier_kind::host}, s.get()),
            status::invalid_value);
}

// A staged copy out of pageable memory whose source another stream is still writing (a
// host function held until the copy is queued): the copy's stream waits for the writer, so
// it is not idle and the first chunk must not be read on the calling thread (Note [Staging
// from pageable memory on an idle stream]). The device gets the writer's bytes. Then the
// same copy on an idle stream (the first chunk copied by the caller) arrives whole too.
TEST_F(CudaBackend, AStagedCopyFromPageableMemoryWaitsForTheSourcesWriter)
{
  constexpr std::size_t bytes = std::size_t{9} << 20U;  // two chunks: the first, then a host function's
  conf::scoped_allocation src(*be_, tier_kind::host, bytes);
  conf::scoped_allocation dev(*be_, tier_kind::device, bytes);
  conf::scoped_allocation back(*be_, tier_kind::pinned_host, bytes);
  for (auto* x : {&src, &dev, &back}) { ASSERT_EQ(x->result(), status::ok) << be_->last_error(); }
  std::memset(src.get(), 0, bytes);
  struct writer {
    std::atomic<bool> go{false};
    std::byte* p{nullptr};
    std::size_t n{0};
  };
  writer w;
  w.p = src.bytes();
  w.n = bytes;
  conf::scoped_stream a(*be_);
  conf::scoped_stream s(*be_);
  ASSERT_EQ(a.result(), status::ok);
  ASSERT_EQ(s.result(), status::ok);
  tierpool::event_handle e{};
  ASSERT_EQ(be_->create_event(&e), status::ok);
  auto const write = [](void* u) {
    auto* const wr = static_cast<writer*>(u);
    while (!wr->go.load()) { std::this_thread::yield(); }
    conf::fill_pattern(wr->p, wr->n, 42);
  };
  ASSERT_EQ(be_->launch_host_func(a.get(), write, &w), status::ok);
  ASSERT_EQ(be_->record_event(e, a.get()), status::ok);
  ASSERT_EQ(be_->stream_wait_event(s.get(), e), status::ok);
  ASSERT_EQ(be_->copy_async({dev.get(), src.get(), bytes, tier_kind::device, tier_kind::host}, s.get()), status::ok)
    << be_->last_error();
  w.go = true;
  ASSERT_EQ(be_->copy_async({back.get(), dev.get(), bytes, tier_kind::pinned_host, tier_kind::device}, s.get()),
            status::ok);
  ASSERT_EQ(be_->synchronize_stream(s.get()), status::ok);
  EXPECT_EQ(conf::first_mismatch(back.bytes(), bytes, 42), bytes) << "the copy read the source before its writer";
  // An idle stream: the caller stages the first chunk itself.
  conf::fill_pattern(src.bytes(), bytes, 43);
  ASSERT_EQ(be_->copy_async({dev.get(), src.get(), bytes, tier_kind::device, tier_kind::host}, s.get()), status::ok);
  ASSERT_EQ(be_->copy_async({back.get(), dev.get(), bytes, tier_kind::pinned_host, tier_kind::device}, s.get()),
            status::ok);
  ASSERT_EQ(be_->synchronize_stream(s.get()), status::ok);
  EXPECT_EQ(conf::first_mismatch(back.bytes(), bytes, 43), bytes);
  ASSERT_EQ(be_->synchronize_stream(a.get()), status::ok);
  be_->destroy_event(e);
}

// TIERPOOL_CUDA_COPY_TIMING=FILE (Note [Copy timing]): a backend made with it writes one
// line per copy at destruction, with its kinds, bytes and device times; without it, nothing.
TEST_F(CudaBackend, CopyTimingWritesOneLinePerCopy)
{
  std::string const path = ::testing::TempDir() + "tierpool_copy_timing.jsonl";
  std::remove(path.c_str());
  constexpr std::size_t bytes = 1U << 20U;
  auto copy_twice = [&](tierpool::backend& be) {
    conf::scoped_allocation pinned(be, tier_kind::pinned_host, bytes);
    conf::scoped_allocation dev(be, tier_kind::device, bytes);
    ASSERT_EQ(pinned.result(), status::ok);
    ASSERT_EQ(dev.result(), status::ok);
    conf::scoped_stream s(be);
    ASSERT_EQ(be.copy_async({dev.get(), pinned.get(), bytes, tier_kind::device, tier_kind::pinned_host}, s.get()),
              status::ok);
    ASSERT_EQ(be.copy_async({pinned.get(), dev.get(), bytes, tier_kind::pinned_host, tier_kind::device}, s.get()),
              status::ok);
    ASSERT_EQ(be.synchronize_stream(s.get()), status::ok);
  };
  copy_twice(*be_);  // made without the variable
  be_.reset();
  EXPECT_FALSE(std::ifstream(path).good());

  ASSERT_EQ(::setenv("TIERPOOL_CUDA_COPY_TIMING", path.c_str(), 1), 0);
  auto timed = tierpool::make_cuda_backend(0);
  ::unsetenv("TIERPOOL_CUDA_COPY_TIMING");
  ASSERT_NE(timed, nullptr);
  copy_twice(*timed);
  timed.reset();
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) { lines.push_back(line); }
  ASSERT_EQ(lines.size(), 2U);
  EXPECT_NE(lines[0].find(R"("src": "pinned_host", "dst": "device", "bytes": 1048576, "start_us": 0)"), std::string::npos)
    << lines[0];
  EXPECT_NE(lines[1].find(R"("src": "device", "dst": "pinned_host", "bytes": 1048576)"), std::string::npos) << lines[1];
  std::remove(path.c_str());
}

// Note [Device times measured with events]: timed events around a copy give its device time
// once both completed (not_ready before, while the copy runs); an event made without timing
// (create_event) cannot be timed.
TEST_F(CudaBackend, TimedEventsGiveTheDeviceTimeBetweenThem)
{
  constexpr std::size_t bytes = 64U << 20U;
  conf::scoped_allocation pinned(*be_, tierpool::tier_kind::pinned_host, bytes);
  conf::scoped_allocation dev(*be_, tierpool::tier_kind::device, bytes);
  for (auto* x : {&pinned, &dev}) { ASSERT_EQ(x->result(), tierpool::status::ok) << be_->last_error(); }
  conf::scoped_stream s(*be_);
  ASSERT_EQ(s.result(), tierpool::status::ok);
  tierpool::event_handle a{};
  tierpool::event_handle b{};
  tierpool::event_handle untimed{};
  ASSERT_EQ(be_->create_timed_event(&a), tierpool::status::ok);
  ASSERT_EQ(be_->create_timed_event(&b), tierpool::status::ok);
  ASSERT_EQ(be_->create_event(&untimed), tierpool::status::ok);
  ASSERT_EQ(be_->record_event(a, s.get()), tierpool::status::ok);
  for (int k = 0; k < 8; ++k) {
    ASSERT_EQ(be_->copy_async({dev.get(), pinned.get(), bytes, tierpool::tier_kind::device, tierpool::tier_kind::pinned_host}, s.get()),
              tierpool::status::ok);
  }
  ASSERT_EQ(be_->record_event(b, s.get()), tierpool::status::ok);
  ASSERT_EQ(be_->record_event(untimed, s.get()), tierpool::status::ok);
  tierpool::tick ns = 0;
  status const early = be_->event_elapsed(a, b, &ns);
  EXPECT_TRUE(early == tierpool::status::not_ready || early == tierpool::status::ok) << tierpool::to_string(early);
  ASSERT_EQ(be_->synchronize_event(b), tierpool::status::ok);
  ASSERT_EQ(be_->event_elapsed(a, b, &ns), tierpool::status::ok) << be_->last_error();
  // 512 MiB over PCIe or NVLink: more than 5 us, less than a second.
  EXPECT_GT(ns, 5'000U);
  EXPECT_LT(ns, 1'000'000'000U);
  EXPECT_NE(be_->event_elapsed(a, untimed, &ns), tierpool::status::ok);
  for (tierpool::event_handle e : {a, b, untimed}) { be_->destroy_event(e); }
}

TEST_F(CudaBackend, StreamPrioritiesAreClamped)
{
  for (int prio : {-1000, -1, 0, 1, 1000}) {
    tierpool::stream_handle s{};
    ASSERT_EQ(be_->create_stream(&s, prio), status::ok) << prio << ": " << be_->last_error();
    EXPECT_FALSE(s.is_default());
    EXPECT_EQ(be_->synchronize_stream(s), status::ok);
    be_->destroy_stream(s);
  }
}

TEST_F(CudaBackend, TwoBackendsOnOneDeviceKeepTheirHandlesApart)
{
  auto other = tierpool::make_cuda_backend(0);
  ASSERT_NE(other, nullptr);
  conf::scoped_stream s(*be_);
  conf::scoped_event e(*be_);
  ASSERT_EQ(s.result(), status::ok);
  ASSERT_EQ(e.result(), status::ok);
  EXPECT_EQ(other->synchronize_stream(s.get()), status::invalid_value) << "a stream of another backend is unknown";
  EXPECT_EQ(other->query_event(e.get()), status::invalid_value);
  EXPECT_EQ(be_->last_error(), "") << "the failure belongs to the other backend's last_error";
  EXPECT_NE(other->last_error().find("unknown"), std::string::npos) << other->last_error();
}

TEST_F(CudaBackend, NotReadyQueryLeavesNoErrorForTheNextLaunchCheck)
{
  conf::scoped_stream s(*be_);
  conf::scoped_event e(*be_);
  ASSERT_EQ(s.result(), status::ok);
  ASSERT_EQ(e.result(), status::ok);
  // A host function that waits for the test holds the stream: the event cannot complete
  // before the flag is set, so the query is not_ready for certain.
  std::atomic<bool> release{false};
  auto const hold = [](void* p) noexcept {
    auto* flag = static_cast<std::atomic<bool>*>(p);
    while (!flag->load(std::memory_order_acquire)) { std::this_thread::yield(); }
  };
  ASSERT_EQ(be_->launch_host_func(s.get(), hold, &release), status::ok);
  ASSERT_EQ(be_->record_event(e.get(), s.get()), status::ok);
  EXPECT_EQ(be_->query_event(e.get()), status::not_ready);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a user's launch check after the query must not see cudaErrorNotReady";
  release.store(true, std::memory_order_release);
  ASSERT_EQ(be_->synchronize_event(e.get()), status::ok);
  EXPECT_EQ(be_->query_event(e.get()), status::ok);
}

TEST_F(CudaBackend, FailuresAreClearedFromTheThreadsLastError)
{
  void* p = nullptr;
  EXPECT_EQ(be_->allocate(tier_kind::device, std::size_t{1} << 60U, &p), status::out_of_memory);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_NE(be_->allocate(tier_kind::pinned_host, std::size_t{1} << 60U, &p), status::ok);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << be_->last_error();
}

TEST_F(CudaBackend, ArgumentsOutsideTheEnumerationsAreInvalidValue)
{
  auto const bad_kind = static_cast<tier_kind>(9);
  void* p = nullptr;
  EXPECT_EQ(be_->allocate(bad_kind, 64, &p), status::invalid_value);
  EXPECT_EQ(be_->allocate(tier_kind::host, 64, &p, -2), status::invalid_value) << "numa_node must be >= -1";
  conf::scoped_allocation h(*be_, tier_kind::pinned_host, 256);
  conf::scoped_allocation d(*be_, tier_kind::device, 256);
  ASSERT_EQ(h.result(), status::ok);
  ASSERT_EQ(d.result(), status::ok);
  EXPECT_EQ(be_->copy_async({d.get(), h.get(), 64, bad_kind, tier_kind::pinned_host}, tierpool::stream_handle{}),
            status::invalid_value);
  EXPECT_EQ(be_->copy_async({d.get(), h.get(), 64, tier_kind::device, bad_kind}, tierpool::stream_handle{}),
            status::invalid_value);
  if (be_->caps().has_managed_prefetch) {
    conf::scoped_allocation m(*be_, tier_kind::managed, 4096);
    ASSERT_EQ(m.result(), status::ok);
    EXPECT_EQ(be_->prefetch_async(m.get(), 4096, {bad_kind, -1}, tierpool::stream_handle{}), status::invalid_value);
    EXPECT_EQ(be_->advise(m.get(), 4096, static_cast<mem_advice>(200), {tier_kind::device, -1}),
              status::invalid_value);
    EXPECT_EQ(be_->advise(m.get(), 4096, mem_advice::set_read_mostly, {bad_kind, -1}), status::invalid_value);
  }
}

TEST_F(CudaBackend, AdviceTakesEveryLocationCudaAllows)
{
  if (!be_->caps().has_managed_prefetch) { GTEST_SKIP() << "no concurrent managed access"; }
  constexpr std::size_t bytes = 2U << 20U;
  conf::scoped_allocation m(*be_, tier_kind::managed, bytes);
  ASSERT_EQ(m.result(), status::ok) << be_->last_error();
  memory_location const dev{tier_kind::device, -1};
  memory_location const host{tier_kind::host, -1};
  for (memory_location const where : {dev, host}) {
    SCOPED_TRACE(std::string(tierpool::to_string(where.kind)));
    for (mem_advice a : {mem_advice::set_preferred_location, mem_advice::unset_preferred_location,
                         mem_advice::set_accessed_by, mem_advice::unset_accessed_by}) {
      EXPECT_EQ(be_->advise(m.get(), bytes, a, where), status::ok) << be_->last_error();
    }
  }
  // Accessed-by names the host as a whole: a host location with a NUMA node (what a
  // NUMA-bound host tier passes) must not become cudaMemLocationTypeHostNuma, which
  // cudaMemAdvise refuses for this advice.
  memory_location const numa{tier_kind::pinned_host, std::max(be_->caps().host_numa_node, 0)};
  EXPECT_EQ(be_->advise(m.get(), bytes, mem_advice::set_accessed_by, numa), status::ok) << be_->last_error();
  EXPECT_EQ(be_->advise(m.get(), bytes, mem_advice::unset_accessed_by, numa), status::ok) << be_->last_error();
}

// A stream the program made with cudaStreamCreate is usable once adopted; forgetting it
// leaves it alive (it is the caller's). The backend's own streams and null are refused.
TEST_F(CudaBackend, AdoptedNativeStreamsAreUsableAndStayTheCallers)
{
  cudaStream_t native = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&native, cudaStreamNonBlocking), cudaSuccess);
  tierpool::stream_handle s{};
  ASSERT_EQ(be_->adopt_stream(native, &s), status::ok) << be_->last_error();
  EXPECT_EQ(s.value, reinterpret_cast<std::uintptr_t>(native));
  tierpool::event_handle e{};
  ASSERT_EQ(be_->create_event(&e), status::ok);
  EXPECT_EQ(be_->record_event(e, s), status::ok);
  EXPECT_EQ(be_->stream_wait_event(s, e), status::ok);
  EXPECT_EQ(be_->synchronize_stream(s), status::ok);
  tierpool::stream_handle own{};
  ASSERT_EQ(be_->create_stream(&own), status::ok);
  tierpool::stream_handle other{};
  EXPECT_EQ(be_->adopt_stream(reinterpret_cast<void*>(own.value), &other), status::invalid_value);
  EXPECT_EQ(be_->adopt_stream(nullptr, &other), status::invalid_value);
  be_->forget_stream(s);
  EXPECT_EQ(be_->synchronize_stream(s), status::invalid_value) << "forgotten";
  EXPECT_EQ(cudaStreamSynchronize(native), cudaSuccess) << "not destroyed";
  be_->destroy_event(e);
  be_->destroy_stream(own);
  EXPECT_EQ(cudaStreamDestroy(native), cudaSuccess);
}

// Pageable host <-> device copies larger than a stream's staging buffer (8 MiB) go through
// it in chunks and arrive whole, in both directions; two threads copying on one stream at
// once do not mix their chunks (Note [Pageable copies through pinned staging]).
TEST_F(CudaBackend, PageableDeviceCopiesGoThroughStagingInChunks)
{
  constexpr std::size_t kBytes = (std::size_t{20} << 20U) + 4096;  // three chunks, the last short
  conf::scoped_allocation dev(*be_, tier_kind::device, kBytes);
  conf::scoped_allocation dev2(*be_, tier_kind::device, kBytes);
  conf::scoped_allocation in(*be_, tier_kind::host, kBytes);
  conf::scoped_allocation out(*be_, tier_kind::host, kBytes);
  conf::scoped_allocation in2(*be_, tier_kind::host, kBytes);
  conf::scoped_allocation out2(*be_, tier_kind::host, kBytes);
  for (auto const* a : {&dev, &dev2, &in, &out, &in2, &out2}) { ASSERT_EQ(a->result(), status::ok); }
  auto fill = [](void* p, std::size_t n, unsigned seed) {
    auto* b = static_cast<unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) { b[i] = static_cast<unsigned char>((i * 131U + seed) >> 3U); }
  };
  fill(in.get(), kBytes, 1);
  fill(in2.get(), kBytes, 2);
  std::memset(out.get(), 0, kBytes);
  std::memset(out2.get(), 0, kBytes);
  tierpool::stream_handle s{};
  ASSERT_EQ(be_->create_stream(&s), status::ok);
  auto round_trip = [&](void* src, void* d, void* dst) {
    EXPECT_EQ(be_->copy_async({.dst = d, .src = src, .bytes = kBytes, .dst_kind = tier_kind::device,
                               .src_kind = tier_kind::host}, s), status::ok) << be_->last_error();
    EXPECT_EQ(be_->copy_async({.dst = dst, .src = d, .bytes = kBytes, .dst_kind = tier_kind::host,
                               .src_kind = tier_kind::device}, s), status::ok) << be_->last_error();
  };
  std::thread other([&] { round_trip(in2.get(), dev2.get(), out2.get()); });
  round_trip(in.get(), dev.get(), out.get());
  other.join();
  ASSERT_EQ(be_->synchronize_stream(s), status::ok);
  EXPECT_EQ(std::memcmp(in.get(), out.get(), kBytes), 0);
  EXPECT_EQ(std::memcmp(in2.get(), out2.get(), kBytes), 0);
  be_->destroy_stream(s);  // waits for the stream, then frees its staging buffer
}

TEST_F(CudaBackend, DestroyingTheBackendDrainsItsStreams)
{
  std::atomic<int> counter{0};
  tierpool::stream_handle s{};
  ASSERT_EQ(be_->create_stream(&s), status::ok);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(be_->launch_host_func(s, &conf::host_counter_increment, &counter), status::ok);
  }
  be_.reset();  // the stream is still live: the destructor waits for its work
  EXPECT_EQ(counter.load(), 20);
}

TEST_F(CudaBackend, CallsRestoreTheCallersCurrentDevice)
{
  int const count = tierpool::cuda_device_count();
  if (count < 2) { GTEST_SKIP() << "needs two devices"; }
  auto second = tierpool::make_cuda_backend(1);
  ASSERT_NE(second, nullptr);
  std::thread([&] {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    conf::scoped_stream s(*second);
    ASSERT_EQ(s.result(), status::ok);
    conf::scoped_allocation d(*second, tier_kind::device, 4096);
    ASSERT_EQ(d.result(), status::ok);
    cudaPointerAttributes attr{};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, d.get()), cudaSuccess);
    EXPECT_EQ(attr.device, 1) << "memory of the device-1 backend";
    int current = -1;
    ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
    EXPECT_EQ(current, 0) << "the caller's device is current again";
  }).join();
}

// A host function that holds its stream until `open` is set (or 30 s pass, so that a
// broken backend fails the test instead of hanging it).
struct cuda_gate {
  std::atomic<bool> open{false};
  static void hold(void* self) noexcept
  {
    auto* g = static_cast<cuda_gate*>(self);
    auto const until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!g->open.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
  }
};

// Pinned <-> pinned copies are host functions in stream order (Note [Host copies run on
// the host]): copy_async returns while the stream is held, and an event recorded after the
// copy completes only once the bytes are there.
TEST_F(CudaBackend, PinnedHostCopiesQueueInStreamOrderWithoutWaiting)
{
  constexpr std::size_t bytes = 8U << 20U;
  conf::scoped_allocation a(*be_, tier_kind::pinned_host, bytes);
  conf::scoped_allocation b(*be_, tier_kind::pinned_host, bytes);
  ASSERT_EQ(a.result(), status::ok);
  ASSERT_EQ(b.result(), status::ok);
  conf::fill_pattern(a.bytes(), bytes, 31);
  std::memset(b.get(), 0, bytes);
  conf::scoped_stream s(*be_);
  conf::scoped_event e(*be_);
  ASSERT_EQ(s.result(), status::ok);
  ASSERT_EQ(e.result(), status::ok);
  cuda_gate gate;
  ASSERT_EQ(be_->launch_host_func(s.get(), &cuda_gate::hold, &gate), status::ok);
  ASSERT_EQ(be_->copy_async({b.get(), a.get(), bytes, tier_kind::pinned_host, tier_kind::pinned_host}, s.get()),
            status::ok) << be_->last_error();
  ASSERT_EQ(be_->record_event(e.get(), s.get()), status::ok);
  EXPECT_EQ(be_->query_event(e.get()), status::not_ready) << "copy_async waited for the held stream";
  EXPECT_EQ(static_cast<unsigned char*>(b.get())[0], 0) << "the copy ran before the stream's earlier work";
  gate.open.store(true, std::memory_order_release);
  ASSERT_EQ(be_->synchronize_event(e.get()), status::ok);
  EXPECT_EQ(conf::first_mismatch(b.bytes(), bytes, 31), bytes);
}

// A pending error of the program's own stays for its check: the backend clears only the
// errors it produced (cudaPeekAtLastError), even on calls that succeed after it.
TEST_F(CudaBackend, TheProgramsPendingErrorSurvivesBackendCalls)
{
  ASSERT_EQ(cudaSetDevice(1 << 20), cudaErrorInvalidDevice);  // the program's error, not checked yet
  conf::scoped_allocation d(*be_, tier_kind::device, 4096);
  ASSERT_EQ(d.result(), status::ok);
  tierpool::stream_handle s{};
  ASSERT_EQ(be_->create_stream(&s), status::ok);
  conf::scoped_event e(*be_);
  ASSERT_EQ(be_->record_event(e.get(), s), status::ok);
  ASSERT_EQ(be_->synchronize_event(e.get()), status::ok);
  EXPECT_EQ(be_->query_event(e.get()), status::ok);
  be_->destroy_stream(s);
  void* p = nullptr;
  ASSERT_EQ(be_->allocate(tier_kind::device, 4096, &p), status::ok);
  be_->deallocate(tier_kind::device, p, 4096);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice) << "the program's error was discarded";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// What adopt_stream can tell without a CUDA call: the special handles and this backend's
// own events are no streams to adopt.
TEST_F(CudaBackend, AdoptRefusesTheSpecialStreamsAndEvents)
{
  tierpool::stream_handle s{};
  EXPECT_EQ(be_->adopt_stream(cudaStreamLegacy, &s), status::invalid_value);
  EXPECT_NE(be_->last_error().find("cudaStreamLegacy"), std::string::npos) << be_->last_error();
  EXPECT_EQ(be_->adopt_stream(cudaStreamPerThread, &s), status::invalid_value);
  conf::scoped_event e(*be_);
  ASSERT_EQ(e.result(), status::ok);
  EXPECT_EQ(be_->adopt_stream(reinterpret_cast<void*>(e.get().value), &s), status::invalid_value);
  EXPECT_NE(be_->last_error().find("an event of this backend"), std::string::npos) << be_->last_error();
  EXPECT_EQ(s, tierpool::stream_handle{});
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// The destructor leaves an adopted stream alone even when it has a staging buffer: it
// neither synchronizes nor destroys it, and frees the buffer after the staged copies'
// event. The stream is held by the program's own host function meanwhile (opened from
// another thread: freeing pinned memory may itself wait for the device, which CUDA does
// not rule out); afterwards the stream is still the program's and usable.
TEST_F(CudaBackend, DestructionLeavesAnAdoptedStreamWithStagingAlone)
{
  constexpr std::size_t bytes = 1U << 20U;
  cudaStream_t native = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&native, cudaStreamNonBlocking), cudaSuccess);
  tierpool::stream_handle s{};
  ASSERT_EQ(be_->adopt_stream(native, &s), status::ok) << be_->last_error();
  void* dev = nullptr;
  void* host = nullptr;
  ASSERT_EQ(be_->allocate(tier_kind::device, bytes, &dev), status::ok);
  ASSERT_EQ(be_->allocate(tier_kind::host, bytes, &host), status::ok);
  std::memset(host, 5, bytes);
  ASSERT_EQ(be_->copy_async({dev, host, bytes, tier_kind::device, tier_kind::host}, s), status::ok);  // staged
  ASSERT_EQ(be_->synchronize_stream(s), status::ok);
  be_->deallocate(tier_kind::device, dev, bytes);
  be_->deallocate(tier_kind::host, host, bytes);
  cuda_gate gate;
  ASSERT_EQ(cudaLaunchHostFunc(native, &cuda_gate::hold, &gate), cudaSuccess);
  std::thread opener([&gate] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    gate.open.store(true, std::memory_order_release);
  });
  be_.reset();
  opener.join();
  EXPECT_EQ(cudaStreamSynchronize(native), cudaSuccess) << "the adopted stream was destroyed";
  std::atomic<int> counter{0};
  ASSERT_EQ(cudaLaunchHostFunc(native, &conf::host_counter_increment, &counter), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(native), cudaSuccess);
  EXPECT_EQ(counter.load(), 1);
  EXPECT_EQ(cudaStreamDestroy(native), cudaSuccess);
}

// is_capturing and capture_underway follow a real cudaStreamBeginCapture / EndCapture.
TEST_F(CudaBackend, IsCapturingFollowsARealCapture)
{
  tierpool::stream_handle s{};
  ASSERT_EQ(be_->create_stream(&s), status::ok);
  auto* const native = reinterpret_cast<cudaStream_t>(s.value);
  bool on = true;
  ASSERT_EQ(be_->is_capturing(s, &on), status::ok) << be_->last_error();
  EXPECT_FALSE(on);
  EXPECT_FALSE(be_->capture_underway());
  ASSERT_EQ(cudaStreamBeginCapture(native, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(be_->is_capturing(s, &on), status::ok) << be_->last_error();
  EXPECT_TRUE(on);
  EXPECT_TRUE(be_->capture_underway());
  ASSERT_EQ(be_->is_capturing(tierpool::stream_handle{}, &on), status::ok);
  EXPECT_FALSE(on) << "only the captured stream";
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(native, &graph), cudaSuccess);
  ASSERT_EQ(be_->is_capturing(s, &on), status::ok);
  EXPECT_FALSE(on);
  EXPECT_FALSE(be_->capture_underway());
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  be_->destroy_stream(s);
}

// The pool's capture-safe acquire on a real graph: a tensor made resident before the
// capture is leased during it (no forbidden call: the capture ends cleanly), the graph's
// memset writes through the lease's pointer at each launch, and an acquire that would copy
// throws logic_error without invalidating the capture.
TEST_F(CudaBackend, ThePoolAcquiresAResidentTensorDuringARealCapture)
{
  std::shared_ptr<tierpool::backend> be(std::move(be_));
  tierpool::pool_options o;
  o.backend_object = be;
  o.read_environment = false;
  o.publish.enabled = false;
  o.tiers = {{.kind = tier_kind::device, .capacity_bytes = 8U << 20U},
             {.kind = tier_kind::pinned_host, .capacity_bytes = 8U << 20U}};
  tierpool::pool p{o};
  constexpr std::size_t bytes = 1U << 20U;
  tierpool::tensor t = p.allocate(bytes, {.name = "w"});
  tierpool::tensor cold = p.allocate(bytes, {.name = "cold", .preferred_tier = tierpool::tier_id{1}});
  { auto h = p.acquire_host(t, tierpool::access_mode::write_discard); std::memset(h.data(), 1, bytes); }
  { auto h = p.acquire_host(cold, tierpool::access_mode::write_discard); std::memset(h.data(), 2, bytes); }
  tierpool::stream_handle const s = p.create_stream();
  { auto l = p.acquire(t, tierpool::access_mode::read, s); }
  p.synchronize(s);
  auto* const native = reinterpret_cast<cudaStream_t>(s.value);
  ASSERT_EQ(cudaStreamBeginCapture(native, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  tierpool::lease kept = p.acquire(t, tierpool::access_mode::read_write, s);
  ASSERT_EQ(cudaMemsetAsync(kept.data(), 0x5A, bytes, native), cudaSuccess);
  EXPECT_THROW((void)p.acquire(cold, tierpool::access_mode::read, s), tierpool::logic_error);
  p.prefetch(cold);  // a no-op hint during the capture
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(native, &graph), cudaSuccess) << "the pool made a call the capture forbids";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, native), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, native), cudaSuccess);
  p.synchronize(s);
  kept.release();
  {
    auto h = p.acquire_host(t, tierpool::access_mode::read);
    auto const* b = static_cast<unsigned char const*>(h.data());
    EXPECT_TRUE(std::all_of(b, b + bytes, [](unsigned char c) { return c == 0x5A; }));
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_TRUE(p.validate());
}

// Two devices in one process: each backend allocates on its own device, and a stream of
// one is refused by the other, naming its device.
TEST_F(CudaBackend, TwoDevicesKeepTheirMemoryAndStreamsApart)
{
  if (tierpool::cuda_device_count() < 2) { GTEST_SKIP() << "needs two devices"; }
  std::string why;
  auto second = tierpool::make_cuda_backend(1, &why);
  ASSERT_NE(second, nullptr) << why;
  EXPECT_EQ(second->caps().device_ordinal, 1);
  conf::scoped_allocation d0(*be_, tier_kind::device, 4096);
  conf::scoped_allocation d1(*second, tier_kind::device, 4096);
  ASSERT_EQ(d0.result(), status::ok);
  ASSERT_EQ(d1.result(), status::ok);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, d0.get()), cudaSuccess);
  EXPECT_EQ(attr.device, 0);
  ASSERT_EQ(cudaPointerGetAttributes(&attr, d1.get()), cudaSuccess);
  EXPECT_EQ(attr.device, 1);
  tierpool::stream_handle s0{};
  ASSERT_EQ(be_->create_stream(&s0), status::ok);
  tierpool::stream_handle adopted{};
  EXPECT_EQ(second->adopt_stream(reinterpret_cast<void*>(s0.value), &adopted), status::invalid_value);
  EXPECT_NE(second->last_error().find("a stream of CUDA device 0"), std::string::npos) << second->last_error();
  be_->destroy_stream(s0);
}

// Note [Device guard]: a process that uses only GPU 1 never creates GPU 0's primary
// context. Run in a fresh process (a death test in the threadsafe style re-executes the
// binary), where nothing else has touched device 0.
TEST(CudaDevices, UsingDeviceOneLeavesDeviceZeroWithoutAContext)
{
  if (tierpool::cuda_device_count() < 2) { GTEST_SKIP() << "needs two devices"; }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto only_device_one = [] {
    auto be = tierpool::make_cuda_backend(1);
    if (!be) { std::_Exit(2); }
    {
      conf::scoped_stream s(*be);
      conf::scoped_event e(*be);
      conf::scoped_allocation d(*be, tier_kind::device, 1U << 20U);
      conf::scoped_allocation h(*be, tier_kind::pinned_host, 1U << 20U);
      if (s.result() != status::ok || e.result() != status::ok || d.result() != status::ok || h.result() != status::ok) {
        std::_Exit(3);
      }
      if (be->copy_async({d.get(), h.get(), 1U << 20U, tier_kind::device, tier_kind::pinned_host}, s.get()) != status::ok ||
          be->record_event(e.get(), s.get()) != status::ok || be->synchronize_event(e.get()) != status::ok) {
        std::_Exit(4);
      }
    }
    PFN_cuDeviceGet_v2000 device_get = nullptr;
    PFN_cuDevicePrimaryCtxGetState_v7000 get_state = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuDeviceGet", reinterpret_cast<void**>(&device_get), 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", reinterpret_cast<void**>(&get_state), 12000,
                                         cudaEnableDefault, &found) != cudaSuccess ||
        device_get == nullptr || get_state == nullptr) {
      std::_Exit(5);
    }
    CUdevice zero{};
    unsigned flags = 0;
    int active = -1;
    if (device_get(&zero, 0) != CUDA_SUCCESS || get_state(zero, &flags, &active) != CUDA_SUCCESS) { std::_Exit(6); }
    std::_Exit(active == 0 ? 0 : 7);  // 7: device 0's primary context was created
  };
  EXPECT_EXIT(only_device_one(), ::testing::ExitedWithCode(0), "");
}

}  // namespace

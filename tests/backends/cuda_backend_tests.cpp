// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// cuda_backend_tests.cpp — the backend conformance suite on the CUDA backend, plus
// CUDA-specific tests (caps probing, NUMA-bound pinned / host memory, stream-ordered
// pageable host copies, error text). Label gpu: every test skips where
// make_cuda_backend(0) returns null (no driver or no device).
#include "conformance/backend_conformance.hpp"

#include <tierpool/backends/cuda_backend.hpp>
#include <tierpool/topology.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
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

}  // namespace

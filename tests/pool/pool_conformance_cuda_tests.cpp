// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_conformance_cuda_tests.cpp — the pool conformance suite (conformance/pool_conformance.hpp)
// on the CUDA backend, device 0. Label gpu: every test skips (GTEST_SKIP, with the reason)
// where make_cuda_backend(0) returns null (no driver or no device).
#include "conformance/pool_conformance.hpp"

#include <tierpool/backends/cuda_backend.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace {

struct cuda_pool_factory {
  static std::shared_ptr<tierpool::backend> make(std::string* why)
  {
    std::string reason;
    std::shared_ptr<tierpool::backend> be = tierpool::make_cuda_backend(0, &reason);
    if (!be) { *why = "no usable CUDA device: " + reason; }
    return be;
  }
  static char const* name() { return "Cuda"; }
};

struct factory_names {
  template <class T>
  static std::string GetName(int /*index*/)
  {
    return T::name();
  }
};

}  // namespace

namespace tierpool::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, PoolConformance, ::testing::Types<cuda_pool_factory>, factory_names);
}  // namespace tierpool::conformance

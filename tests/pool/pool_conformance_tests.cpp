// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_conformance_tests.cpp — the pool conformance suite (conformance/pool_conformance.hpp)
// on the sim backend: real memory on the wall clock, phantom memory (no bytes: the byte
// comparisons are skipped) on the wall clock, and real and phantom memory on the virtual
// clock. The same suite runs on the CUDA backend in pool_conformance_cuda_tests.cpp.
#include "conformance/pool_conformance.hpp"

#include <tierpool/backends/sim_backend.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace {

using tierpool::operator""_MiB;
using tierpool::sim_clock_mode;
using tierpool::sim_memory_mode;

template <sim_memory_mode Memory, sim_clock_mode Clock>
struct sim_pool_factory {
  static std::shared_ptr<tierpool::backend> make(std::string* /*why*/)
  {
    tierpool::sim_options o;
    o.memory = Memory;
    o.clock = Clock;
    o.device_bytes = 64_MiB;
    return std::make_shared<tierpool::sim_backend>(o);
  }
  static char const* name()
  {
    if (Memory == sim_memory_mode::real) { return Clock == sim_clock_mode::wall ? "RealWall" : "RealVirtual"; }
    return Clock == sim_clock_mode::wall ? "PhantomWall" : "PhantomVirtual";
  }
};

struct factory_names {
  template <class T>
  static std::string GetName(int /*index*/)
  {
    return T::name();
  }
};

using sim_pool_factories = ::testing::Types<sim_pool_factory<sim_memory_mode::real, sim_clock_mode::wall>,
                                            sim_pool_factory<sim_memory_mode::phantom, sim_clock_mode::wall>,
                                            sim_pool_factory<sim_memory_mode::real, sim_clock_mode::virtual_clock>,
                                            sim_pool_factory<sim_memory_mode::phantom, sim_clock_mode::virtual_clock>>;

}  // namespace

namespace tierpool::conformance {
INSTANTIATE_TYPED_TEST_SUITE_P(Sim, PoolConformance, sim_pool_factories, factory_names);
}  // namespace tierpool::conformance

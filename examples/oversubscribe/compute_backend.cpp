// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// compute_backend — picks the kernels that can run on the pool's backend
// (entry: make_compute_backend).
#include "compute_backend.hpp"

#include "host_kernels.hpp"

#ifndef OVERSUBSCRIBE_HAS_CUDA_KERNELS
#define OVERSUBSCRIBE_HAS_CUDA_KERNELS 0
#endif

namespace oversubscribe {

#if OVERSUBSCRIBE_HAS_CUDA_KERNELS
// cuda_compute_backend.cpp: null, with `why`, when the kernels cannot run on be's device.
std::unique_ptr<compute_backend> make_cuda_compute_backend(tierpool::backend& be, std::string* why,
                                                          kernel_roofline roofline);
#endif

bool has_cuda_kernels() noexcept { return OVERSUBSCRIBE_HAS_CUDA_KERNELS != 0; }

std::unique_ptr<compute_backend> make_compute_backend(tierpool::backend& be, std::string* why, bool kernel_time,
                                                      kernel_roofline roofline, bool math)
{
  tierpool::backend_caps const& caps = be.caps();
  if (caps.name == "sim") {
    if (!caps.real_memory) {
      if (why != nullptr) { *why = "the simulated device uses phantom memory (no bytes to compute on)"; }
      return nullptr;
    }
    return make_host_compute_backend(be, kernel_time, roofline, math);
  }
#if OVERSUBSCRIBE_HAS_CUDA_KERNELS
  if (caps.name == "cuda") { return make_cuda_compute_backend(be, why, roofline); }
#endif
  if (why != nullptr) {
    *why = "the " + caps.name + " backend needs the demo's " + caps.name +
           " kernels, which this build does not have";
  }
  return nullptr;
}

}  // namespace oversubscribe

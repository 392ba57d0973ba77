// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// copy_bw.cu — the baseline of the GPU check (bench/gpu/check.sh, docs/chapters/benchmarks.md): plain
// cudaMemcpyAsync between pinned host memory and device memory, at the sizes `tierpool
// bench copy` uses, so the pool's copies can be read as a fraction of what the link gives.
//
// usage: copy_bw TENSOR_BYTES TOTAL_BYTES [RUNS]
//
// Prints one JSON object (GB/s = 1e9 bytes per second, medians over RUNS, host clock):
//   h2d_gbps, d2h_gbps  one direction at a time, TOTAL_BYTES in TENSOR_BYTES copies;
//   pattern_gbps        what `bench copy` does, with nothing but the copies: every tensor
//                       in through a device area of TOTAL/4 (slots of TENSOR_BYTES), each
//                       slot's previous occupant written back first, on one h2d and one d2h
//                       stream ordered by events; bytes counted both ways (2 x TOTAL).
// Build: nvcc -O2 -std=c++17 -o copy_bw copy_bw.cu   (no kernels: any architecture)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void check(cudaError_t e, char const* what)
{
  if (e != cudaSuccess) {
    std::fprintf(stderr, "copy_bw: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

double now_ns()
{
  return static_cast<double>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  std::size_t const n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 3) {
    std::fprintf(stderr, "usage: copy_bw TENSOR_BYTES TOTAL_BYTES [RUNS]\n");
    return 2;
  }
  std::size_t const tb = std::strtoull(argv[1], nullptr, 10);
  std::size_t const total_req = std::strtoull(argv[2], nullptr, 10);
  int const runs = argc > 3 ? std::atoi(argv[3]) : 5;
  if (tb == 0 || total_req < 2 * tb || runs < 1) {
    std::fprintf(stderr, "copy_bw: need TENSOR_BYTES > 0, TOTAL_BYTES >= 2 tensors, RUNS >= 1\n");
    return 2;
  }
  std::size_t const n = total_req / tb;
  std::size_t const total = n * tb;
  std::size_t const slots = std::max<std::size_t>(2, n / 4);

  std::size_t free_b = 0;
  std::size_t total_b = 0;
  check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  if (slots * tb > free_b / 2) {
    std::fprintf(stderr, "copy_bw: %zu device bytes wanted, only %zu free: not asking\n", slots * tb, free_b);
    return 1;
  }

  unsigned char* host = nullptr;
  unsigned char* dev = nullptr;
  check(cudaHostAlloc(reinterpret_cast<void**>(&host), total, cudaHostAllocDefault), "cudaHostAlloc");
  check(cudaMalloc(reinterpret_cast<void**>(&dev), slots * tb), "cudaMalloc");
  std::memset(host, 1, total);
  check(cudaMemset(dev, 2, slots * tb), "cudaMemset");

  cudaStream_t up = nullptr;
  cudaStream_t down = nullptr;
  check(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<cudaEvent_t> in_done(slots);
  std::vector<cudaEvent_t> out_done(slots);
  for (std::size_t s = 0; s < slots; ++s) {
    check(cudaEventCreateWithFlags(&in_done[s], cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventCreateWithFlags(&out_done[s], cudaEventDisableTiming), "cudaEventCreate");
  }

  auto one_way = [&](bool to_device) {
    double const t0 = now_ns();
    for (std::size_t i = 0; i < n; ++i) {
      unsigned char* d = dev + (i % slots) * tb;
      unsigned char* h = host + i * tb;
      check(to_device ? cudaMemcpyAsync(d, h, tb, cudaMemcpyHostToDevice, up)
                      : cudaMemcpyAsync(h, d, tb, cudaMemcpyDeviceToHost, up),
            "cudaMemcpyAsync");
    }
    check(cudaStreamSynchronize(up), "cudaStreamSynchronize");
    return static_cast<double>(total) / (now_ns() - t0);
  };
  auto pattern = [&] {
    double const t0 = now_ns();
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t const s = i % slots;
      unsigned char* d = dev + s * tb;
      if (i >= slots) {  // write the slot's previous occupant back, then reuse the slot
        check(cudaStreamWaitEvent(down, in_done[s], 0), "cudaStreamWaitEvent");
        check(cudaMemcpyAsync(host + (i - slots) * tb, d, tb, cudaMemcpyDeviceToHost, down), "cudaMemcpyAsync");
        check(cudaEventRecord(out_done[s], down), "cudaEventRecord");
        check(cudaStreamWaitEvent(up, out_done[s], 0), "cudaStreamWaitEvent");
      }
      check(cudaMemcpyAsync(d, host + i * tb, tb, cudaMemcpyHostToDevice, up), "cudaMemcpyAsync");
      check(cudaEventRecord(in_done[s], up), "cudaEventRecord");
    }
    for (std::size_t i = n > slots ? n - slots : 0; i < n; ++i) {
      std::size_t const s = i % slots;
      check(cudaStreamWaitEvent(down, in_done[s], 0), "cudaStreamWaitEvent");
      check(cudaMemcpyAsync(host + i * tb, dev + s * tb, tb, cudaMemcpyDeviceToHost, down), "cudaMemcpyAsync");
    }
    check(cudaStreamSynchronize(down), "cudaStreamSynchronize");
    check(cudaStreamSynchronize(up), "cudaStreamSynchronize");
    return static_cast<double>(2 * total) / (now_ns() - t0);
  };

  (void)one_way(true);  // warm-up
  (void)pattern();
  std::vector<double> h2d;
  std::vector<double> d2h;
  std::vector<double> pat;
  for (int r = 0; r < runs; ++r) {
    h2d.push_back(one_way(true));
    d2h.push_back(one_way(false));
    pat.push_back(pattern());
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("{\"benchmark\":\"cudaMemcpyAsync\",\"device\":\"%s\",\"tensor_bytes\":%zu,\"bytes\":%zu,"
              "\"slots\":%zu,\"runs\":%d,\"h2d_gbps\":%.3f,\"d2h_gbps\":%.3f,\"pattern_gbps\":%.3f,"
              "\"pattern_gbps_min\":%.3f,\"pattern_gbps_max\":%.3f}\n",
              prop.name, tb, total, slots, runs, median(h2d), median(d2h), median(pat),
              *std::min_element(pat.begin(), pat.end()), *std::max_element(pat.begin(), pat.end()));
  for (std::size_t s = 0; s < slots; ++s) {
    cudaEventDestroy(in_done[s]);
    cudaEventDestroy(out_done[s]);
  }
  cudaStreamDestroy(up);
  cudaStreamDestroy(down);
  cudaFree(dev);
  cudaFreeHost(host);
  return 0;
}

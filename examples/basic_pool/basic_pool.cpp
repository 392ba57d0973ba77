// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// basic_pool — the smallest complete program on a tiered pool: tensors that together
// exceed the device tier, filled from the host, used on a stream (here a host function
// stands in for a kernel), evicted and brought back by the pool, checked at the end.
//
// Runs on the simulated device (real memory), so it works on any machine; on the sim
// backend a device pointer is host memory, which is what lets a host function use it.
#include <tierpool/tierpool.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

namespace {

// Adds 1 to every byte: queued on the stream, it runs after the copy-in it depends on.
struct increment_job {
  unsigned char* data;
  std::size_t bytes;
};
void increment(void* user)
{
  auto* job = static_cast<increment_job*>(user);
  for (std::size_t i = 0; i < job->bytes; ++i) { job->data[i] = static_cast<unsigned char>(job->data[i] + 1); }
}

}  // namespace

int run()
{
  using namespace tierpool::literals;

  tierpool::sim_options sim;
  sim.device_bytes = 8_MiB;
  tierpool::pool_options options;
  options.backend_object = tierpool::make_sim_backend(sim);
  options.tiers = {{.kind = tierpool::tier_kind::device, .capacity_bytes = 8_MiB},
                   {.kind = tierpool::tier_kind::host, .capacity_bytes = 256_MiB}};
  // The example's point is its 8 MiB device tier: TIERPOOL_DEVICE_BYTES may not change it
  // (the backend is given, so TIERPOOL_BACKEND has nothing to choose). Every other
  // TIERPOOL_* variable (POLICY, PREFETCH, TRACE, PUBLISH, ...) applies, and a bad value
  // is an error naming it.
  options.ignore_environment = {"TIERPOOL_DEVICE_BYTES"};
  tierpool::pool pool(options);
  auto stream = pool.create_stream();

  // 8 tensors of 3 MiB = 24 MiB on an 8 MiB device tier.
  std::vector<tierpool::tensor> tensors;
  for (int i = 0; i < 8; ++i) {
    tensors.push_back(pool.allocate(3_MiB, {.name = "t" + std::to_string(i)}));
    auto h = pool.acquire_host(tensors.back(), tierpool::access_mode::write_discard);
    std::memset(h.data(), i, h.bytes());
  }

  // Two passes over all of them on the device: each acquire may evict an earlier one.
  std::vector<increment_job> jobs(tensors.size());
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      auto lease = pool.acquire(tensors[i], tierpool::access_mode::read_write, stream);
      jobs[i] = {lease.as<unsigned char>(), lease.bytes()};
      TIERPOOL_TRY(pool.backend().launch_host_func(stream, increment, &jobs[i]));
      if (i + 1 < tensors.size()) { pool.prefetch(tensors[i + 1]); }
    }  // each lease ends here; the pool keeps the bytes in place until the stream is past them
    pool.synchronize(stream);
  }

  bool ok = true;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    auto h = pool.acquire_host(tensors[i], tierpool::access_mode::read);
    auto const* p = h.as<unsigned char>();
    for (std::size_t b = 0; b < h.bytes(); ++b) {
      if (p[b] != static_cast<unsigned char>(i + 2)) { ok = false; break; }
    }
  }
  std::printf("%s\n", pool.summary().c_str());
  std::printf("basic_pool: %zu tensors of 3 MiB on an 8 MiB device tier: %s\n", tensors.size(),
              ok && pool.validate() ? "every byte as expected" : "CORRUPT");
  return ok ? 0 : 1;
}

int main()
{
  try {
    return run();
  } catch (std::exception const& e) {
    std::fprintf(stderr, "basic_pool: %s\n", e.what());
    return 2;
  }
}

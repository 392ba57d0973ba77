// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_test_util.hpp — helpers of the pool tests: a sim-backed pool with small tiers, byte
// patterns derived from (tensor, version), and fill / modify-on-stream / check helpers.
#pragma once

#include <gtest/gtest.h>

#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/pool.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace tierpool::test {

inline std::uint8_t pattern_byte(std::uint64_t key, std::uint32_t version, std::size_t i)
{
  return static_cast<std::uint8_t>((key * 131U + version * 17U + i * 7U + (i >> 8U)) & 0xFFU);
}

inline void write_pattern(void* p, std::size_t n, std::uint64_t key, std::uint32_t version)
{
  auto* b = static_cast<std::uint8_t*>(p);
  for (std::size_t i = 0; i < n; ++i) { b[i] = pattern_byte(key, version, i); }
}

inline bool has_pattern(void const* p, std::size_t n, std::uint64_t key, std::uint32_t version)
{
  auto const* b = static_cast<std::uint8_t const*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    if (b[i] != pattern_byte(key, version, i)) { return false; }
  }
  return true;
}

inline std::shared_ptr<sim_backend> make_sim(sim_clock_mode clock = sim_clock_mode::wall, std::size_t device = 64_MiB)
{
  sim_options o;
  o.clock = clock;
  o.device_bytes = device;
  o.memory = sim_memory_mode::real;
  return std::make_shared<sim_backend>(o);
}

/// device 1 MiB, pinned_host 2 MiB, host 16 MiB (each one chunk per MiB).
inline pool_options small_tiers(std::shared_ptr<sim_backend> be, std::size_t dev = 1_MiB, std::size_t pinned = 2_MiB,
                                std::size_t host = 16_MiB)
{
  pool_options o;
  o.backend_object = std::move(be);
  o.read_environment = false;
  if (dev != 0) { o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = dev, .chunk_bytes = dev}); }
  if (pinned != 0) { o.tiers.push_back({.kind = tier_kind::pinned_host, .capacity_bytes = pinned, .chunk_bytes = 1_MiB}); }
  if (host != 0) { o.tiers.push_back({.kind = tier_kind::host, .capacity_bytes = host, .chunk_bytes = 4_MiB}); }
  return o;
}

inline void fill(pool& p, tensor const& t, std::uint64_t key, std::uint32_t version)
{
  lease h = p.acquire_host(t, access_mode::write_discard);
  write_pattern(h.data(), h.bytes(), key, version);
}

inline bool check(pool& p, tensor const& t, std::uint64_t key, std::uint32_t version)
{
  lease h = p.acquire_host(t, access_mode::read);
  return has_pattern(h.data(), h.bytes(), key, version);
}

/// A "kernel": a host function on the stream that rewrites the device copy (sim real
/// memory: device pointers are host memory). Keep the job alive until the stream syncs.
struct modify_job {
  void* ptr{nullptr};
  std::size_t bytes{0};
  std::uint64_t key{0};
  std::uint32_t version{0};
  static void run(void* self)
  {
    auto* j = static_cast<modify_job*>(self);
    write_pattern(j->ptr, j->bytes, j->key, j->version);
  }
};

/// acquire(read_write) on `s`, enqueue the rewrite, release. @return backend status of the launch.
inline status modify_on_stream(pool& p, tensor const& t, stream_handle s, std::uint64_t key, std::uint32_t version,
                               std::vector<std::unique_ptr<modify_job>>& jobs)
{
  lease l = p.acquire(t, access_mode::read_write, s);
  auto job = std::make_unique<modify_job>(modify_job{l.data(), l.bytes(), key, version});
  status const st = p.backend().launch_host_func(s, &modify_job::run, job.get());
  jobs.push_back(std::move(job));
  return st;
}

}  // namespace tierpool::test

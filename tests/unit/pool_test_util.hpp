// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_test_util.hpp — helpers of the pool tests: a sim-backed pool with small tiers, byte
// patterns derived from (tensor, version), fill / modify-on-stream / check helpers, and
// stream gates (a host function holding a stream until the test opens it).
#pragma once

#include <gtest/gtest.h>

#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/prefetch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <thread>
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

/// A schedule_source's answer for a loop: the accesses after position `now` of a schedule
/// that repeats `period` (position t is period[t % size]), at most one period ahead.
/// @return how many were written to `out`
inline std::size_t loop_ahead(std::span<planned_access> out, std::vector<planned_access> const& period, std::uint64_t now)
{
  if (period.empty()) { return 0; }
  std::size_t const n = std::min(out.size(), period.size());
  for (std::size_t j = 0; j < n; ++j) {
    out[j] = period[(now + 1 + j) % period.size()];
    out[j].when = now + 1 + j;
  }
  return n;
}

/// An oracle's schedule that is always the same accesses ahead (positions from 1000 on).
class fixed_schedule final : public schedule_source {
 public:
  std::vector<planned_access> ahead;
  std::size_t upcoming(std::span<planned_access> out) noexcept override { return loop_ahead(out, ahead, 999); }
};

/// A "kernel" that checks the device copy against (key, version) when its stream runs it,
/// counting a mismatch in *bad. Keep the job alive until the stream syncs.
struct check_job {
  void const* ptr{nullptr};
  std::size_t bytes{0};
  std::uint64_t key{0};
  std::uint32_t version{0};
  std::atomic<int>* bad{nullptr};
  static void run(void* self)
  {
    auto* j = static_cast<check_job*>(self);
    if (!has_pattern(j->ptr, j->bytes, j->key, j->version)) { ++*j->bad; }
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

// A host function that holds its stream until released, so that work queued behind it
// stays pending while the test checks whether a pool call waited for it. The long
// deadline only keeps a broken pool from hanging the test; it is not a timing assertion.
struct stream_gate {
  std::atomic<bool> open{false};
  static void run(void* self)
  {
    auto* g = static_cast<stream_gate*>(self);
    auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!g->open.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

// Holds `s` with a gate and records an event behind it. While the gate is closed the event
// is not_ready; a pool call that waited on the host for `s` could only have returned
// after the gate gave up, with the event complete. So "still not_ready after the call"
// proves deterministically that the call did not wait.
struct held_stream {
  tierpool::backend& be;
  stream_gate gate;
  event_handle behind{};
  held_stream(tierpool::backend& b, stream_handle s) : be(b)
  {
    EXPECT_EQ(be.launch_host_func(s, &stream_gate::run, &gate), status::ok);
    EXPECT_EQ(be.create_event(&behind), status::ok);
    EXPECT_EQ(be.record_event(behind, s), status::ok);
  }
  [[nodiscard]] bool still_held() { return be.query_event(behind) == status::not_ready; }
  void open() { gate.open = true; }
  held_stream(held_stream const&) = delete;
  held_stream& operator=(held_stream const&) = delete;
  ~held_stream()
  {
    gate.open = true;
    (void)be.synchronize_event(behind);
    be.destroy_event(behind);
  }
};

// device 1 MiB holding t[0..3] (used on `s`), t[4..7] in pinned_host; all filled.
struct four_resident {
  std::shared_ptr<sim_backend> be = make_sim();
  pool p{small_tiers(be)};
  stream_handle s = p.create_stream();
  std::vector<tensor> t;
  four_resident()
  {
    for (std::uint64_t i = 0; i < 8; ++i) { t.push_back(p.allocate(256_KiB, {.name = "t" + std::to_string(i)})); }
    for (std::uint64_t i = 0; i < 8; ++i) { fill(p, t[i], i, 1); }
    for (std::size_t i = 0; i < 4; ++i) { lease l = p.acquire(t[i], access_mode::read, s); }
    p.synchronize(s);
  }
};

/// The message of the logic_error `f` throws ("" and a failure when it throws none).
template <class F>
std::string logic_message(F&& f)
{
  try {
    f();
  } catch (logic_error const& e) {
    return e.what();
  }
  ADD_FAILURE() << "no logic_error";
  return "";
}

/// Runs `body(i)` on `n` threads at once, i = 0..n-1, and joins them; an exception a body
/// throws is a test failure naming its thread. Returns how many threads threw.
template <class F>
int run_threads(unsigned n, F&& body)
{
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (unsigned i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        body(i);
      } catch (std::exception const& ex) {
        ++failures;
        ADD_FAILURE() << "thread " << i << ": " << ex.what();
      }
    });
  }
  for (auto& t : threads) { t.join(); }
  return failures.load();
}

}  // namespace tierpool::test

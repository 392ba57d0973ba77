// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_storage_tests.cpp — the storage tier (tier_kind::storage, include/tierpool/storage.hpp)
// on real files in a temporary directory, with both engines (io_uring skipped where the
// kernel refuses it) and O_DIRECT on and off: configuration errors at construction, bytes
// round-tripping through the file when the host tiers are too small, every fault kind of the
// storage fault hook (the bytes of every tensor and validate() checked after each), many
// threads (more than cores), the figures in stats / summary / summary_json, and a phantom
// pool whose storage copies the virtual clock times on the s2h / h2s links.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/error.hpp>
#include <tierpool/monitor.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/replay.hpp>
#include <tierpool/storage.hpp>
#include <tierpool/trace_gen.hpp>

#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <ostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

namespace fs = std::filesystem;

// A temporary directory removed with its contents at the end of the test.
class temp_dir {
 public:
  temp_dir()
  {
    std::string t = (fs::temp_directory_path() / "tierpool-storage-test-XXXXXX").string();
    char* d = ::mkdtemp(t.data());
    if (d == nullptr) { throw std::runtime_error("mkdtemp failed"); }
    path_ = d;
  }
  ~temp_dir()
  {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, ec);
    fs::remove_all(path_, ec);
  }
  temp_dir(temp_dir const&) = delete;
  temp_dir& operator=(temp_dir const&) = delete;
  [[nodiscard]] std::string const& path() const noexcept { return path_; }

 private:
  std::string path_;
};

struct storage_case {
  char const* name;
  storage_engine engine;
  storage_direct direct;
};

std::ostream& operator<<(std::ostream& os, storage_case const& c) { return os << c.name; }

// device 1 MiB, pinned 1 MiB, host 2 MiB, then storage: the host tiers hold a few tensors only.
pool_options storage_pool(std::shared_ptr<sim_backend> be, std::string const& dir, storage_case const& c,
                          std::shared_ptr<storage_fault_injector> faults = {}, bool verify = true,
                          std::size_t storage_cap = 64_MiB)
{
  pool_options o = small_tiers(std::move(be), 1_MiB, 1_MiB, 2_MiB);
  o.publish.enabled = false;
  tier_options st{.kind = tier_kind::storage, .capacity_bytes = storage_cap, .chunk_bytes = 16_MiB};
  st.storage.path = dir;
  st.storage.engine = c.engine;
  st.storage.direct = c.direct;
  st.storage.faults = std::move(faults);
  st.storage.verify_writes = verify;
  st.storage.piece_bytes = 64_KiB;  // several pieces per tensor: io_uring keeps them in flight
  o.tiers.push_back(std::move(st));
  return o;
}

// A pool with a storage tier, or a skip where the engine or O_DIRECT is refused here.
std::optional<pool> make_pool(pool_options o)
{
  try {
    return std::optional<pool>(std::in_place, std::move(o));
  } catch (storage_error const& e) {
    if (e.failure() == storage_failure::engine_unavailable || e.failure() == storage_failure::direct_unsupported) {
      return std::nullopt;
    }
    throw;
  }
}

std::size_t tensor_size(std::size_t i) { return 192_KiB + (i % 5) * 24_KiB + i * 256; }

// Tensors with a model of their versions; every check reads every tensor's bytes.
struct model {
  std::vector<tensor> ts;
  std::vector<std::uint32_t> ver;
  void make(pool& p, std::size_t n)
  {
    for (std::size_t i = 0; i < n; ++i) {
      ts.push_back(p.allocate(tensor_size(i)));
      ver.push_back(1);
      fill(p, ts.back(), i, 1);
    }
  }
  void check_all(pool& p) const
  {
    for (std::size_t i = 0; i < ts.size(); ++i) {
      ASSERT_TRUE(check(p, ts[i], i, ver[i])) << "tensor " << i << " version " << ver[i];
    }
    ASSERT_TRUE(p.validate());
  }
};

std::uint64_t storage_written(pool const& p)
{
  for (tier_stats const& t : p.stats().tiers) {
    if (t.kind == tier_kind::storage) { return t.bytes_written; }
  }
  return 0;
}

// ---------------------------------------------------------------------------------------
// Configuration errors, at construction
// ---------------------------------------------------------------------------------------

storage_failure construct_failure(pool_options o)
{
  try {
    pool p(std::move(o));
  } catch (storage_error const& e) {
    EXPECT_EQ(e.code(), status::io_error);
    EXPECT_NE(std::string(e.what()).find("storage"), std::string::npos) << e.what();
    return e.failure();
  }
  ADD_FAILURE() << "the pool was built";
  return storage_failure::corrupt;
}

constexpr storage_case kPread{"pread", storage_engine::pread, storage_direct::automatic};

TEST(PoolStorageConfig, ZeroCapacity)
{
  temp_dir d;
  EXPECT_EQ(construct_failure(storage_pool(make_sim(), d.path(), kPread, {}, true, 0)), storage_failure::bad_capacity);
}

TEST(PoolStorageConfig, MissingDirectory)
{
  temp_dir d;
  EXPECT_EQ(construct_failure(storage_pool(make_sim(), d.path() + "/no/such/dir", kPread)), storage_failure::missing_path);
  EXPECT_EQ(construct_failure(storage_pool(make_sim(), d.path() + "/missing/file.bin", kPread)),
            storage_failure::missing_path);
}

TEST(PoolStorageConfig, EmptyPathAndExistingFile)
{
  temp_dir d;
  EXPECT_EQ(construct_failure(storage_pool(make_sim(), "", kPread)), storage_failure::bad_path);
  std::string const f = d.path() + "/taken";
  std::FILE* fp = std::fopen(f.c_str(), "w");
  ASSERT_NE(fp, nullptr);
  std::fputs("keep me", fp);
  std::fclose(fp);
  EXPECT_EQ(construct_failure(storage_pool(make_sim(), f, kPread)), storage_failure::bad_path);
  EXPECT_EQ(fs::file_size(f), 7U);  // never overwritten
}

TEST(PoolStorageConfig, NoPermission)
{
  if (::geteuid() == 0) { GTEST_SKIP() << "root may write any directory"; }
  temp_dir d;
  std::string const ro = d.path() + "/ro";
  ASSERT_EQ(::mkdir(ro.c_str(), 0500), 0);
  EXPECT_EQ(construct_failure(storage_pool(make_sim(), ro, kPread)), storage_failure::permission);
}

TEST(PoolStorageConfig, NotEnoughFreeSpace)
{
  temp_dir d;  // more than any disk here: statvfs refuses it before a byte is written
  EXPECT_EQ(construct_failure(storage_pool(make_sim(), d.path(), kPread, {}, true, std::size_t{1} << 56U)),
            storage_failure::no_space);
}

TEST(PoolStorageConfig, DirectRequiredWhereUnsupported)
{
  // tmpfs refused O_DIRECT before Linux 6.6; where it accepts it there is nothing to refuse.
  struct ::statfs sf{};
  if (::statfs("/dev/shm", &sf) != 0 || sf.f_type != 0x01021994 /* TMPFS_MAGIC */) {
    GTEST_SKIP() << "no tmpfs at /dev/shm";
  }
  std::string t = "/dev/shm/tierpool-storage-test-XXXXXX";
  ASSERT_NE(::mkdtemp(t.data()), nullptr);
  storage_case const on{"direct", storage_engine::pread, storage_direct::on};
  storage_case const fallback{"auto", storage_engine::pread, storage_direct::automatic};
  bool refused = false;
  try {
    pool p(storage_pool(make_sim(), t, on));
    EXPECT_TRUE(p.stats().tiers.back().storage_direct);
  } catch (storage_error const& e) {
    EXPECT_EQ(e.failure(), storage_failure::direct_unsupported) << e.what();
    refused = true;
  }
  if (refused) {  // automatic falls back to the page cache, and says so in the figures
    pool p(storage_pool(make_sim(), t, fallback));
    EXPECT_FALSE(p.stats().tiers.back().storage_direct);
  }
  fs::remove_all(t);
  if (!refused) { GTEST_SKIP() << "this kernel's tmpfs supports O_DIRECT: nothing refuses it here"; }
}

TEST(PoolStorageConfig, EngineNamed)
{
  temp_dir d;
  storage_case const uring{"io_uring", storage_engine::io_uring, storage_direct::off};
  std::optional<pool> p = make_pool(storage_pool(make_sim(), d.path(), uring));
  if (!p) { GTEST_SKIP() << "io_uring is not available here (not built in, or the kernel refuses it)"; }
  EXPECT_EQ(p->stats().tiers.back().storage_engine, "io_uring");
  pool q(storage_pool(make_sim(), d.path(), kPread));
  EXPECT_EQ(q.stats().tiers.back().storage_engine, "pread");
}

TEST(PoolStorageConfig, StorageNeedsAHostTierAbove)
{
  temp_dir d;
  pool_options o = small_tiers(make_sim(), 1_MiB, 0, 0);
  tier_options st{.kind = tier_kind::storage, .capacity_bytes = 8_MiB};
  st.storage.path = d.path();
  o.tiers.push_back(st);
  EXPECT_THROW(pool{o}, logic_error);
  pool_options o2 = small_tiers(make_sim(), 1_MiB, 1_MiB, 0);
  o2.tiers.insert(o2.tiers.begin() + 1, st);  // storage above a host tier
  EXPECT_THROW(pool{o2}, logic_error);
}

TEST(PoolStorageConfig, FilesGoAwayAtClose)
{
  temp_dir d;
  std::string const named = d.path() + "/spill.bin";
  {
    pool p(storage_pool(make_sim(), named, kPread));
    EXPECT_TRUE(fs::exists(named));
    pool q(storage_pool(make_sim(), d.path(), kPread));  // unlinked: nothing to see
    EXPECT_EQ(std::distance(fs::directory_iterator(d.path()), fs::directory_iterator{}), 1);
  }
  EXPECT_FALSE(fs::exists(named));
  EXPECT_EQ(std::distance(fs::directory_iterator(d.path()), fs::directory_iterator{}), 0);
}

// ---------------------------------------------------------------------------------------
// Bytes through the file, every engine and O_DIRECT setting
// ---------------------------------------------------------------------------------------

class PoolStorage : public ::testing::TestWithParam<storage_case> {};

TEST_P(PoolStorage, BytesRoundTripWhenHostIsTooSmall)
{
  temp_dir d;
  std::shared_ptr<sim_backend> be = make_sim();
  std::optional<pool> p = make_pool(storage_pool(be, d.path(), GetParam()));
  if (!p) { GTEST_SKIP() << GetParam().name << " is not available here"; }
  model m;
  m.make(*p, 40);  // about 9 MiB: 4 MiB of memory tiers, the rest in the file
  ASSERT_NO_FATAL_FAILURE(m.check_all(*p));
  stream_handle const s = p->create_stream();
  std::vector<std::unique_ptr<modify_job>> jobs;
  std::mt19937_64 rng(7);
  for (int step = 0; step < 120; ++step) {
    std::size_t const i = rng() % m.ts.size();
    if (step % 3 == 0) {
      ASSERT_EQ(modify_on_stream(*p, m.ts[i], s, i, ++m.ver[i], jobs), status::ok);
    } else if (step % 3 == 1) {
      p->demote(m.ts[i], tier_id{3});  // straight to the file (staged through a host tier)
    } else {
      ASSERT_TRUE(check(*p, m.ts[i], i, m.ver[i])) << "step " << step;
    }
    ASSERT_TRUE(p->validate());
  }
  ASSERT_EQ(be->synchronize_stream(s), status::ok);
  ASSERT_NO_FATAL_FAILURE(m.check_all(*p));
  pool_stats const st = p->stats();
  tier_stats const& t = st.tiers.back();
  EXPECT_EQ(t.kind, tier_kind::storage);
  EXPECT_EQ(t.name, "storage");
  EXPECT_GT(t.bytes_written, 4_MiB);
  EXPECT_GT(t.bytes_read, 1_MiB);
  EXPECT_EQ(t.write_failures, 0U);
  EXPECT_EQ(t.read_failures, 0U);
  EXPECT_GT(t.resident_tensors, 0U);
  std::string const sum = p->summary();
  EXPECT_NE(sum.find("storage storage:"), std::string::npos) << sum;
  std::string const js = p->summary_json();
  EXPECT_NE(js.find("\"bytes_written\""), std::string::npos) << js;
  std::printf("[ storage ] %s: written %.1f MiB in %.3f s, read %.1f MiB in %.3f s, direct %d\n", GetParam().name,
              static_cast<double>(t.bytes_written) / 1048576.0, t.write_seconds,
              static_cast<double>(t.bytes_read) / 1048576.0, t.read_seconds, t.storage_direct ? 1 : 0);
  for (tensor& x : m.ts) { p->free(x); }
  EXPECT_TRUE(p->validate());
}

// A device acquire of a tensor whose only copy is in the file goes through a host tier.
TEST_P(PoolStorage, DeviceMissStagesThroughHost)
{
  temp_dir d;
  std::optional<pool> p = make_pool(storage_pool(make_sim(), d.path(), GetParam()));
  if (!p) { GTEST_SKIP() << GetParam().name << " is not available here"; }
  tensor t = p->allocate(300_KiB);
  fill(*p, t, 42, 3);
  p->demote(t, tier_id{3});
  EXPECT_EQ(p->stats().tiers[3].resident_tensors, 1U);
  EXPECT_EQ(p->stats().tiers[0].resident_tensors + p->stats().tiers[1].resident_tensors +
              p->stats().tiers[2].resident_tensors,
            0U);
  stream_handle const s = p->create_stream();
  {
    lease l = p->acquire(t, access_mode::read, s);
    ASSERT_EQ(p->backend().synchronize_stream(s), status::ok);
    EXPECT_TRUE(has_pattern(l.data(), l.bytes(), 42, 3));  // sim real memory: device bytes are host bytes
  }
  EXPECT_TRUE(p->validate());
}

// More threads than cores, each on its own tensors, through a pool whose host tiers hold a
// fraction of them.
TEST_P(PoolStorage, ManyThreads)
{
  temp_dir d;
  std::shared_ptr<sim_backend> be = make_sim();
  std::optional<pool> p = make_pool(storage_pool(be, d.path(), GetParam()));
  if (!p) { GTEST_SKIP() << GetParam().name << " is not available here"; }
  unsigned const threads = std::max(8U, 2 * std::thread::hardware_concurrency());
  constexpr std::size_t kPer = 6;
  std::vector<tensor> ts(threads * kPer);
  for (std::size_t i = 0; i < ts.size(); ++i) {
    ts[i] = p->allocate(64_KiB + (i % 3) * 32_KiB);
    fill(*p, ts[i], i, 1);
  }
  std::atomic<int> bad{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> pool_threads;
  for (unsigned w = 0; w < threads; ++w) {
    pool_threads.emplace_back([&, w] {
      std::mt19937_64 rng(w + 1);
      std::vector<std::uint32_t> ver(kPer, 1);
      stream_handle const s = p->create_stream();
      for (int step = 0; step < 60; ++step) {
        std::size_t const j = rng() % kPer;
        std::size_t const i = w * kPer + j;
        try {
          switch (rng() % 4) {
            case 0: {  // rewrite on the host
              lease h = p->acquire_host(ts[i], access_mode::read_write);
              write_pattern(h.data(), h.bytes(), i, ++ver[j]);
              break;
            }
            case 1: p->demote(ts[i], tier_id{3}); break;
            case 2: {  // read on the device
              lease l = p->acquire(ts[i], access_mode::read, s);
              (void)be->synchronize_stream(s);
              if (!has_pattern(l.data(), l.bytes(), i, ver[j])) { ++bad; }
              break;
            }
            default:
              if (!check(*p, ts[i], i, ver[j])) { ++bad; }
          }
        } catch (out_of_memory const&) {  // every lease of the others' in the way: allowed
          ++errors;
        }
      }
      for (std::size_t j = 0; j < kPer; ++j) {
        if (!check(*p, ts[w * kPer + j], w * kPer + j, ver[j])) { ++bad; }
      }
      p->destroy_stream(s);
    });
  }
  for (std::thread& t : pool_threads) { t.join(); }
  EXPECT_EQ(bad.load(), 0);
  EXPECT_TRUE(p->validate());
  EXPECT_GT(storage_written(*p), 0U);
  std::printf("[ storage ] %s: %u threads, %d out-of-memory retries given up\n", GetParam().name, threads, errors.load());
}

INSTANTIATE_TEST_SUITE_P(Engines, PoolStorage,
                         ::testing::Values(storage_case{"pread_buffered", storage_engine::pread, storage_direct::off},
                                           storage_case{"pread_direct", storage_engine::pread, storage_direct::on},
                                           storage_case{"uring_buffered", storage_engine::io_uring, storage_direct::off},
                                           storage_case{"uring_direct", storage_engine::io_uring, storage_direct::on},
                                           storage_case{"compressed", storage_engine::compressed, storage_direct::off}),
                         [](auto const& ti) { return std::string(ti.param.name); });

// The storage tier's figures reach the published segment (what `tierpool top` reads).
TEST(PoolStorageStats, PublishedLikeAnyTier)
{
  temp_dir d;
  pool_options o = storage_pool(make_sim(), d.path(), kPread);
  o.publish.enabled = true;
  o.publish.interval_ms = 0;  // only on publish()
  pool p(o);
  if (p.stats_segment().empty()) { GTEST_SKIP() << "no shared memory to publish in here"; }
  tensor t = p.allocate(256_KiB);
  fill(p, t, 9, 1);
  p.demote(t, tier_id{3});
  ASSERT_TRUE(check(p, t, 9, 1));
  p.publish();
  published_pool const pp = read_published_pool(p.stats_segment());
  ASSERT_EQ(pp.stats.tiers.size(), 4U);
  tier_stats const& s = pp.stats.tiers[3];
  EXPECT_EQ(s.kind, tier_kind::storage);
  EXPECT_EQ(s.name, "storage");
  EXPECT_EQ(s.bytes_written, 256_KiB);
  EXPECT_EQ(s.bytes_read, 256_KiB);
}

// A storage tier shrinks and grows back like any tier, never beyond its file.
TEST(PoolStorageStats, SetCapacityWithinTheFile)
{
  temp_dir d;
  pool p(storage_pool(make_sim(), d.path(), kPread, {}, true, 32_MiB));
  model m;
  m.make(p, 24);
  capacity_report const r = p.set_capacity(tier_id{3}, 16_MiB);
  EXPECT_EQ(r.tier, "storage");
  ASSERT_NO_FATAL_FAILURE(m.check_all(p));
  (void)p.set_capacity(tier_id{3}, 32_MiB);
  EXPECT_THROW((void)p.set_capacity(tier_id{3}, 64_MiB), logic_error);
  ASSERT_NO_FATAL_FAILURE(m.check_all(p));
}

// ---------------------------------------------------------------------------------------
// Faults: every kind, both engines; bytes and validate() after each
// ---------------------------------------------------------------------------------------

struct fault_case {
  storage_case engine;
  storage_fault fault;
};

std::ostream& operator<<(std::ostream& os, fault_case const& c) { return os << c.engine.name << "_" << to_string(c.fault); }

class PoolStorageFault : public ::testing::TestWithParam<fault_case> {};

bool is_write_fault(storage_fault f)
{
  return f != storage_fault::fail_read && f != storage_fault::corrupt_read;
}

storage_failure expected_failure(storage_fault f)
{
  switch (f) {
    case storage_fault::fail_write: return storage_failure::write_failed;
    case storage_fault::short_write: return storage_failure::short_write;
    case storage_fault::torn_write: return storage_failure::torn_write;
    case storage_fault::no_space: return storage_failure::no_space;
    case storage_fault::fail_read: return storage_failure::read_failed;
    case storage_fault::corrupt_read: return storage_failure::corrupt;
  }
  return storage_failure::corrupt;
}

// A write fault that persists: every eviction into the file fails, the requests that needed
// the room fail with a typed error, and no tensor loses a byte. A single fault: the
// operation fails or its retry passes; either way the bytes hold.
TEST_P(PoolStorageFault, EveryTensorKeepsItsBytes)
{
  fault_case const c = GetParam();
  temp_dir d;
  auto faults = std::make_shared<storage_fault_injector>();
  std::optional<pool> p = make_pool(storage_pool(make_sim(), d.path(), c.engine, faults));
  if (!p) { GTEST_SKIP() << c.engine.name << " is not available here"; }
  model m;
  m.make(*p, 24);  // about 5 MiB: some in the file already
  ASSERT_GT(storage_written(*p), 0U);
  ASSERT_NO_FATAL_FAILURE(m.check_all(*p));

  if (is_write_fault(c.fault)) {
    // 1. Persistent: demoting to the file fails with the fault's failure; the tensor stays.
    faults->arm(c.fault, 0, 1'000'000);
    int failed = 0;
    for (std::size_t i = 0; i < m.ts.size(); ++i) {
      try {
        p->demote(m.ts[i], tier_id{3});
      } catch (storage_error const& e) {
        EXPECT_EQ(e.failure(), expected_failure(c.fault)) << e.what();
        ++failed;
      } catch (backend_error const& e) {  // an eviction's write-back failed: the ladder's error
        EXPECT_EQ(e.code(), status::io_error) << e.what();
        ++failed;
      }
      ASSERT_TRUE(p->validate());
    }
    EXPECT_GT(failed, 0);
    // Fill the memory tiers with new versions: evictions into the file fail, nothing is lost.
    for (std::size_t i = 0; i < m.ts.size(); ++i) {
      try {
        lease h = p->acquire_host(m.ts[i], access_mode::read_write);
        write_pattern(h.data(), h.bytes(), i, m.ver[i] + 1);
        ++m.ver[i];
      } catch (backend_error const& e) {
        EXPECT_EQ(e.code(), status::io_error) << e.what();
      } catch (out_of_memory const&) {  // no room anywhere while the file refuses: allowed
      }
      ASSERT_TRUE(p->validate());
    }
    faults->clear();
    ASSERT_NO_FATAL_FAILURE(m.check_all(*p));
    EXPECT_GT(p->stats().tiers[3].write_failures, 0U);
    // 2. Single faults, one at each of several later writes; every tensor's bytes are
    //    checked right after the operation the fault hit.
    for (std::uint64_t skip = 0; skip < 6; ++skip) {
      std::uint64_t const before = faults->injected();
      faults->arm(c.fault, skip, 1);
      for (std::size_t n = 0; n < 4 * m.ts.size() && faults->injected() == before; ++n) {
        std::size_t const i = (n * 5 + skip) % m.ts.size();
        try {
          if (n % 2 == 0) {
            p->demote(m.ts[i], tier_id{3});
          } else {  // a new version on the host: evicts others into the file
            lease h = p->acquire_host(m.ts[i], access_mode::read_write);
            write_pattern(h.data(), h.bytes(), i, m.ver[i] + 1);
            ++m.ver[i];
          }
        } catch (backend_error const& e) {
          EXPECT_EQ(e.code(), status::io_error) << e.what();
        }
        ASSERT_TRUE(p->validate());
      }
      EXPECT_EQ(faults->injected(), before + 1) << "skip " << skip;
      faults->clear();
      ASSERT_NO_FATAL_FAILURE(m.check_all(*p));
    }
  } else {
    // Read faults: a read from the file fails with a typed error; the copy in the file is
    // intact and the next read (fault gone) gives the bytes.
    for (std::size_t i = 0; i < m.ts.size(); ++i) { p->demote(m.ts[i], tier_id{3}); }
    int failed = 0;
    for (std::size_t i = 0; i < m.ts.size(); ++i) {
      faults->arm(c.fault, 0, 1);
      try {
        (void)check(*p, m.ts[i], i, m.ver[i]);
        ADD_FAILURE() << "tensor " << i << ": the read should have failed";
      } catch (storage_error const& e) {
        EXPECT_EQ(e.failure(), expected_failure(c.fault)) << e.what();
        ++failed;
      }
      faults->clear();
      ASSERT_TRUE(p->validate());
      ASSERT_TRUE(check(*p, m.ts[i], i, m.ver[i])) << "tensor " << i;
      p->demote(m.ts[i], tier_id{3});
    }
    EXPECT_EQ(failed, static_cast<int>(m.ts.size()));
    EXPECT_EQ(p->stats().tiers[3].read_failures, m.ts.size());
    ASSERT_NO_FATAL_FAILURE(m.check_all(*p));
  }
  for (tensor& x : m.ts) { p->free(x); }
  EXPECT_TRUE(p->validate());
}

std::vector<fault_case> fault_cases()
{
  std::vector<fault_case> out;
  for (storage_case const e : {storage_case{"pread", storage_engine::pread, storage_direct::automatic},
                               storage_case{"uring", storage_engine::io_uring, storage_direct::automatic},
                               storage_case{"compressed", storage_engine::compressed, storage_direct::off}}) {
    for (storage_fault const f : {storage_fault::fail_write, storage_fault::short_write, storage_fault::torn_write,
                                  storage_fault::no_space, storage_fault::fail_read, storage_fault::corrupt_read}) {
      out.push_back({e, f});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Kinds, PoolStorageFault, ::testing::ValuesIn(fault_cases()), [](auto const& ti) {
  return std::string(ti.param.engine.name) + "_" + std::string(to_string(ti.param.fault));
});

// Without verification a torn write is found at the next read: a typed error, never
// silently wrong bytes (the tensor's bytes are lost then; verify_writes, the default,
// keeps them).
TEST(PoolStorageFaultUnverified, TornWriteIsFoundAtRead)
{
  temp_dir d;
  auto faults = std::make_shared<storage_fault_injector>();
  pool p(storage_pool(make_sim(), d.path(), kPread, faults, /*verify=*/false));
  tensor t = p.allocate(256_KiB);
  fill(p, t, 5, 1);
  faults->arm(storage_fault::torn_write);
  p.demote(t, tier_id{3});  // the write says it wrote every byte
  EXPECT_EQ(faults->injected(), 1U);
  try {
    (void)check(p, t, 5, 1);
    ADD_FAILURE() << "a torn write read back without an error";
  } catch (storage_error const& e) {
    EXPECT_EQ(e.failure(), storage_failure::corrupt) << e.what();
  }
  EXPECT_TRUE(p.validate());
}

// The storage copy throughput of this machine's disk (TIERPOOL_STORAGE_BENCH=1; skipped
// otherwise): 16 MiB tensors through 1 MiB pieces, each engine, O_DIRECT on, writes verified
// and not. The figures in docs/chapters/tiers.md come from here.
TEST(PoolStorageThroughput, Measure)
{
  char const* on = std::getenv("TIERPOOL_STORAGE_BENCH");
  if (on == nullptr || std::string(on) != "1") { GTEST_SKIP() << "set TIERPOOL_STORAGE_BENCH=1 to measure"; }
  char const* dir_env = std::getenv("TIERPOOL_STORAGE_BENCH_DIR");
  temp_dir d;
  std::string const dir = dir_env != nullptr ? std::string(dir_env) : d.path();
  for (storage_engine const eng : {storage_engine::pread, storage_engine::io_uring}) {
    for (bool const verify : {true, false}) {
      pool_options o;
      o.backend_object = make_sim();
      o.read_environment = false;
      o.publish.enabled = false;
      o.tiers = {{.kind = tier_kind::host, .capacity_bytes = 64_MiB, .chunk_bytes = 64_MiB}};
      tier_options st{.kind = tier_kind::storage, .capacity_bytes = 1_GiB, .chunk_bytes = 1_GiB};
      st.storage.path = dir;
      st.storage.engine = eng;
      st.storage.direct = storage_direct::on;
      st.storage.verify_writes = verify;
      o.tiers.push_back(st);
      std::optional<pool> p = make_pool(o);
      if (!p) { continue; }
      std::vector<tensor> ts;
      for (int i = 0; i < 32; ++i) {
        ts.push_back(p->allocate(16_MiB, {.preferred_tier = tier_id{0}}));
        fill(*p, ts.back(), static_cast<std::uint64_t>(i), 1);
        p->demote(ts.back(), tier_id{1});
      }
      for (int i = 0; i < 32; ++i) {
        ASSERT_TRUE(check(*p, ts[static_cast<std::size_t>(i)], static_cast<std::uint64_t>(i), 1));
        p->demote(ts[static_cast<std::size_t>(i)], tier_id{1});  // clean: drops the host copy
      }
      tier_stats const t = p->stats().tiers.back();
      std::printf("[ storage ] %-8s O_DIRECT %d verify %d: write %.0f MB/s (%.0f MiB), read %.0f MB/s (%.0f MiB)\n",
                  std::string(to_string(eng)).c_str(), t.storage_direct ? 1 : 0, verify ? 1 : 0,
                  static_cast<double>(t.bytes_written) / t.write_seconds / 1e6,
                  static_cast<double>(t.bytes_written) / 1048576.0,
                  static_cast<double>(t.bytes_read) / t.read_seconds / 1e6, static_cast<double>(t.bytes_read) / 1048576.0);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Issue 17's target at small scale: transformer-train on real memory, the device tier at
// 25 % of the working set, host tiers too small for the rest, the storage tier below
// ---------------------------------------------------------------------------------------

class PoolStorageTrace : public ::testing::TestWithParam<storage_case> {};

// With `recompute`, every tensor the generator marks recomputable gets a recipe after each
// write (it rebuilds the version written last); the drops and rebuilds must keep every byte.
void transformer_every_byte(storage_case const& c, bool recompute)
{
  namespace tt = tierpool::trace;
  std::vector<tt::event> const events = tt::generate(
    "transformer-train", {{"blocks", "4"}, {"hidden", "128"}, {"seq", "64"}, {"batch", "2"}, {"iterations", "2"}}, 1);
  std::uint64_t live = 0;
  std::uint64_t peak = 0;
  std::uint64_t largest = 0;
  for (tt::event const& e : events) {
    if (e.kind == tt::event_kind::allocate) {
      live += e.bytes;
      peak = std::max(peak, live);
      largest = std::max(largest, e.bytes);
    }
  }
  ASSERT_GT(peak, 4_MiB);
  std::size_t const dev = std::max<std::size_t>(peak / 4, 2 * largest) / 4096 * 4096;
  std::size_t const host = std::max<std::size_t>(peak / 8, 2 * largest) / 4096 * 4096;  // too small for the rest
  temp_dir d;
  std::shared_ptr<sim_backend> be = make_sim(sim_clock_mode::wall, 2 * dev);
  pool_options o = small_tiers(be, dev, host, host);
  o.publish.enabled = false;
  tier_options st{.kind = tier_kind::storage, .capacity_bytes = 2 * peak};
  st.storage.path = d.path();
  st.storage.engine = c.engine;
  st.storage.direct = c.direct;
  o.tiers.push_back(st);
  std::optional<pool> p = make_pool(o);
  if (!p) { GTEST_SKIP() << c.name << " is not available here"; }
  std::map<std::uint64_t, std::uint64_t> recompute_ns;  // the generator's marks

  struct live_tensor {
    tensor t;
    std::uint32_t ver{0};  // 0: never written
  };
  std::map<std::uint64_t, live_tensor> ts;
  std::map<std::uint32_t, stream_handle> streams;
  std::uint64_t checked = 0;
  auto use = [&](std::uint64_t id, live_tensor& lt, void* data, std::size_t n, tt::access_kind mode) {
    if (mode != tt::access_kind::write_discard && lt.ver != 0) {
      ASSERT_TRUE(has_pattern(data, n, id, lt.ver)) << "tensor " << id << " version " << lt.ver;
      ++checked;
    }
    if (mode != tt::access_kind::read) { write_pattern(data, n, id, ++lt.ver); }
  };
  for (tt::event const& e : events) {
    switch (e.kind) {
      case tt::event_kind::allocate:
        ts[e.tensor].t = p->allocate(e.bytes);
        if ((e.hints & tt::hint_recomputable) != 0) { recompute_ns[e.tensor] = e.duration_ns; }
        break;
      case tt::event_kind::free:
        p->free(ts[e.tensor].t);
        ts.erase(e.tensor);
        break;
      case tt::event_kind::access: {
        live_tensor& lt = ts.at(e.tensor);
        auto const mode = static_cast<access_mode>(e.mode);
        if (e.stream == tt::host_stream) {
          lease h = p->acquire_host(lt.t, mode);
          ASSERT_NO_FATAL_FAILURE(use(e.tensor, lt, h.data(), h.bytes(), e.mode));
        } else {
          auto [it, fresh] = streams.try_emplace(e.stream);
          if (fresh) { it->second = p->create_stream(); }
          lease l = p->acquire(lt.t, mode, it->second);
          ASSERT_EQ(be->synchronize_stream(it->second), status::ok);  // the "kernel" runs on the host
          ASSERT_NO_FATAL_FAILURE(use(e.tensor, lt, l.data(), l.bytes(), e.mode));
        }
        if (auto const r = recompute_ns.find(e.tensor);
            recompute && e.mode != tt::access_kind::read && r != recompute_ns.end()) {
          recompute_options ro;
          ro.fn = [id = e.tensor, ver = lt.ver](recompute_call const& call) { write_pattern(call.out, call.bytes, id, ver); };
          ro.cost_seconds = static_cast<double>(r->second) * 1e-9;
          p->set_recompute(lt.t, std::move(ro));
        }
        break;
      }
      default: break;
    }
  }
  ASSERT_TRUE(p->validate());
  for (auto& [id, lt] : ts) {
    if (lt.ver != 0) { ASSERT_TRUE(check(*p, lt.t, id, lt.ver)) << "tensor " << id; }
  }
  tier_stats const sto = p->stats().tiers.back();
  EXPECT_GT(sto.bytes_written, 0U);
  EXPECT_GT(sto.bytes_read, 0U);
  EXPECT_GT(checked, 50U);
  pool_stats const ps = p->stats();
  if (recompute) {
    EXPECT_GT(ps.evicted_recompute, 0U);
    EXPECT_GT(ps.rebuilds, 0U);
  } else {
    EXPECT_EQ(ps.evicted_recompute, 0U);
  }
  std::printf("[ storage ] transformer-train (%s%s): working set %.1f MiB, device %.1f MiB, pinned and host %.1f MiB "
              "each; %llu reads checked; storage written %.1f MiB, read %.1f MiB; %llu dropped for recompute, %llu "
              "rebuilt\n",
              c.name, recompute ? ", recompute" : "", static_cast<double>(peak) / 1048576.0,
              static_cast<double>(dev) / 1048576.0, static_cast<double>(host) / 1048576.0,
              static_cast<unsigned long long>(checked), static_cast<double>(sto.bytes_written) / 1048576.0,
              static_cast<double>(sto.bytes_read) / 1048576.0, static_cast<unsigned long long>(ps.evicted_recompute),
              static_cast<unsigned long long>(ps.rebuilds));
}

TEST_P(PoolStorageTrace, TransformerTrainEveryByteCorrect) { transformer_every_byte(GetParam(), false); }
TEST_P(PoolStorageTrace, TransformerTrainWithRecomputeEveryByteCorrect) { transformer_every_byte(GetParam(), true); }

INSTANTIATE_TEST_SUITE_P(Engines, PoolStorageTrace,
                         ::testing::Values(storage_case{"pread", storage_engine::pread, storage_direct::automatic},
                                           storage_case{"uring", storage_engine::io_uring, storage_direct::automatic},
                                           storage_case{"compressed", storage_engine::compressed, storage_direct::off}),
                         [](auto const& ti) { return std::string(ti.param.name); });

// ---------------------------------------------------------------------------------------
// Phantom memory and the virtual clock: no file, copies timed on the storage links
// ---------------------------------------------------------------------------------------

TEST(PoolStoragePhantom, CopiesAreTimedOnTheStorageLinks)
{
  sim_options so;
  so.memory = sim_memory_mode::phantom;
  so.clock = sim_clock_mode::virtual_clock;
  so.device_bytes = 1_MiB;
  auto be = std::make_shared<sim_backend>(so);
  pool_options o = small_tiers(be, 1_MiB, 1_MiB, 1_MiB);
  o.publish.enabled = false;
  o.tiers.push_back({.kind = tier_kind::storage, .capacity_bytes = std::size_t{1} << 40U});  // 1 TiB, no disk needed
  pool p(o);
  std::vector<tensor> ts;
  for (int i = 0; i < 16; ++i) { ts.push_back(p.allocate(256_KiB)); }
  stream_handle const s = p.create_stream();
  for (int round = 0; round < 2; ++round) {
    for (tensor const& t : ts) { lease l = p.acquire(t, access_mode::read_write, s); }
  }
  ASSERT_EQ(be->synchronize_stream(s), status::ok);
  EXPECT_TRUE(p.validate());
  sim_link_stats const w = be->link_stats(sim_link::h2s);
  sim_link_stats const r = be->link_stats(sim_link::s2h);
  EXPECT_GT(w.bytes, 0U);
  EXPECT_GT(r.bytes, 0U);
  EXPECT_GE(w.busy_ns, w.copies * link_model::nvme4_write().latency_ns);  // 80 us a copy at least
  tier_stats const t = p.stats().tiers.back();
  EXPECT_EQ(t.storage_engine, "phantom");
  EXPECT_EQ(t.bytes_written, w.bytes);
  EXPECT_EQ(t.bytes_read, r.bytes);
}

// Replay (phantom, virtual clock): transformer-train at 25 % of the working set, the host
// tier too small for the rest and a storage tier below it, against a host tier with room
// for everything. Deterministic: the storage run is slower, and its copies use the file's links.
TEST(PoolStorageReplay, TransformerTrainWithAndWithoutStorage)
{
  namespace tr = tierpool::replay;
  std::vector<trace::event> const events = trace::generate("transformer-train", {{"blocks", "4"}}, 1);
  tr::compiled_trace const ct = tr::compiled_trace::compile(events);
  tr::run_options o;
  o.capacity_bytes = ct.resolve(tr::parse_capacity("25%"), tr::replay_mode::pool);
  tr::replay_result const base = tr::run(ct, o);
  o.host_capacity_bytes = ct.resolve(tr::parse_capacity("25%"), tr::replay_mode::pool);
  EXPECT_THROW((void)tr::run(ct, o), out_of_memory);  // nowhere for the rest to go
  o.storage_bytes = std::size_t{1} << 40U;
  tr::replay_result const with = tr::run(ct, o);
  EXPECT_EQ(with.requests, base.requests);
  EXPECT_EQ(with.unserved, 0U);
  EXPECT_GT(with.makespan_seconds, base.makespan_seconds);
  std::printf("[ storage ] replay transformer-train blocks=4 at 25%%: makespan %.1f ms with room on the host, %.1f ms "
              "with a 25%% host tier and storage\n",
              base.makespan_seconds * 1e3, with.makespan_seconds * 1e3);
  // A compressed tier's links: lz4's measured rates (docs/chapters/codecs.md) are slower
  // than the NVMe drive's, and the replay's time follows them.
  o.storage_read_link = link_model{0.9e9, 0};
  o.storage_write_link = link_model{0.27e9, 0};
  tr::replay_result const lz4 = tr::run(ct, o);
  EXPECT_EQ(lz4.requests, base.requests);
  EXPECT_GT(lz4.makespan_seconds, with.makespan_seconds);
  std::printf("[ storage ] the same with the storage links at lz4's rates (0.9 GB/s decompress, 0.27 compress): "
              "%.1f ms\n",
              lz4.makespan_seconds * 1e3);
  tr::run_options cache;
  cache.mode = tr::replay_mode::cache;
  cache.capacity_bytes = o.capacity_bytes;
  cache.storage_bytes = 1_GiB;
  EXPECT_THROW((void)tr::run(ct, cache), logic_error);
}

// Eviction actions in replay (docs/chapters/tiers.md, "Eviction actions"): the generator
// marks the activations recomputable; with recipes the same run moves fewer bytes and ends
// sooner than swap only, on the drive and on a compressed tier whose room --storage-ratio
// models (a tier too small at ratio 1 holds the rest at its codec's ratio).
TEST(PoolStorageReplay, RecomputeBeatsSwapOnlyOnTransformerTrain)
{
  namespace tr = tierpool::replay;
  std::vector<trace::event> const events = trace::generate("transformer-train", {{"blocks", "4"}}, 1);
  tr::compiled_trace const ct = tr::compiled_trace::compile(events);
  tr::run_options o;
  o.capacity_bytes = ct.resolve(tr::parse_capacity("25%"), tr::replay_mode::pool);
  o.host_capacity_bytes = o.capacity_bytes;
  o.storage_bytes = std::size_t{1} << 40U;
  o.recompute = false;
  tr::replay_result const swap = tr::run(ct, o);
  o.recompute = true;
  tr::replay_result const rec = tr::run(ct, o);
  EXPECT_EQ(swap.evicted_recompute, 0U);
  EXPECT_EQ(swap.rebuilds, 0U);
  EXPECT_GT(rec.evicted_recompute, 0U);
  EXPECT_EQ(rec.rebuilds, rec.evicted_recompute);  // every drop is used again in backward
  EXPECT_EQ(rec.requests, swap.requests);
  EXPECT_EQ(rec.unserved, 0U);
  EXPECT_LT(rec.bytes_d2h, swap.bytes_d2h);
  EXPECT_LT(rec.makespan_seconds, swap.makespan_seconds);
  std::printf("[ actions ] transformer-train blocks=4 at 25%% (host 25%%, NVMe): swap only %.1f ms, + recompute %.1f "
              "ms (%llu dropped)\n",
              swap.makespan_seconds * 1e3, rec.makespan_seconds * 1e3,
              static_cast<unsigned long long>(rec.evicted_recompute));
  // A q8 tier: the storage tier's room at the codec's ratio; too small to hold the rest raw.
  o.storage_bytes = 2 * o.capacity_bytes;  // too small raw (copies are inclusive), room enough at q8's ratio
  o.storage_read_link = link_model{26e9, 0};
  o.storage_write_link = link_model{3.7e9, 0};
  o.recompute = false;
  EXPECT_THROW((void)tr::run(ct, o), out_of_memory);
  o.storage_ratio = 3.938;
  tr::replay_result const q8 = tr::run(ct, o);
  o.recompute = true;
  tr::replay_result const q8rec = tr::run(ct, o);
  EXPECT_LT(q8rec.makespan_seconds, q8.makespan_seconds);
  o.storage_ratio = 0.5;
  EXPECT_THROW((void)tr::run(ct, o), logic_error);
}

TEST(PoolStoragePhantom, LinkPresets)
{
  EXPECT_EQ(parse_link_model("nvme4-read"), link_model::nvme4_read());
  EXPECT_EQ(parse_link_model("nvme4-write"), link_model::nvme4_write());
  EXPECT_EQ(link_for(tier_kind::storage, tier_kind::host), sim_link::h2s);
  EXPECT_EQ(link_for(tier_kind::pinned_host, tier_kind::storage), sim_link::s2h);
  EXPECT_EQ(to_string(sim_link::h2s), "h2s");
  sim_links const l = sim_links::from_host_link(link_model::pcie4());
  EXPECT_DOUBLE_EQ(l.s2h.bandwidth_bytes_per_s, 7e9);
  EXPECT_DOUBLE_EQ(l.h2s.bandwidth_bytes_per_s, 5e9);
  EXPECT_EQ(to_string(tier_kind::storage), "storage");
  EXPECT_FALSE(is_host_accessible(tier_kind::storage));
}

}  // namespace
}  // namespace tierpool::test

// A compressed tier (Note [A compressed tier], storage_file.cpp): host memory that holds
// the tensors below the host tiers compressed.
namespace tierpool::test {
namespace {

pool_options compressed_pool(codec_kind codec, std::size_t memory_bytes = 0)
{
  pool_options o = small_tiers(make_sim(), 1_MiB, 1_MiB, 2_MiB);
  o.publish.enabled = false;
  tier_options st{.kind = tier_kind::storage, .capacity_bytes = 64_MiB, .chunk_bytes = 16_MiB, .name = "packed"};
  st.storage.engine = storage_engine::compressed;
  st.storage.codec = codec;
  st.storage.memory_bytes = memory_bytes;
  o.tiers.push_back(std::move(st));
  return o;
}

// Activation-like float32: half the values zero (a ReLU's output), the rest smooth.
std::vector<float> activations(std::size_t n, std::uint32_t seed)
{
  std::vector<float> v(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0F, 1.0F);
  for (float& x : v) { x = std::max(0.0F, d(rng)); }
  return v;
}

void put(pool& p, tensor const& t, std::vector<float> const& v)
{
  lease h = p.acquire_host(t, access_mode::write_discard);
  std::memcpy(h.data(), v.data(), v.size() * sizeof(float));
}

std::vector<float> get(pool& p, tensor const& t, std::size_t n)
{
  lease h = p.acquire_host(t, access_mode::read);
  std::vector<float> v(n);
  std::memcpy(v.data(), h.data(), n * sizeof(float));
  return v;
}

TEST(PoolCompressedTier, LosslessCopiesTakeLessMemoryAndComeBackExactly)
{
  for (codec_kind const c : {codec_kind::lz4, codec_kind::zstd}) {
    SCOPED_TRACE(std::string(to_string(c)));
    pool p{compressed_pool(c)};
    constexpr std::size_t kN = 64 * 1024;  // 256 KiB each
    std::vector<tensor> ts;
    std::vector<std::vector<float>> want;
    for (std::uint32_t i = 0; i < 24; ++i) {  // 6 MiB: twice the memory tiers
      ts.push_back(p.allocate(kN * sizeof(float)));
      want.push_back(activations(kN, i));
      put(p, ts.back(), want.back());
      ASSERT_TRUE(p.validate());
    }
    for (std::size_t i = 0; i < ts.size(); ++i) { p.demote(ts[i], tier_id{3}); }
    pool_stats st = p.stats();
    tier_stats const& t = st.tiers[3];
    EXPECT_EQ(t.storage_engine, "compressed");
    EXPECT_EQ(t.packed_logical_bytes, 24 * kN * sizeof(float));
    EXPECT_LT(t.packed_bytes * 13, t.packed_logical_bytes * 10) << "at least 1.3x on half-zero activations";
    EXPECT_EQ(t.lossy_writes, 0U);
    std::printf("[ compressed ] %s: %llu bytes of tensors in %llu (ratio %.3f)\n", std::string(to_string(c)).c_str(),
                static_cast<unsigned long long>(t.packed_logical_bytes), static_cast<unsigned long long>(t.packed_bytes),
                static_cast<double>(t.packed_logical_bytes) / static_cast<double>(t.packed_bytes));
    for (std::size_t i = 0; i < ts.size(); ++i) { EXPECT_EQ(get(p, ts[i], kN), want[i]) << i; }
    std::string const js = p.summary_json();
    EXPECT_NE(js.find("\"packed_bytes\""), std::string::npos) << js;
    EXPECT_NE(p.summary().find("storage packed: holds"), std::string::npos) << p.summary();
    for (tensor& x : ts) { p.free(x); }
    EXPECT_EQ(p.stats().tiers[3].packed_bytes, 0U) << "a freed tensor's frame goes";
    EXPECT_TRUE(p.validate());
  }
}

// q8 quantizes only the tensors marked lossy_compression, within its error bound; the
// others go through lz4 and come back exactly.
TEST(PoolCompressedTier, LossyOnlyForTensorsMarkedForIt)
{
  pool p{compressed_pool(codec_kind::q8_block)};
  constexpr std::size_t kN = 64 * 1024;
  std::vector<float> const a = activations(kN, 1);
  std::vector<float> const b = activations(kN, 2);
  tensor marked = p.allocate(kN * sizeof(float), {.name = "act", .lossy_compression = true});
  tensor exact = p.allocate(kN * sizeof(float), {.name = "adam_m"});
  put(p, marked, a);
  put(p, exact, b);
  p.demote(marked, tier_id{3});
  p.demote(exact, tier_id{3});
  pool_stats const st = p.stats();
  EXPECT_EQ(st.tiers[3].lossy_writes, 1U);
  EXPECT_GT(st.tiers[3].max_relative_rms_error, 0.0);
  EXPECT_LT(st.tiers[3].max_relative_rms_error, 0.02);
  std::vector<float> const got = get(p, marked, kN);
  float amax = 0.0F;
  for (float x : a) { amax = std::max(amax, std::abs(x)); }
  double worst = 0.0;
  bool differs = false;
  for (std::size_t i = 0; i < kN; ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(got[i] - a[i])));
    differs = differs || got[i] != a[i];
  }
  EXPECT_TRUE(differs) << "q8 is lossy";
  EXPECT_LE(worst, amax / 254.0 * 1.001) << "within half a step of the largest block's scale";
  EXPECT_EQ(get(p, exact, kN), b) << "an unmarked tensor is never quantized";
  EXPECT_TRUE(p.validate());
}

// The compressed copies' memory budget: a copy that would pass it fails like a full disk
// (no_space), and the tensor keeps its bytes where it was.
TEST(PoolCompressedTier, APassedMemoryBudgetIsNoSpaceAndLosesNothing)
{
  pool p{compressed_pool(codec_kind::lz4, 256_KiB)};
  std::vector<tensor> ts;
  std::vector<std::vector<float>> want;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  for (std::uint64_t i = 0; i < 4; ++i) {
    ts.push_back(p.allocate(256_KiB));
    want.emplace_back(256_KiB / sizeof(float));
    for (float& x : want.back()) { x = u(rng); }  // random: lz4 cannot shrink it
    put(p, ts.back(), want.back());
  }
  int refused = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    try {
      p.demote(ts[i], tier_id{3});
    } catch (storage_error const& e) {
      EXPECT_EQ(e.failure(), storage_failure::no_space) << e.what();
      EXPECT_NE(std::string(e.what()).find("storage_options::memory_bytes"), std::string::npos) << e.what();
      ++refused;
    }
    ASSERT_TRUE(p.validate());
  }
  EXPECT_GE(refused, 3);
  EXPECT_LE(p.stats().tiers[3].packed_bytes, 256_KiB);
  for (std::size_t i = 0; i < ts.size(); ++i) { EXPECT_EQ(get(p, ts[i], want[i].size()), want[i]) << i; }
}

TEST(PoolCompressedTier, ACompressedTierNeedsACodec)
{
  try {
    pool p{compressed_pool(codec_kind::none)};
    FAIL() << "expected storage_error";
  } catch (storage_error const& e) {
    EXPECT_NE(std::string(e.what()).find("storage_engine::compressed needs a codec"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tierpool::test

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// stats_segment.cpp — the shared-memory stats segment: the writer each pool owns and the
// readers behind `tierpool top` (Note [The stats segment is a seqlock of plain words]).
//
// POSIX shm_open/mmap directly rather than Boost.Interprocess: the reader must list
// /dev/shm anyway (Boost.Interprocess cannot enumerate segments), and the three calls it
// would wrap are all this needs.
#include "telemetry/stats_segment.hpp"

#include <tierpool/monitor.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <signal.h>  // kill
#include <string_view>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tierpool::telemetry {
namespace {

std::uint64_t unix_ns()
{
  return static_cast<std::uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

std::uint64_t load_word(std::uint64_t const& w, std::memory_order o = std::memory_order_relaxed) noexcept
{
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(w)).load(o);  // NOLINT: read-only use
}
void store_word(std::uint64_t& w, std::uint64_t v, std::memory_order o = std::memory_order_relaxed) noexcept
{
  std::atomic_ref<std::uint64_t>(w).store(v, o);
}

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

bool process_alive(std::int64_t pid)
{
  if (pid <= 0) { return false; }
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::atomic<std::uint32_t> g_next_segment{1};

}  // namespace

void copy_words(void* to, void const* from, std::size_t bytes, std::memory_order load_order,
                std::memory_order store_order) noexcept
{
  auto* d = static_cast<std::uint64_t*>(to);
  auto const* s = static_cast<std::uint64_t const*>(from);
  for (std::size_t i = 0; i < bytes / sizeof(std::uint64_t); ++i) {
    store_word(d[i], load_word(s[i], load_order), store_order);
  }
}

void fill_payload(seg_payload& p, pool_stats const& st)
{
  p.tier_count = static_cast<std::uint32_t>(st.tiers.size());
  p.tenant_count = static_cast<std::uint32_t>(st.tenants.size());
  p.tensors = st.tensors;
  p.tensor_bytes = st.tensor_bytes;
  p.acquires = st.acquires;
  p.hits = st.hits;
  p.misses = st.misses;
  p.bytes_h2d = st.bytes_h2d;
  p.bytes_d2h = st.bytes_d2h;
  p.copies_h2d = st.copies_h2d;
  p.copies_d2h = st.copies_d2h;
  p.bytes_up = st.bytes_up;
  p.bytes_down = st.bytes_down;
  p.copies_up = st.copies_up;
  p.copies_down = st.copies_down;
  p.prefetches = st.prefetches;
  p.prefetch_hits = st.prefetch_hits;
  p.prefetch_late = st.prefetch_late;
  p.prefetch_wasted = st.prefetch_wasted;
  p.prefetch_queued = st.prefetch_queued;
  p.prefetch_dropped = st.prefetch_dropped;
  p.predicted_prefetches = st.predicted_prefetches;
  p.managed_prefetches = st.managed_prefetches;
  p.managed_prefetch_bytes = st.managed_prefetch_bytes;
  p.low_memory_callbacks = st.low_memory_callbacks;
  p.stall_seconds = st.stall_seconds;
  p.tiers = {};
  for (std::size_t i = 0; i < std::min(st.tiers.size(), kMaxTiers); ++i) {
    tier_stats const& t = st.tiers[i];
    seg_tier& s = p.tiers[i];
    put_string(s.name, t.name);
    s.kind = static_cast<std::uint32_t>(t.kind);
    s.numa_node = t.numa_node;
    s.capacity = t.capacity_bytes;
    s.reserved = t.reserved_bytes;
    s.used = static_cast<std::uint64_t>(t.used_bytes.current);
    s.peak = static_cast<std::uint64_t>(t.used_bytes.peak);
    s.allocated = static_cast<std::uint64_t>(t.used_bytes.allocated);
    s.freed = static_cast<std::uint64_t>(t.used_bytes.freed);
    s.pinned = t.pinned_bytes;
    s.in_flight = t.in_flight_bytes;
    s.largest_free = t.largest_free_block;
    s.fragmentation = t.fragmentation;
    s.resident = t.resident_tensors;
    s.evictions = t.evictions;
    s.evictions_clean = t.evictions_clean;
    s.alloc_failures = t.allocation_failures;
    s.reuses_in_order = t.reuses_in_order;
  }
  p.tenants = {};
  for (std::size_t i = 0; i < std::min(st.tenants.size(), kMaxTenants); ++i) {
    tenant_stats const& t = st.tenants[i];
    p.tenants[i] = {.tenant = t.tenant, .pad = 0, .tensors = t.tensors, .live = t.live_bytes,
                    .peak = t.peak_bytes, .quota = t.quota_bytes, .refusals = t.quota_refusals};
  }
}

pool_stats stats_of(seg_payload const& p)
{
  pool_stats st;
  st.tensors = p.tensors;
  st.tensor_bytes = p.tensor_bytes;
  st.acquires = p.acquires;
  st.hits = p.hits;
  st.misses = p.misses;
  st.bytes_h2d = p.bytes_h2d;
  st.bytes_d2h = p.bytes_d2h;
  st.copies_h2d = p.copies_h2d;
  st.copies_d2h = p.copies_d2h;
  st.bytes_up = p.bytes_up;
  st.bytes_down = p.bytes_down;
  st.copies_up = p.copies_up;
  st.copies_down = p.copies_down;
  st.prefetches = p.prefetches;
  st.prefetch_hits = p.prefetch_hits;
  st.prefetch_late = p.prefetch_late;
  st.prefetch_wasted = p.prefetch_wasted;
  st.prefetch_queued = p.prefetch_queued;
  st.prefetch_dropped = p.prefetch_dropped;
  st.predicted_prefetches = p.predicted_prefetches;
  st.managed_prefetches = p.managed_prefetches;
  st.managed_prefetch_bytes = p.managed_prefetch_bytes;
  st.low_memory_callbacks = p.low_memory_callbacks;
  st.stall_seconds = p.stall_seconds;
  for (std::size_t i = 0; i < std::min<std::size_t>(p.tier_count, kMaxTiers); ++i) {
    seg_tier const& s = p.tiers[i];
    tier_stats t;
    t.name = get_string(s.name);
    t.kind = static_cast<tier_kind>(s.kind);
    t.numa_node = s.numa_node;
    t.capacity_bytes = s.capacity;
    t.reserved_bytes = s.reserved;
    t.used_bytes = {.current = static_cast<std::int64_t>(s.used), .peak = static_cast<std::int64_t>(s.peak),
                    .allocated = static_cast<std::int64_t>(s.allocated), .freed = static_cast<std::int64_t>(s.freed)};
    t.pinned_bytes = s.pinned;
    t.in_flight_bytes = s.in_flight;
    t.largest_free_block = s.largest_free;
    t.fragmentation = s.fragmentation;
    t.resident_tensors = s.resident;
    t.evictions = s.evictions;
    t.evictions_clean = s.evictions_clean;
    t.allocation_failures = s.alloc_failures;
    t.reuses_in_order = s.reuses_in_order;
    st.tiers.push_back(std::move(t));
  }
  for (std::size_t i = 0; i < std::min<std::size_t>(p.tenant_count, kMaxTenants); ++i) {
    seg_tenant const& s = p.tenants[i];
    st.tenants.push_back({.tenant = s.tenant, .tensors = s.tensors, .live_bytes = s.live, .peak_bytes = s.peak,
                          .quota_bytes = s.quota, .quota_refusals = s.refusals});
  }
  return st;
}

// ---- writer -------------------------------------------------------------------------

std::unique_ptr<publisher> publisher::create(std::string const& name, std::string const& backend,
                                             std::string const& device, std::uint32_t interval_ms, source src,
                                             std::string& why)
{
  std::unique_ptr<publisher> p(new publisher());
  std::size_t const bytes = sizeof(segment_layout);
  std::string seg;
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; ++attempt) {
    seg = std::string(kPrefix) + std::to_string(::getpid()) + "." +
          std::to_string(g_next_segment.fetch_add(1, std::memory_order_relaxed));
    fd = ::shm_open(("/" + seg).c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) {
      ::shm_unlink(("/" + seg).c_str());  // left by an exited process with our pid
    } else if (fd < 0) {
      break;
    }
  }
  if (fd < 0) {
    why = "shm_open(/" + seg + "): " + errno_text(errno);
    return nullptr;
  }
  void* base = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  int const err = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    ::shm_unlink(("/" + seg).c_str());
    why = "mapping /dev/shm/" + seg + ": " + errno_text(err);
    return nullptr;
  }
  p->segment_ = std::move(seg);
  p->owner_pid_ = ::getpid();
  p->base_ = base;
  p->bytes_ = bytes;
  p->src_ = std::move(src);
  p->interval_ms_ = interval_ms;
  // The header and the constant part; the magic last, so a reader never takes a
  // half-built segment for a valid one.
  auto* lay = static_cast<segment_layout*>(base);
  seg_payload& s = p->scratch_;
  s.pid = ::getpid();
  s.started_unix_ns = unix_ns();
  s.interval_ms = interval_ms;
  put_string(s.name, name);
  put_string(s.backend, backend);
  put_string(s.device, device);
  lay->version = kVersion;
  lay->bytes = static_cast<std::uint32_t>(bytes);
  p->publish();
  store_word(lay->magic, kMagic, std::memory_order_release);
  if (interval_ms != 0) {
    p->thread_ = std::thread([raw = p.get()] { raw->run(); });
  }
  return p;
}

publisher::~publisher()
{
  if (::getpid() != owner_pid_) {
    // A forked child destroying the parent's pool: the refresh thread exists only in the
    // parent (no pthread call may name it here, so its handle is leaked on purpose), and
    // the segment is the parent's to remove.
    if (thread_.joinable()) { (void)new std::thread(std::move(thread_)); }  // NOLINT(cppcoreguidelines-owning-memory)
    if (base_ != nullptr) { ::munmap(base_, bytes_); }
    return;
  }
  stop();
  if (base_ != nullptr) {
    ::munmap(base_, bytes_);
    ::shm_unlink(("/" + segment_).c_str());
  }
}

void publisher::publish()
{
  pool_stats const st = src_();  // no lock of ours held: the source takes the pool's
  std::lock_guard lock(write_mtx_);
  seg_payload& s = scratch_;
  fill_payload(s, st);
  s.updated_unix_ns = unix_ns();
  ++s.updates;
  auto* lay = static_cast<segment_layout*>(base_);
  std::uint64_t const seq = load_word(lay->seq);
  store_word(lay->seq, seq + 1);
  // Release stores: a reader that sees any new word then sees the odd `seq` (no fence:
  // ThreadSanitizer does not model fences; on x86-64 these are plain stores anyway).
  copy_words(&lay->payload, &s, sizeof(seg_payload), std::memory_order_relaxed, std::memory_order_release);
  store_word(lay->seq, seq + 2, std::memory_order_release);
}

void publisher::stop() noexcept
{
  {
    std::lock_guard lock(stop_mtx_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) { thread_.join(); }
}

void publisher::run()
{
  std::unique_lock lock(stop_mtx_);
  while (!stop_cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stopping_; })) {
    lock.unlock();
    try {
      publish();
    } catch (...) {  // NOLINT(bugprone-empty-catch): figures are best effort; the next period retries
    }
    lock.lock();
  }
}

}  // namespace tierpool::telemetry

// ---- readers ----------------------------------------------------------------------------

namespace tierpool {

published_pool read_published_pool(std::string const& segment)
{
  using namespace telemetry;
  auto fail = [&](std::string const& why) -> stats_segment_error {
    return stats_segment_error("stats segment /dev/shm/" + segment + ": " + why);
  };
  if (segment.empty() || segment.find('/') != std::string::npos) { throw fail("not a segment name"); }
  int const fd = ::shm_open(("/" + segment).c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) { throw fail(errno_text(errno)); }
  struct ::stat sb {};
  if (::fstat(fd, &sb) != 0) {
    int const e = errno;
    ::close(fd);
    throw fail(errno_text(e));
  }
  if (static_cast<std::size_t>(sb.st_size) < sizeof(segment_layout)) {
    ::close(fd);
    throw fail("too small for a tierpool stats segment (" + std::to_string(sb.st_size) + " bytes, need " +
               std::to_string(sizeof(segment_layout)) + ")");
  }
  void* base = ::mmap(nullptr, sizeof(segment_layout), PROT_READ, MAP_SHARED, fd, 0);
  int const e = errno;
  ::close(fd);
  if (base == MAP_FAILED) { throw fail("mmap: " + errno_text(e)); }
  struct unmap {
    void* p;
    ~unmap() { ::munmap(p, sizeof(segment_layout)); }
  } const guard{base};
  auto const* lay = static_cast<segment_layout const*>(base);
  if (load_word(lay->magic, std::memory_order_acquire) != kMagic) {
    throw fail("not a tierpool stats segment (bad magic; or still being created)");
  }
  // Written once before the magic's release store: plain reads after its acquire load.
  std::uint32_t const version = lay->version;
  std::uint32_t const bytes = lay->bytes;
  if (version != kVersion || bytes != sizeof(segment_layout)) {
    throw fail("layout version " + std::to_string(version) + " (" + std::to_string(bytes) +
               " bytes); this reader knows version " + std::to_string(kVersion));
  }
  seg_payload p{};
  bool consistent = false;
  for (int attempt = 0; attempt < 1000 && !consistent; ++attempt) {
    std::uint64_t const s1 = load_word(lay->seq, std::memory_order_acquire);
    if ((s1 & 1U) != 0) {
      std::this_thread::yield();
      continue;
    }
    // Acquire loads: the second load of `seq` cannot move before any of them.
    copy_words(&p, &lay->payload, sizeof(seg_payload), std::memory_order_acquire, std::memory_order_relaxed);
    consistent = load_word(lay->seq) == s1;
  }
  if (!consistent) { throw fail("the writer kept rewriting it; try again"); }
  published_pool out;
  out.segment = segment;
  out.pid = p.pid;
  out.alive = process_alive(p.pid);
  out.name = get_string(p.name);
  out.backend = get_string(p.backend);
  out.device = get_string(p.device);
  out.interval_ms = p.interval_ms;
  out.updates = p.updates;
  out.uptime_seconds = static_cast<double>(p.updated_unix_ns - std::min(p.updated_unix_ns, p.started_unix_ns)) * 1e-9;
  std::uint64_t const now = unix_ns();
  out.age_seconds = static_cast<double>(now - std::min(now, p.updated_unix_ns)) * 1e-9;
  out.tier_count = p.tier_count;
  out.tenant_count = p.tenant_count;
  out.stats = stats_of(p);
  return out;
}

namespace {

std::vector<std::string> list_segments()
{
  std::vector<std::string> names;
  std::error_code ec;
  for (auto const& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    std::string n = e.path().filename().string();
    if (n.rfind(telemetry::kPrefix, 0) == 0) { names.push_back(std::move(n)); }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

published_scan scan_published_pools(bool include_exited)
{
  published_scan out;
  for (std::string const& n : list_segments()) {
    try {
      published_pool p = read_published_pool(n);
      if (p.alive || include_exited) { out.pools.push_back(std::move(p)); }
    } catch (stats_segment_error const& e) {
      out.skipped.push_back(n + ": " + e.what());
    }
  }
  std::sort(out.pools.begin(), out.pools.end(), [](published_pool const& a, published_pool const& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.segment < b.segment;
  });
  return out;
}

std::vector<std::string> remove_exited_pools()
{
  std::vector<std::string> removed;
  for (std::string const& n : list_segments()) {
    // The pid is in the name, so even an unreadable segment of an exited process goes.
    std::string_view rest(n);
    rest.remove_prefix(std::string_view(telemetry::kPrefix).size());
    std::int64_t pid = 0;
    std::size_t i = 0;
    for (; i < rest.size() && rest[i] >= '0' && rest[i] <= '9'; ++i) { pid = pid * 10 + (rest[i] - '0'); }
    if (i == 0 || i >= rest.size() || rest[i] != '.' || telemetry::process_alive(pid)) { continue; }
    if (::shm_unlink(("/" + n).c_str()) == 0) { removed.push_back(n); }
  }
  return removed;
}

}  // namespace tierpool

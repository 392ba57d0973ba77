// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// stats_segment.cpp — the shared-memory stats segment: the writer each pool owns and the
// readers behind `tierpool top` (Note [The stats segment is a seqlock of plain words]).
//
// POSIX files in /dev/shm and mmap directly (what shm_open does on Linux) rather than
// Boost.Interprocess: the reader must list /dev/shm anyway (Boost.Interprocess cannot
// enumerate segments), must refuse what is not a regular file before opening it, and the
// few calls it would wrap are all this needs.
#include "telemetry/stats_segment.hpp"

#include <tierpool/monitor.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <signal.h>  // kill
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <grp.h>
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


/// The group `group` names (a name, or a number), or nullopt with `why` set.
std::optional<gid_t> group_id(std::string const& group, std::string& why)
{
  if (!group.empty() && std::all_of(group.begin(), group.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    unsigned long long v = 0;
    for (char c : group) {
      v = v * 10 + static_cast<unsigned>(c - '0');
      if (v > 0x7fffffffULL) { break; }
    }
    if (v <= 0x7fffffffULL) { return static_cast<gid_t>(v); }
  }
  std::vector<char> buf(16384);
  ::group g{};
  ::group* found = nullptr;
  int e = 0;
  while ((e = ::getgrnam_r(group.c_str(), &g, buf.data(), buf.size(), &found)) == ERANGE && buf.size() < (1U << 24U)) {
    buf.resize(buf.size() * 4);  // a group with many members
  }
  if (found == nullptr) {
    why = "publish.group '" + printable(group) + "': " + (e != 0 ? errno_text(e) : std::string("no such group"));
    return std::nullopt;
  }
  return found->gr_gid;
}

std::string file_kind(mode_t m)
{
  if (S_ISFIFO(m)) { return "a FIFO"; }
  if (S_ISDIR(m)) { return "a directory"; }
  if (S_ISLNK(m)) { return "a symbolic link"; }
  if (S_ISSOCK(m)) { return "a socket"; }
  if (S_ISCHR(m) || S_ISBLK(m)) { return "a device"; }
  return "not a regular file";
}

char const* hex_digit(unsigned v) { return &"0123456789abcdef"[v & 0xFU]; }

void put_hex(std::string& out, unsigned char c)
{
  out += "\\x";
  out += *hex_digit(c >> 4U);
  out += *hex_digit(c);
}

/// The length of the valid UTF-8 sequence at s[i], or 0 when it is not one (overlong
/// forms, surrogates and code points beyond U+10FFFF are not).
std::size_t utf8_length(std::string_view s, std::size_t i, std::uint32_t& cp)
{
  auto const b = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  std::uint32_t min = 0;
  if (b < 0x80U) {
    cp = b;
    return 1;
  }
  if ((b & 0xE0U) == 0xC0U) {
    n = 2, cp = b & 0x1FU, min = 0x80;
  } else if ((b & 0xF0U) == 0xE0U) {
    n = 3, cp = b & 0x0FU, min = 0x800;
  } else if ((b & 0xF8U) == 0xF0U) {
    n = 4, cp = b & 0x07U, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) { return 0; }
  for (std::size_t k = 1; k < n; ++k) {
    auto const c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0U) != 0x80U) { return 0; }
    cp = (cp << 6U) | (c & 0x3FU);
  }
  if (cp < min || cp > 0x10FFFFU || (cp >= 0xD800U && cp <= 0xDFFFU)) { return 0; }
  return n;
}

/// tierpool.<digits>.<digits>
bool is_segment_name(std::string_view n)
{
  std::string_view const prefix(kPrefix);
  if (n.rfind(prefix, 0) != 0) { return false; }
  n.remove_prefix(prefix.size());
  std::size_t const dot = n.find('.');
  auto digits = [](std::string_view d) {
    return !d.empty() && d.size() <= 19 && std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return dot != std::string_view::npos && digits(n.substr(0, dot)) && digits(n.substr(dot + 1));
}

}  // namespace

std::string printable(std::string_view s)
{
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp = 0;
    std::size_t const n = utf8_length(s, i, cp);
    if (n == 0) {
      put_hex(out, static_cast<unsigned char>(s[i]));  // not UTF-8: each byte shown
      ++i;
    } else if (cp == '\n') {
      out += "\\n";
      ++i;
    } else if (cp < 0x20U || cp == 0x7FU || (cp >= 0x80U && cp < 0xA0U)) {  // C0, DEL, C1 controls
      for (std::size_t k = 0; k < n; ++k) { put_hex(out, static_cast<unsigned char>(s[i + k])); }
      i += n;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string classify_open_error(int err, std::string const& path)
{
  if (err == EACCES || err == EPERM) {
    std::string why = "not permitted to read it";
    struct ::stat sb {};
    if (::lstat(path.c_str(), &sb) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(sb.st_mode & 07777U));
      why += std::string(" (mode ") + mode + ", owner uid " + std::to_string(sb.st_uid) + ", group gid " +
             std::to_string(sb.st_gid) + ")";
    }
    return why + ": its pool lets only its owner read it unless publish_options::group names a group of this user";
  }
  if (err == ELOOP) { return "a symbolic link, not a stats segment"; }
  return errno_text(err);
}

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
  put_string(p.planner_state, st.planner_state);
  p.planner_period = st.planner_period;
  p.planner_relearns = st.planner_relearns;
  p.planner_mispredicted = st.planner_mispredicted;
  p.planner_busy_skips = st.planner_busy_skips;
  p.planner_prefetching = st.planner_prefetching ? 1 : 0;
  p.planner_periods_prefetching = st.planner_periods_prefetching;
  p.planner_periods_without = st.planner_periods_without;
  p.planner_period_seconds_prefetching = st.planner_period_seconds_prefetching;
  p.planner_period_seconds_without = st.planner_period_seconds_without;
  p.planned_prefetches = st.planned_prefetches;
  p.planned_prefetch_bytes = st.planned_prefetch_bytes;
  p.plan_harm_skips = st.plan_harm_skips;
  p.plan_no_room = st.plan_no_room;
  p.early_write_backs = st.early_write_backs;
  p.early_write_back_bytes = st.early_write_back_bytes;
  p.early_write_backs_wasted = st.early_write_backs_wasted;
  p.early_write_back_wasted_bytes = st.early_write_back_wasted_bytes;
  p.prefetch_on_time_device = st.prefetch_on_time_device;
  p.prefetch_late_device = st.prefetch_late_device;
  p.prefetch_lateness_seconds = st.prefetch_lateness_seconds;
  p.prefetch_lead_seconds = st.prefetch_lead_seconds;
  p.prefetch_wasted_bytes = st.prefetch_wasted_bytes;
  put_string(p.prefetch, st.prefetch);
  p.pressure_shrinks = st.pressure_shrinks;
  p.pressure_released_bytes = st.pressure_released_bytes;
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
    s.bytes_written = t.bytes_written;
    s.bytes_read = t.bytes_read;
    put_string(s.policy, t.policy);
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
  st.planner_state = get_string(p.planner_state);
  st.planner_period = p.planner_period;
  st.planner_relearns = p.planner_relearns;
  st.planner_mispredicted = p.planner_mispredicted;
  st.planner_busy_skips = p.planner_busy_skips;
  st.planner_prefetching = p.planner_prefetching != 0;
  st.planner_periods_prefetching = p.planner_periods_prefetching;
  st.planner_periods_without = p.planner_periods_without;
  st.planner_period_seconds_prefetching = p.planner_period_seconds_prefetching;
  st.planner_period_seconds_without = p.planner_period_seconds_without;
  st.planned_prefetches = p.planned_prefetches;
  st.planned_prefetch_bytes = p.planned_prefetch_bytes;
  st.plan_harm_skips = p.plan_harm_skips;
  st.plan_no_room = p.plan_no_room;
  st.early_write_backs = p.early_write_backs;
  st.early_write_back_bytes = p.early_write_back_bytes;
  st.early_write_backs_wasted = p.early_write_backs_wasted;
  st.early_write_back_wasted_bytes = p.early_write_back_wasted_bytes;
  st.prefetch_on_time_device = p.prefetch_on_time_device;
  st.prefetch_late_device = p.prefetch_late_device;
  st.prefetch_lateness_seconds = p.prefetch_lateness_seconds;
  st.prefetch_lead_seconds = p.prefetch_lead_seconds;
  st.prefetch_wasted_bytes = p.prefetch_wasted_bytes;
  st.prefetch = get_string(p.prefetch);
  st.pressure_shrinks = p.pressure_shrinks;
  st.pressure_released_bytes = p.pressure_released_bytes;
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
    t.bytes_written = s.bytes_written;
    t.bytes_read = s.bytes_read;
    t.policy = get_string(s.policy);
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
                                             std::string& why, std::string const& group)
{
  std::unique_ptr<publisher> p(new publisher());
  std::size_t const bytes = sizeof(segment_layout);
  // Who may read it: its owner; and the group asked for, if any.
  mode_t mode = 0600;
  std::optional<gid_t> gid;
  if (!group.empty()) {
    gid = group_id(group, why);
    if (!gid) { return nullptr; }
    mode = 0640;
  }
  std::string const dir = stats_segment_directory();
  std::string seg;
  std::string path;
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; ++attempt) {
    seg = std::string(kPrefix) + std::to_string(::getpid()) + "." +
          std::to_string(g_next_segment.fetch_add(1, std::memory_order_relaxed));
    path = dir + "/" + seg;
    // What shm_open does on Linux, in a directory tests can change; never through a link.
    fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 && errno == EEXIST) {
      ::unlink(path.c_str());  // left by an exited process with our pid
    } else if (fd < 0) {
      break;
    }
  }
  if (fd < 0) {
    why = "creating " + path + ": " + errno_text(errno);
    return nullptr;
  }
  // From here every failure removes the file: a pool that does not publish leaves nothing.
  auto fail = [&](std::string const& what, int err) {
    ::close(fd);
    ::unlink(path.c_str());
    why = what + " " + path + ": " + errno_text(err);
    return nullptr;
  };
  if (gid && ::fchown(fd, static_cast<uid_t>(-1), *gid) != 0) {
    return fail("giving group '" + printable(group) + "' (gid " + std::to_string(*gid) + ")", errno);
  }
  if (::fchmod(fd, mode) != 0) { return fail("setting the mode of", errno); }  // exact, whatever the umask
  // Reserve the pages now: a segment only ftruncate()d is sparse, and the first store to a
  // page /dev/shm has no room for would kill the process with SIGBUS.
  if (int const e = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); e != 0) {
    return fail("reserving " + std::to_string(bytes) + " bytes for", e);
  }
  void* const base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) { return fail("mapping", errno); }
  ::close(fd);
  p->path_ = std::move(path);
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
    ::unlink(path_.c_str());
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
namespace {
std::mutex g_dir_mtx;
std::string g_dir;  // guarded by g_dir_mtx; empty: /dev/shm
}  // namespace

std::string stats_segment_directory()
{
  std::lock_guard lock(g_dir_mtx);
  return g_dir.empty() ? std::string("/dev/shm") : g_dir;
}

void set_stats_segment_directory(std::string const& dir)
{
  std::lock_guard lock(g_dir_mtx);
  g_dir = dir;
}

published_pool read_published_pool(std::string const& segment)
{
  using namespace telemetry;
  std::string const dir = stats_segment_directory();
  std::string const path = dir + "/" + segment;
  auto fail = [&](std::string const& why) -> stats_segment_error {
    return stats_segment_error("stats segment " + dir + "/" + printable(segment) + ": " + why);
  };
  if (!is_segment_name(segment)) { throw fail("not a segment name (tierpool.<pid>.<n>)"); }
  // /dev/shm is world-writable: anyone may put a FIFO, a link or a device there under a
  // segment's name. Look before opening (opening a FIFO blocks; a device may act on it),
  // then open without blocking or following links and look again at what was opened.
  struct ::stat sb {};
  if (::lstat(path.c_str(), &sb) != 0) { throw fail(classify_open_error(errno, path)); }
  if (!S_ISREG(sb.st_mode)) { throw fail(file_kind(sb.st_mode) + ", not a stats segment"); }
  int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) { throw fail(classify_open_error(errno, path)); }
  if (::fstat(fd, &sb) != 0) {
    int const e = errno;
    ::close(fd);
    throw fail(errno_text(e));
  }
  if (!S_ISREG(sb.st_mode)) {
    ::close(fd);
    throw fail(file_kind(sb.st_mode) + ", not a stats segment");
  }
  if (static_cast<std::size_t>(sb.st_size) < sizeof(segment_layout)) {
    ::close(fd);
    throw fail("too small for a tierpool stats segment (" + std::to_string(sb.st_size) + " bytes, need " +
               std::to_string(sizeof(segment_layout)) + ")");
  }
  // Read with pread, never a mapping: the owner may shrink the file at any moment, and a
  // load from a mapped page past the end would kill the reader with SIGBUS. A short read
  // is an error about this segment only. Each pread is a system call, so the seqlock's
  // order (sequence, payload, sequence again) holds without fences.
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } const fd_guard{fd};
  auto read_at = [&](void* dst, std::size_t n, std::size_t off) {
    std::size_t got = 0;
    while (got < n) {
      ssize_t const r = ::pread(fd, static_cast<char*>(dst) + got, n - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) { continue; }
      if (r < 0) { throw fail("read: " + errno_text(errno)); }
      if (r == 0) { throw fail("it shrank while being read (" + std::to_string(off + got) + " bytes)"); }
      got += static_cast<std::size_t>(r);
    }
#if !defined(__SANITIZE_THREAD__)
    std::atomic_thread_fence(std::memory_order_acquire);  // the next read comes after this one's loads
#endif
  };
  struct header {
    std::uint64_t magic;
    std::uint32_t version;
    std::uint32_t bytes;
  } h{};
  static_assert(offsetof(segment_layout, magic) == 0 && offsetof(segment_layout, version) == 8 &&
                offsetof(segment_layout, bytes) == 12);
  read_at(&h, sizeof h, 0);
  if (h.magic != kMagic) { throw fail("not a tierpool stats segment (bad magic; or still being created)"); }
  std::uint32_t const version = h.version;
  std::uint32_t const bytes = h.bytes;
  if (version != kVersion || bytes != sizeof(segment_layout)) {
    throw fail("layout version " + std::to_string(version) + " (" + std::to_string(bytes) +
               " bytes); this reader knows version " + std::to_string(kVersion));
  }
  seg_payload p{};
  bool consistent = false;
  for (int attempt = 0; attempt < 1000 && !consistent; ++attempt) {
    std::uint64_t s1 = 0;
    read_at(&s1, sizeof s1, offsetof(segment_layout, seq));
    if ((s1 & 1U) != 0) {
      std::this_thread::yield();
      continue;
    }
    read_at(&p, sizeof p, offsetof(segment_layout, payload));
    std::uint64_t s2 = 0;
    read_at(&s2, sizeof s2, offsetof(segment_layout, seq));
    consistent = s2 == s1;
  }
  if (!consistent) { throw fail("the writer kept rewriting it; try again"); }
  published_pool out;
  out.segment = segment;
  out.pid = p.pid;
  out.alive = process_alive(p.pid);
  // What a segment says is another process's word: printable text only, finite figures.
  out.name = printable(get_string(p.name));
  out.backend = printable(get_string(p.backend));
  out.device = printable(get_string(p.device));
  out.interval_ms = p.interval_ms;
  out.updates = p.updates;
  out.uptime_seconds = static_cast<double>(p.updated_unix_ns - std::min(p.updated_unix_ns, p.started_unix_ns)) * 1e-9;
  std::uint64_t const now = unix_ns();
  out.age_seconds = static_cast<double>(now - std::min(now, p.updated_unix_ns)) * 1e-9;
  out.tier_count = p.tier_count;
  out.tenant_count = p.tenant_count;
  out.stats = stats_of(p);
  auto finite = [&out](double& v, std::string const& what) {
    if (!std::isfinite(v)) {
      out.problems.push_back(what + " was " + (std::isnan(v) ? "NaN" : v > 0 ? "+infinity" : "-infinity") +
                             "; shown as 0");
      v = 0.0;
    }
  };
  finite(out.stats.stall_seconds, "stall_seconds");
  finite(out.stats.prefetch_lateness_seconds, "prefetch_lateness_seconds");
  finite(out.stats.prefetch_lead_seconds, "prefetch_lead_seconds");
  out.stats.planner_state = printable(out.stats.planner_state);
  out.stats.prefetch = printable(out.stats.prefetch);
  for (tier_stats& t : out.stats.tiers) {
    t.policy = printable(t.policy);
    t.name = printable(t.name);
    finite(t.fragmentation, "tier '" + t.name + "' fragmentation");
  }
  return out;
}

namespace {

std::vector<std::string> list_segments(std::string const& dir)
{
  std::vector<std::string> names;
  std::error_code ec;
  for (auto const& e : std::filesystem::directory_iterator(dir, ec)) {
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
  for (std::string const& n : list_segments(stats_segment_directory())) {
    try {
      published_pool p = read_published_pool(n);
      if (p.alive || include_exited) { out.pools.push_back(std::move(p)); }
    } catch (stats_segment_error const& e) {
      out.skipped.push_back(telemetry::printable(n) + ": " + e.what());
    }
  }
  std::sort(out.pools.begin(), out.pools.end(), [](published_pool const& a, published_pool const& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.segment < b.segment;
  });
  return out;
}

published_cleanup clean_exited_pools()
{
  published_cleanup out;
  std::string const dir = stats_segment_directory();
  for (std::string const& n : list_segments(dir)) {
    // The pid is in the name, so even an unreadable segment of an exited process goes;
    // a file not named like a segment is not ours to remove.
    if (!telemetry::is_segment_name(n)) { continue; }
    std::string_view rest(n);
    rest.remove_prefix(std::string_view(telemetry::kPrefix).size());
    std::int64_t pid = 0;
    auto const [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (ec != std::errc() || end == rest.data() || telemetry::process_alive(pid)) { continue; }
    if (::unlink((dir + "/" + n).c_str()) == 0) {
      out.removed.push_back(n);
    } else if (errno != ENOENT) {  // ENOENT: another cleaner was first
      out.failed.push_back(n + ": " + telemetry::errno_text(errno));
    }
  }
  return out;
}

std::vector<std::string> remove_exited_pools() { return clean_exited_pools().removed; }

}  // namespace tierpool

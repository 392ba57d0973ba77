// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// storage_file.cpp — a storage tier's file: opening and checking it at pool construction,
// the address ranges the tier's arena carves (standing for file offsets), the I/O engines
// (pread/pwrite, io_uring), O_DIRECT through aligned bounce buffers, the per-copy checksum
// and the storage fault hook. Main entry points: storage_file::storage_file, write, read.
#include "tiers/storage_file.hpp"

#include <tierpool/error.hpp>
#include <tierpool/storage.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#if TIERPOOL_HAS_LIBURING
#include <liburing.h>
#endif

#include <span>

namespace tierpool {

std::string_view to_string(storage_engine e) noexcept
{
  switch (e) {
    case storage_engine::automatic: return "auto";
    case storage_engine::io_uring: return "io_uring";
    case storage_engine::pread: return "pread";
    case storage_engine::compressed: return "compressed";
  }
  return "unknown";
}

std::string_view to_string(storage_fault f) noexcept
{
  switch (f) {
    case storage_fault::fail_write: return "fail_write";
    case storage_fault::short_write: return "short_write";
    case storage_fault::torn_write: return "torn_write";
    case storage_fault::no_space: return "no_space";
    case storage_fault::fail_read: return "fail_read";
    case storage_fault::corrupt_read: return "corrupt_read";
  }
  return "unknown";
}

void storage_fault_injector::arm(storage_fault fault, std::uint64_t skip, std::uint64_t times)
{
  std::lock_guard g(mtx_);
  armed_.push_back(armed{fault, skip, times});
}

void storage_fault_injector::clear() noexcept
{
  std::lock_guard g(mtx_);
  armed_.clear();
}

std::uint64_t storage_fault_injector::injected() const noexcept
{
  std::lock_guard g(mtx_);
  return injected_;
}

bool storage_fault_injector::next(bool write, storage_fault* out) noexcept
{
  std::lock_guard g(mtx_);
  bool hit = false;
  for (auto it = armed_.begin(); it != armed_.end();) {
    bool const is_write = it->fault != storage_fault::fail_read && it->fault != storage_fault::corrupt_read;
    if (is_write != write) {
      ++it;
      continue;
    }
    if (it->skip > 0) {  // this operation passes this rule
      --it->skip;
      ++it;
      continue;
    }
    if (!hit) {
      hit = true;
      *out = it->fault;
      ++injected_;
      if (--it->times == 0) {
        it = armed_.erase(it);
        continue;
      }
    }
    ++it;
  }
  return hit;
}

bool storage_fault_injector::next_write(storage_fault* out) noexcept { return next(true, out); }
bool storage_fault_injector::next_read(storage_fault* out) noexcept { return next(false, out); }

}  // namespace tierpool

namespace tierpool::detail {

// Note [Where a storage tier's bytes are]
// ---------------------------------------
// Rationale: the tier, its arena, the copy slots and the policies all speak of blocks as
// pointers into chunks; a storage tier should reuse every one of them, as phantom memory
// does (address ranges without bytes), and only its copies should differ.
// Approach: with real memory the tier's chunk source is its storage_file, which reserves
// one inaccessible (PROT_NONE, MAP_NORESERVE) address range as large as the capacity and
// hands out ranges of it as chunks: a block's file offset is its address minus the base,
// so the arena's layout is the file's layout, and a stray dereference faults instead of
// corrupting memory. Chunk ranges are first-fit extents of the reserved range (the tier
// never reserves more than its capacity). On a phantom backend (replay) the backend gives
// the ranges (sim_memory's storage kind) and times copies on its s2h and h2s links: there
// is no file, so replaying 1 TiB of storage needs no disk.
// Limitations: extents of different chunk sizes may fragment the reserved range; a chunk
// that does not fit fails the tier's growth (backend_failed) though capacity is left.

// Note [A storage write is done before it counts]
// -----------------------------------------------
// Rationale: a tensor must keep one valid copy. An eviction vacates the copy above once
// the write-back is issued; a write that fails, writes fewer bytes or tears after that
// point would lose the tensor.
// Approach: storage copies run on the calling thread (Note [Storage copies are
// synchronous], copy_engine), and a write returns ok only when the byte counts of every
// piece add up to the whole and, with verify_writes, reading the range back gives the
// same bytes. A torn write (every byte reported, fewer written) fails that comparison.
// The write records a checksum of the tensor's bytes for the range; a read checks it, so
// a torn write not verified, or bytes that rot, give storage_error `corrupt`, never
// silently wrong bytes. forget() drops the checksum when the range stops holding a copy.
// A range never written (a tensor allocated straight into the tier) has undefined bytes
// and no checksum: it is read unchecked.
// Limitations: verification reads every write back (half the write bandwidth); with the
// page cache (no O_DIRECT) the read-back comes from memory and proves only what the
// kernel accepted.

namespace {

constexpr std::size_t kAlign = 4096;  // O_DIRECT: offsets, lengths and buffers (512 and 4K sectors)

constexpr std::size_t round_up(std::size_t v, std::size_t a) noexcept { return (v + a - 1) / a * a; }

std::string errno_text(int e) { return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")"; }

std::string bytes_text(std::uint64_t b)
{
  if (b >= (std::uint64_t{1} << 30U) && b % (std::uint64_t{1} << 30U) == 0) { return std::to_string(b >> 30U) + " GiB"; }
  if (b >= (std::uint64_t{1} << 20U) && b % (std::uint64_t{1} << 20U) == 0) { return std::to_string(b >> 20U) + " MiB"; }
  return std::to_string(b) + " bytes";
}

std::string parent_of(std::string const& path)
{
  auto const slash = path.find_last_of('/');
  if (slash == std::string::npos) { return "."; }
  if (slash == 0) { return "/"; }
  return path.substr(0, slash);
}

double seconds_since(std::chrono::steady_clock::time_point t0)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::uint64_t storage_checksum(void const* p, std::size_t bytes) noexcept
{
  constexpr std::uint64_t k1 = 0x9E3779B185EBCA87ULL;
  constexpr std::uint64_t k2 = 0xC2B2AE3D27D4EB4FULL;
  auto const* b = static_cast<unsigned char const*>(p);
  std::uint64_t h[4] = {k1, k2, ~k1, ~k2};
  std::size_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    for (std::size_t j = 0; j < 4; ++j) {
      std::uint64_t w = 0;
      std::memcpy(&w, b + i + 8 * j, 8);
      h[j] = std::rotl(h[j] ^ (w * k2), 31) * k1;
    }
  }
  std::uint64_t tail = bytes;
  for (; i < bytes; ++i) { tail = (tail ^ b[i]) * k1; }
  std::uint64_t x = h[0] ^ std::rotl(h[1], 7) ^ std::rotl(h[2], 12) ^ std::rotl(h[3], 18) ^ std::rotl(tail, 29);
  x ^= x >> 33U;
  x *= k2;
  x ^= x >> 29U;
  x *= k1;
  x ^= x >> 32U;
  return x;
}

#if TIERPOOL_HAS_LIBURING
struct storage_file::ring_pool {
  std::mutex mtx;
  std::vector<std::unique_ptr<io_uring>> free;
  unsigned depth{8};
  ~ring_pool()
  {
    for (auto& r : free) { io_uring_queue_exit(r.get()); }
  }
  std::unique_ptr<io_uring> take() noexcept
  {
    {
      std::lock_guard g(mtx);
      if (!free.empty()) {
        auto r = std::move(free.back());
        free.pop_back();
        return r;
      }
    }
    auto r = std::unique_ptr<io_uring>(new (std::nothrow) io_uring{});
    if (r == nullptr || io_uring_queue_init(depth, r.get(), 0) != 0) { return nullptr; }
    return r;
  }
  void give(std::unique_ptr<io_uring> r) noexcept
  {
    std::lock_guard g(mtx);
    try {
      free.push_back(std::move(r));
    } catch (...) {
      io_uring_queue_exit(r.get());
    }
  }
};

bool storage_io_uring_available() noexcept
{
  static bool const ok = [] {
    io_uring ring{};
    if (io_uring_queue_init(4, &ring, 0) != 0) { return false; }
    io_uring_queue_exit(&ring);
    return true;
  }();
  return ok;
}
#else
struct storage_file::ring_pool {};
bool storage_io_uring_available() noexcept { return false; }
#endif

storage_file::storage_file(storage_options options, std::size_t capacity, std::string tier_name)
  : opts_(std::move(options)), tier_name_(std::move(tier_name))
{
  auto fail = [&](storage_failure f, std::string const& m, int e = 0) {
    if (fd_ >= 0) { ::close(fd_); }
    if (!remove_at_close_.empty()) { ::unlink(remove_at_close_.c_str()); }
    throw storage_error(f, "tier '" + tier_name_ + "': " + m, e);
  };
  std::string const& path = opts_.path;
  capacity_ = capacity / kAlign * kAlign;
  if (capacity == 0) {
    fail(storage_failure::bad_capacity, "capacity_bytes is 0; a storage tier needs a capacity (tier_options::capacity_bytes)");
  }
  if (capacity_ == 0) {
    fail(storage_failure::bad_capacity, "capacity_bytes " + std::to_string(capacity) + " is below one block of " +
                                          std::to_string(kAlign) + " bytes");
  }
  if (opts_.piece_bytes < kAlign || !std::has_single_bit(opts_.piece_bytes)) {
    fail(storage_failure::bad_capacity, "storage_options::piece_bytes " + std::to_string(opts_.piece_bytes) +
                                          " must be a power of two of at least 4096");
  }
  if (opts_.engine == storage_engine::compressed) {  // no file (Note [A compressed tier])
    if (opts_.codec == codec_kind::none) {
      fail(storage_failure::bad_path, "storage_engine::compressed needs a codec (storage_options::codec: lz4, zstd or q8)");
    }
    try {
      (void)max_compressed_size(opts_.codec, kAlign, opts_.codec_settings);  // the settings' ranges
    } catch (std::exception const& e) {
      fail(storage_failure::bad_path, std::string("storage_options::codec_settings: ") + e.what());
    }
    memory_limit_ = opts_.memory_bytes != 0 ? opts_.memory_bytes : capacity_;
    engine_ = storage_engine::compressed;
    description_ = "host memory, " + std::string(to_string(opts_.codec)) + " (at most " + bytes_text(memory_limit_) + ")";
    reserve_range();
    return;
  }
  if (path.empty()) {
    fail(storage_failure::bad_path, "storage_options::path is empty (give a directory, a block device or a new file's path)");
  }

  // What the path is.
  struct ::stat st{};
  bool is_dir = false;
  bool is_block = false;
  std::string dir = path;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      is_dir = true;
    } else if (S_ISBLK(st.st_mode)) {
      is_block = true;
      dir.clear();
    } else {
      fail(storage_failure::bad_path, "'" + path + "' exists and is neither a directory nor a block device "
                                        "(tierpool never overwrites a file: give a directory or a new file's path)");
    }
  } else {
    int const e = errno;
    if (e == EACCES) { fail(storage_failure::permission, "cannot reach '" + path + "': " + errno_text(e), e); }
    if (e != ENOENT) { fail(storage_failure::bad_path, "cannot stat '" + path + "': " + errno_text(e), e); }
    dir = parent_of(path);
    struct ::stat ds{};
    if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode)) {
      fail(storage_failure::missing_path,
           "the directory '" + (path.find('/') == std::string::npos ? path : dir) +
             "' does not exist (create it, or give an existing directory in storage_options::path)",
           ENOENT);
    }
  }

  // May we write there, and is there room?
  if (!is_block) {
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      int const e = errno;
      fail(storage_failure::permission, "the directory '" + dir + "' may not be written: " + errno_text(e), e);
    }
    struct ::statvfs vs{};
    if (::statvfs(dir.c_str(), &vs) == 0) {
      if ((vs.f_flag & ST_RDONLY) != 0) {
        fail(storage_failure::permission, "the file system of '" + dir + "' is read-only", EROFS);
      }
      std::uint64_t const avail = static_cast<std::uint64_t>(vs.f_bavail) * vs.f_frsize;
      if (avail < capacity_) {
        fail(storage_failure::no_space, "'" + dir + "' has " + bytes_text(avail) + " free, less than the capacity " +
                                          bytes_text(capacity_) + " (free space, or lower capacity_bytes)",
             ENOSPC);
      }
    }
  }

  // Open: an unlinked temporary file in a directory, a new named file, or the device.
  int const flags = O_RDWR | O_CLOEXEC;
  if (is_dir) {
    fd_ = ::open(dir.c_str(), flags | O_TMPFILE | O_EXCL, 0600);
    if (fd_ >= 0) {
      description_ = dir + " (unlinked temporary file)";
    } else {
      std::string tmpl = dir + "/tierpool-storage-XXXXXX";
      fd_ = ::mkostemp(tmpl.data(), O_CLOEXEC);
      if (fd_ < 0) {
        int const e = errno;
        fail(e == EACCES || e == EROFS || e == EPERM ? storage_failure::permission : storage_failure::bad_path,
             "cannot make a file in '" + dir + "': " + errno_text(e), e);
      }
      ::unlink(tmpl.c_str());  // unlinked at once: the space goes back when the file closes
      description_ = dir + " (unlinked temporary file)";
    }
  } else if (is_block) {
    fd_ = ::open(path.c_str(), flags);
    if (fd_ < 0) {
      int const e = errno;
      fail(e == EACCES || e == EROFS || e == EPERM ? storage_failure::permission : storage_failure::bad_path,
           "cannot open the block device '" + path + "': " + errno_text(e), e);
    }
    std::uint64_t dev_bytes = 0;
    if (::ioctl(fd_, BLKGETSIZE64, &dev_bytes) == 0 && dev_bytes < capacity_) {
      fail(storage_failure::no_space, "the block device '" + path + "' holds " + bytes_text(dev_bytes) +
                                        ", less than the capacity " + bytes_text(capacity_),
           ENOSPC);
    }
    description_ = path + " (block device)";
  } else {
    fd_ = ::open(path.c_str(), flags | O_CREAT | O_EXCL, 0600);
    if (fd_ < 0) {
      int const e = errno;
      fail(e == EACCES || e == EROFS || e == EPERM ? storage_failure::permission : storage_failure::bad_path,
           "cannot create '" + path + "': " + errno_text(e), e);
    }
    remove_at_close_ = path;
    description_ = path + " (removed when the pool closes)";
  }

  // Size it (reserve the blocks where the file system can), before O_DIRECT's probe.
  if (!is_block) {
    bool sized = false;
    if (opts_.preallocate) {
      // fallocate, not posix_fallocate: where the file system cannot reserve blocks, glibc's
      // fallback writes every block of the capacity (hours for a TiB); the file is sparse then.
      int const r = ::fallocate(fd_, 0, 0, static_cast<off_t>(capacity_)) == 0 ? 0 : errno;
      if (r == 0) {
        sized = true;
      } else if (r == ENOSPC) {
        fail(storage_failure::no_space, "reserving " + bytes_text(capacity_) + " in '" + dir + "': " + errno_text(r), r);
      }
    }
    if (!sized && ::ftruncate(fd_, static_cast<off_t>(capacity_)) != 0) {
      int const e = errno;
      fail(e == EFBIG || e == ENOSPC ? storage_failure::no_space : storage_failure::bad_path,
           "sizing the file to " + bytes_text(capacity_) + ": " + errno_text(e), e);
    }
  }

  // O_DIRECT: set it, then probe one aligned write and read (a file system may accept the
  // flag and refuse the I/O).
  if (opts_.direct != storage_direct::off) {
    int const fl = ::fcntl(fd_, F_GETFL);
    bool ok = fl >= 0 && ::fcntl(fd_, F_SETFL, fl | O_DIRECT) == 0;
    int e = ok ? 0 : errno;
    if (ok) {
      void* probe = std::aligned_alloc(kAlign, kAlign);  // NOLINT(cppcoreguidelines-no-malloc)
      if (probe != nullptr) {
        std::memset(probe, 0, kAlign);
        ok = ::pread(fd_, probe, kAlign, 0) == static_cast<ssize_t>(kAlign) &&
             ::pwrite(fd_, probe, kAlign, 0) == static_cast<ssize_t>(kAlign);
        if (!ok) { e = errno; }
        std::free(probe);  // NOLINT(cppcoreguidelines-no-malloc)
      }
      if (!ok && fl >= 0) { (void)::fcntl(fd_, F_SETFL, fl); }  // back to buffered I/O
    }
    if (!ok && opts_.direct == storage_direct::on) {
      fail(storage_failure::direct_unsupported,
           "the file system of '" + (is_block ? path : dir) + "' refuses O_DIRECT (" + errno_text(e) +
             "); use storage_direct::automatic to fall back to buffered I/O, or another directory",
           e);
    }
    direct_ = ok;
  }

  // The engine.
  if (opts_.engine == storage_engine::io_uring && !storage_io_uring_available()) {
    fail(storage_failure::engine_unavailable,
         TIERPOOL_HAS_LIBURING ? "io_uring was asked for and the kernel refuses it (a container's seccomp profile, or "
                                 "io_uring_disabled); use storage_engine::automatic or pread"
                               : "io_uring was asked for and tierpool was built without liburing (install "
                                 "liburing-dev and rebuild); use storage_engine::automatic or pread");
  }
  engine_ = opts_.engine == storage_engine::pread                                    ? storage_engine::pread
            : opts_.engine == storage_engine::io_uring || storage_io_uring_available() ? storage_engine::io_uring
                                                                                     : storage_engine::pread;
  rings_ = std::make_unique<ring_pool>();
#if TIERPOOL_HAS_LIBURING
  rings_->depth = std::max<unsigned>(1, opts_.queue_depth);
#endif

  reserve_range();
}

void storage_file::reserve_range()
{
  // The address range that stands for the file (Note [Where a storage tier's bytes are]).
  void* r = ::mmap(nullptr, capacity_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) {
    int const e = errno;
    if (fd_ >= 0) { ::close(fd_); }
    fd_ = -1;
    if (!remove_at_close_.empty()) { ::unlink(remove_at_close_.c_str()); }
    remove_at_close_.clear();
    throw storage_error(storage_failure::bad_capacity, "tier '" + tier_name_ + "': cannot reserve " + bytes_text(capacity_) +
                                                         " of address space: " + errno_text(e),
                        e);
  }
  base_ = static_cast<std::byte*>(r);
  free_.emplace(0, capacity_);
  align_ = kAlign;
}

storage_file::~storage_file()
{
  if (base_ != nullptr) { ::munmap(base_, capacity_); }
  if (fd_ >= 0) { ::close(fd_); }
  if (!remove_at_close_.empty()) { ::unlink(remove_at_close_.c_str()); }
  for (std::byte* b : bounce_) { std::free(b); }  // NOLINT(cppcoreguidelines-no-malloc)
}

status storage_file::allocate_chunk(std::size_t bytes, void** out) noexcept
{
  *out = nullptr;
  std::size_t const need = round_up(bytes, kAlign);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need) { continue; }
    std::uint64_t const off = it->first;
    std::uint64_t const left = it->second - need;
    free_.erase(it);
    if (left != 0) {
      try {
        free_.emplace(off + need, left);
      } catch (...) {
        free_.emplace(off, need + left);  // a node was just freed: cannot fail
        return status::out_of_memory;
      }
    }
    reserved_ += need;
    *out = base_ + off;
    return status::ok;
  }
  return status::out_of_memory;
}

void storage_file::deallocate_chunk(void* base, std::size_t bytes) noexcept
{
  std::uint64_t off = offset_of(base);
  std::uint64_t len = round_up(bytes, kAlign);
  reserved_ -= len;
  // Merge with the free extents on either side.
  auto next = free_.lower_bound(off);
  if (next != free_.end() && off + len == next->first) {
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += len;
      return;
    }
  }
  try {
    free_.emplace(off, len);
  } catch (...) {  // out of memory: the extent is lost until the pool closes
  }
  // The file's blocks stay allocated (fallocate): a chunk given back keeps its disk space.
}

std::uint64_t storage_file::offset_of(void const* p) const noexcept
{
  return static_cast<std::uint64_t>(static_cast<std::byte const*>(p) - base_);
}

std::byte* storage_file::take_bounce() noexcept
{
  {
    std::lock_guard g(bounce_mtx_);
    if (!bounce_.empty()) {
      std::byte* b = bounce_.back();
      bounce_.pop_back();
      return b;
    }
  }
  return static_cast<std::byte*>(std::aligned_alloc(kAlign, opts_.piece_bytes));  // NOLINT(cppcoreguidelines-no-malloc)
}

void storage_file::give_bounce(std::byte* b) noexcept
{
  if (b == nullptr) { return; }
  std::lock_guard g(bounce_mtx_);
  if (bounce_.size() < 64) {
    try {
      bounce_.push_back(b);
      return;
    } catch (...) {
    }
  }
  std::free(b);  // NOLINT(cppcoreguidelines-no-malloc)
}

std::size_t storage_file::transfer(io_dir dir, std::vector<io_piece> const& pieces, int* error_number) noexcept
{
  return engine_ == storage_engine::io_uring ? transfer_uring(dir, pieces, error_number)
                                             : transfer_pread(dir, pieces, error_number);
}

std::size_t storage_file::transfer_pread(io_dir dir, std::vector<io_piece> const& pieces, int* error_number) noexcept
{
  std::size_t moved = 0;
  for (io_piece const& p : pieces) {
    std::size_t done = 0;
    while (done < p.len) {
      ssize_t const r = dir == io_dir::write
                          ? ::pwrite(fd_, p.buf + done, p.len - done, static_cast<off_t>(p.offset + done))
                          : ::pread(fd_, p.buf + done, p.len - done, static_cast<off_t>(p.offset + done));
      if (r < 0) {
        if (errno == EINTR) { continue; }
        *error_number = errno;
        return moved + done;
      }
      if (r == 0) { return moved + done; }  // no progress: a short transfer
      done += static_cast<std::size_t>(r);
    }
    moved += done;
  }
  return moved;
}

std::size_t storage_file::transfer_uring(io_dir dir, std::vector<io_piece> const& pieces, int* error_number) noexcept
{
#if TIERPOOL_HAS_LIBURING
  std::unique_ptr<io_uring> ring = rings_->take();
  if (ring == nullptr) { return transfer_pread(dir, pieces, error_number); }  // no ring now: the portable way
  std::size_t moved = 0;
  std::vector<unsigned> res;
  try {
    res.assign(pieces.size(), 0);
  } catch (...) {
    rings_->give(std::move(ring));
    return transfer_pread(dir, pieces, error_number);
  }
  std::size_t const depth = rings_->depth;
  for (std::size_t first = 0; first < pieces.size(); first += depth) {
    std::size_t const last = std::min(pieces.size(), first + depth);
    std::size_t queued = 0;
    for (std::size_t i = first; i < last; ++i) {
      io_uring_sqe* sqe = io_uring_get_sqe(ring.get());
      if (sqe == nullptr) { break; }
      io_piece const& p = pieces[i];
      if (dir == io_dir::write) {
        io_uring_prep_write(sqe, fd_, p.buf, static_cast<unsigned>(p.len), p.offset);
      } else {
        io_uring_prep_read(sqe, fd_, p.buf, static_cast<unsigned>(p.len), p.offset);
      }
      io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(static_cast<std::uintptr_t>(i)));
      ++queued;
    }
    int const sub = io_uring_submit(ring.get());
    if (sub < 0) {
      // Submission failed: nothing of this batch is in flight; the portable way does it.
      std::vector<io_piece> rest;
      try {
        rest.assign(pieces.begin() + static_cast<std::ptrdiff_t>(first), pieces.end());
      } catch (...) {
        *error_number = ENOMEM;
        rings_->give(std::move(ring));
        return moved;
      }
      rings_->give(std::move(ring));
      return moved + transfer_pread(dir, rest, error_number);
    }
    bool failed = false;
    for (std::size_t n = 0; n < static_cast<std::size_t>(sub); ++n) {
      io_uring_cqe* cqe = nullptr;
      int const w = io_uring_wait_cqe(ring.get(), &cqe);
      if (w < 0) {
        if (w == -EINTR) {
          --n;
          continue;
        }
        *error_number = -w;
        failed = true;
        break;
      }
      auto const i = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(io_uring_cqe_get_data(cqe)));
      if (cqe->res < 0) {
        *error_number = -cqe->res;
        failed = true;
      } else if (i < res.size()) {
        res[i] = static_cast<unsigned>(cqe->res);
      }
      io_uring_cqe_seen(ring.get(), cqe);
    }
    if (failed || static_cast<std::size_t>(sub) != queued) {
      // A ring in an unknown state is not reused.
      io_uring_queue_exit(ring.get());
      if (*error_number == 0) { *error_number = EIO; }
      for (std::size_t i = first; i < last; ++i) { moved += res[i]; }
      return moved;
    }
    for (std::size_t i = first; i < last; ++i) {
      io_piece const& p = pieces[i];
      if (res[i] < p.len) {  // a partial transfer: the rest the portable way
        std::vector<io_piece> one;
        try {
          one.push_back(io_piece{p.offset + res[i], p.buf + res[i], p.len - res[i]});
        } catch (...) {
          *error_number = ENOMEM;
          rings_->give(std::move(ring));
          return moved + res[i];
        }
        std::size_t const more = transfer_pread(dir, one, error_number);
        moved += res[i] + more;
        if (res[i] + more < p.len) {
          rings_->give(std::move(ring));
          return moved;
        }
      } else {
        moved += p.len;
      }
    }
  }
  rings_->give(std::move(ring));
  return moved;
#else
  return transfer_pread(dir, pieces, error_number);
#endif
}

storage_io_result storage_file::write(void const* dst, void const* src, std::size_t bytes, bool lossy_ok) noexcept
{
  storage_fault fault{};
  bool const faulted = opts_.faults != nullptr && opts_.faults->next_write(&fault);
  auto const t0 = std::chrono::steady_clock::now();
  storage_io_result r;
  try {
    r = engine_ == storage_engine::compressed
          ? pack(offset_of(dst), static_cast<std::byte const*>(src), bytes, lossy_ok, faulted ? &fault : nullptr)
          : write_impl(offset_of(dst), static_cast<std::byte const*>(src), bytes, faulted ? &fault : nullptr);
  } catch (...) {
    r = storage_io_result{false, storage_failure::write_failed, ENOMEM, "out of host memory for the write"};
  }
  double const s = seconds_since(t0);
  std::lock_guard g(fig_mtx_);
  if (r.ok) {
    fig_.bytes_written += bytes;
    ++fig_.writes;
  } else {
    ++fig_.write_failures;
  }
  fig_.write_seconds += s;
  return r;
}

storage_io_result storage_file::read(void* dst, void const* src, std::size_t bytes) noexcept
{
  storage_fault fault{};
  bool const faulted = opts_.faults != nullptr && opts_.faults->next_read(&fault);
  auto const t0 = std::chrono::steady_clock::now();
  storage_io_result r;
  std::uint64_t sum = 0;
  try {
    r = engine_ == storage_engine::compressed
          ? unpack(offset_of(src), static_cast<std::byte*>(dst), bytes, faulted ? &fault : nullptr)
          : read_impl(offset_of(src), static_cast<std::byte*>(dst), bytes, faulted ? &fault : nullptr, &sum);
  } catch (...) {
    r = storage_io_result{false, storage_failure::read_failed, ENOMEM, "out of host memory for the read"};
  }
  double const s = seconds_since(t0);
  std::lock_guard g(fig_mtx_);
  if (r.ok) {
    fig_.bytes_read += bytes;
    ++fig_.reads;
  } else {
    ++fig_.read_failures;
  }
  fig_.read_seconds += s;
  return r;
}

void storage_file::forget(void const* p) noexcept
{
  std::lock_guard g(sums_mtx_);
  sums_.erase(offset_of(p));
  if (auto it = packed_.find(offset_of(p)); it != packed_.end()) {
    packed_bytes_ -= it->second.frame.size();
    packed_logical_ -= it->second.bytes;
    packed_.erase(it);
  }
}

storage_file_figures storage_file::figures() const noexcept
{
  storage_file_figures f;
  {
    std::lock_guard g(fig_mtx_);
    f = fig_;
  }
  std::lock_guard g(sums_mtx_);
  f.packed_bytes = packed_bytes_;
  f.logical_bytes = packed_logical_;
  return f;
}

// Note [A compressed tier]
// ------------------------
// Rationale: a tensor that leaves the host tiers can only go to a file, at disk speed;
// most activations are half zeros and compress 1.5-2x losslessly (lz4, zstd), and those a
// user accepts approximately take a quarter of the bytes as 8-bit blocks (q8): the same
// host memory then holds two to four times the tensors, at codec speed rather than the
// disk's (docs/chapters/codecs.md has the measured figures).
// Approach: a storage tier whose engine is `compressed` has no file. Its arena hands out
// offsets in a reserved range exactly as for a file (the tier's capacity is logical: the
// tensors' bytes), and a copy into it compresses the tensor into a frame kept in host
// memory under its offset; a copy out decodes it. Everything else is the storage tier's:
// copies run on the calling thread after the streams wait (Note [Storage copies are
// synchronous]), so a failed copy (a full memory budget, out of memory, an injected
// fault) fails the eviction before the copy above is vacated; the frames are checksummed
// (lz4, zstd) and checked, so a corrupt one is a storage_error, never wrong bytes. The
// memory the frames take is charged against storage_options::memory_bytes; a frame that
// would pass it is a no_space failure. With codec q8, only tensors marked
// tensor_options::lossy_compression (and whose size is a multiple of 4) are quantized,
// each one's error measured as it is written (storage_file_figures); every other tensor
// goes through lz4, and so round-trips exactly.
// With verify_writes (the default) each frame is decoded before it counts, and a lossless
// one compared with the tensor: about as dear again as the compression.
// Limitations: compression runs on the evicting thread, one copy at a time (a few hundred
// MB/s for lz4 on one core, about 4 GB/s for q8). A lossy copy is the tensor from then on:
// bringing it back does not restore the original bytes. On a phantom backend (replay) the
// tier is timed as a disk on the storage links, not by the codec.
storage_io_result storage_file::pack(std::uint64_t off, std::byte const* src, std::size_t bytes, bool lossy_ok,
                                     storage_fault const* fault)
{
  if (fault != nullptr && *fault != storage_fault::torn_write) {
    storage_failure const f = *fault == storage_fault::no_space      ? storage_failure::no_space
                              : *fault == storage_fault::short_write ? storage_failure::short_write
                                                                     : storage_failure::write_failed;
    return {false, f, f == storage_failure::no_space ? ENOSPC : EIO,
            std::string("injected ") + std::string(to_string(*fault)) + " compressing " + bytes_text(bytes)};
  }
  codec_kind codec = opts_.codec;
  bool const lossy = codec == codec_kind::q8_block && lossy_ok && bytes % 4 == 0;
  if (codec == codec_kind::q8_block && !lossy) { codec = codec_kind::lz4; }
  packed_copy c;
  c.codec = codec;
  c.bytes = bytes;
  c.frame.resize(max_compressed_size(codec, bytes, opts_.codec_settings));
  codec_error_report rep{};
  try {
    c.frame.resize(compress(codec, std::span(src, bytes), std::span(c.frame), opts_.codec_settings, lossy ? &rep : nullptr));
  } catch (codec_error const& e) {  // q8 of a tensor with a NaN or infinity: store it exactly
    if (!lossy) {
      return {false, storage_failure::write_failed, 0, std::string("compressing: ") + e.what()};
    }
    codec = c.codec = codec_kind::lz4;
    c.frame.resize(max_compressed_size(codec, bytes, opts_.codec_settings));
    c.frame.resize(compress(codec, std::span(src, bytes), std::span(c.frame), opts_.codec_settings));
  }
  if (fault != nullptr) { c.frame.resize(c.frame.size() / 2); }  // torn: a frame missing its tail
  c.frame.shrink_to_fit();
  if (opts_.verify_writes) {  // decode it before it counts; a lossless copy must give every byte back
    std::vector<std::byte> back(bytes);
    bool ok = true;
    try {
      decompress(codec, std::span<std::byte const>(c.frame), std::span(back));
      ok = !is_lossless(codec) || std::memcmp(back.data(), src, bytes) == 0;
    } catch (codec_error const&) {
      ok = false;
    }
    if (!ok) {
      return {false, storage_failure::torn_write, 0,
              "the compressed copy of " + bytes_text(bytes) + " does not decode to the tensor (verify_writes)"};
    }
  }
  std::lock_guard g(sums_mtx_);
  std::size_t old_frame = 0;
  std::size_t old_bytes = 0;
  if (auto it = packed_.find(off); it != packed_.end()) {
    old_frame = it->second.frame.size();
    old_bytes = it->second.bytes;
  }
  if (packed_bytes_ - old_frame + c.frame.size() > memory_limit_) {
    return {false, storage_failure::no_space, ENOSPC,
            "the compressed copies take " + bytes_text(packed_bytes_) + " of at most " + bytes_text(memory_limit_) +
              " (storage_options::memory_bytes); this one needs " + bytes_text(c.frame.size())};
  }
  packed_bytes_ = packed_bytes_ - old_frame + c.frame.size();
  packed_logical_ = packed_logical_ - old_bytes + bytes;
  packed_[off] = std::move(c);  // may throw bad_alloc: write() reports a failed write
  if (lossy) {
    std::lock_guard fg(fig_mtx_);
    ++fig_.lossy_writes;
    fig_.max_relative_rms_error = std::max(fig_.max_relative_rms_error, rep.relative_rms_error);
  }
  return {};
}

storage_io_result storage_file::unpack(std::uint64_t off, std::byte* dst, std::size_t bytes, storage_fault const* fault)
{
  if (fault != nullptr && *fault == storage_fault::fail_read) {
    return {false, storage_failure::read_failed, EIO, "injected fail_read decompressing " + bytes_text(bytes)};
  }
  // The map's lock for the lookup only: the frame at `off` changes (pack, forget) only
  // under the record lock this read's caller holds, and a node's address survives the
  // map's rehashing, so the decode runs unlocked, beside other threads' copies.
  packed_copy const* c = nullptr;
  {
    std::lock_guard g(sums_mtx_);
    auto it = packed_.find(off);
    if (it != packed_.end() && it->second.bytes == bytes) { c = &it->second; }
  }
  if (c == nullptr) {
    return {false, storage_failure::corrupt, 0,
            "no compressed copy of " + bytes_text(bytes) + " at offset " + std::to_string(off)};
  }
  std::vector<std::byte> flipped;
  std::span<std::byte const> frame(c->frame);
  if (fault != nullptr && *fault == storage_fault::corrupt_read && !frame.empty()) {
    flipped.assign(frame.begin(), frame.end());
    flipped[flipped.size() / 2] ^= std::byte{0x40};
    frame = flipped;
  }
  try {
    decompress(c->codec, frame, std::span(dst, bytes));
  } catch (codec_error const& e) {
    return {false, storage_failure::corrupt, 0, std::string("decompressing: ") + e.what()};
  }
  return {};
}

storage_io_result storage_file::write_impl(std::uint64_t off, std::byte const* src, std::size_t bytes,
                                           storage_fault const* fault)
{
  std::string const where = "writing " + std::to_string(bytes) + " bytes at offset " + std::to_string(off) + " of " +
                            description_;
  forget(base_ + off);  // from here until the write is checked, the range holds no valid copy
  if (fault != nullptr && *fault == storage_fault::fail_write) {
    return {false, storage_failure::write_failed, EIO, where + ": " + errno_text(EIO) + " (injected)"};
  }
  if (fault != nullptr && *fault == storage_fault::no_space) {
    return {false, storage_failure::no_space, ENOSPC, where + ": " + errno_text(ENOSPC) + " (injected)"};
  }
  std::uint64_t const sum = storage_checksum(src, bytes);
  // A short or torn write moves about half of the bytes (whole pieces of the alignment).
  bool const cut = fault != nullptr && (*fault == storage_fault::short_write || *fault == storage_fault::torn_write);
  std::size_t const submit = cut ? bytes / 2 / kAlign * kAlign : bytes;
  std::size_t const piece = opts_.piece_bytes;
  std::size_t const batch = engine_ == storage_engine::io_uring ? std::max<std::uint32_t>(1, opts_.queue_depth) : 1;
  std::size_t expected = 0;  // what the write should have moved (padded with O_DIRECT)
  std::size_t moved = 0;
  int err = 0;
  std::vector<io_piece> pieces;
  std::vector<std::byte*> bufs;
  auto release = [&] {
    for (std::byte* b : bufs) { give_bounce(b); }
    bufs.clear();
  };
  for (std::size_t pos = 0; pos < bytes && err == 0;) {
    pieces.clear();
    std::size_t batch_expected = 0;
    for (std::size_t k = 0; k < batch && pos < bytes; ++k, pos += std::min(piece, bytes - pos)) {
      std::size_t const len = std::min(piece, bytes - pos);
      std::size_t const io_len = direct_ ? round_up(len, kAlign) : len;
      batch_expected += io_len;
      if (pos >= submit) { continue; }  // a cut write leaves the rest unwritten
      std::size_t const sub_len = std::min(io_len, direct_ ? round_up(submit - pos, kAlign) : submit - pos);
      std::byte* buf = const_cast<std::byte*>(src + pos);  // NOLINT(cppcoreguidelines-pro-type-const-cast): written from, never to
      if (direct_) {
        if (bufs.size() <= k) {
          std::byte* b = take_bounce();
          if (b == nullptr) {
            release();
            return {false, storage_failure::write_failed, ENOMEM, where + ": no memory for a bounce buffer"};
          }
          bufs.push_back(b);
        }
        buf = bufs[k];
        std::memcpy(buf, src + pos, std::min(len, sub_len));
        if (sub_len > len) { std::memset(buf + len, 0, sub_len - len); }
      }
      pieces.push_back(io_piece{off + pos, buf, sub_len});
    }
    expected += batch_expected;
    moved += transfer(io_dir::write, pieces, &err);
  }
  release();
  if (fault != nullptr && *fault == storage_fault::torn_write && err == 0) { moved = expected; }  // it says it wrote all
  if (err == ENOSPC) {
    return {false, storage_failure::no_space, err, where + ": " + errno_text(err)};
  }
  if (err != 0) {
    return {false, storage_failure::write_failed, err,
            where + ": " + errno_text(err) + (fault != nullptr ? " (injected)" : "")};
  }
  if (moved != expected) {
    return {false, storage_failure::short_write, 0,
            where + ": only " + std::to_string(moved) + " of " + std::to_string(expected) + " bytes were written" +
              (fault != nullptr ? " (injected)" : "")};
  }
  if (opts_.verify_writes) {
    // Read back and compare (Note [A storage write is done before it counts]).
    std::vector<std::byte> scratch;
    std::byte* b = direct_ ? take_bounce() : nullptr;
    if (!direct_) { scratch.resize(std::min(piece, bytes)); }
    std::byte* into = direct_ ? b : scratch.data();
    if (into == nullptr) {
      return {false, storage_failure::write_failed, ENOMEM, where + ": no memory to verify the write"};
    }
    for (std::size_t pos = 0; pos < bytes; pos += piece) {
      std::size_t const len = std::min(piece, bytes - pos);
      std::size_t const io_len = direct_ ? round_up(len, kAlign) : len;
      int e = 0;
      std::vector<io_piece> one{io_piece{off + pos, into, io_len}};
      std::size_t const got = transfer_pread(io_dir::read, one, &e);
      if (got != io_len || std::memcmp(into, src + pos, len) != 0) {
        give_bounce(b);
        return {false, storage_failure::torn_write, e,
                where + ": the bytes read back at offset " + std::to_string(off + pos) +
                  " differ from those written (a torn write" + (fault != nullptr ? ", injected" : "") + ")"};
      }
    }
    give_bounce(b);
  }
  std::lock_guard g(sums_mtx_);
  sums_[off] = {bytes, sum};
  return {};
}

storage_io_result storage_file::read_impl(std::uint64_t off, std::byte* dst, std::size_t bytes, storage_fault const* fault,
                                          std::uint64_t* sum)
{
  std::string const where = "reading " + std::to_string(bytes) + " bytes at offset " + std::to_string(off) + " of " +
                            description_;
  if (fault != nullptr && *fault == storage_fault::fail_read) {
    return {false, storage_failure::read_failed, EIO, where + ": " + errno_text(EIO) + " (injected)"};
  }
  std::size_t const piece = opts_.piece_bytes;
  std::size_t const batch = engine_ == storage_engine::io_uring ? std::max<std::uint32_t>(1, opts_.queue_depth) : 1;
  std::size_t expected = 0;
  std::size_t moved = 0;
  int err = 0;
  std::vector<io_piece> pieces;
  std::vector<std::byte*> bufs;
  auto release = [&] {
    for (std::byte* b : bufs) { give_bounce(b); }
    bufs.clear();
  };
  for (std::size_t pos = 0; pos < bytes && err == 0;) {
    pieces.clear();
    std::size_t const start = pos;
    for (std::size_t k = 0; k < batch && pos < bytes; ++k, pos += std::min(piece, bytes - pos)) {
      std::size_t const len = std::min(piece, bytes - pos);
      std::size_t const io_len = direct_ ? round_up(len, kAlign) : len;
      std::byte* buf = dst + pos;
      if (direct_) {
        if (bufs.size() <= k) {
          std::byte* b = take_bounce();
          if (b == nullptr) {
            release();
            return {false, storage_failure::read_failed, ENOMEM, where + ": no memory for a bounce buffer"};
          }
          bufs.push_back(b);
        }
        buf = bufs[k];
      }
      pieces.push_back(io_piece{off + pos, buf, io_len});
      expected += io_len;
    }
    std::size_t const got = transfer(io_dir::read, pieces, &err);
    moved += got;
    if (direct_) {
      std::size_t p = start;
      for (std::size_t k = 0; k < pieces.size(); ++k) {
        std::size_t const len = std::min(piece, bytes - p);
        std::memcpy(dst + p, bufs[k], len);
        p += len;
      }
    }
  }
  release();
  if (err != 0 || moved != expected) {
    return {false, storage_failure::read_failed, err,
            where + ": " + (err != 0 ? errno_text(err) : "only " + std::to_string(moved) + " of " + std::to_string(expected) + " bytes were read")};
  }
  if (fault != nullptr && *fault == storage_fault::corrupt_read && bytes > 0) {
    dst[bytes / 2] ^= std::byte{0x5A};  // bit rot
  }
  std::pair<std::size_t, std::uint64_t> want{0, 0};
  bool known = false;
  {
    std::lock_guard g(sums_mtx_);
    if (auto it = sums_.find(off); it != sums_.end()) {
      want = it->second;
      known = true;
    }
  }
  if (known) {
    *sum = storage_checksum(dst, bytes);
    if (want.first != bytes || want.second != *sum) {
      return {false, storage_failure::corrupt, 0,
              where + ": the checksum of the bytes read differs from the one recorded when they were written" +
                (fault != nullptr ? " (injected)" : "")};
    }
  }
  return {};
}

}  // namespace tierpool::detail

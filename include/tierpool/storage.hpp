// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file storage.hpp
 * @brief The storage tier's options (tier_options::storage), its I/O engines and its
 *        fault hook (docs/chapters/tiers.md, "The storage tier").
 *
 * A storage tier (tier_kind::storage) is a file below the host tiers: a temporary file
 * made unlinked in a directory, a new file removed when the pool closes, or a block
 * device. Its arena hands out offsets in the file; copies to and from it are file I/O
 * from or into a host-accessible tier, checked by byte count and a checksum per copy.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <tierpool/codec.hpp>
#include <tierpool/export.hpp>

namespace tierpool {

/// @brief How a storage tier does its I/O.
enum class storage_engine : std::uint8_t {
  automatic,  ///< io_uring when it was built in (liburing) and the kernel allows it, else pread
  io_uring,   ///< io_uring (liburing): several pieces of a copy in flight at once; an error when unavailable
  pread,      ///< pread / pwrite, one piece at a time: portable
  /// No file: each copy is compressed (storage_options::codec) into host memory, charged
  /// against storage_options::memory_bytes: a compressed host tier (docs/chapters/tiers.md,
  /// "A compressed tier")
  compressed,
};

/// @brief Lower-case name of an engine ("auto", "io_uring", "pread", "compressed").
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(storage_engine e) noexcept;

/// @brief Whether a storage tier opens its file with O_DIRECT (no page cache).
enum class storage_direct : std::uint8_t {
  automatic,  ///< O_DIRECT where the file system supports it; buffered I/O otherwise
  on,         ///< O_DIRECT or a storage_error (direct_unsupported) at pool construction
  off,        ///< buffered I/O through the page cache
};

/// @brief A fault the storage fault hook injects (storage_fault_injector).
enum class storage_fault : std::uint8_t {
  fail_write,    ///< the write fails with EIO before a byte is written
  short_write,   ///< the write stops after about half of the bytes and says so (a short count)
  torn_write,    ///< the write writes about half of the bytes but reports them all
  no_space,      ///< the write fails with ENOSPC
  fail_read,     ///< the read fails with EIO
  corrupt_read,  ///< the read returns every byte, one of them flipped (bit rot)
};

/// @brief Lower-case name of a storage fault ("fail_write", "torn_write", ...).
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(storage_fault f) noexcept;

/**
 * @brief The storage tier's fault hook: faults armed here hit the tier's next writes or
 *        reads, whichever engine runs them (tests; tierpool never arms it by itself).
 *
 * Give the same injector to storage_options::faults and keep a pointer to arm it at any
 * time. A write fault hits copies into the storage tier, a read fault copies out of it.
 *
 * Thread safety: every member may be called concurrently.
 */
class TIERPOOL_EXPORT storage_fault_injector {
 public:
  /**
   * @brief Arm a fault: after `skip` more operations of its direction (writes for the
   *        write faults and no_space, reads for the read faults) pass, the next `times` fail.
   */
  void arm(storage_fault fault, std::uint64_t skip = 0, std::uint64_t times = 1);
  /// @brief Disarm every fault.
  void clear() noexcept;
  /// @brief Faults injected so far.
  [[nodiscard]] std::uint64_t injected() const noexcept;

  /// @brief Internal (the tier's engine): the fault for the next write, if any. Counts it.
  [[nodiscard]] bool next_write(storage_fault* out) noexcept;
  /// @brief Internal (the tier's engine): the fault for the next read, if any. Counts it.
  [[nodiscard]] bool next_read(storage_fault* out) noexcept;

 private:
  struct armed {
    storage_fault fault;
    std::uint64_t skip;
    std::uint64_t times;
  };
  bool next(bool write, storage_fault* out) noexcept;
  mutable std::mutex mtx_;
  std::vector<armed> armed_;
  std::uint64_t injected_{0};
};

/**
 * @brief Options of a storage tier (tier_options::storage; used when the tier's kind is
 *        tier_kind::storage). The capacity is tier_options::capacity_bytes, required.
 *
 * Checked at pool construction, each failure a storage_error naming it: the path exists
 * (missing_path), may be written (permission), holds the capacity (no_space, by statvfs,
 * or the block device's size), supports O_DIRECT when `direct` is `on`
 * (direct_unsupported), and io_uring works when `engine` is `io_uring`
 * (engine_unavailable). On a phantom-memory backend (tierpool replay) the tier has no
 * file: the backend's storage links time its copies, and `path` may be empty.
 */
struct storage_options {
  /// A directory (the tier makes an unlinked temporary file there: O_TMPFILE, or a
  /// mkstemp name removed at once), a block device (used from offset 0; never removed), or
  /// the path of a file that does not exist yet in an existing directory (made, and
  /// removed when the pool closes).
  std::string path{};
  storage_engine engine{storage_engine::automatic};  ///< how the I/O is done
  storage_direct direct{storage_direct::automatic};  ///< O_DIRECT or the page cache
  /// Largest piece of one I/O call, bytes (a power of two, at least 4096): a copy is cut
  /// into pieces, each through an aligned bounce buffer with O_DIRECT; io_uring keeps up to
  /// `queue_depth` of them in flight.
  std::size_t piece_bytes{std::size_t{1} << 20U};
  std::uint32_t queue_depth{8};  ///< io_uring: pieces in flight per copy
  /// Read every write back and compare its checksum before the write counts as done: a
  /// torn write (one that reports every byte but wrote fewer) then fails the eviction and
  /// the copy above stays. Off: a torn write is found at the next read (storage_error
  /// `corrupt`), and the tensor's bytes are lost.
  bool verify_writes{true};
  /// Reserve the capacity on disk at construction (fallocate), so that a full disk is an
  /// error then, not ENOSPC at an eviction. Where the file system cannot, the file is
  /// sparse and the statvfs check stands alone.
  bool preallocate{true};
  std::shared_ptr<storage_fault_injector> faults{};  ///< fault hook (tests); null: none
  /// storage_engine::compressed: the codec of every copy. codec_kind::q8_block stores the
  /// tensors marked tensor_options::lossy_compression (float32) with 8-bit block
  /// quantization and every other tensor with lz4; none is refused.
  codec_kind codec{codec_kind::lz4};
  codec_params codec_settings{};  ///< storage_engine::compressed: the codec's settings
  /// storage_engine::compressed: the most host memory the compressed copies may take
  /// (0: the tier's capacity). A copy that would pass it fails like a write to a full disk
  /// (storage_failure::no_space): the eviction fails and the tensor stays where it was.
  std::size_t memory_bytes{0};
};

}  // namespace tierpool

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file storage_file.hpp
 * @brief Internal: a storage tier's file — the address ranges its arena manages, standing
 *        for offsets in the file, and the checked file I/O of copies to and from it.
 *
 * Not installed API. The public options are include/tierpool/storage.hpp; the design is
 * in Note [Where a storage tier's bytes are] and Note [A storage write is done before it
 * counts] (storage_file.cpp) and docs/chapters/tiers.md, "The storage tier".
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/export.hpp>
#include <tierpool/storage.hpp>

#include "tiers/tier.hpp"

namespace tierpool::detail {

/// @brief What one storage copy did: ok, or the failure with its errno and a diagnosis.
struct storage_io_result {
  bool ok{true};                                         ///< every byte moved and checked
  storage_failure failure{storage_failure::write_failed};  ///< when !ok: what went wrong
  int error_number{0};                                   ///< errno involved (0: none)
  std::string message{};                                 ///< when !ok: the diagnosis
};

/// @brief Figures of a storage file (tier_stats' storage members).
struct storage_file_figures {
  std::uint64_t bytes_written{0};  ///< SUM: bytes of completed writes (copies into the tier)
  std::uint64_t bytes_read{0};     ///< SUM: bytes of completed reads (copies out of it)
  std::uint64_t writes{0};         ///< COUNT: completed writes
  std::uint64_t reads{0};          ///< COUNT: completed reads
  std::uint64_t write_failures{0}; ///< COUNT: writes that failed (the copy above stayed)
  std::uint64_t read_failures{0};  ///< COUNT: reads that failed
  double write_seconds{0.0};       ///< SUM: time spent in writes (verification included)
  double read_seconds{0.0};        ///< SUM: time spent in reads
  // storage_engine::compressed only:
  std::uint64_t packed_bytes{0};   ///< SUM: host bytes the compressed copies take now
  std::uint64_t logical_bytes{0};  ///< SUM: bytes of the tensors those copies hold
  std::uint64_t lossy_writes{0};   ///< COUNT: copies stored with q8 (tensor_options::lossy_compression)
  double max_relative_rms_error{0.0};  ///< the largest relative RMS error of a lossy copy
};

/**
 * @brief A storage tier's file: a chunk source for the tier (ranges of a reserved,
 *        inaccessible address range whose offset from its base is the file offset) and
 *        the engine that writes and reads tensors' bytes there.
 *
 * Thread safety: allocate_chunk / deallocate_chunk run under the tier's lock; write, read
 * and forget may run concurrently from any thread, on distinct ranges (the record lock of
 * the tensor owning a range keeps others off it).
 */
class TIERPOOL_EXPORT storage_file final : public chunk_source {
 public:
  /**
   * @brief Open (or make) the file and check it can hold `capacity` bytes.
   * @param options Path, engine, O_DIRECT, checks.
   * @param capacity The tier's capacity in bytes.
   * @param tier_name For messages.
   * @throws tierpool::storage_error for every configuration problem (its failure() says
   *         which: bad_capacity, bad_path, missing_path, permission, no_space,
   *         direct_unsupported, engine_unavailable).
   */
  storage_file(storage_options options, std::size_t capacity, std::string tier_name);
  /// @brief Closes the file; a file the tier made by name is removed.
  ~storage_file() override;

  [[nodiscard]] status allocate_chunk(std::size_t bytes, void** out) noexcept override;
  void deallocate_chunk(void* base, std::size_t bytes) noexcept override;
  [[nodiscard]] std::size_t alignment() const noexcept override { return align_; }

  /**
   * @brief Write `bytes` from host memory `src` to the range at `dst` (a block of the
   *        tier); done only when every byte was written (and, with verify_writes, read back
   *        with the same checksum). Records the checksum for later reads.
   */
  [[nodiscard]] storage_io_result write(void const* dst, void const* src, std::size_t bytes,
                                        bool lossy_ok = false) noexcept;
  /**
   * @brief Read `bytes` at the range `src` into host memory `dst` and check the checksum
   *        the write recorded (a range never written has undefined bytes: no check).
   */
  [[nodiscard]] storage_io_result read(void* dst, void const* src, std::size_t bytes) noexcept;
  /// @brief The range at `p` no longer holds a tensor's copy: forget its checksum.
  void forget(void const* p) noexcept;

  /// @brief The engine in use (io_uring or pread; never automatic).
  [[nodiscard]] storage_engine engine() const noexcept { return engine_; }
  [[nodiscard]] codec_kind codec() const noexcept { return opts_.codec; }
  /// @brief The file's size: the capacity given, rounded down to the alignment.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  /// @brief Whether the file is open with O_DIRECT.
  [[nodiscard]] bool direct() const noexcept { return direct_; }
  /// @brief What the file is: the path, and "(unlinked)" for a temporary file.
  [[nodiscard]] std::string const& description() const noexcept { return description_; }
  /// @brief Figures so far.
  [[nodiscard]] storage_file_figures figures() const noexcept;

 private:
  struct ring_pool;
  struct io_piece {
    std::uint64_t offset;  // in the file
    std::byte* buf;        // memory the piece moves to or from
    std::size_t len;       // bytes to move (rounded up to the alignment with O_DIRECT)
  };
  enum class io_dir : std::uint8_t { write, read };
  // Move every piece; returns the bytes moved (a short count: fewer) and the errno of a failure.
  std::size_t transfer(io_dir dir, std::vector<io_piece> const& pieces, int* error_number) noexcept;
  std::size_t transfer_pread(io_dir dir, std::vector<io_piece> const& pieces, int* error_number) noexcept;
  std::size_t transfer_uring(io_dir dir, std::vector<io_piece> const& pieces, int* error_number) noexcept;
  [[nodiscard]] std::uint64_t offset_of(void const* p) const noexcept;
  std::byte* take_bounce() noexcept;
  void give_bounce(std::byte* b) noexcept;
  storage_io_result write_impl(std::uint64_t off, std::byte const* src, std::size_t bytes, storage_fault const* fault);
  // The compressed engine (Note [A compressed tier], storage_file.cpp).
  storage_io_result pack(std::uint64_t off, std::byte const* src, std::size_t bytes, bool lossy_ok,
                         storage_fault const* fault);
  storage_io_result unpack(std::uint64_t off, std::byte* dst, std::size_t bytes, storage_fault const* fault);
  void reserve_range();
  storage_io_result read_impl(std::uint64_t off, std::byte* dst, std::size_t bytes, storage_fault const* fault,
                              std::uint64_t* sum);

  storage_options opts_;
  std::string tier_name_;
  std::string description_;
  std::string remove_at_close_;  // a file made by name
  int fd_{-1};
  bool direct_{false};
  storage_engine engine_{storage_engine::pread};
  std::size_t align_{4096};
  std::size_t capacity_{0};
  std::byte* base_{nullptr};  // reserved, inaccessible address range of capacity_ bytes
  std::size_t reserved_{0};

  std::map<std::uint64_t, std::uint64_t> free_;  // offset -> length of unused file extents (tier lock)

  mutable std::mutex sums_mtx_;
  std::unordered_map<std::uint64_t, std::pair<std::size_t, std::uint64_t>> sums_;  // offset -> bytes, checksum

  std::mutex bounce_mtx_;
  std::vector<std::byte*> bounce_;  // free bounce buffers of piece_bytes, aligned
  std::unique_ptr<ring_pool> rings_;

  struct packed_copy {
    std::vector<std::byte> frame;  // the codec's frame
    codec_kind codec{codec_kind::none};
    std::size_t bytes{0};          // the tensor's
  };
  std::unordered_map<std::uint64_t, packed_copy> packed_;  // offset -> copy (sums_mtx_)
  std::size_t packed_bytes_{0};                           // SUM of frame sizes (sums_mtx_)
  std::size_t packed_logical_{0};                         // SUM of their tensors' bytes (sums_mtx_)
  std::size_t memory_limit_{0};

  mutable std::mutex fig_mtx_;
  storage_file_figures fig_{};
};

/// @brief The checksum of a storage copy: a 64-bit hash of `bytes` at `p` (four
///        multiply-rotate lanes; not cryptographic: it finds torn and corrupted data).
[[nodiscard]] TIERPOOL_EXPORT std::uint64_t storage_checksum(void const* p, std::size_t bytes) noexcept;

/// @brief Whether io_uring is built in and the kernel lets this process set up a ring.
[[nodiscard]] TIERPOOL_EXPORT bool storage_io_uring_available() noexcept;

}  // namespace tierpool::detail

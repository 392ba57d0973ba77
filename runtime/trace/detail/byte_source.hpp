// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// byte_source.hpp — the input side of every trace reader: a window of unconsumed bytes
// over a file (read in large blocks, no syscall per record) or over memory. Not API.
#pragma once

#include <tierpool/trace.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace tierpool::trace::detail {

/// Bytes per read() from a file; a multiple of 24 so oracleGeneral records rarely straddle.
inline constexpr std::size_t kBlockBytes = std::size_t{24} << 13U;  // 192 KiB

/**
 * A forward-only window over the input.
 *
 *   [ consumed | window: begin_ .. end_ | free space ]      (file: buffer_; memory: the caller's bytes)
 *   offset() == absolute offset of begin_ in the input
 *
 * Thread safety: none (one reader owns it).
 */
class byte_source {
 public:
  /// Opens `path` for reading (once: a pipe or FIFO works). @throws trace_error naming the
  /// file and the system's reason, or saying it is a directory
  static byte_source open_file(std::filesystem::path const& path);
  /// Reads `bytes` in place (not copied); `name` is used in messages.
  static byte_source from_memory(std::string_view bytes, std::string name);

  byte_source(byte_source&& other) noexcept;
  byte_source& operator=(byte_source&& other) noexcept;
  byte_source(byte_source const&) = delete;
  byte_source& operator=(byte_source const&) = delete;
  ~byte_source();

  /// Unconsumed bytes available now.
  [[nodiscard]] char const* data() const noexcept { return begin_; }
  [[nodiscard]] std::size_t size() const noexcept { return static_cast<std::size_t>(end_ - begin_); }
  /// Absolute offset of data() in the input.
  [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }
  /// Drop `n` <= size() bytes from the front.
  void consume(std::size_t n) noexcept
  {
    begin_ += n;
    offset_ += n;
  }
  /**
   * Make at least `min_bytes` available if the input has them (reads whole blocks).
   * @return size() >= min_bytes; false means the input ends first.
   * @throws trace_error on a read error
   */
  bool fill(std::size_t min_bytes);
  /// True when every byte has been made available (further fill() calls add nothing).
  [[nodiscard]] bool exhausted() const noexcept { return eof_; }
  /// The name used in messages (the path, or the memory name).
  [[nodiscard]] std::string const& name() const noexcept { return name_; }
  /// Total size when known (regular files: from the file system; memory: the length), else 0.
  [[nodiscard]] std::uint64_t total_size() const noexcept { return total_size_; }
  /// False for a pipe, a FIFO, a terminal or a device: no size until the end is read.
  [[nodiscard]] bool size_known() const noexcept { return size_known_; }

 private:
  byte_source() = default;

  std::FILE* file_{nullptr};
  std::vector<char> buffer_;
  char const* begin_{nullptr};
  char const* end_{nullptr};
  std::uint64_t offset_{0};
  std::uint64_t total_size_{0};
  bool size_known_{false};
  bool eof_{false};
  std::string name_;
};

/**
 * The next physical line of `src`, without "\n" or "\r\n". It stays in the window (so
 * `line` stays valid) until the caller consumes `consume` bytes. Increments `line_no`.
 * @return false at the end of the input
 * @throws trace_error naming line `line_no + 1` if it is longer than `max_bytes`
 */
bool read_line(byte_source& src, std::string_view& line, std::size_t& consume, std::uint64_t& line_no,
               std::size_t max_bytes);

/// "trace 'NAME' line N: what"
[[noreturn]] void throw_at_line(std::string const& name, std::uint64_t line, std::string_view what);
/// "trace 'NAME' offset N: what"
[[noreturn]] void throw_at_offset(std::string const& name, std::uint64_t offset, std::string_view what);

/// Quote `text` for an error message, escaping control bytes and limiting the length.
[[nodiscard]] std::string quote_for_message(std::string_view text);

}  // namespace tierpool::trace::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// byte_source.cpp — owns the input window of every trace reader (detail/byte_source.hpp)
// and the wording of reader errors ("trace 'FILE' line N: ..." / "... offset N: ...").
#include "trace/detail/byte_source.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include <sys/stat.h>

namespace tierpool::trace::detail {

byte_source byte_source::open_file(std::filesystem::path const& path)
{
  byte_source s;
  s.name_ = path.string();
  errno = 0;
  s.file_ = std::fopen(s.name_.c_str(), "rb");
  if (s.file_ == nullptr) {
    int const err = errno;
    throw trace_error("cannot open trace '" + s.name_ + "': " +
                      (err != 0 ? std::generic_category().message(err) : std::string("unknown error")));
  }
  std::setvbuf(s.file_, nullptr, _IONBF, 0);  // we read whole blocks ourselves
  // What was opened, not what the path names now (one look: a FIFO or /dev/stdin is opened
  // once and never again). A directory opens on Linux, and only its read fails.
  struct stat st {};
  if (::fstat(::fileno(s.file_), &st) == 0) {
    if (S_ISDIR(st.st_mode)) { throw trace_error("cannot read trace '" + s.name_ + "': it is a directory"); }
    if (S_ISREG(st.st_mode)) {
      s.total_size_ = static_cast<std::uint64_t>(st.st_size);
      s.size_known_ = true;
    }
  }
  s.buffer_.resize(kBlockBytes);
  s.begin_ = s.buffer_.data();
  s.end_ = s.begin_;
  return s;
}

byte_source byte_source::from_memory(std::string_view bytes, std::string name)
{
  byte_source s;
  s.name_ = std::move(name);
  s.begin_ = bytes.data();
  s.end_ = bytes.data() + bytes.size();
  s.total_size_ = bytes.size();
  s.size_known_ = true;
  s.eof_ = true;
  return s;
}

byte_source::byte_source(byte_source&& other) noexcept
  : file_(std::exchange(other.file_, nullptr)),
    buffer_(std::move(other.buffer_)),
    begin_(std::exchange(other.begin_, nullptr)),
    end_(std::exchange(other.end_, nullptr)),
    offset_(other.offset_),
    total_size_(other.total_size_),
    size_known_(other.size_known_),
    eof_(other.eof_),
    name_(std::move(other.name_))
{
}

byte_source& byte_source::operator=(byte_source&& other) noexcept
{
  if (this != &other) {
    if (file_ != nullptr) { std::fclose(file_); }
    file_ = std::exchange(other.file_, nullptr);
    buffer_ = std::move(other.buffer_);  // moving a vector keeps its data pointer
    begin_ = std::exchange(other.begin_, nullptr);
    end_ = std::exchange(other.end_, nullptr);
    offset_ = other.offset_;
    total_size_ = other.total_size_;
    size_known_ = other.size_known_;
    eof_ = other.eof_;
    name_ = std::move(other.name_);
  }
  return *this;
}

byte_source::~byte_source()
{
  if (file_ != nullptr) { std::fclose(file_); }
}

bool byte_source::fill(std::size_t min_bytes)
{
  if (size() >= min_bytes) { return true; }
  if (eof_ || file_ == nullptr) { return false; }
  // Move the unconsumed tail to the front, grow if one item is larger than the buffer.
  std::size_t const kept = size();
  if (kept > 0 && begin_ != buffer_.data()) { std::memmove(buffer_.data(), begin_, kept); }
  if (buffer_.size() < min_bytes) { buffer_.resize(std::max(min_bytes, buffer_.size() * 2)); }
  char* const base = buffer_.data();
  std::size_t have = kept;
  while (have < min_bytes && !eof_) {
    std::size_t const wanted = buffer_.size() - have;
    std::size_t const got = std::fread(base + have, 1, wanted, file_);
    have += got;
    if (got < wanted) {  // a short read is the end of the file or an error
      if (std::ferror(file_) != 0) {
        begin_ = base;
        end_ = base + have;
        throw trace_error("read error on trace '" + name_ + "' near offset " + std::to_string(offset_ + have));
      }
      eof_ = true;
    }
  }
  begin_ = base;
  end_ = base + have;
  return have >= min_bytes;
}

bool read_line(byte_source& src, std::string_view& line, std::size_t& consume, std::uint64_t& line_no,
               std::size_t max_bytes)
{
  std::size_t scanned = 0;
  for (;;) {
    char const* const base = src.data();
    std::size_t const n = src.size();
    auto const* nl = n > scanned ? static_cast<char const*>(std::memchr(base + scanned, '\n', n - scanned)) : nullptr;
    if (nl != nullptr) {
      auto const len = static_cast<std::size_t>(nl - base);
      line = std::string_view(base, len);
      consume = len + 1;
      break;
    }
    if (n > max_bytes) {
      throw_at_line(src.name(), line_no + 1,
                    "line longer than " + std::to_string(max_bytes) + " bytes (is this really a text file?)");
    }
    scanned = n;
    if (!src.fill(n + 1)) {
      if (src.size() == 0) { return false; }
      line = std::string_view(src.data(), src.size());  // the last line has no newline
      consume = src.size();
      break;
    }
  }
  ++line_no;
  if (!line.empty() && line.back() == '\r') { line.remove_suffix(1); }
  return true;
}

void throw_at_line(std::string const& name, std::uint64_t line, std::string_view what)
{
  throw trace_error("trace '" + name + "' line " + std::to_string(line) + ": " + std::string(what));
}

void throw_at_offset(std::string const& name, std::uint64_t offset, std::string_view what)
{
  throw trace_error("trace '" + name + "' offset " + std::to_string(offset) + ": " + std::string(what));
}

std::string quote_for_message(std::string_view text)
{
  constexpr std::size_t kMaxShown = 40;  // keeps one bad token from flooding a terminal
  std::string out = "'";
  std::size_t shown = 0;
  for (char c : text) {
    if (shown++ == kMaxShown) {
      out += "...";
      break;
    }
    auto const u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4U];
      out += hex[u & 0xFU];
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

}  // namespace tierpool::trace::detail

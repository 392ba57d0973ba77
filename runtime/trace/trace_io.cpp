// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_io.cpp — the entry points of include/tierpool/trace.hpp: format names,
// open_reader() with format detection, read_all(), and the writer (text or binary,
// buffered, one fwrite per 1 MiB).
#include "trace/detail/codec.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

namespace tierpool::trace {

// ---- names ---------------------------------------------------------------------------

format parse_format(std::string_view text)
{
  if (text == "auto" || text == "automatic") { return format::automatic; }
  if (text == "text" || text == "tpt") { return format::text; }
  if (text == "binary" || text == "tpb") { return format::binary; }
  if (text == "oracle_general" || text == "oracleGeneral") { return format::oracle_general; }
  if (text == "csv") { return format::csv; }
  throw logic_error("unknown trace format '" + std::string(text) +
                    "' (valid: auto, text, binary, oracle_general, oracleGeneral, csv)");
}

std::string_view to_string(format f) noexcept
{
  switch (f) {
    case format::automatic: return "auto";
    case format::text: return "text";
    case format::binary: return "binary";
    case format::oracle_general: return "oracle_general";
    case format::csv: return "csv";
  }
  return "unknown";
}

std::string_view to_string(event_kind k) noexcept
{
  switch (k) {
    case event_kind::allocate: return "allocate";
    case event_kind::free: return "free";
    case event_kind::access: return "access";
    case event_kind::prefetch: return "prefetch";
    case event_kind::compute: return "compute";
    case event_kind::release: return "release";
    case event_kind::phase: return "phase";
    case event_kind::discard: return "discard";
  }
  return "unknown";
}

std::size_t reader::next_batch(std::span<event> out)
{
  std::size_t n = 0;
  while (n < out.size() && next(out[n])) { ++n; }
  return n;
}

// ---- detection -----------------------------------------------------------------------

namespace {

std::string lower_extension(std::filesystem::path const& p)
{
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  return ext;
}

// Text has no NUL and few control bytes; a binary record stream has many zero bytes.
bool looks_binary(std::string_view head) noexcept
{
  for (char c : head) {
    auto const u = static_cast<unsigned char>(c);
    if (u == 0 || (u < 0x20U && u != '\n' && u != '\r' && u != '\t')) { return true; }
  }
  return false;
}

constexpr std::size_t kSniffBytes = 4096;
constexpr std::size_t kOracleRecordBytes = 24;

// The format of an input whose first bytes are `head`, of `size` bytes in all (nullopt: a
// pipe, not known before its end), with the (lower-case) extension `ext` ("" for memory).
// `why` collects the reasons on failure.
std::optional<format> detect(std::string_view head, std::optional<std::uint64_t> size, std::string const& ext,
                             std::string& why)
{
  if (head.starts_with(detail::kBinaryMagic)) { return format::binary; }
  if (head.starts_with(detail::kTextHeaderPrefix)) { return format::text; }
  if (ext == ".tpb") { return format::binary; }  // the reader reports the bad magic
  if (ext == ".tpt") { return format::text; }    // the reader reports the missing header
  if (ext == ".csv") { return format::csv; }
  if (ext == ".bin" || ext == ".oraclegeneral") { return format::oracle_general; }
  bool const compressed = ext == ".zst" || ext == ".gz" || ext == ".xz" || ext == ".bz2";
  if (!size) {
    // A pipe: the size is not known before its end. Binary content is read as records; the
    // reader reports a trailing partial record at its offset.
    if (!compressed && !head.empty() && looks_binary(head)) { return format::oracle_general; }
  } else if (*size % kOracleRecordBytes == 0 && *size > 0 && looks_binary(head)) {
    return format::oracle_general;
  }
  why = "no '# tierpool-trace' header line, no TPTRACE magic, ";
  if (compressed) {
    why += "and the file is compressed (decompress it first)";
  } else if (size ? *size == 0 : head.empty()) {
    why += "and the input is empty";
  } else if (size && *size % kOracleRecordBytes != 0) {
    why += "and the size " + std::to_string(*size) + " is not a multiple of 24 (oracleGeneral)";
  } else {
    why += "and the content is text but the extension is not .csv";
  }
  return std::nullopt;
}

std::unique_ptr<reader> make_reader(format f, detail::byte_source src, reader_options const& o)
{
  switch (f) {
    case format::text: return detail::make_text_reader(std::move(src));
    case format::binary: return detail::make_binary_reader(std::move(src));
    case format::oracle_general: return detail::make_oracle_general_reader(std::move(src));
    case format::csv: return detail::make_csv_reader(std::move(src), o.csv);
    case format::automatic: break;
  }
  throw logic_error("make_reader: format must be resolved");
}

[[noreturn]] void undetected(std::string const& name, std::string const& why)
{
  throw trace_error("trace '" + name + "': cannot detect the format (" + why +
                    "); give it explicitly (text, binary, oracle_general or csv)");
}

format detect_open(detail::byte_source& src, std::filesystem::path const& path)
{
  // One stream, peeked: the sniffed bytes stay in the window for the reader.
  src.fill(kSniffBytes);
  std::string_view const head(src.data(), std::min(src.size(), kSniffBytes));
  std::optional<std::uint64_t> size;
  if (src.size_known()) {
    size = src.total_size();
  } else if (src.exhausted()) {
    size = src.size();  // a short pipe: all of it is in the window
  }
  std::string why;
  auto const f = detect(head, size, lower_extension(path), why);
  if (!f) { undetected(src.name(), why); }
  return *f;
}

}  // namespace

format detect_format(std::filesystem::path const& path)
{
  auto src = detail::byte_source::open_file(path);
  return detect_open(src, path);
}

format output_format_for(std::filesystem::path const& path) noexcept
{
  return lower_extension(path) == ".tpb" ? format::binary : format::text;
}

std::unique_ptr<reader> open_reader(std::filesystem::path const& path, reader_options const& options)
{
  auto src = detail::byte_source::open_file(path);
  format f = options.fmt;
  if (f == format::automatic) { f = detect_open(src, path); }
  return make_reader(f, std::move(src), options);
}

std::unique_ptr<reader> open_memory_reader(std::string_view bytes, reader_options const& options, std::string name)
{
  format f = options.fmt;
  if (f == format::automatic) {
    std::string why;
    auto const d = detect(bytes.substr(0, kSniffBytes), bytes.size(), "", why);
    if (!d) { undetected(name, why); }
    f = *d;
  }
  return make_reader(f, detail::byte_source::from_memory(bytes, std::move(name)), options);
}

std::vector<event> read_all(std::filesystem::path const& path, reader_options const& options)
{
  auto r = open_reader(path, options);
  std::vector<event> events;
  if (r->encoding() == format::oracle_general) {
    // Fixed-size records: the file's size bounds the count (a pipe has none: grown instead).
    std::error_code ec;
    auto const bytes = std::filesystem::file_size(path, ec);
    if (!ec) { events.reserve(static_cast<std::size_t>(bytes / kOracleRecordBytes)); }
  }
  // Batches decoded in place at the end of the vector, never past what was reserved (a
  // resize past the capacity would double it for the last few events).
  constexpr std::size_t kBatch = 512;
  for (;;) {
    std::size_t const have = events.size();
    std::size_t const room = events.capacity() - have;
    if (room == 0) {  // full (or nothing reserved): one event decides whether to grow
      event e;
      if (!r->next(e)) { break; }
      events.push_back(std::move(e));
      continue;
    }
    std::size_t const want = std::min(room, kBatch);
    events.resize(have + want);
    std::size_t const n = r->next_batch(std::span<event>(events.data() + have, want));
    events.resize(have + n);
    if (n == 0) { break; }
  }
  return events;
}

// ---- writer --------------------------------------------------------------------------

namespace {
constexpr std::size_t kWriteBufferBytes = std::size_t{1} << 20U;  // one fwrite per MiB
}  // namespace

struct writer::impl {
  std::string name;
  std::FILE* file{nullptr};
  format fmt{format::text};
  std::string buffer;
  std::uint64_t prev_time{0};
  std::uint64_t events{0};

  ~impl()
  {
    if (file != nullptr) { std::fclose(file); }
  }

  [[noreturn]] void fail(char const* what, int err) const
  {
    throw trace_error(std::string(what) + " trace '" + name + "': " +
                      (err != 0 ? std::generic_category().message(err) : std::string("I/O error")));
  }

  void drain()
  {
    if (buffer.empty()) { return; }
    errno = 0;
    std::size_t const put = std::fwrite(buffer.data(), 1, buffer.size(), file);
    if (put != buffer.size()) { fail("cannot write", errno); }
    buffer.clear();
  }
};

writer::writer(std::filesystem::path const& path, format fmt) : impl_(std::make_unique<impl>())
{
  if (fmt == format::automatic) { fmt = output_format_for(path); }
  if (fmt != format::text && fmt != format::binary) {
    throw logic_error("trace writer: cannot write format '" + std::string(to_string(fmt)) +
                      "' (valid: text, binary)");
  }
  impl_->name = path.string();
  impl_->fmt = fmt;
  errno = 0;
  impl_->file = std::fopen(impl_->name.c_str(), "wb");
  if (impl_->file == nullptr) { impl_->fail("cannot create", errno); }
  impl_->buffer.reserve(kWriteBufferBytes + 4096);
  if (fmt == format::text) {
    impl_->buffer += detail::kTextHeader;
    impl_->buffer += '\n';
  } else {
    detail::append_binary_header(impl_->buffer);
  }
}

writer::~writer()
{
  try {
    close();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor cannot report; close() does
  }
}

writer::writer(writer&&) noexcept = default;
writer& writer::operator=(writer&& other) noexcept
{
  if (this != &other) {
    // Buffered events of the file being replaced are written first, as the destructor does
    // (a defaulted move would have dropped them with the old buffer).
    try {
      close();
    } catch (...) {  // NOLINT(bugprone-empty-catch): noexcept; close() reports when called directly
    }
    impl_ = std::move(other.impl_);
  }
  return *this;
}

void writer::write(event const& e)
{
  if (!impl_ || impl_->file == nullptr) { throw trace_error("trace writer: write after close"); }
  if (e.name.size() > detail::kMaxNameBytes) {
    throw logic_error("trace writer: a name of " + std::to_string(e.name.size()) + " bytes exceeds the limit of " +
                      std::to_string(detail::kMaxNameBytes) + " bytes");
  }
  if (e.hints != 0) {
    if (auto const why = detail::hints_problem(e); !why.empty()) {
      throw logic_error("trace writer: " + std::string(why) + " (readers reject it)");
    }
  }
  if (impl_->fmt == format::text) {
    detail::append_text(impl_->buffer, e);
    impl_->buffer += '\n';
  } else {
    detail::append_binary(impl_->buffer, e, impl_->prev_time);
  }
  ++impl_->events;
  if (impl_->buffer.size() >= kWriteBufferBytes) { impl_->drain(); }
}

void writer::flush()
{
  if (!impl_ || impl_->file == nullptr) { return; }
  impl_->drain();
  if (std::fflush(impl_->file) != 0) { impl_->fail("cannot write", errno); }
}

void writer::close()
{
  if (!impl_ || impl_->file == nullptr) { return; }
  std::FILE* const f = impl_->file;
  try {
    impl_->drain();
  } catch (...) {
    impl_->file = nullptr;
    std::fclose(f);
    throw;
  }
  impl_->file = nullptr;
  errno = 0;
  if (std::fclose(f) != 0) { impl_->fail("cannot close", errno); }
}

format writer::encoding() const noexcept { return impl_ ? impl_->fmt : format::text; }

std::uint64_t writer::events_written() const noexcept { return impl_ ? impl_->events : 0; }

}  // namespace tierpool::trace

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// binary_codec.cpp — owns the native binary encoding (`.tpb`): the 16-byte header, the
// record encoder and the binary reader. Layout (detail/codec.hpp, docs/chapters/traces.md):
//
//   header : "TPTRACE\0" | u32 version | u32 flags                    (little-endian)
//   record : tag | [zigzag varint time delta] | main fields | [varint stream] | [extras]
//
// A typical access record is 2-3 bytes. The reader decodes records straight from the
// byte_source window; a record that straddles a block boundary is decoded again after
// the next fill (decoding has no side effect until it succeeds).
#include "trace/detail/codec.hpp"

#include <array>
#include <cstring>
#include <limits>
#include <utility>

namespace tierpool::trace::detail {
namespace {

std::uint64_t zigzag(std::uint64_t delta) noexcept
{
  auto const s = static_cast<std::int64_t>(delta);
  return (delta << 1U) ^ static_cast<std::uint64_t>(s >> 63);
}

std::uint64_t unzigzag(std::uint64_t z) noexcept { return (z >> 1U) ^ (~(z & 1U) + 1U); }

void append_u32_le(std::string& out, std::uint32_t v)
{
  for (unsigned i = 0; i < 4; ++i) { out.push_back(static_cast<char>((v >> (8U * i)) & 0xFFU)); }
}

std::uint32_t load_u32_le(char const* p) noexcept
{
  std::uint32_t v = 0;
  for (unsigned i = 0; i < 4; ++i) { v |= static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])) << (8U * i); }
  return v;
}

bool main_has_tensor(event_kind k) noexcept
{
  return k == event_kind::allocate || k == event_kind::free || k == event_kind::access || k == event_kind::prefetch ||
         k == event_kind::release || k == event_kind::discard;
}

}  // namespace

void append_binary_header(std::string& out)
{
  out.append(kBinaryMagic.data(), kBinaryMagic.size());
  append_u32_le(out, schema_version);
  append_u32_le(out, 0);
}

void append_binary(std::string& out, event const& e, std::uint64_t& prev_time)
{
  unsigned tag = static_cast<unsigned>(e.kind) | (static_cast<unsigned>(e.mode) << kTagModeShift);
  if (e.time_ns != 0) { tag |= kTagHasTime; }
  if (e.stream != 0) { tag |= kTagHasStream; }
  bool const tensor_main = main_has_tensor(e.kind);
  unsigned extras = 0;
  if (e.tier != no_tier) { extras |= kExtraTier; }
  if (!tensor_main && e.tensor != 0) { extras |= kExtraTensor; }
  if (e.kind != event_kind::allocate && e.bytes != 0) { extras |= kExtraBytes; }
  if (e.kind != event_kind::compute && e.duration_ns != 0) { extras |= kExtraDuration; }
  if (e.kind != event_kind::phase && !e.name.empty()) { extras |= kExtraName; }
  if (e.hints != 0) { extras |= kExtraHints; }
  if (extras != 0) { tag |= kTagHasExtras; }

  out.push_back(static_cast<char>(tag));
  if (e.time_ns != 0) {
    append_varint(out, zigzag(e.time_ns - prev_time));
    prev_time = e.time_ns;
  }
  switch (e.kind) {
    case event_kind::allocate:
      append_varint(out, e.tensor);
      append_varint(out, e.bytes);
      break;
    case event_kind::free:
    case event_kind::access:
    case event_kind::release:
    case event_kind::discard:
    case event_kind::prefetch: append_varint(out, e.tensor); break;
    case event_kind::compute: append_varint(out, e.duration_ns); break;
    case event_kind::phase:
      append_varint(out, e.name.size());
      out += e.name;
      break;
  }
  if (e.stream != 0) { append_varint(out, e.stream); }
  if (extras != 0) {
    append_varint(out, extras);
    if ((extras & kExtraTier) != 0U) { append_varint(out, e.tier); }
    if ((extras & kExtraTensor) != 0U) { append_varint(out, e.tensor); }
    if ((extras & kExtraBytes) != 0U) { append_varint(out, e.bytes); }
    if ((extras & kExtraDuration) != 0U) { append_varint(out, e.duration_ns); }
    if ((extras & kExtraName) != 0U) {
      append_varint(out, e.name.size());
      out += e.name;
    }
    if ((extras & kExtraHints) != 0U) { out.push_back(static_cast<char>(e.hints)); }
  }
}

namespace {

class binary_reader final : public reader {
 public:
  explicit binary_reader(byte_source src) : src_(std::move(src)) {}

  bool next(event& out) override
  {
    if (!header_read_) { read_header(); }
    for (;;) {
      std::size_t const have = src_.size();
      if (have == 0 && !src_.fill(1)) { return false; }
      std::size_t const used = decode(src_.data(), src_.size(), out);
      if (used != 0) {
        src_.consume(used);
        return true;
      }
      // The record continues past the window: read more and decode it again.
      std::size_t const now = src_.size();
      if (!src_.fill(std::max(now + 1, need_))) {
        throw_at_offset(src_.name(), src_.offset(),
                        "truncated record (the file ends " + std::to_string(src_.size()) +
                          " bytes into it; expected " + std::string(expected_) + ")");
      }
    }
  }

  std::size_t next_batch(std::span<event> out) override
  {
    std::size_t n = 0;
    while (n < out.size() && next(out[n])) { ++n; }  // next() is final: inlined here
    return n;
  }

  [[nodiscard]] format encoding() const noexcept override { return format::binary; }

 private:
  void read_header()
  {
    header_read_ = true;
    src_.fill(kBinaryHeaderBytes);
    char const* const p = src_.data();
    std::size_t const n = src_.size();
    std::size_t const cmp = std::min(n, kBinaryMagic.size());
    if (cmp > 0 && std::memcmp(p, kBinaryMagic.data(), cmp) != 0) {
      throw_at_offset(src_.name(), 0,
                      "bad magic " + quote_for_message(std::string_view(p, cmp)) +
                        " (expected \"TPTRACE\\0\": not a tierpool binary trace)");
    }
    if (n < kBinaryHeaderBytes) {
      throw_at_offset(src_.name(), n,
                      "truncated header (" + std::to_string(n) + " bytes; expected 16: magic, version, flags)");
    }
    std::uint32_t const version = load_u32_le(p + 8);
    if (version != schema_version) {
      throw_at_offset(src_.name(), 8,
                      "unknown version " + std::to_string(version) + " (this build reads version " +
                        std::to_string(schema_version) + ")");
    }
    std::uint32_t const flags = load_u32_le(p + 12);
    if (flags != 0) {
      throw_at_offset(src_.name(), 12, "unknown header flags " + std::to_string(flags) + " (expected 0)");
    }
    src_.consume(kBinaryHeaderBytes);
  }

  [[noreturn]] void bad(std::size_t rel, std::string_view what) const
  {
    throw_at_offset(src_.name(), src_.offset() + rel, what);
  }

  // Reads a varint at p[i..n); returns false (and sets expected_) if the window ends first.
  // The one-byte case (most ids of small traces, stream numbers, time deltas) is inline.
  [[gnu::always_inline]] bool varint(char const* p, std::size_t n, std::size_t& i, std::uint64_t& v, char const* what)
  {
    if (i < n) [[likely]] {
      auto const b = static_cast<unsigned char>(p[i]);
      if ((b & 0x80U) == 0U) {
        v = b;
        ++i;
        return true;
      }
    }
    return varint_slow(p, n, i, v, what);
  }

  bool varint_slow(char const* p, std::size_t n, std::size_t& i, std::uint64_t& v, char const* what)
  {
    v = 0;
    std::size_t const start = i;
    for (unsigned shift = 0;; shift += 7U) {
      if (i >= n) {
        expected_ = what;
        need_ = 0;
        return false;
      }
      auto const b = static_cast<unsigned char>(p[i++]);
      if (shift == 63U && (b & 0xFEU) != 0U) {
        bad(start, std::string("bad varint for ") + what + " (more than 64 bits)");
      }
      v |= static_cast<std::uint64_t>(b & 0x7FU) << shift;
      if ((b & 0x80U) == 0U) { return true; }
    }
  }

  bool varint32(char const* p, std::size_t n, std::size_t& i, std::uint32_t& v, char const* what)
  {
    std::size_t const start = i;
    std::uint64_t w = 0;
    if (!varint(p, n, i, w, what)) { return false; }
    if (w > std::numeric_limits<std::uint32_t>::max()) {
      bad(start, std::string("value ") + std::to_string(w) + " for " + what + " does not fit in 32 bits");
    }
    v = static_cast<std::uint32_t>(w);
    return true;
  }

  bool name(char const* p, std::size_t n, std::size_t& i, std::string& out, char const* what)
  {
    std::size_t const start = i;
    std::uint64_t len = 0;
    if (!varint(p, n, i, len, what)) { return false; }
    if (len > kMaxNameBytes) {
      bad(start, "name length " + std::to_string(len) + " exceeds the limit of " + std::to_string(kMaxNameBytes) +
                   " bytes");
    }
    auto const l = static_cast<std::size_t>(len);
    if (n - i < l) {
      expected_ = what;
      need_ = i + l;
      return false;
    }
    out.assign(p + i, l);
    i += l;
    return true;
  }

  // Decodes one record from p[0..n); returns its length, or 0 when it needs more bytes.
  // Touches no reader state other than expected_/need_ unless it succeeds.
  std::size_t decode(char const* p, std::size_t n, event& out)
  {
    auto const tag = static_cast<unsigned char>(p[0]);
    unsigned const kind = tag & kTagKindMask;
    unsigned const mode = (tag & kTagModeMask) >> kTagModeShift;
    // Every kind the tag's three bits can hold is one (discard took the last code): a new
    // kind needs a new schema version.
    static_assert(static_cast<unsigned>(event_kind::discard) == kTagKindMask);
    if (mode > static_cast<unsigned>(access_kind::write_discard)) {
      bad(0, "unknown access mode " + std::to_string(mode) + " in record tag (expected 0..2)");
    }
    reset_event(out);
    out.kind = static_cast<event_kind>(kind);
    out.mode = static_cast<access_kind>(mode);
    std::size_t i = 1;
    std::uint64_t time = 0;
    if ((tag & kTagHasTime) != 0U) {
      std::uint64_t z = 0;
      if (!varint(p, n, i, z, "the time delta")) { return 0; }
      time = prev_time_ + unzigzag(z);
      out.time_ns = time;
    }
    switch (out.kind) {
      case event_kind::allocate:
        if (!varint(p, n, i, out.tensor, "the tensor id")) { return 0; }
        if (!varint(p, n, i, out.bytes, "the size in bytes")) { return 0; }
        break;
      case event_kind::free:
      case event_kind::access:
      case event_kind::prefetch:
      case event_kind::release:
      case event_kind::discard:
        if (!varint(p, n, i, out.tensor, "the tensor id")) { return 0; }
        break;
      case event_kind::compute:
        if (!varint(p, n, i, out.duration_ns, "the duration")) { return 0; }
        break;
      case event_kind::phase:
        if (!name(p, n, i, out.name, "the phase label")) { return 0; }
        break;
    }
    if ((tag & kTagHasStream) != 0U) {
      if (!varint32(p, n, i, out.stream, "the stream")) { return 0; }
    }
    if ((tag & kTagHasExtras) != 0U) {
      std::size_t const at = i;
      std::uint64_t extras = 0;
      if (!varint(p, n, i, extras, "the extra-fields mask")) { return 0; }
      if ((extras & ~std::uint64_t{kExtraKnown}) != 0U) {
        bad(at, "unknown extra-field bits " + std::to_string(extras) + " (expected a subset of " +
                  std::to_string(kExtraKnown) + ")");
      }
      bool const tensor_main = main_has_tensor(out.kind);
      if (((extras & kExtraTensor) != 0U && tensor_main) ||
          ((extras & kExtraBytes) != 0U && out.kind == event_kind::allocate) ||
          ((extras & kExtraDuration) != 0U && out.kind == event_kind::compute) ||
          ((extras & kExtraName) != 0U && out.kind == event_kind::phase)) {
        bad(at, "an extra field repeats a main field of this event kind");
      }
      if ((extras & kExtraHints) != 0U && out.kind != event_kind::allocate) {
        bad(at, "hints on an event other than alloc (only alloc takes hints)");
      }
      if ((extras & kExtraTier) != 0U && !varint32(p, n, i, out.tier, "the tier")) { return 0; }
      if ((extras & kExtraTensor) != 0U && !varint(p, n, i, out.tensor, "the tensor id")) { return 0; }
      if ((extras & kExtraBytes) != 0U && !varint(p, n, i, out.bytes, "the size in bytes")) { return 0; }
      if ((extras & kExtraDuration) != 0U && !varint(p, n, i, out.duration_ns, "the duration")) { return 0; }
      if ((extras & kExtraName) != 0U && !name(p, n, i, out.name, "the name")) { return 0; }
      if ((extras & kExtraHints) != 0U) {
        if (i >= n) {
          expected_ = "the hints";
          need_ = 0;
          return 0;
        }
        std::size_t const hat = i;
        out.hints = static_cast<std::uint8_t>(p[i++]);
        if (out.hints == 0U) { bad(hat, "hints byte 0 (a record without hints leaves out the field)"); }
        if (auto const why = hints_problem(out); !why.empty()) { bad(hat, why); }
      }
    }
    if ((tag & kTagHasTime) != 0U) { prev_time_ = time; }
    return i;
  }

  byte_source src_;
  bool header_read_{false};
  std::uint64_t prev_time_{0};
  char const* expected_{""};  // what the last incomplete decode was reading
  std::size_t need_{0};       // bytes the last incomplete decode needs, when known
};

}  // namespace

std::unique_ptr<reader> make_binary_reader(byte_source src) { return std::make_unique<binary_reader>(std::move(src)); }

}  // namespace tierpool::trace::detail

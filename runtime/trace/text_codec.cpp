// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// text_codec.cpp — owns the native text encoding (`# tierpool-trace v1`): format_text() /
// append_text() and the text reader. The grammar is in docs/chapters/traces.md; each
// error names the line and what was expected there.
#include "trace/detail/codec.hpp"

#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

namespace tierpool::trace {
namespace detail {
namespace {

// ---- writing -------------------------------------------------------------------------

void append_u64(std::string& out, std::uint64_t v)
{
  std::array<char, 24> buf{};
  auto const r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  out.append(buf.data(), r.ptr);
}

bool is_bare_char(char c) noexcept
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == ':' || c == '/' || c == '+' || c == '-';
}

// A label is written bare when that reads back unchanged, else quoted with escapes.
void append_label(std::string& out, std::string_view s)
{
  bool bare = !s.empty();
  for (char c : s) {
    if (!is_bare_char(c)) {
      bare = false;
      break;
    }
  }
  if (bare) {
    out += s;
    return;
  }
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    auto const u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20U || u == 0x7FU) {
          out += "\\x";
          out += hex[u >> 4U];
          out += hex[u & 0xFU];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_field(std::string& out, std::string_view key, std::uint64_t v)
{
  out += ' ';
  out += key;
  out += '=';
  append_u64(out, v);
}

}  // namespace

std::string_view hints_problem(event const& e) noexcept
{
  if (e.hints == 0) { return {}; }
  if (e.kind != event_kind::allocate) { return "hints on an event other than alloc (only alloc takes hints)"; }
  if ((e.hints & ~hint_known) != 0U) { return "unknown hint bits (known: recompute 1, lossy 2, nocompress 4)"; }
  if ((e.hints & hint_recomputable) != 0U && e.duration_ns == 0) {
    return "hint recompute without its cost (expected dur=<ns> > 0 on the alloc)";
  }
  if ((e.hints & hint_lossy_ok) != 0U && (e.hints & hint_no_compress) != 0U) {
    return "hints lossy and nocompress contradict each other";
  }
  return {};
}

std::string_view mode_keyword(access_kind m) noexcept
{
  switch (m) {
    case access_kind::read: return "read";
    case access_kind::read_write: return "rw";
    case access_kind::write_discard: return "wd";
  }
  return "read";
}

void append_text(std::string& out, event const& e)
{
  if (e.time_ns != 0) {
    out += '@';
    append_u64(out, e.time_ns);
    out += ' ';
  }
  switch (e.kind) {
    case event_kind::allocate:
      out += "alloc ";
      append_u64(out, e.tensor);
      out += ' ';
      append_u64(out, e.bytes);
      break;
    case event_kind::free:
      out += "free ";
      append_u64(out, e.tensor);
      break;
    case event_kind::release:
      out += "release ";
      append_u64(out, e.tensor);
      break;
    case event_kind::discard:
      out += "discard ";
      append_u64(out, e.tensor);
      break;
    case event_kind::access:
      out += mode_keyword(e.mode);
      out += ' ';
      append_u64(out, e.tensor);
      break;
    case event_kind::prefetch:
      out += "prefetch ";
      append_u64(out, e.tensor);
      break;
    case event_kind::compute:
      out += "compute ";
      append_u64(out, e.duration_ns);
      break;
    case event_kind::phase:
      out += "phase ";
      append_label(out, e.name);
      break;
  }
  bool const main_tensor = e.kind != event_kind::compute && e.kind != event_kind::phase;
  if (e.kind != event_kind::phase && !e.name.empty()) {
    out += " name=";
    append_label(out, e.name);
  }
  if (e.tier != no_tier) { append_field(out, "tier", e.tier); }
  if (e.stream != 0) { append_field(out, "s", e.stream); }
  if (!main_tensor && e.tensor != 0) { append_field(out, "id", e.tensor); }
  if (e.kind != event_kind::allocate && e.bytes != 0) { append_field(out, "bytes", e.bytes); }
  if (e.kind != event_kind::compute && e.duration_ns != 0) { append_field(out, "dur", e.duration_ns); }
  if (e.hints != 0) {
    out += " hints=";
    bool first = true;
    for (auto const& h : kHintNames) {
      if ((e.hints & h.bit) == 0U) { continue; }
      if (!first) { out += ','; }
      out += h.word;
      first = false;
    }
    std::uint8_t const unknown = e.hints & static_cast<std::uint8_t>(~hint_known);
    if (unknown != 0U) {  // the writer refuses these; format_text() shows them as a number
      if (!first) { out += ','; }
      append_u64(out, unknown);
    }
  }
  if (e.kind != event_kind::access && e.mode != access_kind::read) {
    out += " mode=";
    out += mode_keyword(e.mode);
  }
}

namespace {

// ---- reading -------------------------------------------------------------------------

// Fields a line can give, for "given twice" checks.
enum field_bit : unsigned {
  f_time = 1U << 0U,
  f_tensor = 1U << 1U,
  f_bytes = 1U << 2U,
  f_duration = 1U << 3U,
  f_name = 1U << 4U,
  f_tier = 1U << 5U,
  f_stream = 1U << 6U,
  f_mode = 1U << 7U,
  f_hints = 1U << 8U,
};

struct keyword_entry {
  std::string_view word;
  event_kind kind;
  access_kind mode;
};

constexpr std::array<keyword_entry, 11> kKeywords{{
  {"alloc", event_kind::allocate, access_kind::read},
  {"free", event_kind::free, access_kind::read},
  {"read", event_kind::access, access_kind::read},
  {"rw", event_kind::access, access_kind::read_write},
  {"write", event_kind::access, access_kind::read_write},  // alias of rw
  {"wd", event_kind::access, access_kind::write_discard},
  {"prefetch", event_kind::prefetch, access_kind::read},
  {"compute", event_kind::compute, access_kind::read},
  {"phase", event_kind::phase, access_kind::read},
  {"release", event_kind::release, access_kind::read},
  {"discard", event_kind::discard, access_kind::read},
}};

constexpr std::string_view kKeywordList = "alloc, free, read, rw, wd, prefetch, compute, phase, release, discard";
constexpr std::string_view kFieldList = "t, s, tier, id, bytes, dur, name, mode, hints";
constexpr std::string_view kHintList = "recompute, lossy or nocompress";

std::optional<std::uint64_t> parse_u64(std::string_view s) noexcept
{
  if (s.empty()) { return std::nullopt; }
  std::uint64_t v = 0;
  auto const r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc{} || r.ptr != s.data() + s.size()) { return std::nullopt; }
  return v;
}

bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }

// One token of a line: `value`, `key=value`, `"quoted"` or `key="quoted"`.
struct token {
  std::string_view key;    // empty for a positional value
  std::string_view value;  // points into the line or into the reader's scratch string
  bool quoted{false};
};

class text_reader final : public reader {
 public:
  explicit text_reader(byte_source src) : src_(std::move(src)) {}

  bool next(event& out) override
  {
    std::string_view line;
    for (;;) {
      if (!next_line(line)) {
        if (line_no_ == 0) { fail_at(1, "empty file: expected the header line '" + std::string(kTextHeader) + "'"); }
        return false;
      }
      if (line_no_ == 1) {
        check_header(line);
        continue;
      }
      if (parse_line(line, out)) { return true; }
    }
  }

  [[nodiscard]] format encoding() const noexcept override { return format::text; }

 private:
  [[noreturn]] void fail_at(std::uint64_t line, std::string_view what) const { throw_at_line(src_.name(), line, what); }
  [[noreturn]] void fail(std::string_view what) const { fail_at(line_no_, what); }

  bool next_line(std::string_view& line)
  {
    return read_line(src_, line, pending_consume_, line_no_, kMaxLineBytes);
  }

  void check_header(std::string_view line)
  {
    src_.consume(pending_consume_);
    while (!line.empty() && is_blank(line.back())) { line.remove_suffix(1); }
    if (line == kTextHeader) { return; }
    if (line.starts_with(kTextHeaderPrefix)) {
      auto const v = line.substr(kTextHeaderPrefix.size());
      if (parse_u64(v)) {
        fail("unknown version " + std::string(v) + " (this build reads version " + std::to_string(schema_version) +
             ")");
      }
    }
    fail("expected the header line '" + std::string(kTextHeader) + "', found " + quote_for_message(line));
  }

  // Reads the next token at `pos_` of `line_`; false at the end or at a comment.
  bool next_token(token& t)
  {
    std::string_view const s = line_;
    while (pos_ < s.size() && is_blank(s[pos_])) { ++pos_; }
    if (pos_ == s.size() || s[pos_] == '#') { return false; }
    t.key = {};
    t.quoted = false;
    std::size_t const start = pos_;
    if (s[pos_] != '"') {
      while (pos_ < s.size() && !is_blank(s[pos_]) && s[pos_] != '=' && s[pos_] != '"') { ++pos_; }
      if (pos_ < s.size() && s[pos_] == '=') {
        t.key = s.substr(start, pos_ - start);
        if (t.key.empty()) { fail("expected a field name before '='"); }
        ++pos_;
      } else if (pos_ < s.size() && s[pos_] == '"') {
        fail("unexpected '\"' inside " + quote_for_message(s.substr(start, pos_ - start)) +
             " (quote the whole value)");
      } else {
        t.value = s.substr(start, pos_ - start);
        return true;
      }
    }
    // A value after "key=" or a quoted value.
    if (pos_ < s.size() && s[pos_] == '"') {
      read_quoted(t);
    } else {
      std::size_t const vstart = pos_;
      while (pos_ < s.size() && !is_blank(s[pos_])) {
        if (s[pos_] == '"' || s[pos_] == '=') {
          fail("unexpected '" + std::string(1, s[pos_]) + "' in the value of field '" + std::string(t.key) + "'");
        }
        ++pos_;
      }
      t.value = s.substr(vstart, pos_ - vstart);
      if (t.value.empty()) { fail("field '" + std::string(t.key) + "' has no value"); }
    }
    return true;
  }

  void read_quoted(token& t)
  {
    std::string_view const s = line_;
    ++pos_;  // opening quote
    scratch_.clear();
    for (;;) {
      if (pos_ >= s.size()) { fail("unterminated quoted string (expected a closing '\"')"); }
      char const c = s[pos_++];
      if (c == '"') { break; }
      if (c != '\\') {
        scratch_ += c;
        continue;
      }
      if (pos_ >= s.size()) { fail("unterminated quoted string (expected a closing '\"')"); }
      char const e = s[pos_++];
      switch (e) {
        case '"': scratch_ += '"'; break;
        case '\\': scratch_ += '\\'; break;
        case 'n': scratch_ += '\n'; break;
        case 't': scratch_ += '\t'; break;
        case 'r': scratch_ += '\r'; break;
        case 'x': {
          auto hexval = [](char h) -> int {
            if (h >= '0' && h <= '9') { return h - '0'; }
            if (h >= 'a' && h <= 'f') { return h - 'a' + 10; }
            if (h >= 'A' && h <= 'F') { return h - 'A' + 10; }
            return -1;
          };
          int const hi = pos_ < s.size() ? hexval(s[pos_]) : -1;
          int const lo = pos_ + 1 < s.size() ? hexval(s[pos_ + 1]) : -1;
          if (hi < 0 || lo < 0) { fail("bad escape '\\x' (expected two hex digits)"); }
          scratch_ += static_cast<char>(static_cast<unsigned char>(hi * 16 + lo));
          pos_ += 2;
          break;
        }
        default:
          fail("bad escape '\\" + std::string(1, e) + "' (expected \\\", \\\\, \\n, \\t, \\r or \\xHH)");
      }
    }
    if (pos_ < s.size() && !is_blank(s[pos_]) && s[pos_] != '#') {
      fail("expected a blank after the closing '\"'");
    }
    t.value = scratch_;
    t.quoted = true;
  }

  std::uint64_t number(token const& t, std::string_view what)
  {
    auto const v = t.quoted ? std::nullopt : parse_u64(t.value);
    if (!v) {
      fail("bad number " + quote_for_message(t.value) + " for " + std::string(what) +
           " (expected an unsigned 64-bit integer)");
    }
    return *v;
  }

  std::uint32_t number32(token const& t, std::string_view what)
  {
    auto const v = t.quoted ? std::nullopt : parse_u64(t.value);
    if (!v || *v > std::numeric_limits<std::uint32_t>::max()) {
      fail("bad number " + quote_for_message(t.value) + " for " + std::string(what) +
           " (expected an unsigned 32-bit integer)");
    }
    return static_cast<std::uint32_t>(*v);
  }

  void mark(unsigned& given, unsigned bit, std::string_view field)
  {
    if ((given & bit) != 0U) { fail("field '" + std::string(field) + "' given twice"); }
    given |= bit;
  }

  static std::string_view usage(event_kind k) noexcept
  {
    switch (k) {
      case event_kind::allocate: return "alloc <tensor> <bytes>";
      case event_kind::free: return "free <tensor>";
      case event_kind::access: return "read|rw|wd <tensor>";
      case event_kind::prefetch: return "prefetch <tensor>";
      case event_kind::compute: return "compute <duration_ns>";
      case event_kind::phase: return "phase <label>";
      case event_kind::release: return "release <tensor>";
      case event_kind::discard: return "discard <tensor>";
    }
    return "";
  }

  // Parses one line into `out`; false for a blank or comment line.
  bool parse_line(std::string_view line, event& out)
  {
    line_ = line;
    pos_ = 0;
    token t;
    if (!next_token(t)) {
      src_.consume(pending_consume_);
      return false;
    }
    reset_event(out);
    unsigned given = 0;
    if (t.key.empty() && !t.quoted && t.value.starts_with('@')) {
      token tt = t;
      tt.value.remove_prefix(1);
      out.time_ns = number(tt, "the time '@'");
      given |= f_time;
      if (!next_token(t)) { fail("expected a keyword after the time (" + std::string(kKeywordList) + ")"); }
    }
    if (!t.key.empty() || t.quoted) {
      fail("expected a keyword (" + std::string(kKeywordList) + "), found " +
           quote_for_message(t.key.empty() ? t.value : t.key));
    }
    keyword_entry const* kw = nullptr;
    for (auto const& k : kKeywords) {
      if (k.word == t.value) {
        kw = &k;
        break;
      }
    }
    if (kw == nullptr) {
      fail("unknown keyword " + quote_for_message(t.value) + " (expected " + std::string(kKeywordList) + ")");
    }
    out.kind = kw->kind;
    out.mode = kw->mode;
    if (kw->kind == event_kind::access) { given |= f_mode; }  // the keyword is the mode
    unsigned const positional = kw->kind == event_kind::allocate ? 2U : 1U;
    unsigned seen = 0;
    while (next_token(t)) {
      if (t.key.empty()) {
        if (seen == positional) {
          fail("unexpected value " + quote_for_message(t.value) + " (expected '" + std::string(usage(kw->kind)) +
               "' then key=value fields)");
        }
        positional_value(kw->kind, seen++, t, out, given);
      } else {
        field(t, out, given);
      }
    }
    if (seen < positional) {
      static constexpr std::array<std::string_view, 2> alloc_names{"<tensor>", "<bytes>"};
      std::string_view missing = kw->kind == event_kind::allocate ? alloc_names[seen]
                                 : kw->kind == event_kind::compute ? "<duration_ns>"
                                 : kw->kind == event_kind::phase   ? "<label>"
                                                                   : "<tensor>";
      fail("missing " + std::string(missing) + " (expected '" + std::string(usage(kw->kind)) + "')");
    }
    if (auto const why = hints_problem(out); !why.empty()) { fail(why); }
    src_.consume(pending_consume_);
    return true;
  }

  void positional_value(event_kind k, unsigned index, token const& t, event& out, unsigned& given)
  {
    switch (k) {
      case event_kind::allocate:
        if (index == 0) {
          out.tensor = number(t, "<tensor>");
          mark(given, f_tensor, "id");
        } else {
          out.bytes = number(t, "<bytes>");
          mark(given, f_bytes, "bytes");
        }
        return;
      case event_kind::free:
      case event_kind::access:
      case event_kind::prefetch:
      case event_kind::release:
      case event_kind::discard:
        out.tensor = number(t, "<tensor>");
        mark(given, f_tensor, "id");
        return;
      case event_kind::compute:
        out.duration_ns = number(t, "<duration_ns>");
        mark(given, f_duration, "dur");
        return;
      case event_kind::phase:
        out.name.assign(t.value);
        mark(given, f_name, "name");
        return;
    }
  }

  void field(token const& t, event& out, unsigned& given)
  {
    std::string_view const k = t.key;
    if (k == "t") {
      mark(given, f_time, "t");
      out.time_ns = number(t, "t");
    } else if (k == "s") {
      mark(given, f_stream, "s");
      out.stream = number32(t, "s");
    } else if (k == "tier") {
      mark(given, f_tier, "tier");
      out.tier = number32(t, "tier");
    } else if (k == "id") {
      mark(given, f_tensor, "id");
      out.tensor = number(t, "id");
    } else if (k == "bytes") {
      mark(given, f_bytes, "bytes");
      out.bytes = number(t, "bytes");
    } else if (k == "dur") {
      mark(given, f_duration, "dur");
      out.duration_ns = number(t, "dur");
    } else if (k == "name") {
      mark(given, f_name, "name");
      out.name.assign(t.value);
    } else if (k == "mode") {
      mark(given, f_mode, "mode");
      if (t.value == "read") {
        out.mode = access_kind::read;
      } else if (t.value == "rw" || t.value == "write") {
        out.mode = access_kind::read_write;
      } else if (t.value == "wd") {
        out.mode = access_kind::write_discard;
      } else {
        fail("bad mode " + quote_for_message(t.value) + " (expected read, rw or wd)");
      }
    } else if (k == "hints") {
      mark(given, f_hints, "hints");
      out.hints = hints(t);
    } else {
      fail("unknown field " + quote_for_message(k) + " (expected " + std::string(kFieldList) + ")");
    }
  }

  // `hints=NAME[,NAME]...`: a comma-separated set of hint names, each at most once.
  std::uint8_t hints(token const& t)
  {
    if (t.quoted) { fail("field 'hints' must not be quoted (expected " + std::string(kHintList) + ")"); }
    std::uint8_t bits = 0;
    std::string_view rest = t.value;
    for (;;) {
      auto const comma = rest.find(',');
      std::string_view const word = rest.substr(0, comma);
      if (word.empty()) { fail("empty hint name in " + quote_for_message(t.value) + " (expected " + std::string(kHintList) + ")"); }
      std::uint8_t bit = 0;
      for (auto const& h : kHintNames) {
        if (h.word == word) { bit = h.bit; }
      }
      if (bit == 0U) { fail("unknown hint " + quote_for_message(word) + " (expected " + std::string(kHintList) + ")"); }
      if ((bits & bit) != 0U) { fail("hint " + quote_for_message(word) + " given twice"); }
      bits |= bit;
      if (comma == std::string_view::npos) { break; }
      rest.remove_prefix(comma + 1);
    }
    return bits;
  }

  byte_source src_;
  std::uint64_t line_no_{0};
  std::size_t pending_consume_{0};
  std::string_view line_;
  std::size_t pos_{0};
  std::string scratch_;
};

}  // namespace

std::unique_ptr<reader> make_text_reader(byte_source src) { return std::make_unique<text_reader>(std::move(src)); }

}  // namespace detail

std::string format_text(event const& e)
{
  std::string out;
  detail::append_text(out, e);
  return out;
}

}  // namespace tierpool::trace

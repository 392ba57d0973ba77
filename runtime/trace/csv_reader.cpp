// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// csv_reader.cpp — owns the csv import: one access per row, columns chosen by
// csv_options. Fields may be quoted ("a,b", "" for a quote) and are trimmed of blanks.
// Ids that are not unsigned integers are hashed with 64-bit FNV-1a of their text, so
// the same text always maps to the same id. Rows of size 0 are skipped, as in
// oracleGeneral.
#include "trace/detail/codec.hpp"

#include <charconv>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace tierpool::trace::detail {
namespace {

constexpr std::uint64_t kFnvOffset = 14695981039346656037ULL;  // FNV-1a 64-bit parameters
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;
constexpr unsigned kMaxTimeFractionDigits = 9;  // nanoseconds of a second

std::uint64_t fnv1a(std::string_view s) noexcept
{
  std::uint64_t h = kFnvOffset;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnvPrime;
  }
  return h;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) noexcept
{
  if (s.empty()) { return std::nullopt; }
  std::uint64_t v = 0;
  auto const r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc{} || r.ptr != s.data() + s.size()) { return std::nullopt; }
  return v;
}

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) noexcept
{
  if (a.size() != b.size()) { return false; }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != b[i]) { return false; }
  }
  return true;
}

class csv_reader final : public reader {
 public:
  csv_reader(byte_source src, csv_options const& o) : src_(std::move(src)), o_(o)
  {
    auto check = [](int col, char const* what, bool required) {
      if (col < -1 || (required && col < 0)) {
        throw logic_error(std::string("csv: ") + what + " must be a column number >= 0" +
                          (required ? "" : " or -1 (absent)") + ", not " + std::to_string(col));
      }
    };
    check(o_.id_column, "id_column", true);
    check(o_.time_column, "time_column", false);
    check(o_.size_column, "size_column", false);
    check(o_.op_column, "op_column", false);
    if (o_.delimiter == '"' || o_.delimiter == '\n' || o_.delimiter == '\r') {
      throw logic_error("csv: the delimiter cannot be a quote or a line break");
    }
    if (o_.time_unit_ns == 0) { throw logic_error("csv: time_unit_ns must be > 0"); }
  }

  bool next(event& out) override
  {
    std::string_view line;
    for (;;) {
      if (!read_line(src_, line, consume_, line_no_, kMaxLineBytes)) { return false; }
      if (line_no_ == 1 && o_.header) {
        src_.consume(consume_);
        continue;
      }
      if (line.find_first_not_of(" \t") == std::string_view::npos) {
        src_.consume(consume_);
        continue;
      }
      split(line);
      bool const keep = fill(out);
      src_.consume(consume_);
      if (keep) { return true; }
    }
  }

  [[nodiscard]] format encoding() const noexcept override { return format::csv; }

 private:
  [[noreturn]] void fail(std::string_view what) const { throw_at_line(src_.name(), line_no_, what); }

  static std::string_view trim(std::string_view s, char delim) noexcept
  {
    auto blank = [delim](char c) { return (c == ' ' || c == '\t') && c != delim; };
    while (!s.empty() && blank(s.front())) { s.remove_prefix(1); }
    while (!s.empty() && blank(s.back())) { s.remove_suffix(1); }
    return s;
  }

  void split(std::string_view line)
  {
    fields_.clear();
    scratch_.clear();
    scratch_.reserve(line.size());  // unquoted text is never longer: views into it stay valid
    std::size_t i = 0;
    char const d = o_.delimiter;
    for (;;) {
      std::size_t start = i;
      while (start < line.size() && (line[start] == ' ' || line[start] == '\t') && line[start] != d) { ++start; }
      if (start < line.size() && line[start] == '"') {
        std::size_t const from = scratch_.size();
        std::size_t j = start + 1;
        for (;;) {
          if (j >= line.size()) { fail("unterminated quoted field (expected a closing '\"')"); }
          if (line[j] == '"') {
            if (j + 1 < line.size() && line[j + 1] == '"') {
              scratch_ += '"';
              j += 2;
              continue;
            }
            ++j;
            break;
          }
          scratch_ += line[j++];
        }
        while (j < line.size() && (line[j] == ' ' || line[j] == '\t') && line[j] != d) { ++j; }
        if (j < line.size() && line[j] != d) {
          fail("unexpected text after the closing quote of column " + std::to_string(fields_.size()));
        }
        fields_.emplace_back(scratch_.data() + from, scratch_.size() - from);
        i = j;
      } else {
        std::size_t const end = line.find(d, start);
        std::size_t const stop = end == std::string_view::npos ? line.size() : end;
        fields_.push_back(trim(line.substr(start, stop - start), d));
        i = stop;
      }
      if (i >= line.size()) { break; }
      ++i;  // the delimiter
    }
  }

  std::string_view column(int c, char const* what) const
  {
    auto const idx = static_cast<std::size_t>(c);
    if (idx >= fields_.size()) {
      fail("expected " + std::string(what) + " in column " + std::to_string(c) + ", but the row has " +
           std::to_string(fields_.size()) + " column" + (fields_.size() == 1 ? "" : "s"));
    }
    return fields_[idx];
  }

  std::uint64_t parse_time(std::string_view s) const
  {
    std::size_t const dot = s.find('.');
    std::string_view const whole = s.substr(0, dot);
    std::string_view frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
    auto bad = [&] {
      fail("bad time " + quote_for_message(s) + " (expected a non-negative decimal number)");
    };
    auto const w = whole.empty() && !frac.empty() ? std::optional<std::uint64_t>{0} : parse_u64(whole);
    if (!w) { bad(); }
    std::uint64_t const unit = o_.time_unit_ns;
    if (*w > std::numeric_limits<std::uint64_t>::max() / unit) { fail("time " + quote_for_message(s) + " is too large"); }
    std::uint64_t ns = *w * unit;
    if (dot != std::string_view::npos) {
      if (frac.empty()) { bad(); }
      for (char c : frac) {
        if (c < '0' || c > '9') { bad(); }
      }
      if (frac.size() > kMaxTimeFractionDigits) { frac = frac.substr(0, kMaxTimeFractionDigits); }
      std::uint64_t f = 0;
      std::uint64_t scale = 1;
      for (char c : frac) {
        f = f * 10 + static_cast<std::uint64_t>(c - '0');
        scale *= 10;
      }
      // unit <= 2^64 / 1e9 keeps f * unit exact for every realistic unit; divide first otherwise.
      std::uint64_t const add =
        unit <= std::numeric_limits<std::uint64_t>::max() / scale ? f * unit / scale : f * (unit / scale);
      if (ns > std::numeric_limits<std::uint64_t>::max() - add) { fail("time " + quote_for_message(s) + " is too large"); }
      ns += add;
    }
    return ns;
  }

  // Fills `out` from fields_; false if the row is skipped (size 0).
  bool fill(event& out)
  {
    reset_event(out);
    out.kind = event_kind::access;
    std::string_view const id = column(o_.id_column, "the object id");
    if (id.empty()) { fail("empty object id in column " + std::to_string(o_.id_column)); }
    auto const numeric = parse_u64(id);
    out.tensor = numeric ? *numeric : fnv1a(id);
    if (o_.size_column >= 0) {
      std::string_view const s = column(o_.size_column, "the size");
      auto const v = parse_u64(s);
      if (!v) {
        fail("bad size " + quote_for_message(s) + " in column " + std::to_string(o_.size_column) +
             " (expected an unsigned integer)");
      }
      out.bytes = *v;
    } else {
      out.bytes = o_.default_size;
    }
    if (o_.time_column >= 0) { out.time_ns = parse_time(column(o_.time_column, "the time")); }
    if (o_.op_column >= 0) {
      std::string_view const op = column(o_.op_column, "the operation");
      if (iequals(op, "r") || iequals(op, "read") || iequals(op, "get")) {
        out.mode = access_kind::read;
      } else if (iequals(op, "w") || iequals(op, "write") || iequals(op, "set")) {
        out.mode = access_kind::read_write;
      } else {
        fail("unknown operation " + quote_for_message(op) + " in column " + std::to_string(o_.op_column) +
             " (expected r, read, get, w, write or set)");
      }
    }
    return out.bytes != 0;
  }

  byte_source src_;
  csv_options o_;
  std::uint64_t line_no_{0};
  std::size_t consume_{0};
  std::vector<std::string_view> fields_;
  std::string scratch_;
};

}  // namespace

std::unique_ptr<reader> make_csv_reader(byte_source src, csv_options const& options)
{
  return std::make_unique<csv_reader>(std::move(src), options);
}

}  // namespace tierpool::trace::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_format_tests.cpp — the native encodings: exact text of each kind of event, round
// trips through text and binary files (every field, names with spaces, quotes and control
// bytes, records straddling read blocks), and every reader error with its line / offset.
#include "trace_test_util.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace trace_test;
using ::testing::HasSubstr;
using tt::access_kind;
using tt::event;
using tt::event_kind;

constexpr auto kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr auto kU32Max = std::numeric_limits<std::uint32_t>::max();

// One event of every kind, and every field on kinds that do not normally carry it.
std::vector<event> every_kind_of_event()
{
  std::vector<event> v;
  v.push_back({.kind = event_kind::allocate, .tier = 0, .tensor = 1, .bytes = 1 << 20, .name = "w3"});
  v.push_back({.kind = event_kind::allocate, .tensor = 2, .bytes = 4096, .time_ns = 100,
               .name = "name with spaces \"quotes\" \\ back\nslash\ttab\x01 r\xC3\xA9sum\xC3\xA9"});
  v.push_back({.kind = event_kind::allocate, .tensor = 3, .bytes = 1});
  v.push_back({.kind = event_kind::access, .mode = access_kind::read, .stream = 1, .tensor = 1});
  v.push_back({.kind = event_kind::access, .mode = access_kind::read_write, .stream = 7, .tensor = 2, .time_ns = 200});
  v.push_back({.kind = event_kind::access, .mode = access_kind::write_discard, .tensor = 3});
  v.push_back({.kind = event_kind::access, .tensor = 99, .bytes = 512, .time_ns = 150});  // time goes back
  v.push_back({.kind = event_kind::access, .mode = access_kind::read_write, .stream = kU32Max, .tier = kU32Max - 1,
               .tensor = kU64Max, .bytes = kU64Max, .time_ns = kU64Max, .duration_ns = kU64Max});
  v.push_back({.kind = event_kind::prefetch, .tier = 0, .tensor = 1, .time_ns = 1});
  v.push_back({.kind = event_kind::prefetch, .stream = 2, .tensor = 2});
  v.push_back({.kind = event_kind::compute, .stream = 1, .duration_ns = 2'500'000});
  v.push_back({.kind = event_kind::compute});
  v.push_back({.kind = event_kind::compute, .tensor = 5, .duration_ns = 10, .name = "gemm 1"});
  v.push_back({.kind = event_kind::phase, .name = "iter 3"});
  v.push_back({.kind = event_kind::phase, .name = ""});
  v.push_back({.kind = event_kind::phase, .time_ns = 50, .name = "forward"});
  v.push_back({.kind = event_kind::phase, .tier = 1, .tensor = 4, .bytes = 8, .name = "a=b #c"});
  v.push_back({.kind = event_kind::free, .tensor = 1});
  v.push_back({.kind = event_kind::free, .mode = access_kind::write_discard, .stream = 3, .tensor = 2, .bytes = 9,
               .duration_ns = 5, .name = "x"});
  v.push_back({.kind = event_kind::free, .tensor = 0});
  v.push_back({.kind = event_kind::release, .stream = 1, .tensor = 7, .time_ns = 60});
  v.push_back({.kind = event_kind::release, .stream = 0xFFFFFFFFU, .tensor = 8});
  return v;
}

std::vector<event> round_trip(std::vector<event> const& events, tt::format f, char const* leaf)
{
  auto const path = scratch(leaf);
  {
    tt::writer w(path, f);
    for (auto const& e : events) { w.write(e); }
    EXPECT_EQ(w.events_written(), events.size());
    w.close();
  }
  auto r = tt::open_reader(path);
  EXPECT_EQ(r->encoding(), f);
  return tt::read_all(path);
}

TEST(TraceText, FormatsEachKindOfEvent)
{
  EXPECT_EQ(tt::format_text({.kind = event_kind::allocate, .tier = 0, .tensor = 12, .bytes = 1048576, .name = "w3"}),
            "alloc 12 1048576 name=w3 tier=0");
  EXPECT_EQ(tt::format_text({.kind = event_kind::free, .tensor = 12}), "free 12");
  EXPECT_EQ(tt::format_text({.kind = event_kind::access, .stream = 1, .tensor = 12}), "read 12 s=1");
  EXPECT_EQ(tt::format_text({.kind = event_kind::access, .mode = access_kind::read_write, .tensor = 12}), "rw 12");
  EXPECT_EQ(tt::format_text({.kind = event_kind::access, .mode = access_kind::write_discard, .tensor = 12}), "wd 12");
  EXPECT_EQ(tt::format_text({.kind = event_kind::access, .tensor = 7, .bytes = 512, .time_ns = 3'000'000'000}),
            "@3000000000 read 7 bytes=512");
  EXPECT_EQ(tt::format_text({.kind = event_kind::prefetch, .tier = 0, .tensor = 12}), "prefetch 12 tier=0");
  EXPECT_EQ(tt::format_text({.kind = event_kind::compute, .stream = 1, .duration_ns = 2'500'000}),
            "compute 2500000 s=1");
  EXPECT_EQ(tt::format_text({.kind = event_kind::phase, .name = "iter 3"}), "phase \"iter 3\"");
  EXPECT_EQ(tt::format_text({.kind = event_kind::phase, .name = "forward"}), "phase forward");
  EXPECT_EQ(tt::format_text({.kind = event_kind::phase, .name = ""}), "phase \"\"");
  EXPECT_EQ(tt::format_text({.kind = event_kind::phase, .name = "a\"b\\c\nd\x7f"}), R"(phase "a\"b\\c\nd\x7f")");
  EXPECT_EQ(tt::format_text({.kind = event_kind::free, .mode = access_kind::read_write, .tensor = 1}),
            "free 1 mode=rw");
  EXPECT_EQ(tt::format_text({.kind = event_kind::compute, .tensor = 5, .duration_ns = 10, .name = "gemm"}),
            "compute 10 name=gemm id=5");
}

TEST(TraceText, RoundTripsEveryKindOfEvent)
{
  auto const events = every_kind_of_event();
  EXPECT_EQ(round_trip(events, tt::format::text, "all.tpt"), events);
}

TEST(TraceBinary, RoundTripsEveryKindOfEvent)
{
  auto const events = every_kind_of_event();
  EXPECT_EQ(round_trip(events, tt::format::binary, "all.tpb"), events);
}

TEST(TraceBinary, AccessRecordsAreCompact)
{
  auto const path = scratch("compact.tpb");
  {
    tt::writer w(path, tt::format::binary);
    w.write({.kind = event_kind::access, .tensor = 5});               // tag + 1-byte id
    w.write({.kind = event_kind::access, .stream = 1, .tensor = 300});  // tag + 2-byte id + stream
  }
  EXPECT_EQ(std::filesystem::file_size(path), 16U + 2U + 4U);
}

// Records and names straddle the reader's read blocks (detail::kBlockBytes); a 1 MiB name fits the limit.
TEST(TraceBinary, RoundTripsAcrossReadBlocks)
{
  std::vector<event> events;
  for (std::uint64_t i = 0; i < 400'000; ++i) {
    event e{.kind = i % 5 == 0 ? event_kind::allocate : event_kind::access, .tensor = i * 7919, .bytes = i % 3,
            .time_ns = i * 1000};
    if (i % 1000 == 0) { e.name = std::string(i % 997, 'n'); }
    events.push_back(std::move(e));
  }
  events.push_back({.kind = event_kind::phase, .name = std::string(std::size_t{1} << 20U, 'L')});
  events.push_back({.kind = event_kind::free, .tensor = 1});
  EXPECT_EQ(round_trip(events, tt::format::binary, "big.tpb"), events);
  EXPECT_EQ(round_trip(events, tt::format::text, "big.tpt"), events);
}

TEST(TraceWriter, RejectsOversizedNamesAndOtherFormats)
{
  tt::writer w(scratch("x.tpt"), tt::format::text);
  EXPECT_THROW(w.write({.kind = event_kind::phase, .name = std::string((std::size_t{1} << 20U) + 1, 'x')}),
               tierpool::logic_error);
  EXPECT_THROW(tt::writer(scratch("y.csv"), tt::format::csv), tierpool::logic_error);
  w.close();
  EXPECT_THROW(w.write({}), tierpool::trace_error);
  EXPECT_EQ(tt::output_format_for("a/b.TPB"), tt::format::binary);
  EXPECT_EQ(tt::output_format_for("a/b.txt"), tt::format::text);
}

// Moving a writer over another writes the replaced writer's buffered events first (a
// defaulted move assignment dropped them with the old buffer).
TEST(TraceWriter, MoveAssignmentKeepsTheReplacedWritersEvents)
{
  std::vector<event> const first = {{.kind = event_kind::allocate, .tensor = 1, .bytes = 64},
                                    {.kind = event_kind::free, .tensor = 1}};
  std::vector<event> const second = {{.kind = event_kind::allocate, .tensor = 2, .bytes = 128}};
  {
    tt::writer a(scratch("move_a.tpb"), tt::format::binary);
    for (event const& e : first) { a.write(e); }
    tt::writer b(scratch("move_b.tpt"), tt::format::text);
    for (event const& e : second) { b.write(e); }
    a = std::move(b);  // a's two buffered events reach move_a.tpb here
    a.write({.kind = event_kind::free, .tensor = 2});
  }
  EXPECT_EQ(tt::read_all(scratch("move_a.tpb")), first);
  std::vector<event> expected_b = second;
  expected_b.push_back({.kind = event_kind::free, .tensor = 2});
  EXPECT_EQ(tt::read_all(scratch("move_b.tpt")), expected_b);
}

TEST(TraceWriter, UnwritablePathNamesTheFile)
{
  try {
    tt::writer w("/nonexistent-dir/x.tpt", tt::format::text);
    FAIL() << "expected trace_error";
  } catch (tierpool::trace_error const& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot create trace '/nonexistent-dir/x.tpt': No such file or directory"));
  }
}

TEST(TraceText, AcceptsCommentsBlanksCrlfAliasesAndFieldForms)
{
  auto const events = read_memory(
    "# tierpool-trace v1\r\n"
    "\n"
    "  # a comment line\n"
    "alloc 1 64 tier=2 name=\"a b\"  # trailing comment\r\n"
    "write 1 t=5\n"
    "@7 read 1 s=3\n"
    "phase \"#not a comment\"\n"
    "free 1");  // no final newline
  ASSERT_EQ(events.size(), 5U);
  EXPECT_EQ(events[0], (event{.kind = event_kind::allocate, .tier = 2, .tensor = 1, .bytes = 64, .name = "a b"}));
  EXPECT_EQ(events[1], (event{.kind = event_kind::access, .mode = access_kind::read_write, .tensor = 1, .time_ns = 5}));
  EXPECT_EQ(events[2], (event{.kind = event_kind::access, .stream = 3, .tensor = 1, .time_ns = 7}));
  EXPECT_EQ(events[3].name, "#not a comment");
  EXPECT_EQ(events[4], (event{.kind = event_kind::free, .tensor = 1}));
  EXPECT_TRUE(read_memory("# tierpool-trace v1\n").empty());
}

struct text_error_case {
  char const* body;   // lines after the header
  char const* expected;
};

TEST(TraceText, ErrorsNameTheLineAndWhatWasExpected)
{
  text_error_case const cases[] = {
    {"allok 1 2\n", "trace 'mem' line 2: unknown keyword 'allok' (expected alloc, free, read, rw, wd, prefetch, compute, phase, release)"},
    {"read 1\nalloc x 5\n", "trace 'mem' line 3: bad number 'x' for <tensor> (expected an unsigned 64-bit integer)"},
    {"free 18446744073709551616\n", "line 2: bad number '18446744073709551616' for <tensor> (expected an unsigned 64-bit integer)"},
    {"alloc 1\n", "line 2: missing <bytes> (expected 'alloc <tensor> <bytes>')"},
    {"read\n", "line 2: missing <tensor> (expected 'read|rw|wd <tensor>')"},
    {"compute s=1\n", "line 2: missing <duration_ns> (expected 'compute <duration_ns>')"},
    {"phase\n", "line 2: missing <label> (expected 'phase <label>')"},
    {"free 1 2\n", "line 2: unexpected value '2' (expected 'free <tensor>' then key=value fields)"},
    {"read 1 foo=2\n", "line 2: unknown field 'foo' (expected t, s, tier, id, bytes, dur, name, mode)"},
    {"read 1 s=1 s=2\n", "line 2: field 's' given twice"},
    {"free 1 id=2\n", "line 2: field 'id' given twice"},
    {"@5 free 1 t=6\n", "line 2: field 't' given twice"},
    {"read 1 mode=wd\n", "line 2: field 'mode' given twice"},
    {"read 1 s=4294967296\n", "line 2: bad number '4294967296' for s (expected an unsigned 32-bit integer)"},
    {"prefetch 1 tier=-1\n", "line 2: bad number '-1' for tier (expected an unsigned 32-bit integer)"},
    {"free 1 mode=sideways\n", "line 2: bad mode 'sideways' (expected read, rw or wd)"},
    {"phase \"abc\n", "line 2: unterminated quoted string (expected a closing '\"')"},
    {"phase \"a\\q\"\n", "line 2: bad escape '\\q' (expected \\\", \\\\, \\n, \\t, \\r or \\xHH)"},
    {"phase \"a\\x4\"\n", "line 2: bad escape '\\x' (expected two hex digits)"},
    {"phase \"a\"b\n", "line 2: expected a blank after the closing '\"'"},
    {"phase a\"b\"\n", "line 2: unexpected '\"' inside 'a' (quote the whole value)"},
    {"read 1 s=\n", "line 2: field 's' has no value"},
    {"@x read 1\n", "line 2: bad number 'x' for the time '@' (expected an unsigned 64-bit integer)"},
    {"@5\n", "line 2: expected a keyword after the time"},
    {"s=1 read 1\n", "line 2: expected a keyword (alloc, free, read, rw, wd, prefetch, compute, phase, release), found 's'"},
    {"alloc \"1\" 2\n", "line 2: bad number '1' for <tensor>"},
  };
  for (auto const& c : cases) {
    std::string const trace = std::string("# tierpool-trace v1\n") + c.body;
    EXPECT_THAT(error_of(trace), HasSubstr(c.expected)) << c.body;
  }
}

TEST(TraceText, HeaderErrors)
{
  tt::reader_options text;
  text.fmt = tt::format::text;
  EXPECT_EQ(error_of("", text), "trace 'mem' line 1: empty file: expected the header line '# tierpool-trace v1'");
  EXPECT_EQ(error_of("hello\nread 1\n", text),
            "trace 'mem' line 1: expected the header line '# tierpool-trace v1', found 'hello'");
  EXPECT_EQ(error_of("# tierpool-trace v2\nread 1\n"),
            "trace 'mem' line 1: unknown version 2 (this build reads version 1)");
}

TEST(TraceText, ErrorsInAFileNameTheFile)
{
  auto const path = scratch("bad.tpt");
  write_file(path, "# tierpool-trace v1\nread 1\n\nfree one\n");
  try {
    (void)tt::read_all(path);
    FAIL() << "expected trace_error";
  } catch (tierpool::trace_error const& e) {
    EXPECT_EQ(std::string(e.what()), "trace '" + path.string() +
                                       "' line 4: bad number 'one' for <tensor> (expected an unsigned 64-bit integer)");
  }
}

std::string header(std::uint32_t version = 1, std::uint32_t flags = 0)
{
  return std::string("TPTRACE\0", 8) + le<std::uint32_t>(version) + le<std::uint32_t>(flags);
}

TEST(TraceBinary, ErrorsNameTheOffsetAndWhatWasExpected)
{
  tt::reader_options bin;
  bin.fmt = tt::format::binary;
  EXPECT_EQ(error_of(std::string("TPTRACX\0rest of it", 18), bin),
            "trace 'mem' offset 0: bad magic 'TPTRACX\\x00' (expected \"TPTRACE\\0\": not a tierpool binary trace)");
  EXPECT_EQ(error_of(std::string("TPTRACE\0\1\0", 10), bin),
            "trace 'mem' offset 10: truncated header (10 bytes; expected 16: magic, version, flags)");
  EXPECT_EQ(error_of(header(2)), "trace 'mem' offset 8: unknown version 2 (this build reads version 1)");
  EXPECT_EQ(error_of(header(1, 1)), "trace 'mem' offset 12: unknown header flags 1 (expected 0)");
  // allocate tag, tensor 1, then the file ends before the size.
  EXPECT_EQ(error_of(header() + std::string("\x00\x01", 2)),
            "trace 'mem' offset 16: truncated record (the file ends 2 bytes into it; expected the size in bytes)");
  // a good access record, then a multi-byte varint cut short.
  EXPECT_EQ(error_of(header() + std::string("\x02\x05\x02\x80", 4)),
            "trace 'mem' offset 18: truncated record (the file ends 2 bytes into it; expected the tensor id)");
  EXPECT_EQ(error_of(header() + "\x07\x01"), "trace 'mem' offset 16: unknown event kind 7 in record tag (expected 0..6)");
  EXPECT_EQ(error_of(header() + "\x1a\x01"), "trace 'mem' offset 16: unknown access mode 3 in record tag (expected 0..2)");
  EXPECT_EQ(error_of(header() + std::string(11, '\xff')),
            "trace 'mem' offset 16: unknown event kind 7 in record tag (expected 0..6)");
  EXPECT_EQ(error_of(header() + "\x02" + std::string(10, '\xff') + "\x01"),
            "trace 'mem' offset 17: bad varint for the tensor id (more than 64 bits)");
  EXPECT_EQ(error_of(header() + "\x82\x01\x20"),
            "trace 'mem' offset 18: unknown extra-field bits 32 (expected a subset of 31)");
  EXPECT_EQ(error_of(header() + "\x82\x01\x02\x07"),
            "trace 'mem' offset 18: an extra field repeats a main field of this event kind");
  EXPECT_EQ(error_of(header() + "\x42\x01\x80\x80\x80\x80\x10"),
            "trace 'mem' offset 18: value 4294967296 for the stream does not fit in 32 bits");
  EXPECT_EQ(error_of(header() + "\x05\x80\x80\x80\x01"),
            "trace 'mem' offset 17: name length 2097152 exceeds the limit of 1048576 bytes");
  EXPECT_EQ(error_of(header() + "\x05\x05" + "ab"),
            "trace 'mem' offset 16: truncated record (the file ends 4 bytes into it; expected the phase label)");
  EXPECT_EQ(error_of(header()), "");  // a header alone is an empty trace
}

TEST(TraceFormat, NamesParseAndPrint)
{
  EXPECT_EQ(tt::parse_format("oracleGeneral"), tt::format::oracle_general);
  EXPECT_EQ(tt::parse_format("oracle_general"), tt::format::oracle_general);
  EXPECT_EQ(tt::parse_format("auto"), tt::format::automatic);
  for (auto f : {tt::format::automatic, tt::format::text, tt::format::binary, tt::format::oracle_general, tt::format::csv}) {
    EXPECT_EQ(tt::parse_format(tt::to_string(f)), f);
  }
  try {
    (void)tt::parse_format("parquet");
    FAIL();
  } catch (tierpool::logic_error const& e) {
    EXPECT_STREQ(e.what(), "unknown trace format 'parquet' (valid: auto, text, binary, oracle_general, oracleGeneral, csv)");
  }
  EXPECT_EQ(tt::to_string(event_kind::prefetch), "prefetch");
}

TEST(TraceReader, NextBatchMatchesNext)
{
  auto const events = every_kind_of_event();
  auto const path = scratch("batch.tpb");
  {
    tt::writer w(path, tt::format::automatic);
    for (auto const& e : events) { w.write(e); }
  }
  auto r = tt::open_reader(path);
  std::vector<event> batch(7);
  std::vector<event> got;
  for (;;) {
    auto const n = r->next_batch(batch);
    got.insert(got.end(), batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(n));
    if (n < batch.size()) { break; }
  }
  EXPECT_EQ(got, events);
}

}  // namespace

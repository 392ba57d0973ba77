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
#include <fstream>
#include <limits>
#include <sstream>
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

struct text_error_case {
  char const* body;   // lines after the header
  char const* expected;
};

// One event of every kind, and every field on kinds that do not normally carry it.
std::vector<event> every_kind_of_event()
{
  std::vector<event> v;
  v.push_back({.kind = event_kind::allocate, .tier = 0, .tensor = 1, .bytes = 1 << 20, .name = "w3"});
  v.push_back({.kind = event_kind::allocate, .tensor = 2, .bytes = 4096, .time_ns = 100,
               .name = "name with spaces \"quotes\" \\ back\nslash\ttab\x01 r\xC3\xA9sum\xC3\xA9"});
  v.push_back({.kind = event_kind::allocate, .tensor = 3, .bytes = 1});
  // eviction hints: recomputable (with its cost) and lossy, no-compress alone, lossy alone,
  // and a duration without the recompute hint (kept, as version 1 readers kept it)
  v.push_back({.kind = event_kind::allocate, .tensor = 10, .bytes = 4096, .duration_ns = 1500, .name = "a1",
               .hints = tt::hint_recomputable | tt::hint_lossy_ok});
  v.push_back({.kind = event_kind::allocate, .stream = 2, .tier = 1, .tensor = 11, .bytes = 8, .time_ns = 300,
               .hints = tt::hint_no_compress});
  v.push_back({.kind = event_kind::allocate, .tensor = 12, .bytes = 8, .hints = tt::hint_lossy_ok});
  v.push_back({.kind = event_kind::allocate, .tensor = 13, .bytes = 8, .duration_ns = kU64Max,
               .hints = tt::hint_recomputable | tt::hint_no_compress});
  v.push_back({.kind = event_kind::allocate, .tensor = 14, .bytes = 8, .duration_ns = 7});
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
  v.push_back({.kind = event_kind::discard, .tensor = 9});
  v.push_back({.kind = event_kind::discard, .stream = 2, .tensor = 0, .time_ns = 70});
  v.push_back({.kind = event_kind::discard, .tier = 1, .tensor = 10, .bytes = 3, .name = "n"});
  return v;
}

std::string file_bytes(std::filesystem::path const& path)
{
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
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
  EXPECT_EQ(tt::format_text({.kind = event_kind::allocate, .tensor = 4, .bytes = 64, .duration_ns = 1500, .name = "a1",
                             .hints = tt::hint_recomputable | tt::hint_lossy_ok}),
            "alloc 4 64 name=a1 dur=1500 hints=recompute,lossy");
  EXPECT_EQ(tt::format_text({.kind = event_kind::allocate, .tensor = 4, .bytes = 64, .hints = tt::hint_no_compress}),
            "alloc 4 64 hints=nocompress");
  EXPECT_EQ(tt::format_text({.kind = event_kind::allocate, .tensor = 4, .bytes = 64, .duration_ns = 9,
                             .hints = tt::hint_recomputable | tt::hint_no_compress}),
            "alloc 4 64 dur=9 hints=recompute,nocompress");
}

TEST(TraceText, ParsesHints)
{
  auto const events = read_memory(
    "# tierpool-trace v1\n"
    "alloc 1 64 dur=500 hints=recompute,lossy name=a1\n"
    "alloc 2 8 hints=nocompress\n"
    "alloc 3 8 hints=lossy,recompute dur=5\n"  // any order; fields in any order
    "alloc 4 8 dur=6\n"                        // a duration alone: no hint
    "alloc 5 8 hints=lossy\n");
  ASSERT_EQ(events.size(), 5U);
  EXPECT_EQ(events[0], (event{.kind = event_kind::allocate, .tensor = 1, .bytes = 64, .duration_ns = 500, .name = "a1",
                              .hints = tt::hint_recomputable | tt::hint_lossy_ok}));
  EXPECT_EQ(events[1], (event{.kind = event_kind::allocate, .tensor = 2, .bytes = 8, .hints = tt::hint_no_compress}));
  EXPECT_EQ(events[2].hints, tt::hint_recomputable | tt::hint_lossy_ok);
  EXPECT_EQ(events[2].duration_ns, 5U);
  EXPECT_EQ(events[3], (event{.kind = event_kind::allocate, .tensor = 4, .bytes = 8, .duration_ns = 6}));
  EXPECT_EQ(events[4].hints, tt::hint_lossy_ok);
}

TEST(TraceText, HintErrorsNameTheLine)
{
  text_error_case const cases[] = {
    {"alloc 1 8 dur=5 hints=recompute,fast\n",
     "trace 'mem' line 2: unknown hint 'fast' (expected recompute, lossy or nocompress)"},
    {"alloc 1 8\nalloc 2 8 hints=Lossy\n", "trace 'mem' line 3: unknown hint 'Lossy' (expected recompute, lossy or nocompress)"},
    {"alloc 1 8 hints=lossy,,nocompress\n", "line 2: empty hint name in 'lossy,,nocompress' (expected recompute, lossy or nocompress)"},
    {"alloc 1 8 hints=lossy,\n", "line 2: empty hint name in 'lossy,'"},
    {"alloc 1 8 hints=lossy,lossy\n", "line 2: hint 'lossy' given twice"},
    {"alloc 1 8 hints=lossy hints=lossy\n", "line 2: field 'hints' given twice"},
    {"alloc 1 8 hints=\"lossy\"\n", "line 2: field 'hints' must not be quoted"},
    {"alloc 1 8 hints=recompute\n",
     "trace 'mem' line 2: hint recompute without its cost (expected dur=<ns> > 0 on the alloc)"},
    {"alloc 1 8 dur=0 hints=recompute\n", "line 2: hint recompute without its cost"},
    {"alloc 1 8 hints=lossy,nocompress\n", "trace 'mem' line 2: hints lossy and nocompress contradict each other"},
    {"alloc 1 8\nread 1 hints=lossy\n",
     "trace 'mem' line 3: hints on an event other than alloc (only alloc takes hints)"},
    {"free 1 hints=nocompress\n", "line 2: hints on an event other than alloc"},
    {"compute 5 hints=recompute\n", "line 2: hints on an event other than alloc"},
  };
  for (auto const& c : cases) {
    std::string const trace = std::string("# tierpool-trace v1\n") + c.body;
    EXPECT_THAT(error_of(trace), HasSubstr(c.expected)) << c.body;
  }
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
  // hints the readers would reject
  EXPECT_THROW(w.write({.kind = event_kind::free, .tensor = 1, .hints = tt::hint_lossy_ok}), tierpool::logic_error);
  EXPECT_THROW(w.write({.kind = event_kind::allocate, .tensor = 1, .bytes = 8, .hints = 8}), tierpool::logic_error);
  EXPECT_THROW(w.write({.kind = event_kind::allocate, .tensor = 1, .bytes = 8, .hints = tt::hint_recomputable}),
               tierpool::logic_error);
  EXPECT_THROW(w.write({.kind = event_kind::allocate, .tensor = 1, .bytes = 8,
                        .hints = tt::hint_lossy_ok | tt::hint_no_compress}),
               tierpool::logic_error);
  try {
    w.write({.kind = event_kind::access, .tensor = 1, .hints = tt::hint_lossy_ok});
  } catch (tierpool::logic_error const& e) {
    EXPECT_STREQ(e.what(), "trace writer: hints on an event other than alloc (only alloc takes hints) (readers reject it)");
  }
  EXPECT_EQ(w.events_written(), 0U);
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

TEST(TraceText, ErrorsNameTheLineAndWhatWasExpected)
{
  text_error_case const cases[] = {
    {"allok 1 2\n", "trace 'mem' line 2: unknown keyword 'allok' (expected alloc, free, read, rw, wd, prefetch, compute, phase, release, discard)"},
    {"read 1\nalloc x 5\n", "trace 'mem' line 3: bad number 'x' for <tensor> (expected an unsigned 64-bit integer)"},
    {"free 18446744073709551616\n", "line 2: bad number '18446744073709551616' for <tensor> (expected an unsigned 64-bit integer)"},
    {"alloc 1\n", "line 2: missing <bytes> (expected 'alloc <tensor> <bytes>')"},
    {"read\n", "line 2: missing <tensor> (expected 'read|rw|wd <tensor>')"},
    {"compute s=1\n", "line 2: missing <duration_ns> (expected 'compute <duration_ns>')"},
    {"phase\n", "line 2: missing <label> (expected 'phase <label>')"},
    {"free 1 2\n", "line 2: unexpected value '2' (expected 'free <tensor>' then key=value fields)"},
    {"read 1 foo=2\n", "line 2: unknown field 'foo' (expected t, s, tier, id, bytes, dur, name, mode, hints)"},
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
    {"s=1 read 1\n", "line 2: expected a keyword (alloc, free, read, rw, wd, prefetch, compute, phase, release, discard), found 's'"},
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
  EXPECT_EQ(error_of(header() + "\x1a\x01"), "trace 'mem' offset 16: unknown access mode 3 in record tag (expected 0..2)");
  EXPECT_EQ(error_of(header() + std::string(11, '\xff')),
            "trace 'mem' offset 16: unknown access mode 3 in record tag (expected 0..2)");
  EXPECT_EQ(error_of(header() + "\x02" + std::string(10, '\xff') + "\x01"),
            "trace 'mem' offset 17: bad varint for the tensor id (more than 64 bits)");
  EXPECT_EQ(error_of(header() + "\x82\x01\x40"),
            "trace 'mem' offset 18: unknown extra-field bits 64 (expected a subset of 63)");
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

// The hints byte (extras bit 32, last of the extras): its record layout, and its errors.
TEST(TraceBinary, HintsRecordLayoutAndErrors)
{
  auto const path = scratch("hints.tpb");
  {
    tt::writer w(path, tt::format::binary);
    w.write({.kind = event_kind::allocate, .tensor = 1, .bytes = 8, .duration_ns = 300,
             .hints = tt::hint_recomputable | tt::hint_lossy_ok});
    w.write({.kind = event_kind::allocate, .tensor = 2, .bytes = 8, .hints = tt::hint_no_compress});
  }
  std::string const bytes = file_bytes(path);
  // tag (allocate, extras) | tensor | bytes | extras (8 duration + 32 hints) | dur 300 | hints 3
  // tag | tensor | bytes | extras (32 hints) | hints 4
  EXPECT_EQ(bytes, header() + std::string("\x80\x01\x08\x28\xac\x02\x03", 7) + std::string("\x80\x02\x08\x20\x04", 5));
  EXPECT_EQ(error_of(header() + std::string("\x80\x01\x08\x20\x08", 5)),
            "trace 'mem' offset 20: unknown hint bits (known: recompute 1, lossy 2, nocompress 4)");
  EXPECT_EQ(error_of(header() + std::string("\x80\x01\x08\x20\x00", 5)),
            "trace 'mem' offset 20: hints byte 0 (a record without hints leaves out the field)");
  EXPECT_EQ(error_of(header() + std::string("\x80\x01\x08\x20\x01", 5)),
            "trace 'mem' offset 20: hint recompute without its cost (expected dur=<ns> > 0 on the alloc)");
  EXPECT_EQ(error_of(header() + std::string("\x80\x01\x08\x20\x06", 5)),
            "trace 'mem' offset 20: hints lossy and nocompress contradict each other");
  EXPECT_EQ(error_of(header() + std::string("\x81\x01\x20\x02", 4)),
            "trace 'mem' offset 18: hints on an event other than alloc (only alloc takes hints)");
  EXPECT_EQ(error_of(header() + std::string("\x80\x01\x08\x20", 4)),
            "trace 'mem' offset 16: truncated record (the file ends 4 bytes into it; expected the hints)");
}

// A binary file of the first version-1 release (before hints; bytes as that writer wrote
// them, an allocate with a duration and a name among them) reads as before, hints 0; a
// trace without hints is still written byte for byte as then.
TEST(TraceBinary, ReadsFilesWrittenBeforeHints)
{
  std::string const old_file = std::string("TPTRACE\0\x01\0\0\0\0\0\0\0", 16) +
                               std::string("\x05\x04init", 6) +                   // phase init
                               std::string("\x80\x07\x80\x08\x18\x2a\x02w1", 9) +  // alloc 7 1024 dur=42 name=w1
                               std::string("\x22\x14\x07", 3) +                   // @10 read 7 (zigzag 20)
                               std::string("\x04\xe8\x07", 3) +                   // compute 1000
                               std::string("\x01\x07", 2);                         // free 7
  std::vector<event> const want = {
    {.kind = event_kind::phase, .name = "init"},
    {.kind = event_kind::allocate, .tensor = 7, .bytes = 1024, .duration_ns = 42, .name = "w1"},
    {.kind = event_kind::access, .tensor = 7, .time_ns = 10},
    {.kind = event_kind::compute, .duration_ns = 1000},
    {.kind = event_kind::free, .tensor = 7},
  };
  auto const got = read_memory(old_file);
  EXPECT_EQ(got, want);
  for (auto const& e : got) { EXPECT_EQ(e.hints, 0U); }
  auto const path = scratch("rewritten.tpb");
  {
    tt::writer w(path, tt::format::binary);
    for (auto const& e : want) { w.write(e); }
  }
  std::string const bytes = file_bytes(path);
  EXPECT_EQ(bytes, old_file);
  // a later version is still refused
  EXPECT_EQ(error_of(header(2) + std::string("\x01\x07", 2)),
            "trace 'mem' offset 8: unknown version 2 (this build reads version 1)");
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

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_import_tests.cpp — the importers and format detection: libCacheSim oracleGeneral
// (the real CloudPhysics sample and synthetic records, skipped size-0 records, a partial
// record), csv in several column layouts with its errors, and open_reader's detection
// (also of a directory and of a FIFO, which has no size and can be read only once).
#include "trace_test_util.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace trace_test;
using ::testing::HasSubstr;
using tt::access_kind;
using tt::event;
using tt::event_kind;

std::filesystem::path cloudphysics()
{
  return std::filesystem::path(TIERPOOL_SAMPLE_TRACES_DIR) / "cloudphysics.oracleGeneral.bin";
}

std::string oracle_record(std::uint32_t time, std::uint64_t id, std::uint32_t size, std::int64_t next)
{
  return le(time) + le(id) + le(size) + le(static_cast<std::uint64_t>(next));
}

TEST(OracleGeneral, CloudPhysicsSampleHasTheDocumentedFigures)
{
  if (!std::filesystem::exists(cloudphysics())) {
    GTEST_SKIP() << "sample trace not found at " << cloudphysics() << " (set TIERPOOL_SAMPLE_TRACES_DIR)";
  }
  auto const s = tt::summarize(cloudphysics());
  EXPECT_EQ(s.requests, 113'872U);
  EXPECT_EQ(s.events, 113'872U);
  EXPECT_EQ(s.reads, 113'872U);
  EXPECT_EQ(s.objects, 48'974U);
  EXPECT_EQ(s.working_set_bytes, 2'029'769'728U);
  EXPECT_EQ(s.peak_live_bytes, 2'029'769'728U);
  EXPECT_EQ(s.tensors, 0U);
  EXPECT_EQ(s.last_time_ns - s.first_time_ns, 7200ULL * 1'000'000'000ULL);  // two hours

  EXPECT_EQ(tt::detect_format(cloudphysics()), tt::format::oracle_general);
  auto r = tt::open_reader(cloudphysics());
  EXPECT_EQ(r->encoding(), tt::format::oracle_general);
  event first;
  ASSERT_TRUE(r->next(first));
  EXPECT_EQ(first, (event{.kind = event_kind::access, .tensor = 42'932'745, .bytes = 512,
                          .time_ns = 5'633'898ULL * 1'000'000'000ULL}));
}

TEST(OracleGeneral, NextAndNextBatchAgreeOnTheSample)
{
  if (!std::filesystem::exists(cloudphysics())) { GTEST_SKIP() << "sample trace not found"; }
  auto const one_by_one = tt::read_all(cloudphysics());
  auto r = tt::open_reader(cloudphysics());
  std::vector<event> batch(1000);
  std::vector<event> batched;
  for (;;) {
    auto const n = r->next_batch(batch);
    batched.insert(batched.end(), batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(n));
    if (n < batch.size()) { break; }
  }
  EXPECT_EQ(batched, one_by_one);
  ASSERT_EQ(one_by_one.size(), 113'872U);
}

TEST(OracleGeneral, SkipsSizeZeroRecords)
{
  std::string const bytes = oracle_record(1, 10, 4096, 3) + oracle_record(2, 11, 0, -1) + oracle_record(3, 10, 4096, -1);
  tt::reader_options o;
  o.fmt = tt::format::oracle_general;
  auto const events = read_memory(bytes, o);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0], (event{.kind = event_kind::access, .tensor = 10, .bytes = 4096, .time_ns = 1'000'000'000}));
  EXPECT_EQ(events[1], (event{.kind = event_kind::access, .tensor = 10, .bytes = 4096, .time_ns = 3'000'000'000}));
}

TEST(OracleGeneral, TrailingPartialRecordNamesItsOffset)
{
  auto const path = scratch("partial.oracleGeneral");
  write_file(path, oracle_record(1, 10, 4096, -1) + oracle_record(2, 11, 8, -1) + std::string(5, '\x01'));
  auto r = tt::open_reader(path);
  event e;
  EXPECT_TRUE(r->next(e));
  EXPECT_TRUE(r->next(e));
  try {
    (void)r->next(e);
    FAIL() << "expected trace_error";
  } catch (tierpool::trace_error const& err) {
    EXPECT_EQ(std::string(err.what()),
              "trace '" + path.string() +
                "' offset 48: truncated record: the file ends 5 bytes into it (oracleGeneral records are 24 bytes:"
                " u32 time, u64 obj_id, u32 obj_size, i64 next_access_vtime)");
  }
}

TEST(Csv, DefaultLayoutTimeIdSize)
{
  auto const events = read_memory("time,id,size\n1,10,4096\n2.5, 11 ,100\n\n3,a,7\n4,12,0\n", {.fmt = tt::format::csv});
  ASSERT_EQ(events.size(), 3U);  // the size-0 row is skipped
  EXPECT_EQ(events[0], (event{.kind = event_kind::access, .tensor = 10, .bytes = 4096, .time_ns = 1'000'000'000}));
  EXPECT_EQ(events[1], (event{.kind = event_kind::access, .tensor = 11, .bytes = 100, .time_ns = 2'500'000'000}));
  // Non-numeric ids: 64-bit FNV-1a of the text ("a" -> 0xaf63dc4c8601ec8c).
  EXPECT_EQ(events[2].tensor, 0xaf63dc4c8601ec8cULL);
}

TEST(Csv, NoHeaderSemicolonIdAndOpOnly)
{
  tt::reader_options o{.fmt = tt::format::csv};
  o.csv = {.delimiter = ';', .header = false, .time_column = -1, .id_column = 0, .size_column = -1, .op_column = 1,
           .default_size = 64};
  auto const events = read_memory("key1;GET\nkey2;set\nkey1;r\n17;W\n", o);
  ASSERT_EQ(events.size(), 4U);
  EXPECT_EQ(events[0].mode, access_kind::read);
  EXPECT_EQ(events[1].mode, access_kind::read_write);
  EXPECT_EQ(events[2].mode, access_kind::read);
  EXPECT_EQ(events[3].mode, access_kind::read_write);
  EXPECT_EQ(events[0].tensor, events[2].tensor);  // same text, same id
  EXPECT_NE(events[0].tensor, events[1].tensor);
  EXPECT_EQ(events[3].tensor, 17U);
  for (auto const& e : events) {
    EXPECT_EQ(e.bytes, 64U);
    EXPECT_EQ(e.time_ns, 0U);
  }
}

TEST(Csv, TabsQuotesMillisecondsAndReorderedColumns)
{
  tt::reader_options o{.fmt = tt::format::csv};
  o.csv = {.delimiter = '\t', .header = true, .time_column = 3, .id_column = 1, .size_column = 0, .op_column = 2,
           .time_unit_ns = 1'000'000};
  auto const events = read_memory("size\tid\top\tms\n\"512\"\t\"a\"\"b\"\tget\t1.5\n1024\t\"x\ty\"\tset\t0.000001\n", o);
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0], (event{.kind = event_kind::access, .tensor = events[0].tensor, .bytes = 512, .time_ns = 1'500'000}));
  EXPECT_EQ(events[1], (event{.kind = event_kind::access, .mode = access_kind::read_write, .tensor = events[1].tensor,
                              .bytes = 1024, .time_ns = 1}));
  EXPECT_NE(events[0].tensor, events[1].tensor);
}

TEST(Csv, ErrorsNameTheLine)
{
  tt::reader_options o{.fmt = tt::format::csv};
  EXPECT_EQ(error_of("t,id,size\n1,2,3\n1,2\n", o),
            "trace 'mem' line 3: expected the size in column 2, but the row has 2 columns");
  EXPECT_EQ(error_of("t,id,size\n1,2,big\n", o),
            "trace 'mem' line 2: bad size 'big' in column 2 (expected an unsigned integer)");
  EXPECT_EQ(error_of("t,id,size\n-1,2,3\n", o),
            "trace 'mem' line 2: bad time '-1' (expected a non-negative decimal number)");
  EXPECT_EQ(error_of("t,id,size\n1,\"2,3\n", o), "trace 'mem' line 2: unterminated quoted field (expected a closing '\"')");
  EXPECT_EQ(error_of("t,id,size\n1,,3\n", o), "trace 'mem' line 2: empty object id in column 1");
  o.csv.op_column = 3;
  EXPECT_EQ(error_of("t,id,size,op\n1,2,3,delete\n", o),
            "trace 'mem' line 2: unknown operation 'delete' in column 3 (expected r, read, get, w, write or set)");
  o.csv.id_column = -1;
  EXPECT_THROW((void)read_memory("1,2,3\n", o), tierpool::logic_error);
}

TEST(Detection, ByMagicHeaderExtensionAndSize)
{
  auto const dir = scratch("");
  write_file(dir / "native.anything", "# tierpool-trace v1\nread 1\n");
  write_file(dir / "native.bin", std::string("TPTRACE\0", 8) + le<std::uint32_t>(1) + le<std::uint32_t>(0));
  write_file(dir / "cache.csv", "t,id,size\n1,2,3\n");
  write_file(dir / "records", oracle_record(1, 2, 3, -1));
  write_file(dir / "notes.txt", "just some text\n");
  write_file(dir / "broken.tpt", "not a header\n");
  write_file(dir / "trace.zst", std::string("\x28\xb5\x2f\xfd", 4));
  EXPECT_EQ(tt::detect_format(dir / "native.anything"), tt::format::text);
  EXPECT_EQ(tt::detect_format(dir / "native.bin"), tt::format::binary);
  EXPECT_EQ(tt::detect_format(dir / "cache.csv"), tt::format::csv);
  EXPECT_EQ(tt::detect_format(dir / "records"), tt::format::oracle_general);
  EXPECT_EQ(tt::detect_format(dir / "broken.tpt"), tt::format::text);  // so the reader reports the header
  EXPECT_THAT([&] { (void)tt::detect_format(dir / "notes.txt"); },
              ::testing::ThrowsMessage<tierpool::trace_error>(HasSubstr("notes.txt': cannot detect the format")));
  EXPECT_THAT([&] { (void)tt::detect_format(dir / "trace.zst"); },
              ::testing::ThrowsMessage<tierpool::trace_error>(HasSubstr("compressed (decompress it first)")));
  EXPECT_THAT([&] { (void)tt::read_all(dir / "broken.tpt"); },
              ::testing::ThrowsMessage<tierpool::trace_error>(HasSubstr("line 1: expected the header line")));
  EXPECT_THAT([&] { (void)tt::open_reader(dir / "missing.tpt"); },
              ::testing::ThrowsMessage<tierpool::trace_error>(HasSubstr("missing.tpt': No such file or directory")));
  EXPECT_EQ(read_memory(oracle_record(1, 2, 3, -1)).size(), 1U);  // memory: by content
}

// A directory opens on Linux and only its read fails: the error said "read error near
// offset 0".
TEST(Detection, ADirectoryIsNamedAsOne)
{
  auto const dir = scratch("adir");
  std::filesystem::create_directories(dir);
  EXPECT_THAT([&] { (void)tt::open_reader(dir); },
              ::testing::ThrowsMessage<tierpool::trace_error>(HasSubstr("adir': it is a directory")));
  EXPECT_THAT([&] { (void)tt::open_reader(dir, {.fmt = tt::format::text}); },
              ::testing::ThrowsMessage<tierpool::trace_error>(HasSubstr("adir': it is a directory")));
}

// A FIFO has no size: detection must work from the peeked first bytes of the one stream
// (oracleGeneral records were refused as "size 0"), and the reader must get those bytes.
std::vector<event> read_through_fifo(std::filesystem::path const& fifo, std::string const& bytes)
{
  std::filesystem::remove(fifo);
  if (::mkfifo(fifo.c_str(), 0600) != 0) { ADD_FAILURE() << "mkfifo failed"; return {}; }
  std::thread writer([&] {
    std::ofstream f(fifo, std::ios::binary);  // blocks until the reader opens
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  });
  std::vector<event> out;
  try {
    out = tt::read_all(fifo);
  } catch (...) {
    writer.join();
    throw;
  }
  writer.join();
  return out;
}

TEST(Detection, AFifoIsReadOnceAndDetectedFromItsFirstBytes)
{
  auto const fifo = scratch("pipe");
  std::string records;
  for (std::uint32_t i = 0; i < 3; ++i) { records += oracle_record(i, 10 + i, 100, -1); }
  auto const cache = read_through_fifo(fifo, records);
  ASSERT_EQ(cache.size(), 3U);
  EXPECT_EQ(cache[2].tensor, 12U);
  auto const native = read_through_fifo(fifo, "# tierpool-trace v1\nalloc 1 8\nread 1\n");
  ASSERT_EQ(native.size(), 2U);
  EXPECT_EQ(native[1].kind, event_kind::access);
  EXPECT_THAT([&] { (void)read_through_fifo(fifo, ""); },
              ::testing::ThrowsMessage<tierpool::trace_error>(HasSubstr("the input is empty")));
}

}  // namespace

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// oracle_general_reader.cpp — owns the import of libCacheSim's `oracleGeneral` traces:
// fixed 24-byte little-endian records {u32 time (s), u64 obj_id, u32 obj_size,
// i64 next_access_vtime}, no header. Each record with a size > 0 becomes one read access
// of `bytes` = obj_size; size-0 records are skipped. A trailing partial record is an
// error naming its offset.
//
// This is the hot path of cache-mode replay: the file is read in 192 KiB blocks
// (detail::kBlockBytes, a multiple of 24) and decoded in place, with no allocation and no
// system call per record; next_batch() fills many events per virtual call.
#include "trace/detail/codec.hpp"

#include <bit>
#include <cstring>
#include <utility>

namespace tierpool::trace::detail {
namespace {

constexpr std::size_t kRecordBytes = 24;
constexpr std::uint64_t kNsPerSecond = 1'000'000'000;

template <class T>
T load_le(char const* p) noexcept
{
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) {
    if constexpr (sizeof(T) == 4) {
      v = static_cast<T>(__builtin_bswap32(static_cast<std::uint32_t>(v)));
    } else {
      v = static_cast<T>(__builtin_bswap64(static_cast<std::uint64_t>(v)));
    }
  }
  return v;
}

class oracle_general_reader final : public reader {
 public:
  explicit oracle_general_reader(byte_source src) : src_(std::move(src)) {}

  bool next(event& out) override { return next_batch(std::span<event>(&out, 1)) == 1; }

  std::size_t next_batch(std::span<event> out) override
  {
    std::size_t filled = 0;
    while (filled < out.size()) {
      if (src_.size() < kRecordBytes && !refill()) { break; }
      char const* p = src_.data();
      std::size_t const records = src_.size() / kRecordBytes;
      std::size_t used = 0;
      // p[0..records*24) are whole records; stop early when `out` is full.
      while (used < records && filled < out.size()) {
        auto const size = load_le<std::uint32_t>(p + 12);
        if (size != 0) {
          event& e = out[filled++];
          e.kind = event_kind::access;
          e.mode = access_kind::read;
          e.stream = 0;
          e.tier = no_tier;
          e.tensor = load_le<std::uint64_t>(p + 4);
          e.bytes = size;
          e.time_ns = std::uint64_t{load_le<std::uint32_t>(p)} * kNsPerSecond;
          e.duration_ns = 0;
          e.hints = 0;
          if (!e.name.empty()) { e.name.clear(); }
        }
        p += kRecordBytes;
        ++used;
      }
      src_.consume(used * kRecordBytes);
    }
    return filled;
  }

  [[nodiscard]] format encoding() const noexcept override { return format::oracle_general; }

 private:
  // Makes a whole record available; false at a clean end, throws on a partial record.
  bool refill()
  {
    if (src_.fill(kRecordBytes)) { return true; }
    if (src_.size() == 0) { return false; }
    throw_at_offset(src_.name(), src_.offset(),
                    "truncated record: the file ends " + std::to_string(src_.size()) +
                      " bytes into it (oracleGeneral records are 24 bytes: u32 time, u64 obj_id, u32 obj_size,"
                      " i64 next_access_vtime)");
  }

  byte_source src_;
};

}  // namespace

std::unique_ptr<reader> make_oracle_general_reader(byte_source src)
{
  return std::make_unique<oracle_general_reader>(std::move(src));
}

}  // namespace tierpool::trace::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// plain_lru_baseline.cpp — the yardstick of bench/results/trace-load-*.md: the LRU cache
// simulation someone would write by hand for an oracleGeneral trace (std::list of the
// cached objects, most recent first, and an std::unordered_map from id to list node),
// with no tierpool code. It reads the file twice in 1 MiB blocks, as a plain program
// would: once for the working set (the sum of each distinct id's first size, as
// `tierpool replay --mode cache` computes it), once to simulate, and prints the miss
// ratio to check it against `tierpool replay ... --policy lru --capacity P%`.
//
// Usage: plain_lru_baseline TRACE.oracleGeneral.bin [CAPACITY_FRACTION=0.1]
//
// Same rules as the cache-mode replay: size-0 records are skipped, an object larger than
// the capacity is never admitted, a hit moves the object to the front, a miss admits it
// and evicts from the back until it fits.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

struct record {
  std::uint64_t id;
  std::uint32_t size;
};

// Calls f(record) for every record of size > 0; false if the file cannot be read.
template <class F>
bool for_each_record(char const* path, F&& f)
{
  std::FILE* const file = std::fopen(path, "rb");
  if (file == nullptr) { return false; }
  constexpr std::size_t kRecord = 24;
  std::vector<char> buf(kRecord * (std::size_t{1} << 16U));  // 1.5 MiB, whole records
  std::size_t got = 0;
  while ((got = std::fread(buf.data(), 1, buf.size(), file)) > 0) {
    for (std::size_t off = 0; off + kRecord <= got; off += kRecord) {
      record r{};
      std::memcpy(&r.id, buf.data() + off + 4, 8);
      std::memcpy(&r.size, buf.data() + off + 12, 4);
      if (r.size != 0) { f(r); }
    }
  }
  std::fclose(file);
  return true;
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TRACE.oracleGeneral.bin [CAPACITY_FRACTION=0.1]\n", argv[0]);
    return 2;
  }
  double const fraction = argc > 2 ? std::strtod(argv[2], nullptr) : 0.1;

  std::unordered_map<std::uint64_t, std::uint32_t> first_size;
  std::uint64_t working_set = 0;
  bool const ok = for_each_record(argv[1], [&](record const& r) {
    if (first_size.try_emplace(r.id, r.size).second) { working_set += r.size; }
  });
  if (!ok) {
    std::perror(argv[1]);
    return 1;
  }
  first_size = {};  // not needed any more
  auto const capacity = static_cast<std::uint64_t>(fraction * static_cast<double>(working_set));

  using entry = std::pair<std::uint64_t, std::uint32_t>;  // id, size
  std::list<entry> lru;                                     // front: most recently used
  std::unordered_map<std::uint64_t, std::list<entry>::iterator> where;
  std::uint64_t used = 0;
  std::uint64_t requests = 0;
  std::uint64_t misses = 0;
  (void)for_each_record(argv[1], [&](record const& r) {
    ++requests;
    auto const it = where.find(r.id);
    if (it != where.end()) {
      lru.splice(lru.begin(), lru, it->second);
      return;
    }
    ++misses;
    if (r.size > capacity) { return; }  // never fits: not admitted
    while (used + r.size > capacity) {
      entry const& victim = lru.back();
      used -= victim.second;
      where.erase(victim.first);
      lru.pop_back();
    }
    lru.emplace_front(r.id, r.size);
    where.emplace(r.id, lru.begin());
    used += r.size;
  });
  std::printf("%s: plain LRU, capacity %llu bytes (%.4g of the working set %llu), %llu requests, miss ratio %.4f\n",
              argv[1], static_cast<unsigned long long>(capacity), fraction,
              static_cast<unsigned long long>(working_set), static_cast<unsigned long long>(requests),
              requests == 0 ? 0.0 : static_cast<double>(misses) / static_cast<double>(requests));
  return 0;
}

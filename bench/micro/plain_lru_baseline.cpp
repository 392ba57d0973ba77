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
// Usage: plain_lru_baseline [--in-memory] TRACE.oracleGeneral.bin [CAPACITY_FRACTION=0.1]
//
// --in-memory reads the file once into a vector of (id, size) pairs (16 bytes a request,
// reserved from the file's size) and simulates over it: what a simulator that runs several
// policies or capacities on one load, or needs the future (Belady), has to hold, as
// `tierpool replay` does (its compiled array is 16 bytes a request too).
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
  bool const in_memory = argc > 1 && std::strcmp(argv[1], "--in-memory") == 0;
  if (in_memory) {
    --argc;
    ++argv;
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: plain_lru_baseline [--in-memory] TRACE.oracleGeneral.bin [CAPACITY_FRACTION=0.1]\n");
    return 2;
  }
  char const* const path = argv[1];
  double const fraction = argc > 2 ? std::strtod(argv[2], nullptr) : 0.1;

  std::vector<record> held;
  if (in_memory) {
    if (std::FILE* f = std::fopen(path, "rb"); f != nullptr) {
      std::fseek(f, 0, SEEK_END);
      held.reserve(static_cast<std::size_t>(std::ftell(f)) / 24);
      std::fclose(f);
    }
  }
  std::unordered_map<std::uint64_t, std::uint32_t> first_size;
  std::uint64_t working_set = 0;
  bool const ok = for_each_record(path, [&](record const& r) {
    if (first_size.try_emplace(r.id, r.size).second) { working_set += r.size; }
    if (in_memory) { held.push_back(r); }
  });
  if (!ok) {
    std::perror(path);
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
  auto const simulate = [&](record const& r) {
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
  };
  if (in_memory) {
    for (record const& r : held) { simulate(r); }
  } else {
    (void)for_each_record(path, simulate);
  }
  std::printf("%s: plain LRU%s, capacity %llu bytes (%.4g of the working set %llu), %llu requests, miss ratio %.4f\n",
              path, in_memory ? " (in memory)" : "", static_cast<unsigned long long>(capacity), fraction,
              static_cast<unsigned long long>(working_set), static_cast<unsigned long long>(requests),
              requests == 0 ? 0.0 : static_cast<double>(misses) / static_cast<double>(requests));
  return 0;
}

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// consumer.cpp — compiles against the installed headers only (no CUDA header needed) and
// links tierpool::tierpool from the installed package: a pool, a generated trace, a
// cache-mode and pool-mode replay of it through the replay library, and a codec round trip
// (the codec layer links liblz4 and libzstd).
#include <tierpool/codec.hpp>
#include <tierpool/replay.hpp>
#include <tierpool/tierpool.hpp>
#include <tierpool/trace_gen.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main()
{
  std::printf("tierpool %s, cuda backend compiled in: %d\n", tierpool::version_string, TIERPOOL_HAS_CUDA);

  // The pool: one tensor through an eviction and back (sim backend where there is no GPU).
  tierpool::pool_options po;
  po.backend = tierpool::backend_choice::sim;
  tierpool::pool p{po};
  tierpool::tensor t = p.allocate(4096);
  {
    tierpool::lease l = p.acquire_host(t, tierpool::access_mode::write_discard);
    std::memset(l.data(), 0x5a, 4096);
  }
  if (!p.validate()) { return 1; }

  // The replay library: a generated trace, compiled once, replayed in both modes.
  namespace tr = tierpool::replay;
  auto events = tierpool::trace::generate("random-reuse", {}, 1);
  auto trace = tr::compiled_trace::compile(events, {.loop = 1});
  tr::grid_options g;
  g.policies = {"lru", "fifo"};
  g.capacities = tr::parse_capacities("25%");
  g.threads = 1;
  for (tr::replay_mode m : {tr::replay_mode::cache, tr::replay_mode::pool}) {
    g.mode = m;
    auto results = tr::run_grid(trace, g);
    if (results.size() != 2) { return 2; }
    for (auto const& r : results) {
      if (r.requests == 0 || r.hits + r.misses != r.requests) { return 3; }
    }
    std::printf("replay %s: lru miss ratio %.4f\n", std::string(tr::to_string(m)).c_str(), results[0].miss_ratio());
  }
  // The codecs: the same bytes back from lz4 and zstd frames.
  std::vector<std::byte> in(10000, std::byte{7});
  for (auto k : {tierpool::codec_kind::lz4, tierpool::codec_kind::zstd}) {
    std::vector<std::byte> frame(tierpool::max_compressed_size(k, in.size()));
    frame.resize(tierpool::compress(k, in, frame));
    std::vector<std::byte> out(in.size());
    tierpool::decompress(k, frame, out);
    if (out != in) { return 4; }
    std::printf("codec %s: %zu -> %zu bytes\n", std::string(tierpool::to_string(k)).c_str(), in.size(), frame.size());
  }
  return tierpool::to_string(tierpool::status::ok) == "ok" ? 0 : 1;
}

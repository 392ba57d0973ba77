// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// basic_pool — the building blocks a tier is made of, used by hand: a backend chunk of
// device memory, an arena sub-allocating offsets inside it, stream-ordered copies in and
// out, and an event to wait on. (The tiered pool wraps exactly this; until it lands, this
// is the smallest complete program against the installed package.)
//
// Runs on the simulated device, so it works on any machine.
#include <tierpool/tierpool.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

int main()
{
  using namespace tierpool::literals;
  auto be = tierpool::make_sim_backend({});  // 256 MiB simulated device, real memory

  // One 64 MiB device chunk, sub-allocated by an arena (offsets only: the arena never
  // touches device memory).
  constexpr std::size_t chunk_bytes = 64_MiB;
  void* chunk = nullptr;
  TIERPOOL_TRY(be->allocate(tierpool::tier_kind::device, chunk_bytes, &chunk));
  tierpool::arena arena(chunk_bytes);

  tierpool::stream_handle stream;
  TIERPOOL_TRY(be->create_stream(&stream));
  tierpool::event_handle done;
  TIERPOOL_TRY(be->create_event(&done));

  // Three "tensors": fill on the host, copy to their device slots, copy back, check.
  std::vector<std::size_t> const sizes{1_MiB, 3_MiB + 512, 16_MiB};
  bool ok = true;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    auto slot = arena.allocate(sizes[i]);
    if (!slot) {
      std::fprintf(stderr, "arena full\n");
      return 1;
    }
    auto* dev = static_cast<std::byte*>(chunk) + slot->offset;
    std::vector<unsigned char> in(sizes[i]);
    std::vector<unsigned char> out(sizes[i], 0);
    for (std::size_t b = 0; b < in.size(); ++b) { in[b] = static_cast<unsigned char>((b * 31 + i) & 0xFF); }

    TIERPOOL_TRY(be->copy_async({dev, in.data(), in.size(), tierpool::tier_kind::device, tierpool::tier_kind::host}, stream));
    TIERPOOL_TRY(be->copy_async({out.data(), dev, out.size(), tierpool::tier_kind::host, tierpool::tier_kind::device}, stream));
    TIERPOOL_TRY(be->record_event(done, stream));
    TIERPOOL_TRY(be->synchronize_event(done));
    bool const same = std::memcmp(in.data(), out.data(), in.size()) == 0;
    ok = ok && same;
    std::printf("tensor %zu: %zu bytes at device offset %llu, round trip %s\n", i, sizes[i],
                static_cast<unsigned long long>(slot->offset), same ? "ok" : "CORRUPT");
    arena.deallocate(*slot);
  }
  std::printf("arena after frees: %llu free of %llu, fragmentation %.3f, valid %s\n",
              static_cast<unsigned long long>(arena.free_bytes()),
              static_cast<unsigned long long>(arena.capacity()), arena.external_fragmentation(),
              arena.validate() ? "yes" : "NO");

  be->destroy_event(done);
  be->destroy_stream(stream);
  be->deallocate(tierpool::tier_kind::device, chunk, chunk_bytes);
  return ok && arena.validate() ? 0 : 1;
}

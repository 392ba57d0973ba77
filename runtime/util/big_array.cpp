// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// big_array.cpp — owns the huge-page mappings behind detail::big_array_allocator and the
// record slabs (Note [Big arrays on huge pages], include/tierpool/detail/big_array.hpp).
#include <tierpool/detail/big_array.hpp>
#include <tierpool/log.hpp>

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace tierpool::detail {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20U;  // a transparent huge page on x86-64

}  // namespace

std::optional<bool> parse_huge_pages(char const* value) noexcept
{
  if (value == nullptr || *value == '\0' || std::strcmp(value, "0") == 0) { return false; }
  if (std::strcmp(value, "1") == 0) { return true; }
  return std::nullopt;
}

bool huge_pages_wanted() noexcept
{
  static bool const wanted = [] {
    char const* const env = std::getenv("TIERPOOL_HUGE_PAGES");
    if (auto const v = parse_huge_pages(env)) { return *v; }
    try {
      log_message(log_level::warning, std::string("tierpool: TIERPOOL_HUGE_PAGES must be 0 or 1, got '") + env +
                                        "'; using 0 (no huge pages)");
    } catch (...) {  // NOLINT(bugprone-empty-catch): no memory for the message; the default stands
    }
    return false;
  }();
  return wanted;
}

std::size_t huge_round_up(std::size_t bytes) noexcept { return (bytes + kHugePage - 1) & ~(kHugePage - 1); }

void* map_huge(std::size_t bytes)
{
  // Over-map by one huge page and trim, so that the mapping is 2 MiB-aligned.
  std::size_t const span = bytes + kHugePage;
  void* const raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) { throw std::bad_alloc(); }
  auto const lo = reinterpret_cast<std::uintptr_t>(raw);
  std::uintptr_t const base = huge_round_up(lo);
  if (base != lo) { (void)::munmap(raw, base - lo); }
  if (std::size_t const tail = lo + span - (base + bytes); tail != 0) {
    (void)::munmap(reinterpret_cast<void*>(base + bytes), tail);
  }
  if (huge_pages_wanted()) { (void)::madvise(reinterpret_cast<void*>(base), bytes, MADV_HUGEPAGE); }  // a hint: may be unsupported
  return reinterpret_cast<void*>(base);
}

void unmap_huge(void* p, std::size_t bytes) noexcept { (void)::munmap(p, bytes); }

}  // namespace tierpool::detail

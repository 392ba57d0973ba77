// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file sim_memory.hpp
 * @brief Private: the sim backend's allocation registry (real or phantom memory, capacities).
 */
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/error.hpp>
#include <tierpool/tier.hpp>

namespace tierpool::detail {

/// Alignment and size granule of every sim allocation (matches cudaMalloc's 256).
inline constexpr std::size_t sim_alignment = 256;

/**
 * @brief Registry of live allocations per tier kind, with capacity accounting.
 *
 * Real mode: memory comes from std::aligned_alloc. Phantom mode: addresses come from a
 * bump range per kind at `(kind + 1) << 56 | device << 48` (2^48 bytes each),
 * non-canonical on x86-64 so that any stray dereference faults at once, and distinct per
 * simulated device. Sizes are rounded up to 256.
 *
 * Invariant: used(kind) == sum of rounded sizes of live allocations of kind <= capacity(kind)
 * (capacity 0 = unbounded for pinned_host and host).
 *
 * Thread safety: every member is safe to call concurrently (one mutex; contains() first
 * tries the block it found last without it, see Note [contains without the lock]).
 */
class sim_memory {
 public:
  /// Outcome of deallocate().
  enum class free_result : std::uint8_t { ok, null_pointer, unknown_pointer, wrong_kind, size_mismatch };

  /// @param capacities bytes per tier kind; 0 = unbounded (device/managed 0 = none).
  /// @param device the simulated device's ordinal (0..255): picks the phantom ranges.
  sim_memory(sim_memory_mode mode, std::array<std::size_t, tier_kind_count> capacities, int device = 0) noexcept;
  ~sim_memory();
  sim_memory(sim_memory const&) = delete;
  sim_memory& operator=(sim_memory const&) = delete;

  /// @return ok, out_of_memory (capacity or host exhausted), not_supported (managed with 0 capacity).
  [[nodiscard]] status allocate(tier_kind kind, std::size_t bytes, void** out) noexcept;
  /// Frees on ok and size_mismatch (using the recorded size); ignores the call otherwise.
  [[nodiscard]] free_result deallocate(tier_kind kind, void* ptr, std::size_t bytes) noexcept;
  /// True when [p, p + bytes) lies inside one live allocation of `kind`.
  [[nodiscard]] bool contains(tier_kind kind, void const* p, std::size_t bytes) const noexcept;
  /// Rounded bytes live of `kind`.
  [[nodiscard]] std::size_t used(tier_kind kind) const noexcept;
  /// Live allocations of all kinds.
  [[nodiscard]] std::size_t live() const noexcept;
  /// The simulated device whose phantom range holds `p`; -1 when `p` is no phantom address.
  [[nodiscard]] static int phantom_device(void const* p) noexcept;

 private:
  struct block {
    std::size_t bytes;  // rounded size
    tier_kind kind;
  };
  void release_locked(std::uintptr_t addr, block const& b) noexcept;
  [[nodiscard]] static bool inside(std::uintptr_t base, std::size_t size, std::uintptr_t addr, std::size_t bytes) noexcept
  {
    return addr - base <= size && bytes <= size - (addr - base);
  }

  sim_memory_mode mode_;
  int device_;
  std::array<std::size_t, tier_kind_count> capacity_;
  mutable std::mutex mtx_;
  std::map<std::uintptr_t, block> blocks_;               // start address -> block
  std::array<std::size_t, tier_kind_count> used_{};      // used_[k] <= capacity_[k] when bounded
  std::array<std::uintptr_t, tier_kind_count> phantom_next_{};  // bump pointer per kind
  // The block contains() found last, read without the mutex under a sequence counter
  // (written under the mutex), valid while no block was freed since (frees_ unchanged).
  std::atomic<std::uint64_t> frees_{0};                   // COUNT of releases; written under mtx_
  mutable std::atomic<std::uint64_t> hint_seq_{0};        // odd while the hint is written
  mutable std::atomic<std::uintptr_t> hint_addr_{0};
  mutable std::atomic<std::size_t> hint_bytes_{0};        // 0: no hint
  mutable std::atomic<std::uint8_t> hint_kind_{0};
  mutable std::atomic<std::uint64_t> hint_frees_{0};      // frees_ when the hint was taken
};

}  // namespace tierpool::detail

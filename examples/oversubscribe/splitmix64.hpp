// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file splitmix64.hpp
 * @brief splitmix64: a tiny, portable generator, so the same seed gives the same model
 *        (and the same kernel-check inputs) everywhere.
 */
#pragma once

#include <cstdint>

namespace oversubscribe {

/**
 * @brief splitmix64 (Steele, Lea and Flood): 64 random bits per call from a 64-bit state.
 *
 * Thread safety: none (one generator per thread). Deterministic: the sequence depends
 * only on the seed.
 */
class splitmix64 {
 public:
  /// @brief A generator whose sequence is determined by `seed`.
  explicit splitmix64(std::uint64_t seed) noexcept : state_(seed) {}
  /// @brief The next 64 random bits.
  std::uint64_t next() noexcept
  {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31U);
  }
  /// @brief Uniform in [lo, hi), from the top 24 bits (exact in fp32).
  float uniform(float lo, float hi) noexcept
  {
    float const u = static_cast<float>(next() >> 40U) * 0x1.0p-24F;
    return lo + (hi - lo) * u;
  }

 private:
  std::uint64_t state_;
};

}  // namespace oversubscribe

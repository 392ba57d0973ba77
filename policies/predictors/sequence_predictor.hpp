// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file sequence_predictor.hpp
 * @brief `sequence`: learns the access sequence of a repeating computation (a training
 *        iteration, a decoding step) and prefetches what followed the current tensor
 *        last time.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <tierpool/export.hpp>
#include <tierpool/prefetch.hpp>

namespace tierpool {

/**
 * @brief The `sequence` predictor: "what came after this tensor last time comes next".
 *
 * Algorithm: the predictor keeps the last `history` device accesses in a ring and, per
 * tensor, the position of its latest access. On an access to X it looks up where X was
 * accessed before; the accesses that followed it then — up to `depth` distinct tensors,
 * or until their bytes reach `budget` — are the plan, nearest first. Then X's position is
 * updated. A training loop repeats the same order every iteration, so from the second
 * iteration on every tensor's successors are known one iteration ahead: the plan is the
 * next `depth` tensors of this iteration. This is the "learned sequence" prefetcher of
 * offload runtimes (DeepSpeed's parameter-offload trace, ZeRO-Infinity's
 * prefetch-by-recorded-order), reduced to a per-access lookup; unlike them it needs no
 * explicit "trace complete" step and adapts when the order changes (the newest occurrence
 * wins).
 *
 * Parameters: `depth` (tensors ahead, default 4), `budget` (bytes ahead, 0 = no bound),
 * `history` (ring length in accesses, default 65536: an iteration with more accesses
 * than this predicts nothing).
 *
 * Cost: O(depth) per access; the ring never reallocates; the position map allocates only
 * for tensors it has not seen. Deterministic (hash map used for lookup only).
 */
class TIERPOOL_EXPORT sequence_predictor {
 public:
  /// @brief Parameters, with their defaults.
  struct config {
    std::uint32_t depth{4};        ///< distinct tensors to prefetch ahead, >= 1
    std::uint64_t budget_bytes{0};  ///< stop once the plan holds this many bytes; 0 = no bound
    std::uint32_t history{65536};   ///< accesses remembered, >= 2
  };

  /// @brief @throws tierpool::logic_error for depth 0 or history < 2
  explicit sequence_predictor(config c);

  /// @brief Record `a` and plan what followed it last time.
  void on_access(access_view const& a, prefetch_plan& out);
  /// @brief Forget a freed tensor.
  void on_free(tensor_id id) noexcept;
  /// @brief "sequence".
  [[nodiscard]] std::string_view name() const noexcept { return "sequence"; }

 private:
  struct entry {
    tensor_id id{};
    std::size_t bytes{0};
  };
  config cfg_;
  std::vector<entry> ring_;
  std::uint64_t pos_{0};                                  // accesses recorded
  std::unordered_map<std::uint64_t, std::uint64_t> last_;  // tensor -> position of its latest access
};

/// @brief The `none` predictor: never prefetches (the default).
class no_predictor {
 public:
  /// @brief Does nothing.
  void on_access(access_view const&, prefetch_plan&) {}
  /// @brief Does nothing.
  void on_free(tensor_id) noexcept {}
  /// @brief "none".
  [[nodiscard]] std::string_view name() const noexcept { return "none"; }
};

static_assert(prefetch_predictor<sequence_predictor>);
static_assert(prefetch_predictor<no_predictor>);

}  // namespace tierpool

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file saturating.hpp
 * @brief tierpool::policies::detail::saturating_add(): the byte count of a proposal being
 *        built, which must not wrap when tensors are huge. Not API. Include as
 *        `<tierpool/policies/saturating.hpp>` (policy sources do).
 *
 * @ingroup policies
 */
#pragma once

#include <cstddef>
#include <limits>

namespace tierpool::policies::detail {

/**
 * @brief `a + b`, or SIZE_MAX when the sum does not fit.
 * Thread safety: pure. Never throws.
 */
[[nodiscard]] constexpr std::size_t saturating_add(std::size_t a, std::size_t b) noexcept
{
  return b > std::numeric_limits<std::size_t>::max() - a ? std::numeric_limits<std::size_t>::max() : a + b;
}

}  // namespace tierpool::policies::detail

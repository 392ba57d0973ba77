// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file tier.hpp
 * @brief The kinds of memory a tier can live in.
 */
#pragma once

#include <cstdint>
#include <string_view>

#include <tierpool/export.hpp>

namespace tierpool {

/**
 * @brief Kind of memory behind a tier, fastest first.
 *
 * - `device`: VRAM (cudaMalloc), reached directly by kernels.
 * - `pinned_host`: page-locked host memory (cudaHostAlloc), reached by DMA copies.
 * - `managed`: CUDA managed memory (cudaMallocManaged), page-faulting, steered with
 *   prefetch/advise.
 * - `host`: ordinary pageable host memory, optionally bound to a NUMA node (a CPU-less
 *   node is far memory, e.g. CXL).
 * - `storage`: a file or block device below the host tiers (tier_options::storage,
 *   include/tierpool/storage.hpp). Neither host nor device code reaches its bytes: copies
 *   to and from it are file I/O, and only from or into a host-accessible tier.
 */
enum class tier_kind : std::uint8_t { device, pinned_host, managed, host, storage };

/// @brief Number of tier kinds (for arrays indexed by tier_kind).
inline constexpr std::size_t tier_kind_count = 5;

/// @brief Lower-case name of a tier kind ("device", "pinned_host", "managed", "host", "storage").
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(tier_kind kind) noexcept;

/// @brief True when memory of this kind can be read and written by the host CPU (every
///        kind but device and storage).
[[nodiscard]] constexpr bool is_host_accessible(tier_kind kind) noexcept
{
  return kind != tier_kind::device && kind != tier_kind::storage;
}

/// @brief True for the storage kind: a file below the host tiers, reached by file I/O.
[[nodiscard]] constexpr bool is_storage(tier_kind kind) noexcept { return kind == tier_kind::storage; }

/// @brief True when memory of this kind can be read and written by device kernels
///        (device and managed memory).
[[nodiscard]] constexpr bool is_device_accessible(tier_kind kind) noexcept
{
  return kind == tier_kind::device || kind == tier_kind::managed;
}

}  // namespace tierpool

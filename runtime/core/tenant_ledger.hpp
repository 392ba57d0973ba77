// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file tenant_ledger.hpp
 * @brief Internal: per-tenant accounts of one pool — quota, live bytes and tensors, peak,
 *        refusals — charged at allocate and credited at free (pool::set_quota,
 *        pool_options::tenant_quotas, quota_exceeded).
 *
 * Owns: the accounts, under a leaf spin lock (short sections). Calls nothing of the pool.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <tierpool/telemetry.hpp>

#include "util/spin_mutex.hpp"

namespace tierpool::detail {

/// @brief The tenants' accounts. Every member is internally synchronized.
class tenant_ledger {
 public:
  /// @brief Set the quota of `tenant` (0: none); what it holds already is kept.
  void set_quota(std::uint32_t tenant, std::size_t bytes);
  /// @brief Charge a tensor of `bytes` (named `name` in the message) to `tenant`.
  /// @throws quota_exceeded (cause quota) when it would pass the quota; nothing is charged
  void charge(std::uint32_t tenant, std::size_t bytes, std::string const& name);
  /// @brief Credit a freed tensor of `bytes` to `tenant` (the reverse of a charge).
  void credit(std::uint32_t tenant, std::size_t bytes) noexcept;
  /// @brief Bytes `tenant` may still allocate (SIZE_MAX: no quota).
  [[nodiscard]] std::size_t quota_left(std::uint32_t tenant) const;
  /// @brief Start every tenant's peak over at its live bytes (pool::reset_peak_stats).
  void reset_peaks() noexcept;
  /// @brief Every tenant that allocated or has a quota, by id (pool_stats::tenants).
  [[nodiscard]] std::vector<tenant_stats> snapshot() const;

 private:
  struct account {
    std::size_t quota{0};
    std::size_t live{0};
    std::size_t peak{0};
    std::uint64_t tensors{0};
    std::uint64_t refusals{0};
  };
  mutable spin_mutex mtx_;                   ///< a leaf lock
  std::map<std::uint32_t, account> accounts_;  ///< under mtx_
};

}  // namespace tierpool::detail

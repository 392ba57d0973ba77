// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// tenant_ledger.cpp — owns the tenants' accounts (tenant_ledger.hpp): quota checks at
// allocate, with the message of a refusal.
#include "core/tenant_ledger.hpp"

#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>

#include <algorithm>
#include <limits>
#include <mutex>

namespace tierpool::detail {

void tenant_ledger::set_quota(std::uint32_t tenant, std::size_t bytes)
{
  std::lock_guard lock(mtx_);
  accounts_[tenant].quota = bytes;
}

void tenant_ledger::charge(std::uint32_t tenant, std::size_t bytes, std::string const& name)
{
  std::lock_guard lock(mtx_);
  account& t = accounts_[tenant];
  if (t.quota != 0 && (bytes > t.quota || t.live > t.quota - bytes)) {
    ++t.refusals;
    std::string msg = "tierpool: out of memory: tenant " + std::to_string(tenant) + " cannot allocate";
    if (!name.empty()) { msg += " '" + name + "'"; }
    msg += " of " + format_byte_size(bytes) + " (" + std::to_string(bytes) + " bytes): it holds " +
           format_byte_size(t.live) + " in " + std::to_string(t.tensors) + " live tensors of its quota of " +
           format_byte_size(t.quota) + "; cause: quota — free tensors of tenant " + std::to_string(tenant) +
           ", or raise its quota (pool::set_quota, pool_options::tenant_quotas)";
    throw quota_exceeded(std::move(msg), tenant, t.quota, t.live, bytes);
  }
  t.live += bytes;
  t.peak = std::max(t.peak, t.live);
  ++t.tensors;
}

void tenant_ledger::credit(std::uint32_t tenant, std::size_t bytes) noexcept
{
  std::lock_guard lock(mtx_);
  auto it = accounts_.find(tenant);
  if (it == accounts_.end()) { return; }
  it->second.live -= std::min(bytes, it->second.live);
  if (it->second.tensors != 0) { --it->second.tensors; }
}

std::size_t tenant_ledger::quota_left(std::uint32_t tenant) const
{
  std::lock_guard lock(mtx_);
  auto const it = accounts_.find(tenant);
  if (it == accounts_.end() || it->second.quota == 0) { return std::numeric_limits<std::size_t>::max(); }
  return it->second.quota > it->second.live ? it->second.quota - it->second.live : 0;
}

void tenant_ledger::reset_peaks() noexcept
{
  std::lock_guard lock(mtx_);
  for (auto& [id, a] : accounts_) { a.peak = a.live; }
}

std::vector<tenant_stats> tenant_ledger::snapshot() const
{
  std::vector<tenant_stats> out;
  std::lock_guard lock(mtx_);
  out.reserve(accounts_.size());
  for (auto const& [id, t] : accounts_) {
    out.push_back({.tenant = id, .tensors = t.tensors, .live_bytes = t.live, .peak_bytes = t.peak,
                   .quota_bytes = t.quota, .quota_refusals = t.refusals});
  }
  return out;
}

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// error.cpp — status names and the exception types of include/tierpool/error.hpp.
#include <tierpool/error.hpp>
#include <tierpool/tier.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace tierpool {

std::string_view to_string(status s) noexcept
{
  switch (s) {
    case status::ok: return "ok";
    case status::not_ready: return "not_ready";
    case status::invalid_value: return "invalid_value";
    case status::out_of_memory: return "out_of_memory";
    case status::not_supported: return "not_supported";
    case status::no_device: return "no_device";
    case status::device_error: return "device_error";
    case status::injected_fault: return "injected_fault";
    case status::device_lost: return "device_lost";
    case status::io_error: return "io_error";
  }
  return "unknown";
}

std::string_view to_string(storage_failure f) noexcept
{
  switch (f) {
    case storage_failure::bad_capacity: return "bad_capacity";
    case storage_failure::bad_path: return "bad_path";
    case storage_failure::missing_path: return "missing_path";
    case storage_failure::permission: return "permission";
    case storage_failure::no_space: return "no_space";
    case storage_failure::direct_unsupported: return "direct_unsupported";
    case storage_failure::engine_unavailable: return "engine_unavailable";
    case storage_failure::write_failed: return "write_failed";
    case storage_failure::short_write: return "short_write";
    case storage_failure::torn_write: return "torn_write";
    case storage_failure::read_failed: return "read_failed";
    case storage_failure::corrupt: return "corrupt";
  }
  return "unknown";
}

storage_error::storage_error(storage_failure failure, std::string const& what_arg, int errno_value)
  : backend_error(status::io_error, "storage (" + std::string(to_string(failure)) + "): " + what_arg),
    failure_(failure), errno_(errno_value)
{
}

std::string_view to_string(tier_kind kind) noexcept
{
  switch (kind) {
    case tier_kind::device: return "device";
    case tier_kind::pinned_host: return "pinned_host";
    case tier_kind::managed: return "managed";
    case tier_kind::host: return "host";
    case tier_kind::storage: return "storage";
  }
  return "unknown";
}

backend_error::backend_error(status code, std::string const& what_arg)
  : std::runtime_error(what_arg + " [" + std::string(to_string(code)) + "]"), code_(code)
{
}

namespace {

std::string lost_message(std::string const& what, std::vector<tensor_id> const& lost, std::vector<std::string> const& names)
{
  std::string m = what + "; " + std::to_string(lost.size()) + " tensor(s) lost (their only copy was on the device)";
  std::size_t const shown = std::min<std::size_t>(lost.size(), 16);
  for (std::size_t i = 0; i < shown; ++i) {
    m += i == 0 ? ": " : ", ";
    m += std::to_string(static_cast<std::uint64_t>(lost[i]));
    if (i < names.size() && !names[i].empty()) { m += " '" + names[i] + "'"; }
  }
  if (lost.size() > shown) { m += ", ... (" + std::to_string(lost.size() - shown) + " more)"; }
  return m + "; close the pool (host copies of the others are intact)";
}

}  // namespace

device_lost::device_lost(std::string const& what_arg, std::vector<tensor_id> lost, std::vector<std::string> names)
  : backend_error(status::device_lost, lost_message(what_arg, lost, names)), lost_(std::move(lost)), names_(std::move(names))
{
}

bad_alloc::bad_alloc(std::string what_arg) : what_(std::move(what_arg)) {}

char const* bad_alloc::what() const noexcept { return what_.c_str(); }

std::string_view to_string(oom_cause c) noexcept
{
  switch (c) {
    case oom_cause::capacity: return "capacity";
    case oom_cause::pinned: return "pinned";
    case oom_cause::fragmentation: return "fragmentation";
    case oom_cause::busy: return "busy";
    case oom_cause::quota: return "quota";
    case oom_cause::share: return "share";
  }
  return "unknown";
}

out_of_memory::out_of_memory(std::string what_arg, tier_id tier, std::size_t requested, oom_figures figures)
  : bad_alloc(std::move(what_arg)), tier_(tier), requested_(requested), figures_(figures)
{
}

quota_exceeded::quota_exceeded(std::string what_arg, std::uint32_t tenant, std::size_t quota, std::size_t live,
                               std::size_t requested)
  : out_of_memory(std::move(what_arg), tier_id{0}, requested, oom_figures{.cause = oom_cause::quota}),
    tenant_(tenant), quota_(quota), live_(live)
{
}

namespace detail {

void throw_logic_error(char const* file, int line, std::string_view msg)
{
  // The message is the user's; the location stays in the exception (logic_error::file()).
  throw logic_error("tierpool: " + std::string(msg), file, line);
}

void throw_backend_error(char const* /*file*/, int /*line*/, status s, char const* expr)
{
  throw backend_error(s, std::string("tierpool: backend call failed: ") + expr);
}

}  // namespace detail
}  // namespace tierpool

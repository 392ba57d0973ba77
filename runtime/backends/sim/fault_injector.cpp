// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// fault_injector.cpp — reproducible fault injection for the sim backend: per-kind call
// counters, "fail the nth call" and "fail with probability p" rules from a seed.
// Main entry point: fault_injector::check, called by every fallible sim_backend call
// after its arguments are validated and before it has any side effect.
#include "fault_injector.hpp"

#include <cmath>
#include <string>
#include <utility>

#include <tierpool/error.hpp>

namespace tierpool::detail {

namespace {

/// splitmix64 finaliser: a good 64-bit mix, so that nearby inputs give unrelated outputs.
std::uint64_t mix64(std::uint64_t x) noexcept
{
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

/// Uniform in [0, 1) from (seed, rule, call index); a pure function, hence reproducible.
double unit_draw(std::uint64_t seed, std::uint64_t rule, std::uint64_t index) noexcept
{
  std::uint64_t const h = mix64(mix64(mix64(seed) ^ rule) ^ index);
  return static_cast<double>(h >> 11U) * 0x1.0p-53;
}

bool matches(sim_call rule_kind, sim_call call) noexcept
{
  return rule_kind == sim_call::any || rule_kind == call;
}

}  // namespace

void fault_injector::validate(sim_fault_options const& opts)
{
  for (auto const& r : opts.rules) {
    if (!(r.probability >= 0.0 && r.probability <= 1.0)) {  // also rejects NaN
      detail::throw_logic_error(__FILE__, __LINE__,
                                "sim fault rule: probability must be in [0, 1]");
    }
    if (static_cast<std::size_t>(r.kind) > sim_call_count) {
      detail::throw_logic_error(__FILE__, __LINE__, "sim fault rule: unknown call kind");
    }
  }
}

void fault_injector::set(sim_fault_options opts)
{
  validate(opts);
  std::vector<rule_state> rules;
  rules.reserve(opts.rules.size());
  for (auto const& r : opts.rules) {
    rules.push_back(rule_state{r, 0});
  }
  std::lock_guard lock(mtx_);
  seed_ = opts.seed;
  rules_ = std::move(rules);
  armed_.store(!rules_.empty(), std::memory_order_release);
}

void fault_injector::clear() noexcept
{
  std::lock_guard lock(mtx_);
  rules_.clear();
  armed_.store(false, std::memory_order_release);
}

bool fault_injector::check_armed(sim_call kind, std::string* why) noexcept
{
  auto const k = static_cast<std::size_t>(kind);
  std::size_t const sh = thread_shard();
  std::lock_guard lock(mtx_);
  bump(counts_[sh].n[k], std::uint64_t{1}, sh);
  std::uint64_t const call_index = total(k);
  bool fail = false;
  std::size_t fired = 0;
  std::uint64_t fired_index = 0;
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    auto& rs = rules_[i];
    if (!matches(rs.rule.kind, kind)) {
      continue;
    }
    std::uint64_t const n = ++rs.seen;
    bool const hit = (rs.rule.nth != 0 && n == rs.rule.nth) ||
                     (rs.rule.probability > 0.0 && unit_draw(seed_, i, n) < rs.rule.probability);
    if (hit && !fail) {
      fail = true;
      fired = i;
      fired_index = n;
    }
  }
  if (fail) {
    ++injected_;
    if (why != nullptr) {
      try {
        *why = "injected fault: " + std::string(to_string(kind)) + " call #" + std::to_string(call_index) +
               " (rule " + std::to_string(fired) + ", matching call #" + std::to_string(fired_index) + ")";
      } catch (...) {  // message is best effort
      }
    }
  }
  return fail;
}

std::uint64_t fault_injector::total(std::size_t kind) const noexcept
{
  std::uint64_t n = 0;
  for (count_shard const& c : counts_) { n += c.n[kind].load(std::memory_order_relaxed); }
  return n - base_[kind].load(std::memory_order_relaxed);
}

std::uint64_t fault_injector::count(sim_call kind) const noexcept
{
  if (kind == sim_call::any) {
    std::uint64_t n = 0;
    for (std::size_t k = 0; k < sim_call_count; ++k) { n += total(k); }
    return n;
  }
  return total(static_cast<std::size_t>(kind));
}

void fault_injector::reset_counts() noexcept
{
  for (std::size_t k = 0; k < sim_call_count; ++k) {
    std::uint64_t n = 0;
    for (count_shard const& c : counts_) { n += c.n[k].load(std::memory_order_relaxed); }
    base_[k].store(n, std::memory_order_relaxed);
  }
}

std::uint64_t fault_injector::injected() const noexcept
{
  std::lock_guard lock(mtx_);
  return injected_;
}

}  // namespace tierpool::detail

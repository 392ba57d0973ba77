// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
#include "sequence_predictor.hpp"

#include <tierpool/error.hpp>
#include <tierpool/policy.hpp>

#include <algorithm>
#include <string>

namespace tierpool {

sequence_predictor::sequence_predictor(config c) : cfg_(c)
{
  TIERPOOL_EXPECTS(cfg_.depth >= 1, "sequence predictor: depth must be at least 1");
  TIERPOOL_EXPECTS(cfg_.history >= 2, "sequence predictor: history must be at least 2");
  ring_.resize(cfg_.history);
}

void sequence_predictor::on_access(access_view const& a, prefetch_plan& out)
{
  auto const key = static_cast<std::uint64_t>(a.id);
  std::uint64_t const h = cfg_.history;
  auto it = last_.find(key);
  if (it != last_.end() && pos_ - it->second < h) {
    // The accesses after X's previous one, up to now (this access excluded).
    for (std::uint64_t p = it->second + 1; p < pos_ && pos_ - p < h; ++p) {
      entry const& e = ring_[p % h];
      if (e.id == a.id) { break; }  // X again: the rest follows this access, not the last one
      if (std::find(out.tensors.begin(), out.tensors.end(), e.id) != out.tensors.end()) { continue; }
      out.add(e.id, e.bytes);
      if (out.tensors.size() >= cfg_.depth || (cfg_.budget_bytes != 0 && out.bytes >= cfg_.budget_bytes)) { break; }
    }
  }
  ring_[pos_ % h] = entry{a.id, a.bytes};
  if (it != last_.end()) {
    it->second = pos_;
  } else {
    last_.emplace(key, pos_);
  }
  ++pos_;
}

void sequence_predictor::on_free(tensor_id id) noexcept { last_.erase(static_cast<std::uint64_t>(id)); }

namespace policies {

void register_plan_predictors(policy_registry& registry);  // plan_predictor.cpp

void register_predictors(policy_registry& registry)
{
  register_plan_predictors(registry);
  registry.add_predictor("none", "never prefetches (the default)", {},
                         [](policy_params const&) { return any_prefetch_predictor{no_predictor{}}; });
  registry.add_predictor(
    "sequence", "prefetches the tensors that followed the current one last time (learns an iteration's order)",
    {{"depth", parameter_type::unsigned_integer, "4", "distinct tensors to prefetch ahead of each access"},
     {"budget", parameter_type::bytes, "0", "stop once the prefetched tensors hold this many bytes; 0 = no bound"},
     {"history", parameter_type::unsigned_integer, "65536", "accesses remembered; a longer iteration predicts nothing"}},
    [](policy_params const& p) {
      auto const depth = p.get<std::uint64_t>("depth");
      auto const history = p.get<std::uint64_t>("history");
      TIERPOOL_EXPECTS(depth >= 1 && depth <= 4096, "sequence predictor: depth must be in 1..4096");
      TIERPOOL_EXPECTS(history >= 2 && history <= (1ULL << 26), "sequence predictor: history must be in 2..67108864");
      sequence_predictor::config c;
      c.depth = static_cast<std::uint32_t>(depth);
      c.budget_bytes = p.get<std::uint64_t>("budget");
      c.history = static_cast<std::uint32_t>(history);
      return any_prefetch_predictor{sequence_predictor{c}};
    });
}

}  // namespace policies
}  // namespace tierpool

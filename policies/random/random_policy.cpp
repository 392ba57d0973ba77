// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// random_policy.cpp — owns tierpool::random_policy (the candidate array, the counter-based
// draw, pin handling) and its registration as "random" (register_random). See
// random_policy.hpp for the algorithm and Note [Random proposals without state].
#include "random_policy.hpp"

#include <utility>

#include <tierpool/policies/saturating.hpp>

namespace tierpool {
namespace {

// SplitMix64's finalizer (Steele, Lea, Flood 2014): a bijective 64-bit mix.
constexpr std::uint64_t mix64(std::uint64_t z) noexcept
{
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

}  // namespace

random_policy::random_policy() noexcept : random_policy(config{}) {}

random_policy::random_policy(config cfg) noexcept : cfg_(cfg) {}

void random_policy::add_candidate(index_t i) noexcept
{
  nodes_[i].pos = static_cast<index_t>(candidates_.size());
  candidates_.push_back(i);  // capacity grows with inserts; terminate if the host is out of memory
}

void random_policy::remove_candidate(index_t i) noexcept
{
  index_t const p = nodes_[i].pos;
  index_t const last = candidates_.back();
  candidates_[p] = last;
  nodes_[last].pos = p;
  candidates_.pop_back();
  nodes_[i].pos = npos;
}

std::size_t random_policy::swap_index(std::size_t k, std::size_t n) const noexcept
{
  // Three chained mixes of (seed, erases, k): a counter-based generator, so the k-th draw
  // needs no state. The modulo bias is below 2^-32 for n < 2^32.
  std::uint64_t const h = mix64(mix64(mix64(cfg_.seed) ^ erases_) + static_cast<std::uint64_t>(k));
  return k + static_cast<std::size_t>(h % static_cast<std::uint64_t>(n - k));
}

void random_policy::on_insert(tensor_view const& v) noexcept
{
  if (index_t const i = find(v.id); i != npos) {
    set_bytes(i, v.bytes);
    set_pinned(i, v.pinned);
    return;
  }
  index_t const i = admit(v);  // noexcept hook: terminates if out of memory
  if (!v.pinned) { add_candidate(i); }
}

void random_policy::access(index_t i, tensor_view const& v) noexcept
{
  set_bytes(i, v.bytes);
  set_pinned(i, v.pinned);
}

void random_policy::erase(index_t i) noexcept
{
  index_.erase(nodes_[i].id);  // first, while its cell is hot
  if (!nodes_[i].pinned) { remove_candidate(i); }
  free_slot(i);
  ++erases_;
}

void random_policy::propose(eviction_request const& req, eviction_proposal& out) const
{
  std::size_t const n = candidates_.size();
  std::size_t k = 0;
  // Undo the first `done` swaps, newest first: the array is exactly as before.
  auto const restore = [&](std::size_t done) noexcept {
    while (done > 0) {
      --done;
      std::swap(candidates_[done], candidates_[swap_index(done, n)]);
    }
  };
  try {
    std::size_t freed = 0;
    for (; k < n && freed < req.bytes_needed; ++k) {
      std::swap(candidates_[k], candidates_[swap_index(k, n)]);
      node const& v = nodes_[candidates_[k]];
      out.add(v.id, v.bytes);
      freed = policies::detail::saturating_add(freed, v.bytes);
    }
  } catch (...) {
    restore(k + 1);  // the k-th swap was done before out.add threw
    throw;
  }
  restore(k);
}

bool random_policy::order_ok(std::size_t& held) const noexcept
{
  for (std::size_t p = 0; p < candidates_.size(); ++p) {
    index_t const i = candidates_[p];
    if (i >= nodes_.size() || !nodes_[i].live || nodes_[i].pinned || nodes_[i].pos != p) { return false; }
  }
  for (node const& n : nodes_) {
    if (n.live && n.pinned && n.pos != npos) { return false; }
  }
  held = candidates_.size();
  return true;
}

namespace policies {

void register_random(policy_registry& registry)
{
  registry.add("random", "Uniformly random victims from a seeded, counter-based draw (deterministic under replay)",
               {
                 {"seed", parameter_type::unsigned_integer, "42",
                  "seed of the hash that draws victims (a number; same seed and events, same victims)"},
               },
               [](policy_params const& p) {
                 random_policy::config cfg;
                 cfg.seed = p.get<std::uint64_t>("seed");
                 return any_eviction_policy{random_policy{cfg}};
               });
}

}  // namespace policies
}  // namespace tierpool

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// cache_replay.cpp — owns cache mode: the object-cache loop over the compact request array
// (detail::run_cache). Main entry point: run_cache().
//
// Semantics (libCacheSim-style, docs/chapters/replay.md): a hit leaves the cached size
// unchanged; a miss of an object larger than the capacity is not admitted; otherwise the
// policy's victims are evicted, in its order, until used + size <= capacity, then the
// object is inserted. Invariant: used == sum of o.size over resident objects <= capacity.
//
// Note [Why the loop is a template]
//   Rationale: an indirect call per hook costs ~2-3 ns and blocks inlining of the loop's
//   bookkeeping around it; at 10 M requests/s the whole budget is 100 ns.
//   Approach: cache_loop<Policy> is instantiated for every policy that opted in to being
//   called through its concrete type (policies::visit_concrete(), generated from the
//   policies' CONCRETE_TYPE flags: Note [Calling a policy through its concrete type]) and
//   for any_eviction_policy (every other policy). This file names no policy. Per-object state lives in one flat vector indexed by the dense object index
//   (16 bytes: one cache line holds four), and the tensor_view handed to the hooks is
//   built on the stack with the trace's true next use (Belady reads it).
//   Limitations: an opted-in policy's hooks are still out-of-line (direct) calls into its
//   own index; that index, not this loop, is the larger cost (see docs/chapters/replay.md,
//   "Speed").
#include "replay/detail/engines.hpp"

#include <tierpool/error.hpp>
#include <tierpool/policies/concrete_policies.hpp>

#include <string>
#include <vector>

namespace tierpool::replay::detail {

namespace {

struct object_slot {
  std::uint64_t size{0};    // cached size while resident
  std::uint32_t count{0};   // accesses since insert, this one included
  std::uint8_t resident{0};
  std::uint8_t dirty{0};    // written since insert: eviction writes it back
  std::uint8_t pad[2]{};
};
static_assert(sizeof(object_slot) == 16);

struct counters {
  std::uint64_t hits{0};
  std::uint64_t misses{0};
  std::uint64_t unserved{0};
  std::uint64_t bytes_requested{0};
  std::uint64_t bytes_missed{0};
  std::uint64_t bytes_h2d{0};
  std::uint64_t copies_h2d{0};
  std::uint64_t bytes_d2h{0};
  std::uint64_t copies_d2h{0};
  std::uint64_t evictions{0};
};

template <class Policy>
void propose_into(Policy& p, eviction_request const& req, eviction_proposal& out)
{
  if constexpr (std::is_same_v<Policy, any_eviction_policy>) {
    p.propose(req, out);  // clears `out` itself
  } else {
    out.clear();
    p.propose(req, out);
  }
}

[[noreturn]] void no_victims(std::string_view policy, std::uint64_t used, std::uint64_t size, std::uint64_t cap)
{
  throw logic_error("replay: policy '" + std::string(policy) + "' proposed no resident victim while the cache (" +
                    std::to_string(used) + " of " + std::to_string(cap) + " bytes used) must make room for " +
                    std::to_string(size) + " bytes");
}

template <class Policy>
void cache_loop(compiled_data const& d, Policy& policy, run_options const& o, counters& c)
{
  std::vector<object_slot> objs(d.objects);
  eviction_proposal out;
  out.victims.reserve(64);
  std::uint64_t const cap = o.capacity_bytes;
  std::uint64_t used = 0;
  std::size_t const n = d.cache.size();
  cache_req const* const reqs = d.cache.data();
  size_cursor size_of(d.big_sizes.data());  // Note [Twelve-byte requests]
  std::vector<std::uint8_t>* const outcomes = o.outcomes;
  if (outcomes != nullptr) {
    outcomes->clear();
    outcomes->reserve(d.requests);
  }

  tensor_view v;
  v.tier = tier_id{0};
  for (std::size_t begin = 0; begin < n; begin += kProgressStride) {
    std::size_t const end = std::min<std::size_t>(n, begin + kProgressStride);
    for (std::size_t i = begin; i < end; ++i) {
      cache_req const r = reqs[i];
      object_slot& s = objs[r.obj];
      if ((r.word & kFreeFlag) != 0) [[unlikely]] {
        if (s.resident != 0) {
          policy.on_erase(tensor_id{r.obj});
          used -= s.size;
          s = object_slot{};
        }
        continue;
      }
      std::uint64_t const size = size_of(r);
      bool const write = (r.word & kWriteFlag) != 0;
      c.bytes_requested += size;
      v.id = tensor_id{r.obj};
      v.last_access = i;
      v.write_access = write;
      v.next_use = r.next == kNoNext ? no_next_use : tick{r.next};
      if (s.resident != 0) {
        ++c.hits;
        s.dirty = static_cast<std::uint8_t>(s.dirty | static_cast<std::uint8_t>(write));
        v.bytes = s.size;
        v.access_count = ++s.count;
        policy.on_access(v);
        if (outcomes != nullptr) [[unlikely]] { outcomes->push_back(1); }
        continue;
      }
      ++c.misses;
      c.bytes_missed += size;
      if (outcomes != nullptr) [[unlikely]] { outcomes->push_back(0); }
      if (size > cap) [[unlikely]] {
        ++c.unserved;  // never admitted
        continue;
      }
      while (used + size > cap) {
        propose_into(policy,
                     eviction_request{.from = tier_id{0}, .bytes_needed = used + size - cap, .now = i, .incoming = v.id},
                     out);
        bool evicted = false;
        for (tensor_id const victim : out.victims) {
          if (used + size <= cap) { break; }
          auto const vi = static_cast<std::size_t>(victim);
          if (vi >= objs.size() || objs[vi].resident == 0) [[unlikely]] { continue; }
          object_slot& vs = objs[vi];
          policy.on_erase(victim);
          used -= vs.size;
          ++c.evictions;
          if (vs.dirty != 0) {
            c.bytes_d2h += vs.size;
            ++c.copies_d2h;
          }
          vs.resident = 0;
          vs.dirty = 0;
          evicted = true;
        }
        if (!evicted) [[unlikely]] { no_victims(policy.name(), used, size, cap); }
      }
      s.resident = 1;
      s.size = size;
      s.count = 1;
      s.dirty = static_cast<std::uint8_t>(write);
      used += size;
      if ((r.word & kDiscardFlag) == 0) {
        c.bytes_h2d += size;
        ++c.copies_h2d;
      }
      v.bytes = size;
      v.access_count = 1;
      policy.on_insert(v);
    }
    if (o.progress) { o.progress(end, n); }
  }
}

}  // namespace

void run_cache(compiled_data const& d, any_eviction_policy& policy, run_options const& o, replay_result& out)
{
  counters c;
  if (!policies::visit_concrete(policy, [&](auto& concrete) { cache_loop(d, concrete, o, c); })) {
    cache_loop(d, policy, o, c);
  }
  out.hits = c.hits;
  out.misses = c.misses;
  out.unserved = c.unserved;
  out.bytes_requested = c.bytes_requested;
  out.bytes_missed = c.bytes_missed;
  out.bytes_h2d = c.bytes_h2d;
  out.copies_h2d = c.copies_h2d;
  out.bytes_d2h = c.bytes_d2h;
  out.copies_d2h = c.copies_d2h;
  out.evictions = c.evictions;
}

}  // namespace tierpool::replay::detail

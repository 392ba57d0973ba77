// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// window_eviction.cpp — owns the choice of one contiguous window of victims for a large
// request (migration_engine::window_victims_locked), the ladder's "evict" step when the
// request is a large share of the tier (placement.cpp). The round that evicts them is
// evict_round's, given the list (eviction.cpp).
//
// Note [Evicting a window for a large request]
// ---------------------------------------------
// Rationale: a round asks the policy for victims worth the request's bytes, in the
// policy's order. Those victims lie anywhere in the tier, so for a request much larger
// than the tensors around it their blocks do not make one free run: the ladder evicts
// round after round until some run of free and vacated blocks holds the request. On GPT-2
// small at 50 % (tests/data/gpt2_small_train.tpt, lru), the 1.5 GiB logits evicted 4.7 to
// 6.4 GiB each iteration and each 384 MiB attention map up to 1.6 GiB: every extra byte a
// write-back now and a copy-in in the backward pass, the two links' busiest phases.
// Approach: when the request is at least a share of the tier (window_eviction_share) and
// at least 1 MiB (placement.cpp's kWindowMinBytes), the
// ladder picks the victims itself, among the runs of the tier's layout that hold the
// request: free and vacated blocks cost nothing, a block the policy may give up costs its
// bytes times (1 + the bytes the policy ranks before it / the request), and any other
// block (leased, busy, the request's own tensor) ends a run. The planner's keep window
// does not: its tensors are victims like any other, and the round evicts the chosen run
// whatever the window says (Note [The keep window], transfer_planner.cpp). The cheapest
// run wins (fewer bytes evicted on a tie), preferring runs the ladder
// can take at once in stream order (at most tier::deferred_span::kMaxParts blocks to
// wait for). The round then evicts exactly those victims; the ladder's next climb takes
// the run (Note [Merging deferred blocks], tier.cpp). With every block of the request's
// size the cheapest run is the policy's first victim, as before.
// Limitations: the policy's order is asked for the whole tier (O(resident tensors) per
// large request, a record try-lock each); the weight is a proxy for the policy's
// preference, not the policy's own algorithm; tiers with tenants' shares keep the plain
// rounds.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#include "migration/migration_engine.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {
namespace {

// The plain rounds keep the request when the policy's first victims that make a run hold
// at most this many times the request's bytes (measured: 1.5 and 1.75 slowed mlp-train,
// GPT-2 at 25 % or ResNet-18 with repeat; 3 lost most of GPT-2's gain).
constexpr std::uint64_t kPlainFactor = 2;

struct window_candidate {
  std::uint64_t offset{0};
  std::uint64_t size{0};
  double cost{0.0};
  tensor_id id{};
  std::size_t rank{0};  // position in the policy's order (of the candidates)
};

enum class window_role : std::uint8_t { room, victim, wall };

struct window_block {
  std::uint64_t offset{0};
  std::uint64_t size{0};
  std::uint32_t chunk{0};
  window_role role{window_role::wall};
  bool deferred{false};
  double cost{0.0};
  std::size_t candidate{0};
  std::size_t candidate_rank{0};
};

}  // namespace

bool migration_engine::window_victims_locked(tier_state& ts, std::size_t bytes, std::vector<tensor_id>& out,
                                             std::size_t* live_bytes)
{
  out.clear();
  *live_bytes = 0;
  if (ts.ranked || !ts.tenant_shares.empty() || ts.tenant_bytes.size() > 1) { return false; }  // one tenant only
  std::uint32_t const k = ts.index;
  std::uint64_t const need = ts.mem->slot_bytes(bytes);
  thread_local std::vector<tensor_id> order;
  thread_local std::vector<window_candidate> cands;
  thread_local std::vector<window_block> layout;
  order.clear();
  cands.clear();
  layout.clear();
  try {
    eviction_request req{};
    req.from = tier_id{k};
    req.bytes_needed = ts.capacity;  // the policy's whole order
    req.contiguous_bytes = bytes;
    req.now = backend_->now();
    ts.policy->propose(req, ts.proposal);
    order.assign(ts.proposal.victims.begin(), ts.proposal.victims.end());
  } catch (...) {  // a policy that cannot propose now (belady without forecasts): the plain round
    return false;
  }
  double const per = 1.0 / static_cast<double>(std::max<std::uint64_t>(need, 1));
  std::uint64_t before = 0;  // slot bytes the policy ranks before this victim
  for (tensor_id const id : order) {
    record_ref rec;
    {
      std::lock_guard lock(*table_mtx_);
      if (auto const* r = table_->find(static_cast<std::uint64_t>(id))) { rec = *r; }
    }
    if (rec == nullptr || holds_record(*rec)) { continue; }
    record_lock const vl(*rec, std::try_to_lock);
    if (!vl.owns() || rec->freed || k >= rec->slots.size()) { continue; }
    copy_slot const& s = rec->slots[k];
    if (s.state == copy_state::absent || s.pins != 0) { continue; }
    if (rec->no_compress && !can_leave_locked(*rec, k)) { continue; }
    double const size = static_cast<double>(s.blk.slot.size);
    cands.push_back(window_candidate{.offset = s.blk.slot.offset, .size = s.blk.slot.size,
                                     .cost = size * (1.0 + static_cast<double>(before) * per), .id = id,
                                     .rank = cands.size()});
    before += s.blk.slot.size;
  }
  if (cands.empty()) { return false; }
  std::sort(cands.begin(), cands.end(),
            [](window_candidate const& a, window_candidate const& b) { return a.offset < b.offset; });
  ts.mem->for_each_block([&](tier::block_view const& b) {
    window_block e{.offset = b.offset, .size = b.size, .chunk = b.chunk};
    if (b.use == tier::block_use::free) {
      e.role = window_role::room;
    } else if (b.use == tier::block_use::deferred) {
      e.role = window_role::room;
      e.deferred = true;
    } else if (b.use == tier::block_use::live) {
      auto const it = std::lower_bound(cands.begin(), cands.end(), b.offset,
                                       [](window_candidate const& c, std::uint64_t o) { return c.offset < o; });
      if (it != cands.end() && it->offset == b.offset && it->size == b.size) {
        e.role = window_role::victim;
        e.cost = it->cost;
        e.candidate = static_cast<std::size_t>(it - cands.begin());
        e.candidate_rank = it->rank;
      }
    }
    layout.push_back(e);
  });

  // The runs layout[i..j] holding the request when the policy's first `allowed` victims
  // may go (the others are walls), cheapest first; at most kParts blocks to wait for
  // preferred (the ladder takes those in stream order).
  constexpr std::size_t kParts = tier::deferred_span::kMaxParts;
  struct best_run {
    double cost{std::numeric_limits<double>::infinity()};
    std::uint64_t evicted{0};
    std::size_t first{0};
    std::size_t last{0};
    bool found{false};
  };
  best_run in_order;  // at most kParts blocks to wait for
  best_run any;
  auto consider = [](best_run& b, double cost, std::uint64_t evicted, std::size_t i, std::size_t j) {
    if (!b.found || cost < b.cost || (cost == b.cost && evicted < b.evicted)) {
      b = best_run{.cost = cost, .evicted = evicted, .first = i, .last = j, .found = true};
    }
  };
  auto search = [&](std::size_t allowed) {
    in_order = best_run{};
    any = best_run{};
    auto const wall = [&](window_block const& e) {
      return e.role == window_role::wall || (e.role == window_role::victim && e.candidate_rank >= allowed);
    };
    double cost = 0.0;
    std::uint64_t evicted = 0;
    std::size_t parts = 0;
    std::size_t j = 0;  // layout[i..j) spans less than the request, or reaches it
    for (std::size_t i = 0; i < layout.size(); ++i) {
      if (j <= i || wall(layout[i])) {
        j = wall(layout[i]) ? i + 1 : i;
        cost = 0.0;
        evicted = 0;
        parts = 0;
        if (j > i) { continue; }
      }
      std::uint64_t const end = layout[i].offset + need;
      while (j < layout.size() && layout[j].chunk == layout[i].chunk && !wall(layout[j]) && layout[j].offset < end) {
        if (layout[j].role == window_role::victim) {
          cost += layout[j].cost;
          evicted += layout[j].size;
        }
        if (layout[j].role == window_role::victim || layout[j].deferred) { ++parts; }
        ++j;
      }
      if (layout[j - 1].offset + layout[j - 1].size >= end && evicted != 0) {
        consider(any, cost, evicted, i, j - 1);
        if (parts <= kParts) { consider(in_order, cost, evicted, i, j - 1); }
      }
      if (layout[i].role == window_role::victim) {
        cost -= layout[i].cost;
        evicted -= layout[i].size;
      }
      if (layout[i].role == window_role::victim || layout[i].deferred) { --parts; }
    }
    return any.found;
  };
  // The fewest of the policy's first victims that make a run: the plain rounds evict about
  // all of them (in order, until some run holds the request); the window evicts only the
  // run's, so it never evicts a tensor those rounds would have kept.
  if (!search(cands.size())) { return false; }
  std::size_t lo = 1;
  std::size_t hi = cands.size();  // search(hi) holds
  while (lo < hi) {
    std::size_t const mid = lo + (hi - lo) / 2;
    if (search(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  // The plain rounds' bytes: the first `hi` victims. Near the request already: they do.
  std::uint64_t prefix = 0;
  for (window_candidate const& c : cands) {
    if (c.rank < hi) { prefix += c.size; }
  }
  if (prefix <= kPlainFactor * need) { return false; }
  (void)search(hi);
  best_run const& b = in_order.found ? in_order : any;
  if (!b.found) { return false; }
  for (std::size_t i = b.first; i <= b.last; ++i) {
    if (layout[i].role != window_role::victim) { continue; }
    out.push_back(cands[layout[i].candidate].id);
    *live_bytes += layout[i].size;
  }
  return !out.empty();
}

}  // namespace tierpool::detail

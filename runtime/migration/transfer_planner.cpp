// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// transfer_planner.cpp — owns the transfer planner's two mechanisms in the migration
// engine: planned prefetches (plan_prefetch: in use order, doing no harm) and early
// write-backs (write_back_early). What to prefetch and when comes from the forecast
// (include/tierpool/plan_predictor.hpp) through the pool (core/detail/pool_impl.cpp,
// plan_after); docs/chapters/policies.md, "The transfer planner".
//
// Note [Planned prefetches]
//   Rationale: the host runs ahead of the device, so "when" a copy runs is set by what it
//   waits for in stream order, not by when the host enqueues it. A copy-in that takes the
//   room of a tensor whose last use is earlier in stream order waits for that use and then
//   has the compute up to its own use to hide behind. Approach: the pool walks the
//   forecast's accesses ahead, nearest first, and for each tensor not resident calls
//   plan_prefetch with the position of its use. Placement runs without waiting
//   (place_mode::no_wait), under planning_terms: the eviction round skips every victim
//   whose forecast next use comes at or before that position (Cao, Felten, Karlin & Li,
//   "A study of integrated prefetching and caching strategies", SIGMETRICS 1995: "do no
//   harm"), and a block vacated behind user work may be reused in stream order (the copy
//   stream waits for the retire event), which a demand fetch never does (tier.cpp, Note
//   [Stream-ordered reuse of deferred blocks]): planned copies are enqueued in use order,
//   so the copy they stall behind is one needed sooner anyway. `no_room` stops the walk:
//   a later use finds no more harmless room. Limitations: the copy streams are FIFO, so a
//   demand fetch enqueued later waits behind planned copies; the walk is bounded by the
//   pool's byte budget, not by the link's time (a copy may start earlier than it must).
//
// Note [Prefetch victims the forecast needs last]
//   Rationale: doing no harm only says which victims a planned prefetch may take (those next
//   used after the prefetched tensor); the device tier's policy still picks among them, and
//   lru on a loop larger than the tier picks the one used longest ago, which is the one
//   needed again soonest: on llm-infer-stream at 50 % (lru, `plan`) each 96 MiB layer was
//   fetched once per decode step, 148 GiB in, the same as no prefetch at all. Cao, Felten,
//   Karlin & Li's integrated strategies pair do-no-harm with optimal replacement: evict the
//   block whose next reference is furthest. Approach: a planned prefetch's eviction round
//   asks the policy for `sample` (plan_predictor::config::victim_sample, default 8) times
//   the room it needs and evicts, of those victims, the ones with the latest forecast next
//   use first (order_by_forecast, eviction.cpp; plan mode gives every tensor its forecast,
//   Note [The planner's step]). The policy still chooses the sample, so the victims are its
//   tail, and a victim larger than both the request and the policy's own first choice goes
//   last: a vacated block behind user work serves only a request of its slot size without
//   waiting (Note [Stream-ordered reuse of deferred blocks], tier.cpp), and a larger victim
//   made the prefetch find no room (PrefetchTiming.CopyInsHeldBackCountAgainstTheBudget).
//   Demand evictions keep the policy's order: ranking them by the forecast too (tried) took
//   the lru rows' geometric mean from 0.9588 to 0.9576 of `none` but made one more row
//   slower than `none` (10 of 50).
//   Measured (virtual clock, pcie4, scripts/planner_rows.py, 50 rows per policy; against
//   sample=1): `plan` with lru geometric mean 0.9658 -> 0.9588 of `none` (llm-infer-stream at
//   50 % 6.178 -> 4.966 s, at 25 % 6.478 -> 5.653 s), with repeat 0.9965 -> 0.9934 (rows
//   slower than `none` 21 -> 17), belady unchanged (its order is the forecast's); `oracle`
//   with lru 0.9411 -> 0.9254, repeat 0.9724 -> 0.9553.
//   Limitations: a sample, not the whole tier: a tensor the forecast needs last but the
//   policy ranks early is not seen. The rows that were slower than `none` with lru (the
//   recorded PyTorch traces) stay slower, and with repeat those traces lose up to 6.7 %
//   (its own learned order served them better than the planner's forecast of a 3-iteration
//   run); training rows move by up to 4 % either way
//   (bench/results/prefetch-victims-cpu-2026-12-07.md).
//
// Note [The keep window]
//   Rationale: a planned prefetch fills room up to the point where the accesses ahead no
//   longer fit the device tier (the horizon); a demand fetch or a tensor's birth that then
//   asks the policy for room must not take it back from a tensor needed before that point,
//   or the prefetch was wasted and the demand path copies it again. Approach: at each step
//   the planner sets the window [now, horizon] (set_keep_window); an eviction round in that
//   tier passes over victims whose forecast next use lies in it, as a planned prefetch's
//   round passes over those needed before its own use. When the window leaves nothing to
//   evict, placement runs the round again without it (evict_outcome::kept): the window
//   never makes a request fail. The accesses ahead include tensors not born yet
//   (kUnbornTensor): their room counts toward the horizon. A window eviction (Note
//   [Evicting a window for a large request], window_eviction.cpp) ignores the keep window:
//   with kept tensors as walls the ladder found no run for a large request and fell back
//   to scattered rounds (GPT-2 small at 50 %, lru, the window alone: 23.5 / 24.8 GiB moved
//   became 27.2 / 31.8, 2134 -> 2488 ms; without the walls, `plan` 2579.8 -> 2408.9 ms
//   and transformer-train at 50 % 413.1 -> 390.0 ms, below `none`). `plan:keep=off` turns
//   the window off altogether.
//
// Note [Cleaning ahead of eviction]
//   Rationale: a dirty victim's write-back sits between the eviction and the copy-in that
//   takes its room, so the h2d link waits for the d2h link, miss after miss. Approach: as
//   an operating system's writeback does for the tail of its LRU lists, the planner asks
//   the device tier's policy, at each step, which victims it would give for a slice of the
//   tier (propose() is const: nothing is evicted) and writes back the dirty ones now, on
//   the d2h stream behind their last uses; they stay resident and clean, and their
//   eviction later drops them. Limitations: a victim rewritten before its eviction was
//   written back for nothing (the early_write_backs figure counts every copy).
//
// Note [Early write-backs on an idle link]
//   Rationale: an early write-back is speculative (the tensor may be rewritten, or never
//   evicted); queued behind other write-backs it delays the ones an eviction is waiting
//   for, and where the d2h link is the bottleneck (the forward pass of GPT-2 small at 50 %)
//   it lengthened the run. Approach: the planner writes a tensor back early only while some
//   d2h copy stream has nothing queued past the point in device time the accessing stream
//   has reached (backend::known_stream_time): the copy uses a link that would otherwise
//   idle, and at most about one early copy waits ahead of a demand one. Measured (virtual
//   clock, pcie4; bench/results/planner-keep-cpu-2026-12-04.md): `plan` with lru at 50 %,
//   GPT-2 2408.9 -> 2191.0 ms, mlp-train 83.7 -> 79.8, ResNet-18 140.4 -> 136.4;
//   transformer-train at 25 % 534.9 -> 542.8 (the one row it costs more than 1 %).
//   Limitations: where the backend does not know device times (CUDA, the sim's wall clock)
//   the link counts as idle, as before.
#include <tierpool/error.hpp>

#include <algorithm>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "migration/migration_engine.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {
namespace {

// Sets the planning terms of this thread for one placement; restores them after.
class planning_scope {
 public:
  planning_scope(tick protect, tick now, plan_terms terms) noexcept : saved_(planning())
  {
    planning_terms& t = planning();
    t.stream_reuse = terms.stream_reuse;
    t.sample = terms.victim_sample;
    t.active = true;
    t.protect = protect;
    t.now = now;
    t.harm_skips = 0;
  }
  ~planning_scope() { planning() = saved_; }
  planning_scope(planning_scope const&) = delete;
  planning_scope& operator=(planning_scope const&) = delete;
  [[nodiscard]] static std::size_t skips() noexcept { return planning().harm_skips; }

 private:
  planning_terms saved_;
};

}  // namespace

plan_outcome migration_engine::plan_prefetch(record_ref const& recp, std::uint32_t k, tick use,
                                             tick now, plan_terms terms)
{
  tensor_record& rec = *recp;
  if (holds_record(rec)) { return plan_outcome::skipped; }
  record_lock rl(rec, std::try_to_lock);
  if (!rl.owns() || rec.freed) { return plan_outcome::skipped; }
  if (rec.slots[k].state == copy_state::valid) { return plan_outcome::resident; }
  if (rec.prefetch_queued || rec.write_pins != 0 || rec.needs_rebuild || rec.discarded || rec.bytes > tiers_[k]->capacity) {
    return plan_outcome::skipped;
  }
  fill_result r = fill_result::no_room;
  std::size_t skips = 0;
  try {
    planning_scope const scope(use, now, terms);
    filling_ahead_scope const ahead(rec);
    r = ensure_valid_locked(rec, k, access_mode::read, place_mode::no_wait);
    skips = planning_scope::skips();
  } catch (out_of_memory const&) {
    return plan_outcome::skipped;
  } catch (backend_error const&) {
    return plan_outcome::skipped;
  } catch (std::bad_alloc const&) {
    return plan_outcome::skipped;
  }
  counters_->plan_harm_skips.fetch_add(skips, std::memory_order_relaxed);
  if (r != fill_result::filled) {
    counters_->plan_no_room.fetch_add(1, std::memory_order_relaxed);
    return r == fill_result::hit ? plan_outcome::resident : plan_outcome::no_room;
  }
  rec.prefetched = true;
  counters_->prefetches.fetch_add(1, std::memory_order_relaxed);
  counters_->planned_prefetches.fetch_add(1, std::memory_order_relaxed);
  counters_->planned_prefetch_bytes.fetch_add(rec.bytes, std::memory_order_relaxed);
  return plan_outcome::issued;
}

bool migration_engine::write_back_link_idle(stream_handle user) const noexcept
{
  std::optional<tick> const at = backend_->known_stream_time(user);
  if (!at) { return true; }
  for (stream_handle const s : d2h_) {
    std::optional<tick> const t = backend_->known_stream_time(s);
    if (!t || *t <= *at) { return true; }
  }
  return false;
}

std::optional<tick> migration_engine::copy_in_backlog(stream_handle user) const noexcept
{
  std::optional<tick> const at = backend_->known_stream_time(user);
  if (!at) { return std::nullopt; }
  tick end = *at;
  for (stream_handle const s : h2d_) {
    std::optional<tick> const t = backend_->known_stream_time(s);
    if (!t) { return std::nullopt; }
    end = std::max(end, *t);
  }
  return end - *at;
}

bool migration_engine::write_back_early(record_ref const& recp, std::uint32_t k) noexcept
{
  tensor_record& rec = *recp;
  if (holds_record(rec)) { return false; }
  record_lock rl(rec, std::try_to_lock);
  if (!rl.owns() || rec.freed || rec.discarded || k >= rec.slots.size()) { return false; }  // dead bytes: never saved
  copy_slot const& s = rec.slots[k];
  if (s.state != copy_state::valid || s.pins != 0 || rec.write_pins != 0) { return false; }
  for (std::uint32_t j = 0; j < rec.slots.size(); ++j) {
    if (j != k && rec.slots[j].state == copy_state::valid) { return false; }  // clean already
  }
  if (!write_back_locked(rec, k, place_mode::no_wait)) { return false; }
  rec.cleaned_early = true;
  counters_->early_write_backs.fetch_add(1, std::memory_order_relaxed);
  counters_->early_write_back_bytes.fetch_add(rec.bytes, std::memory_order_relaxed);
  return true;
}

std::size_t migration_engine::clean_ahead(std::uint32_t k, std::size_t bytes) noexcept
{
  thread_local std::vector<tensor_id> ids;
  ids.clear();
  tier_state& ts = *tiers_[k];
  try {
    std::lock_guard tl(ts.mem->mutex());
    drain_accesses_locked(ts);
    eviction_request req{};
    req.from = tier_id{k};
    req.bytes_needed = bytes;
    req.now = backend_->now();
    ts.policy->propose(req, ts.proposal);
    ids.assign(ts.proposal.victims.begin(), ts.proposal.victims.end());
  } catch (...) {  // a policy that cannot propose now (belady without forecasts): nothing to clean
    return 0;
  }
  std::size_t issued = 0;
  for (tensor_id const id : ids) {
    record_ref rec;
    {
      std::lock_guard lock(*table_mtx_);
      if (auto const* r = table_->find(static_cast<std::uint64_t>(id))) { rec = *r; }
    }
    if (rec != nullptr && write_back_early(rec, k)) { ++issued; }
  }
  return issued;
}

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// placement.cpp — owns placement in one tier: the out-of-memory ladder
// (migration_engine::place), handing a block back (unplace, give_back_now), and the
// diagnosis an out_of_memory carries (oom_message_locked, throw_place_failure).
//
// The ladder, top to bottom, each step dearer than the one before (docs/chapters/tiers.md,
// "The out-of-memory ladder", names the same steps for users):
//   quota                 allocate only, before any placement (core: tenant_ledger)
//   completed frees       deferred frees whose last use completed go back   } tier::allocate
//   the arena             a free block of the size                          }
//   grow                  another backend chunk, within the tier's budget   }
//   a block being written back    a deferred free behind one of our copy streams, taken
//                         with its pending event (place_request::reuse_in_order)
//   vacated blocks merged         several deferred frees and the free space between them,
//                         or the head of a larger one, their events joined (Note
//                         [Merging deferred blocks], tier.cpp); behind any stream, or for
//                         a prefetch (no_wait) only behind the pool's own copy streams
//   wait for vacated blocks       when waiting could make room: a contiguous run of free and
//                         deferred blocks holds the request (host stall)
//   wait to compact       compaction on, the free and deferred bytes cover the request
//                         but no run of them does: wait for every deferred free, oldest
//                         first (host stall; Note [Compacting around vacated blocks])
//   compact               when the tier's free bytes cover the request but no free block
//                         holds it: move unleased, idle copies out of one run of the tier
//                         (device to device, or within a host tier; the host waits for the
//                         copies) and place the request there (Note [Compaction],
//                         compaction.cpp; pool_options::compaction, ladder mode only)
//   evict                 one round through the policy (evict_round, eviction.cpp): clean
//                         victims are dropped, dirty ones written back a tier down; for a
//                         copy-in, a victim block of the request's size is taken at once
//                         (Note [The evicted block goes to the request that evicted it])
//   wait for the oldest vacated block   when eviction made no progress; with none, room
//                         other threads made meanwhile (Note [Room made while a round
//                         found nothing])
//   other threads in the way      busy victims or others' leases: the request lets go of
//                         every lock and retries (core: request_retry.hpp, the Note below)
//   low-memory callbacks  once, unlocked (core: request_retry.hpp)
//   fail                  out_of_memory with cause and figures, or backend_error
// A placement that reaches "evict" although the free bytes covered the request counts in
// tier_stats::fragmented_evictions (once per placement).
// place() runs the steps from "completed frees" to "wait for the oldest vacated block" and
// loops back to the top after any step that freed something. place_mode::try_only stops
// after "grow"; place_mode::no_wait (prefetch) never waits: at most one eviction round,
// stream-ordered, then it gives up (the caller queues).
// Growing comes before evicting: evicting while budget is unused trades a cheap backend
// allocate for copies.
//
// Note [Busy victims are waited for, not failed on]
// -------------------------------------------------
// Rationale: eviction only try-locks its victims (Note [Lock order of the pool]): a victim
// another thread is acquiring, releasing or writing back is skipped. With several threads
// on a small tier, a round can find every victim it was offered busy; that round makes no
// progress, and the ladder used to end there with an out_of_memory whose diagnosis blamed
// the tier's size or its fragmentation, although evicting would have made room a moment
// later (4 threads on an 8 MiB tier: a few per 20,000 acquires).
// Approach: a round reports the bytes of busy victims (evict_outcome::busy_bytes). When a
// round made no progress and some victims were busy, place() gives up at once with
// place_failure::busy_bytes set and no diagnosis, and the request (with_low_memory_step,
// pool_impl.cpp) lets go of every lock it holds, its own tensor's included, backs off and
// starts over: waiting while holding a record could wait for a thread that waits for it. A
// dirty victim whose write-back found the lower tier full of busy victims counts as busy
// too. The retries are bounded by pool_options::contention (time and attempts); only when
// the bound is reached does the request fail, with cause `busy` and what it waited for.
// Limitations: a thread that keeps a tensor locked for long (a host wait for a large copy)
// makes others retry for as long; the bound is what turns a stuck program into an error.
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <new>
#include <optional>
#include <utility>
#include <string>

#include "migration/migration_engine.hpp"

namespace tierpool::detail {
namespace {

// Window eviction only from this size (Note [Evicting a window for a large request],
// window_eviction.cpp): below it the walk of the policy's order costs more than it saves,
// and small tiers keep the plain rounds (the replay goldens of small traces hold).
constexpr std::size_t kWindowMinBytes = std::size_t{1} << 20U;

// Upper bound on ladder rounds of one request. Each round evicts or reclaims something,
// so it is only reached when other threads keep taking the room made (then we give up).
constexpr int kMaxLadderRounds = 4096;

// Note [A failed write-back]
// --------------------------
// Rationale: a dirty victim whose write-back copy fails in the backend keeps its bytes and
// stays resident (write_back_locked). If the round then freed nothing, the ladder used to
// end in an out-of-memory with cause "capacity", which sent the user to raise a capacity
// when the backend had failed.
// Approach: the round reports the failed copy's status (evict_outcome::write_back_status).
// A round that freed nothing because of it is retried, up to kWriteBackRetries times (a
// transient failure passes; the policy proposes the same victim again); after that the
// request fails with a tierpool::backend_error of that status, naming the victim and the
// tier. A failure that other victims made up for changes nothing.
// Limitations: the retries are immediate, without back-off.
constexpr int kWriteBackRetries = 2;

// Compaction steps one request tries at most (each walks the tier's copies).
constexpr int kCompactTries = 2;

// Note [Room made while a round found nothing]
// ----------------------------------------------
// Rationale: an eviction round can make no progress and find nothing busy because other
// threads got there first: the victims the policy proposed had been evicted or freed by
// them (the round only forgets them), and the blocks they vacated were reclaimed by them
// too, so nothing is left to wait for. The ladder then failed, although those threads had
// made room meanwhile: a stress run under TSan (8 threads, a 1 MiB device tier) once got
// an out_of_memory with cause "capacity" whose own figures showed a free block larger
// than the request.
// Approach: before failing, under the tier lock, a request whose round found nothing busy
// looks at the arena's largest free block; if the request's slot fits it, the ladder goes
// round again (at most kLateRoomRounds times per request, so a request that keeps losing
// the room to others still ends).
// Limitations: the check can still lose the room between the lock and the next round; a
// failure after the last retry keeps the old diagnosis.
constexpr int kLateRoomRounds = 16;

// Note [Blocks being placed are waited for]
// ------------------------------------------
// Rationale: a ladder that evicts nothing and finds nothing busy fails, and its diagnosis
// blames the tier's size or its fragmentation. Two kinds of room were out of eviction's
// sight and yet about to come back:
//   - blocks place() handed out whose tensor has not entered the policy yet (its copy is
//     being made): neither free nor a victim;
//   - copies whose last lease was just released, with the release waiting for the tier
//     lock (held by the failing ladder) to tell the policy on_unpin: the tier's pinned
//     bytes already said 0, the policy still kept them out of its order.
// With 16 threads acquiring 4 KiB-1 MiB tensors on an 8 MiB tier (no lease across calls),
// most runs failed so, with figures like "resident 6.5 MiB in 0 tensors, pinned 0 B"; with
// 8 threads, once in about 20,000 acquires in CI
// (PoolContention.NoLeaseAcrossCallsNeverRunsOutOfMemory).
// Approach: tier_state::unsettled_bytes counts the slot bytes of blocks handed out and not
// yet settled (place_result::unsettled, given back by the caller's placing_settle once the
// tensor is in the policy or the block went back). unpin_locked takes a copy out of the
// pinned bytes only after the policy took it back. A ladder whose last round evicted
// nothing and found nothing busy looks at both, as read at that round's start (under the
// tier lock) and now: blocks other threads are placing (when this thread settles none of
// its own, thread_unsettled()) make it a busy failure (place_failure::busy_placing), pinned
// bytes (when this thread holds no lease) a pins one, and the request lets go of its locks
// and retries within pool_options::contention, as for busy victims. The out_of_memory
// figures say "N being placed" when there are any; validate() checks that the count is 0
// once no call is inside (a settle missed on some path would show there).
// Limitations: any placing thread's bytes count, whether or not their blocks are where the
// request would fit; the retries are bounded, so a thread stuck in a copy, or a lease kept
// for good, still ends in an error (cause `busy` or `pinned`).

// Note [Compacting around vacated blocks]
// ----------------------------------------
// Rationale: compaction ran only when the tier's *free* bytes covered the request. A host
// that runs ahead of the device (always, on the virtual clock of a replay) leaves most of
// the room it freed as vacated blocks, waiting for their last uses; merging them in stream
// order (Note [Merging deferred blocks], tier.cpp) needs a run of them with nothing live
// in between, and live tensors scattered through the tier break every run. So the ladder
// evicted live tensors (a write-back now, a copy back later, over the host link) while the
// tier had room to spare: GPT-2 small (tests/data/gpt2_small_train.tpt) on a device tier
// of 20 GiB, above its 16.6 GiB peak, moved 15.7 GiB in and back out and took 3.9x the
// compute time.
// Approach: with compaction on (pool_options::compaction), when the free and vacated bytes
// together cover the request and no run of them holds it, the host waits for vacated
// blocks, oldest first, until none of those vacated by then is left (each wait is the
// ladder's "wait for vacated blocks" step: tier::reclaim_oldest_blocking, a stall; once per
// placement, and never for blocks other threads vacate meanwhile, so it always ends), and
// the ladder starts again: the
// arena may hold the request now, else compaction gathers the free space (device to
// device copies, not transfers over the link). Waiting for all of them, not only until the
// free bytes cover the request, also settles the uses of the copies around them, which
// compaction may move only once idle: stopping early left GPT-2 at 20 GiB moving 8.6 GiB
// each way with lru and 13.2 GiB with belady, instead of nothing. Counted in
// tier_stats::waits_to_compact. Measured (virtual clock, pcie4, swap only, 2026-12-04;
// docs/chapters/tiers.md, "Compaction"): GPT-2 small at 20 GiB moves nothing and runs in
// its compute time; at 90 % of its peak the makespans of lru / belady / repeat with
// none / plan / oracle fall to 0.42-0.87x.
// Limitations: the host waits, the device's run-ahead is lost at each such wait; only
// ladder placements (never a prefetch); off with compaction, as compaction is.

}  // namespace

bool migration_engine::is_copy_stream(stream_handle s) const noexcept
{
  return std::find(h2d_.begin(), h2d_.end(), s) != h2d_.end() || std::find(d2h_.begin(), d2h_.end(), s) != d2h_.end();
}

place_result migration_engine::place(place_request const& r)
{
  tier_state& ts = *tiers_[r.tier];
  std::size_t const bytes = r.bytes;
  bool const ladder = r.mode == place_mode::ladder;
  place_result out;
  status last_backend = status::ok;
  // A block handed out not in the policy yet: other threads' failing requests wait for it
  // (Note [Blocks being placed are waited for]); the caller's placing_settle counts it back.
  auto unsettled = [&](block const& b) {
    out.unsettled = b.slot.size;
    ts.unsettled_bytes.fetch_add(static_cast<std::int64_t>(b.slot.size), std::memory_order_relaxed);
    thread_unsettled() += b.slot.size;
  };
  auto took = [&](block const& b) -> place_result& {  // under the tier lock
    add_under_tier_lock(ts.bytes_allocated, static_cast<std::int64_t>(b.slot.size));
    out.blk = b;
    unsettled(b);
    return out;
  };
  // A hard tenant's request reserves its bytes within its share when it passes the check
  // (tenant_rank::placing), under the same lock: they count as the tenant's until its copy
  // enters the policy (the caller's placing_settle), so that threads of one tenant placing
  // at once, whatever the ladder does between the check and the block, see each other's.
  // A request that ends without a block gives the reservation back here (no tier lock is
  // held by then: `tl` is an inner local).
  struct reservation {
    tier_state& ts;
    place_result const& out;
    std::uint32_t tenant;
    std::int64_t bytes{0};
    reservation(tier_state& t, place_result const& o, std::uint32_t who) noexcept : ts(t), out(o), tenant(who) {}
    reservation(reservation const&) = delete;
    reservation& operator=(reservation const&) = delete;
    ~reservation()
    {
      if (bytes == 0 || out.blk) { return; }
      std::lock_guard g(ts.mem->mutex());
      for (auto& e : ts.tenant_ranks) {
        if (e.tenant == tenant) { e.placing -= bytes; }
      }
    }
  } reserved{ts, out, r.tenant};
  status last_write_back = status::ok;
  tensor_id write_back_victim{};
  int write_back_failures = 0;
  auto give_up = [&]() -> place_result& {
    out.why.backend_status = last_backend;
    out.why.write_back_status = last_write_back;
    out.why.write_back_victim = write_back_victim;
    return out;
  };
  auto wait_oldest = [&]() -> bool {  // under the tier lock
    auto const t0 = std::chrono::steady_clock::now();
    std::size_t got = 0;
    status const st = ts.mem->reclaim_oldest_blocking(&got);
    streams_->add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return st == status::ok && got != 0;
  };
  bool evicted = false;
  std::size_t busy = 0;  // busy victims of the last round that made no progress
  std::size_t const slot = ts.mem->slot_bytes(bytes);
  int compact_tries = 0;
  int late_room_rounds = 0;  // Note [Room made while a round found nothing]
  bool waited_to_compact = false;  // the "wait to compact" step runs once per placement
  bool counted_fragmented = false;
  std::size_t last_free = 0;  // the arena's free bytes at the last round's allocation
  // Other threads' pins and placements at the start of the last round that evicted
  // nothing: gone by the time the ladder fails, they may still be why it did (Note [Blocks
  // being placed are waited for]).
  std::size_t seen_pinned = 0;
  std::int64_t seen_placing = 0;
  for (int round = 0; round < kMaxLadderRounds; ++round) {
    std::size_t free_now = 0;  // the arena's free bytes at this round's allocation
    std::unique_lock tl(ts.mem->mutex());  // handed to the eviction round below, which unlocks it
    std::size_t const round_pinned = ladder ? ts.pinned_bytes() : 0;
    std::int64_t const round_placing = ladder ? ts.unsettled_bytes.load(std::memory_order_relaxed) : 0;
    {
      drain_accesses_locked(ts);
      // A hard share (Note [Hard shares and priorities], eviction.cpp): past it, the
      // tenant's own tensors go first, whatever the room free; else the tier refuses.
      if (ts.ranked && reserved.bytes == 0) {
        if (auto const rk = ts.rank_of(r.tenant); rk.hard) {
          std::size_t const share = ts.share_of(r.tenant);
          auto const held = static_cast<std::size_t>(std::max<std::int64_t>(ts.bytes_of_tenant(r.tenant) + rk.placing, 0));
          if (held + bytes > share) {
            evict_outcome ev{};
            if (bytes <= share && r.mode != place_mode::try_only) {
              ev = evict_round(r.tier, held + bytes - share, r.mode, r.incoming, r.tenant, evict_pass::own, nullptr, &tl);
              if (ev.progress) {
                evicted = true;
                continue;
              }
            } else {
              tl.unlock();
            }
            add_under_tier_lock(ts.share_refusals, std::uint64_t{1});
            if (ladder && ev.busy_bytes != 0) {  // its own tensors are busy: retry (Note [Busy victims ...])
              out.why.busy_bytes = ev.busy_bytes;
              return out;
            }
            out.why.share = true;
            out.why.share_bytes = share;
            out.why.share_held = held;
            return give_up();
          }
          for (auto& e : ts.tenant_ranks) {  // within its share: reserve the bytes (see `reserved`)
            if (e.tenant == r.tenant) { e.placing += static_cast<std::int64_t>(bytes); }
          }
          reserved.bytes = static_cast<std::int64_t>(bytes);
          out.placing = bytes;
        }
      }
      // Completed frees, the arena, grow.
      tier_alloc_report rep;
      if (auto b = ts.mem->allocate(bytes, 0, &rep, tier_grow::allow)) { return took(*b); }
      // A block being written back (Note [Stream-ordered reuse of deferred blocks], tier.cpp):
      // a block vacated behind one of our copies, taken with its pending event.
      if (r.reuse_in_order && rep.deferred_bytes != 0) {
        // A planned prefetch may also wait behind user work: it is enqueued in use order
        // (Note [Planned prefetches], transfer_planner.cpp).
        bool const planned = planning().active && planning().stream_reuse;
        auto const own = [this, planned](stream_handle s) { return planned || is_copy_stream(s); };
        if (auto b = ts.mem->take_deferred(bytes, own, &out.after, &out.after_stream)) {
          add_under_tier_lock(ts.reused_in_order, std::uint64_t{1});
          return took(*b);
        }
        // Several deferred blocks and free ones between them (Note [Merging deferred
        // blocks], tier.cpp). The whole ladder may wait behind any lane here, users' work
        // included: the alternative below is the host waiting for the same events. A
        // prefetch only behind our copy streams: behind user work it would hold up the
        // copies queued after it (planned ones too: measured, it cost the planner 4-5 % on transformer-train).
        auto const any = [](stream_handle) { return true; };
        tier::deferred_span sp;
        std::optional<block> b;
        auto const copies = [this](stream_handle s) { return is_copy_stream(s); };
        b = ladder ? ts.mem->take_deferred_span(bytes, any, &sp) : ts.mem->take_deferred_span(bytes, copies, &sp);
        if (b) {
          out.after = join_events(sp, &out.after_stream);
          add_under_tier_lock(ts.reused_in_order, std::uint64_t{1});
          add_under_tier_lock(ts.merged_in_order, std::uint64_t{1});
          return took(*b);
        }
      }
      add_under_tier_lock(ts.alloc_failures, std::uint64_t{1});
      free_now = rep.free_bytes;
      last_free = free_now;
      if (rep.result == tier_alloc_result::backend_failed) { last_backend = rep.backend_status; }
      if (r.mode == place_mode::try_only || (r.mode == place_mode::no_wait && evicted)) { return give_up(); }
      // Wait for vacated blocks, when they alone would make room once their last uses
      // complete (rather than evict more); no_wait gives up (the caller queues).
      std::size_t const unreserved = ts.capacity - std::min(ts.capacity, ts.mem->reserved_bytes());
      if (rep.deferred_bytes != 0 && rep.free_bytes + rep.deferred_bytes + unreserved >= bytes &&
          (unreserved >= bytes || ts.mem->deferred_run_fits(bytes))) {
        if (r.mode == place_mode::no_wait) { return give_up(); }
        if (wait_oldest()) { continue; }
      }
      // Wait for vacated blocks so as to compact (Note [Compacting around vacated blocks]):
      // free and vacated bytes together cover the request, no run of them holds it.
      if (ladder && ts.compact_in_ladder && !waited_to_compact && free_now < slot && rep.deferred_bytes != 0 &&
          rep.free_bytes + rep.deferred_bytes >= slot) {
        waited_to_compact = true;
        // The blocks vacated by now, no more: other threads may keep vacating while it waits.
        std::size_t left = ts.mem->usage().deferred_count;
        bool waited = false;
        while (left-- > 0 && ts.mem->deferred_bytes() != 0 && wait_oldest()) { waited = true; }
        if (waited) {
          add_under_tier_lock(ts.waits_to_compact, std::uint64_t{1});
          continue;  // the arena may hold it now; else the free bytes cover it: compact
        }
      }
      // Compact: the free bytes cover the request, no free block holds it (Note
      // [Compaction], compaction.cpp). The host waits for the moves: not for a prefetch.
      if (ladder && ts.compact_in_ladder && free_now >= slot && compact_tries < kCompactTries) {
        ++compact_tries;
        std::optional<block> b;
        try {
          b = compact_for_locked(ts, bytes);
        } catch (std::bad_alloc const&) {  // no memory for the plan: evict instead (moves made stay, intact)
        }
        if (b) {
          add_under_tier_lock(ts.compactions, std::uint64_t{1});
          return took(*b);
        }
      }
    }
    // Evicting for want of a contiguous block: counted once the round evicted something.
    bool const fragmented = free_now >= slot && !counted_fragmented;
    auto count_fragmented = [&] {
      if (fragmented) {
        counted_fragmented = true;
        ts.fragmented_evictions.fetch_add(1, std::memory_order_relaxed);
      }
    };
    // Evict. A victim block of the request's size may come straight back (Note [The
    // evicted block goes to the request that evicted it], eviction.cpp).
    evict_handoff ho;
    ho.bytes = bytes;
    ho.incoming = r.incoming_rec;
    ho.incoming_write = r.incoming_write;
    evict_handoff* const hand = ladder && r.take_uses && r.reuse_in_order ? &ho : nullptr;
    // A large request: one contiguous run of victims, not the policy's scattered ones
    // (Note [Evicting a window for a large request], window_eviction.cpp).
    thread_local std::vector<tensor_id> window;
    window.clear();
    std::size_t window_bytes = 0;
    if (ladder && r.reuse_in_order && ts.window_share != 0 && slot >= std::max(kWindowMinBytes, ts.capacity / ts.window_share) &&
        tl.owns_lock()) {
      if (window_victims_locked(ts, bytes, window, &window_bytes)) {
        ts.window_evictions.fetch_add(1, std::memory_order_relaxed);
      }
    }
    evict_outcome ev = window.empty()
                           ? evict_round(r.tier, bytes, r.mode, r.incoming, r.tenant, evict_pass::shares, hand, &tl)
                           : evict_round(r.tier, window_bytes, r.mode, r.incoming, r.tenant, evict_pass::shares, hand, &tl,
                                         window);
    TIERPOOL_ASSERT(!tl.owns_lock());
    if (!ev.progress && ev.kept && !planning().active) {  // the keep window or the shares left nothing: evict anyway
      ev = evict_round(r.tier, bytes, r.mode, r.incoming, r.tenant, evict_pass::fallback, hand);
    }
    if (ho.blk) {  // counted by the round (hand_off_told_locked)
      count_fragmented();
      out.blk = ho.blk;
      out.after = ho.ready;
      out.after_users = std::move(ho.users);
      out.inserted = ho.inserted;
      if (!out.inserted) { unsettled(*ho.blk); }
      return out;
    }
    if (ev.progress) {
      count_fragmented();
      evicted = true;
      busy = 0;
      last_write_back = status::ok;  // other victims made up for it
      continue;
    }
    if (ev.write_back_status != status::ok) {  // Note [A failed write-back]
      last_write_back = ev.write_back_status;
      write_back_victim = ev.write_back_victim;
      if (++write_back_failures <= kWriteBackRetries && r.mode != place_mode::no_wait) { continue; }
    }
    busy = ev.busy_bytes;
    seen_pinned = std::max(round_pinned, ev.pinned_bytes);
    seen_placing = round_placing;
    if (r.mode == place_mode::no_wait) { break; }
    // Wait for the oldest vacated block; else, room other threads made meanwhile (Note
    // [Room made while a round found nothing]).
    tl.lock();
    bool const waited = ts.mem->deferred_bytes() != 0 && wait_oldest();
    bool const room = !waited && busy == 0 && late_room_rounds < kLateRoomRounds &&
                      ts.mem->usage().largest_free_block >= slot;
    tl.unlock();
    if (waited) { continue; }
    if (room) {
      ++late_room_rounds;
      continue;
    }
    break;
  }
  // Compaction as the last resort (pool_options::compact_before_failing): the request is
  // about to fail (nothing busy to retry for) although the free bytes cover it. The ladder's
  // own step (above) already tried when compaction is on.
  if (ladder && busy == 0 && ts.compact_last_resort && !ts.compact_in_ladder && last_free >= slot) {
    std::unique_lock tl(ts.mem->mutex());
    drain_accesses_locked(ts);
    std::optional<block> b;
    try {
      b = compact_for_locked(ts, bytes, /*wait_for_uses=*/true);
    } catch (std::bad_alloc const&) {  // no memory for the plan: fail as before (moves made stay, intact)
    }
    if (b) {
      add_under_tier_lock(ts.compactions, std::uint64_t{1});
      return took(*b);
    }
  }
  if (ladder && busy == 0 && last_free >= slot && !counted_fragmented) {  // failing for want of a contiguous block
    ts.fragmented_evictions.fetch_add(1, std::memory_order_relaxed);
  }
  give_up();
  if (!ladder) { return out; }
  // Other threads in the way: say so, and the request retries (Note [Busy victims are
  // waited for, not failed on]); else the request fails (throw_place_failure diagnoses it).
  out.why.busy_bytes = busy;
  if (busy == 0 && thread_unsettled() == 0) {
    // Nothing was busy, but blocks other threads are placing hold part of the tier, out of
    // eviction's sight until their tensors enter the policy: wait for them (Note [Blocks
    // being placed are waited for]).
    std::int64_t const placing = std::max(seen_placing, ts.unsettled_bytes.load(std::memory_order_relaxed));
    if (placing > 0 && bytes <= ts.capacity) {
      out.why.busy_bytes = static_cast<std::size_t>(placing);
      out.why.busy_placing = true;
    }
  }
  if (out.why.busy_bytes == 0 && thread_leases() <= 0) {
    // Nothing was busy, but leases pin part of the tier and none is this thread's: other
    // threads' leases, released soon in a program that keeps none across calls. Wait for
    // them as for busy victims (the bound still ends a wait on a lease kept for good).
    std::size_t const pinned = std::max(seen_pinned, ts.pinned_bytes());
    if (pinned != 0 && bytes <= ts.capacity) {
      out.why.busy_bytes = pinned;
      out.why.busy_pins = true;
    }
  }
  return out;
}

event_handle migration_engine::join_events(tier::deferred_span& sp, stream_handle* on) noexcept
{
  *on = stream_handle{};
  if (sp.count == 0) { return event_handle{}; }
  if (sp.count == 1 && !sp.borrowed[0]) {
    *on = sp.streams[0];
    return sp.events[0];
  }
  // The join stream: where the backend knows device times, the one that is free soonest
  // without being later than the events (so the join adds no wait of its own); else in turn.
  stream_handle j = join_[join_rr_.fetch_add(1, std::memory_order_relaxed) % join_.size()];
  std::optional<tick> target;
  for (std::size_t i = 0; i < sp.count; ++i) {
    std::optional<tick> const t = backend_->known_completion(sp.events[i]);
    if (!t) {
      target.reset();
      break;
    }
    target = std::max(target.value_or(0), *t);
  }
  if (target) {
    std::optional<tick> best;
    for (stream_handle s : join_) {
      std::optional<tick> const t = backend_->known_stream_time(s);
      if (!t) { break; }
      bool const fits = *t <= *target;
      bool const best_fits = best && *best <= *target;
      if (!best || (fits && (!best_fits || *t > *best)) || (!fits && !best_fits && *t < *best)) {
        best = t;
        j = s;
      }
    }
  }
  for (std::size_t i = 0; i < sp.count; ++i) {
    streams_->wait_event_or_sync(j, sp.events[i]);
    if (!sp.borrowed[i]) { streams_->release_event(sp.events[i]); }  // a borrowed one stays the tier's
  }
  sp.count = 0;
  event_handle const e = streams_->record_or_sync(j);  // null: the host waited for all of them
  if (e) { *on = j; }
  return e;
}

void migration_engine::settle_placing(std::uint32_t k, std::uint32_t tenant, std::size_t bytes,
                                      std::size_t unsettled) noexcept
{
  tier_state& ts = *tiers_[k];
  if (unsettled != 0) {
    ts.unsettled_bytes.fetch_sub(static_cast<std::int64_t>(unsettled), std::memory_order_relaxed);
    thread_unsettled() -= std::min(thread_unsettled(), unsettled);
  }
  if (bytes == 0) { return; }
  std::lock_guard g(ts.mem->mutex());
  for (auto& e : ts.tenant_ranks) {
    if (e.tenant == tenant) {
      e.placing -= static_cast<std::int64_t>(bytes);
      return;
    }
  }
}

void migration_engine::unplace(std::uint32_t k, block const& b, event_handle after, stream_handle after_stream,
                               use_list* users) noexcept
{
  tier_state& ts = *tiers_[k];
  if (users != nullptr && !users->empty()) {
    // A block handed over by eviction with its previous occupant's uses (Note [The evicted
    // block goes to the request that evicted it], eviction.cpp): no single event covers
    // them; the host waits for them and the fill event (a bad_alloc path), then frees it.
    auto const t0 = std::chrono::steady_clock::now();
    for (stream_use const& u : *users) { streams_->host_wait_use(u); }
    users->clear();
    if (after) { (void)backend_->synchronize_event(after); }
    streams_->add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    streams_->release_event(after);
  }
  if (after) {
    // Back behind the copy it was taken behind (the tier owns the event again), as if
    // never taken; if even that bookkeeping cannot grow, wait for the copy instead.
    {
      std::lock_guard tl(ts.mem->mutex());
      try {
        ts.mem->deallocate_after(b, after, after_stream);
        ts.bytes_freed.fetch_add(static_cast<std::int64_t>(b.slot.size), std::memory_order_relaxed);
        return;
      } catch (...) {
      }
    }
    auto const t0 = std::chrono::steady_clock::now();
    (void)backend_->synchronize_event(after);
    streams_->add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    streams_->release_event(after);
  }
  give_back_now(k, b);
}

void migration_engine::give_back_now(std::uint32_t k, block const& b) noexcept
{
  tier_state& ts = *tiers_[k];
  std::lock_guard tl(ts.mem->mutex());
  try {
    ts.mem->deallocate(b);
    ts.bytes_freed.fetch_add(static_cast<std::int64_t>(b.slot.size), std::memory_order_relaxed);
  } catch (...) {  // not a live block: nothing to give back
  }
}

std::string migration_engine::oom_message_locked(std::uint32_t k, std::size_t bytes, oom_figures* figures,
                                          std::size_t busy_bytes, std::uint32_t attempts, double waited_s,
                                          bool busy_pins) const
{
  tier_state const& ts = *tiers_[k];
  tier_usage const u = ts.mem->usage();
  std::size_t const pinned = ts.pinned_bytes();
  std::int64_t const placing = ts.unsettled_bytes.load(std::memory_order_relaxed);
  std::size_t const unreserved = u.capacity_bytes - std::min(u.capacity_bytes, u.reserved_bytes);
  std::size_t const free_total = u.free_bytes + unreserved;
  std::size_t const largest = std::max(u.largest_free_block, unreserved);
  std::string const raise = ts.kind == tier_kind::device
                              ? "raise tier_options::capacity_bytes (or TIERPOOL_DEVICE_BYTES) of tier '" + ts.name + "'"
                              : "raise tier_options::capacity_bytes of tier '" + ts.name + "'";
  std::string cause;
  oom_cause c = oom_cause::capacity;
  if (bytes > u.capacity_bytes) {
    cause = "capacity — the request is larger than the tier; " + raise + " or split the tensor";
  } else if (pinned + bytes > u.capacity_bytes && attempts == 0) {
    c = oom_cause::pinned;
    cause = "pinned — live leases pin " + format_byte_size(pinned) +
            " of the tier; release leases (end lease objects) before acquiring more, or " + raise;
  } else if (attempts != 0) {
    char waited[32];
    std::snprintf(waited, sizeof waited, "%.3f s", waited_s);
    std::string const span = std::string(waited) + " and " + std::to_string(attempts) + " attempts";
    if (busy_pins) {
      c = oom_cause::pinned;
      cause = "pinned — leases of other threads pinned " + format_byte_size(busy_bytes) +
              " of the tier for the whole wait (" + span + "), leaving no room large enough; release leases "
              "sooner, raise pool_options::contention.busy_timeout_ms, or " + raise;
    } else {
      c = oom_cause::busy;
      cause = "busy — other threads held the tensors eviction needed (" + format_byte_size(busy_bytes) +
              " at the last attempt) for " + span +
              "; a thread may be keeping tensors locked (a long host wait), or raise "
              "pool_options::contention.busy_timeout_ms";
    }
  } else if (free_total + u.deferred_bytes >= bytes && largest < bytes) {
    c = oom_cause::fragmentation;
    cause = "fragmentation — " + format_byte_size(free_total) + " free but the largest free block is " +
            format_byte_size(largest) + "; free or demote neighbouring tensors, use fewer distinct sizes, or " + raise;
  } else {
    cause = "capacity — what is resident cannot be evicted (pinned, busy, or dirty with no room in a lower tier); " +
            raise + " or a lower tier's, or keep fewer tensors live";
  }
  std::string msg = "tierpool: out of memory: cannot place " + format_byte_size(bytes) + " (" + std::to_string(bytes) +
                    " bytes) in tier " + std::to_string(k) + " '" + ts.name + "' (" + std::string(to_string(ts.kind)) +
                    "): capacity " + format_byte_size(u.capacity_bytes) + ", reserved " +
                    format_byte_size(u.reserved_bytes) + ", resident " + format_byte_size(u.used_bytes) + " in " +
                    std::to_string(ts.resident.load(std::memory_order_relaxed)) + " tensors" +
                    (placing > 0 ? " and " + format_byte_size(static_cast<std::size_t>(placing)) + " being placed" : "") +
                    ", pinned " +
                    format_byte_size(pinned) + ", in flight " + format_byte_size(u.deferred_bytes) +
                    ", free " + format_byte_size(free_total) + ", largest free block " + format_byte_size(largest) +
                    "; cause: " + cause;
  if (figures != nullptr) {
    figures->cause = c;
    figures->capacity_bytes = u.capacity_bytes;
    figures->resident_bytes = u.used_bytes;
    figures->pinned_bytes = pinned;
    figures->in_flight_bytes = u.deferred_bytes;
    figures->busy_bytes = busy_bytes;
    figures->free_bytes = free_total;
    figures->largest_free_block = largest;
    figures->attempts = attempts;
  }
  return msg;
}

void migration_engine::throw_place_failure(std::uint32_t k, std::size_t bytes, place_failure const& why) const
{
  if (why.write_back_status != status::ok) {  // Note [A failed write-back]
    throw backend_error(why.write_back_status,
                        "pool: making room for " + std::to_string(bytes) + " bytes in tier '" + tiers_[k]->name +
                          "': writing victim tensor " + std::to_string(static_cast<std::uint64_t>(why.write_back_victim)) +
                          " back to a lower tier failed in the backend (" + std::to_string(kWriteBackRetries + 1) +
                          " tries; the victim keeps its bytes)");
  }
  if (why.backend_status != status::ok && why.backend_status != status::out_of_memory) {
    throw backend_error(why.backend_status, "pool: growing tier '" + tiers_[k]->name + "' for " +
                                              std::to_string(bytes) + " bytes failed in the backend");
  }
  if (why.busy_bytes != 0) {
    // Not the user's error yet: the request retries (Note [Busy victims are waited for, not
    // failed on]); this message is seen only when a caller outside a request catches it.
    throw busy_failure("tierpool: out of memory: cannot place " + format_byte_size(bytes) + " in tier '" +
                         tiers_[k]->name + "' now; cause: busy — other threads hold " +
                         format_byte_size(why.busy_bytes) +
                         (why.busy_pins      ? " in leases"
                          : why.busy_placing ? " in blocks they are copying tensors into"
                                             : " of the tensors eviction needs"),
                       tier_id{k}, bytes, why.busy_bytes, why.busy_pins);
  }
  oom_figures f{};
  std::string msg;
  {
    std::lock_guard tl(tiers_[k]->mem->mutex());
    msg = oom_message_locked(k, bytes, &f);
  }
  if (why.share) {  // Note [Hard shares and priorities], eviction.cpp
    f.cause = oom_cause::share;
    msg = msg.substr(0, msg.find("; cause: ")) + "; cause: share — the tenant's hard share of the tier is " +
          format_byte_size(why.share_bytes) + " and it holds " + format_byte_size(why.share_held) +
          (bytes > why.share_bytes ? " (the request alone is larger)"
                                   : ", none of which could be evicted (leased or busy)") +
          "; raise its share (pool::set_tenant_share, pool::set_quota), release its leases, or turn its hard "
          "shares off (tenant_options::hard_shares)";
  }
  throw out_of_memory(std::move(msg), tier_id{k}, bytes, f);
}

}  // namespace tierpool::detail

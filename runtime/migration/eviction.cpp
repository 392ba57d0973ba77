// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// eviction.cpp — owns one round of eviction in one tier (migration_engine::evict_round), the
// "evict" step of the ladder in placement.cpp.
//
// Two phases (docs/notes/pool_design.md, "Eviction is two-phase"):
//   1. under the tier lock: ask the policy, try-lock each proposed victim, skip the busy
//      ones (ask for more bytes) and the pinned ones (tell the policy on_pin, then ask
//      again, so that it does not propose them again), claim the rest until the request
//      is covered;
//   2. without the tier lock: write dirty victims back to the next lower tier (which may
//      evict there in turn), then vacate their blocks into deferred frees ordered after
//      the write-back and every last use. A failed write-back keeps the victim resident.
// A victim is clean when another valid copy exists (or its copy here is stale): it is
// dropped, nothing is written.
#include <tierpool/error.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "migration/migration_engine.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {
namespace {

// Times the policy is asked per round; each new ask follows a skipped victim. A round
// that passes over other tenants' tensors (Note [Hard shares and priorities]) asks more
// often: the victims it may take can sit far behind others' in the policy's order (each
// ask's skipped bytes raise the next ask's, so the depth grows about geometrically).
constexpr int kMaxProposals = 4;
constexpr int kMaxProposalsFiltered = 16;

std::size_t sat_add(std::size_t a, std::size_t b) noexcept
{
  return b > std::numeric_limits<std::size_t>::max() - a ? std::numeric_limits<std::size_t>::max() : a + b;
}

using claim = std::pair<record_ref, record_lock>;

// Note [Prefetching a victim]
// A victim is usually cold: its table cell, its shared_ptr control block and the record's
// first lines (mutex, pins and flags, the slots) each miss the cache, one after another
// when taken in program order. Once the table gives the record's address, the lines a
// round reads (try-lock, freed, the slots' states and users) are requested at once, so
// that their misses overlap with the control block's (the shared_ptr copy). A hint: no
// effect on behaviour. See Note [Record layout] in record_slab.cpp.
void prefetch_victim(tensor_record const* rec) noexcept { prefetch_lines(rec, kRecordHotLines); }

// The victims a round claimed, in a per-thread list reused across rounds (a miss-heavy run
// evicts on most misses; a fresh vector allocated each time). One list per nesting level:
// a dirty victim's write-back may place in the next lower tier, which may evict there.
// The scope clears its list on exit (destroying the claims in order: victims unlock).
class claim_scope {
 public:
  claim_scope() : list_(acquire()) {}
  ~claim_scope()
  {
    list_.clear();
    --depth();
  }
  claim_scope(claim_scope const&) = delete;
  claim_scope& operator=(claim_scope const&) = delete;
  [[nodiscard]] std::vector<claim>& list() noexcept { return list_; }

 private:
  static std::vector<std::unique_ptr<std::vector<claim>>>& levels() noexcept
  {
    thread_local std::vector<std::unique_ptr<std::vector<claim>>> l;
    return l;
  }
  static std::size_t& depth() noexcept
  {
    thread_local std::size_t d = 0;
    return d;
  }
  static std::vector<claim>& acquire()
  {
    auto& l = levels();
    if (depth() == l.size()) { l.push_back(std::make_unique<std::vector<claim>>()); }  // may throw: nothing changed
    return *l[depth()++];
  }
  std::vector<claim>& list_;
};

}  // namespace

// Note [The evicted block goes to the request that evicted it]
// -------------------------------------------------------------
// Rationale: a miss that evicts used to vacate the victim into a deferred free (an event
// recorded on the retire stream after waiting for the victim's fill and its last use), then
// climb the ladder a second time to find that block again: the arena, the completed frees,
// take_deferred, take_deferred_span's window search and merge, and the copy-in waited for
// the retire stream's event. Each miss paid two more tier locks, two extra backend event calls
// and an event from the pool, and the deferred-free bookkeeping both ways (issue 19: the
// miss path of `tierpool bench scale`).
// Approach: place() in ladder mode, for a caller that copies into the block at once
// (place_request::take_uses: ensure_valid_locked's copy-in), passes an evict_handoff to the
// round. When the round claims a single victim, whose block has the request's slot size and
// no free block beside it, and the tier holds no other vacated block, the ladder's second
// climb would have taken exactly that block (the arena had no room, the victim's block
// neither merges nor splits, and it is the only deferred block): so it is not freed but
// handed over (the same block the ladder took, so placements and evictions are unchanged;
// the replay goldens hold). hand_off_locked tells the
// policy and the tier's figures as vacate_locked does, and gives the block (still a live
// block of the tier) with the victim copy's `ready` event and `users` to the request, which
// makes them its new slot's `ready` and `users`. copy_locked already orders the copy after
// both (a stream wait on `ready`, order_after_use for each use, as the retire stream did),
// so the block's reuse still waits for its last use, in stream order, and no byte still in
// use is written. The other victims of the round are vacated as before. A clean victim's
// hand-off is told to the policy and the figures under the round's first tier lock (which
// place() hands over from its failed climb), and the tensor the block is for enters the
// policy there too (place_request::incoming_rec: on_erase of the victim, then on_insert,
// the order the copy-in used to give them in two later locks); if its copy-in then fails,
// forget_in_policy takes it out again. Such a miss takes one tier lock, not five.
// Limitations: only that case; other sizes, several victims, free space beside the
// victim, other vacated blocks, a prefetch (no_wait: it must not wait behind user work) or a placement whose
// caller does not copy at once (tensor allocation, write_discard, write-backs) take the
// ladder's second climb as before. Between eviction and copy the block belongs to no
// record, as a block placed by the ladder always did.
// Note [Tenants' shares of a tier]
// ---------------------------------
// Rationale: with one policy order over every tenant's tensors, a tenant that streams
// through more than the tier holds (a greedy one) pushes out the tensors of a tenant that
// reuses a small working set, whose hit rate then falls to the greedy one's. A quota on
// live bytes does not help: the greedy tenant may be within it, and the room that matters
// is the fast tier's. Approach: each tier counts the bytes of every tenant's copies (where
// it counts resident tensors) and has a share per tenant: the one set
// (tier_options::tenant_shares, pool::set_tenant_share), else, in device tiers, an equal
// split of the capacity among the tenants with copies there and the one asking. An
// eviction round for tenant T, when some tenant is over its share or T would pass its own,
// takes victims only from the tenants over their share and from T itself if it would pass
// its share; the others' tensors are passed over (tier_stats::share_skips). So a tenant over
// its share is evicted from first, and one within its share keeps its tensors while others
// need room. Shares are soft: a round that finds nothing that way (everything left is
// pinned, or the tenants over their share have nothing to give) runs again without them,
// as it does without the planner's keep window, and the request is never refused for a
// share. A tier with one tenant skips all of it (one entry in the tenant list).
// Limitations: the victims' order among the tenants that may give is the policy's. Hard
// shares and priorities: the Note below.
//
// Note [Hard shares and priorities]
// ---------------------------------
// Rationale: soft shares protect a tenant only while another is over its share; once no
// one is, any tenant's tensors may go, and a tenant that must keep its working set (a
// latency-bound service beside a training job) has no way to say so. Nor can a tenant be
// kept from taking more of a tier than it should, even with room free.
// Approach: a tenant has a priority and may have hard shares (tenant_options, copied into
// each tier's tenant_ranks). A round runs in passes (evict_pass):
//   shares    the tenants over their share (and the requester if it would pass its own),
//             as in Note [Tenants' shares of a tier]; when no one is over, the tenants of
//             lower priority than the requester, and when there are none, what fallback
//             allows;
//   fallback  (placement, when the first pass made no progress) any tenant but those
//             within their share that have a hard share or a higher priority: their
//             tensors are passed over, and the request goes to a lower tier or fails;
//   own       a tenant with a hard share that a placement would take past it: placement
//             evicts its own tensors (whatever the room free) until it fits, or refuses
//             the placement (tier_stats::share_refusals): an allocation without a
//             preferred tier then places the tensor in a lower tier; a copy-in (or an
//             allocation into a preferred tier) fails with oom_cause::share.
// A device tier's default share is the tenant's quota when it has one (pool::set_quota),
// else the equal split. With no priority or hard share set (`ranked` false) the passes
// are those of the soft shares alone.
// A tenant's bytes in a tier are counted when its copy enters the tier's policy, after the
// copy; a hard tenant's request also reserves its bytes when it passes the share check,
// under the same lock (tenant_rank::placing; given back by place() when it ends without a
// block, else by the caller's placing_settle once the copy is in or the block went back),
// so threads of one hard tenant placing at the same moment see each other's copies in
// flight and the tenant never passes its share.
// Limitations: a hard share under the equal split moves as tenants come and go; the equal
// split counts every tenant with copies, hard or not.
namespace {

// The tenants a round may take from (Notes [Tenants' shares of a tier], [Hard shares and
// priorities]): false when any may; else `out` lists them (it may be empty: none may).
// Under the tier's lock.
bool tenants_that_give(tier_state const& ts, std::uint32_t tenant, std::size_t bytes, evict_pass pass,
                       std::vector<std::uint32_t>& out)
{
  out.clear();
  if (pass == evict_pass::own) {
    out.push_back(tenant);
    return true;
  }
  if (ts.tenant_bytes.size() < 2) { return false; }
  int const mine = ts.ranked ? ts.rank_of(tenant).priority : 0;
  if (pass == evict_pass::shares) {
    bool any = false;
    for (auto const& [t, b] : ts.tenant_bytes) {
      std::size_t const share = ts.share_of(t);
      bool const over = b > 0 && static_cast<std::size_t>(b) + (t == tenant ? bytes : 0) > share;
      if (over) {
        out.push_back(t);  // a thread's own vector: it grows with the tenant count, rarely
        any = true;
      }
    }
    if (any) {
      if (ts.bytes_of_tenant(tenant) <= 0 && bytes > ts.share_of(tenant)) { out.push_back(tenant); }
      return true;
    }
    if (!ts.ranked) { return false; }
    for (auto const& [t, b] : ts.tenant_bytes) {
      if (b > 0 && t != tenant && ts.rank_of(t).priority < mine) { out.push_back(t); }
    }
    if (!out.empty()) { return true; }
    // No one below the requester: the tenants the fallback pass allows.
  }
  if (!ts.ranked) { return false; }
  bool all = true;
  for (auto const& [t, b] : ts.tenant_bytes) {
    if (b <= 0) { continue; }
    if (t != tenant) {
      auto const r = ts.rank_of(t);
      if ((r.hard || r.priority > mine) && static_cast<std::size_t>(b) <= ts.share_of(t)) {
        all = false;
        continue;
      }
    }
    out.push_back(t);
  }
  if (all) { out.clear(); }
  return !all;
}

}  // namespace

// Note [Choosing an eviction action]
// -----------------------------------
// Rationale: a copy leaving a tier can go several ways, and which is cheapest depends on
// the tensor and on the machine: dropped when a valid copy is below (free); written back
// to a lower tier (a copy now and one back before its next use, at that tier's
// bandwidth); written into a compressed tier (coding both ways instead of a transfer:
// cheaper than a slow disk, dearer than host memory); or, for a tensor with a recipe
// (pool::set_recompute), dropped outright and rebuilt on next use (its declared or
// measured cost, no copy at all). A runtime that only ever moves copies down pays the
// transfer for activations a checkpointing framework would recompute for less.
// Approach: a clean victim is dropped as before. For a dirty one, the round compares its
// recipe's cost (recompute_cost: declared, or the mean of its rebuilds so far) with the
// cheapest round trip to a tier it could be written to (copy_seconds each way: the
// links' bandwidths from action_options or the sim backend's link models; a storage
// tier's write and read rates as measured once it has moved a MiB, its nominal ones
// before; staging through a host tier counted where a copy cannot be direct). Cheaper to
// rebuild: the copy is vacated with nothing written and the record marked needs_rebuild.
// Otherwise write_back_locked tries the candidate tiers cheapest round trip first (a
// stable order: equal costs keep the fastest-first order, so pools without storage or
// recipes behave exactly as before), passing over compressed tiers for a tensor that is
// not compressible. When no candidate has room and the tensor has a recipe, it is
// dropped for recompute instead of staying resident: the last resort before the request
// fails. Each outcome is counted (pool_stats::evicted_dropped, _moved, _compressed,
// _recompute).
// Limitations: the price of a round trip ignores what the write-back evicts in the tier
// below (a full host tier pushes its own victims further down), and the queueing on the
// links; a recipe's inputs may themselves be evicted by the time it runs (their copy-in
// is then part of the rebuild, not of its price). Moves not made by an eviction round
// (demote, a shrinking tier, write-through, early write-backs) always move.

namespace {

enum class copy_side : std::uint8_t { device, host, storage };

copy_side side_of(tier_kind k) noexcept
{
  if (k == tier_kind::storage) { return copy_side::storage; }
  return k == tier_kind::device ? copy_side::device : copy_side::host;  // managed counts as host-side
}

// Nominal coding rates (bytes of tensor per second, one core) of a compressed tier's codec
// before it has measured its own: the figures of `tierpool codec measure` on the demo's
// activations (bench/results/codecs-cpu-2026-12-03.md), rounded down.
std::pair<double, double> nominal_codec_rates(codec_kind c) noexcept
{
  switch (c) {
    case codec_kind::lz4: return {0.25e9, 0.9e9};
    case codec_kind::zstd: return {0.12e9, 0.5e9};
    case codec_kind::q8_block: return {3.5e9, 20e9};
    case codec_kind::none: break;
  }
  return {4e9, 4e9};
}

}  // namespace

bool migration_engine::compressed_tier(std::uint32_t k) const noexcept
{
  tier_state const& ts = *tiers_[k];
  return ts.file != nullptr && ts.file->engine() == storage_engine::compressed;
}

double migration_engine::copy_seconds(std::uint32_t a, std::uint32_t b, std::size_t bytes) const noexcept
{
  copy_side const sa = side_of(tiers_[a]->kind);
  copy_side const sb = side_of(tiers_[b]->kind);
  auto const n = static_cast<double>(bytes);
  if (sa == copy_side::storage || sb == copy_side::storage) {
    bool const write = sb == copy_side::storage;
    tier_state const& st = *tiers_[write ? b : a];
    double rate = write ? actions_.storage_write : actions_.storage_read;
    if (st.file != nullptr) {
      if (st.file->engine() == storage_engine::compressed) {
        auto const nominal = nominal_codec_rates(st.file->codec());
        rate = write ? nominal.first : nominal.second;
      }
      storage_file_figures const f = st.file->figures();
      double const moved = static_cast<double>(write ? f.bytes_written : f.bytes_read);
      double const secs = write ? f.write_seconds : f.read_seconds;
      if (moved >= 1048576.0 && secs > 0.0) { rate = moved / secs; }  // measured
    }
    double t = n / std::max(rate, 1.0);
    copy_side const other = write ? sa : sb;
    if (other == copy_side::device) { t += n / std::max(write ? actions_.d2h : actions_.h2d, 1.0); }  // staged
    return t;
  }
  double rate = actions_.h2h;
  if (sa == copy_side::device && sb == copy_side::device) {
    rate = 2e12;
  } else if (sb == copy_side::device) {
    rate = actions_.h2d;
  } else if (sa == copy_side::device) {
    rate = actions_.d2h;
  }
  return n / std::max(rate, 1.0);
}

double migration_engine::recompute_price(tensor_record const& rec) const noexcept
{
  if (!actions_.recompute || !rec.has_recipe || rec.rebuilt_fresh || rec.recipe_input) { return -1.0; }
  record_owner const* o = rec.owner();
  return o == nullptr ? -1.0 : o->recompute_cost(rec);
}

bool migration_engine::write_back_target(tensor_record const& rec, std::uint32_t k, std::uint32_t j) const noexcept
{
  return j > k && j < tiers_.size() && (!has_storage_ || direct_copy(k, j)) &&  // device copies reach storage through a host tier
         !(rec.no_compress && compressed_tier(j)) &&                            // tensor_options::compressible
         rec.bytes <= tiers_[j]->capacity;
}

double migration_engine::round_trip_seconds(tensor_record const& rec, std::uint32_t k, std::uint32_t j) const noexcept
{
  return copy_seconds(k, j, rec.bytes) + copy_seconds(j, k, rec.bytes);
}

bool migration_engine::can_leave_locked(tensor_record const& rec, std::uint32_t k) const noexcept
{
  if (rec.discarded) { return true; }  // dead bytes: dropped, nothing written (Note [Discarded contents])
  for (std::uint32_t j = 0; j < rec.slots.size(); ++j) {
    if (j != k && rec.slots[j].state == copy_state::valid) { return true; }  // clean
  }
  for (auto j = static_cast<std::uint32_t>(k + 1); j < tiers_.size(); ++j) {
    if (write_back_target(rec, k, j)) { return true; }
  }
  return recompute_price(rec) >= 0.0;
}

double migration_engine::cheapest_round_trip(tensor_record const& rec, std::uint32_t k) const noexcept
{
  double best = std::numeric_limits<double>::infinity();
  for (auto j = static_cast<std::uint32_t>(k + 1); j < tiers_.size(); ++j) {
    if (write_back_target(rec, k, j)) { best = std::min(best, round_trip_seconds(rec, k, j)); }
  }
  return best;
}

void migration_engine::order_by_forecast(std::vector<tensor_id>& victims, std::size_t bytes, tick guard_from,
                                         tick guard_until) const
{
  struct entry {
    tick next_use;
    std::size_t bytes;
    tensor_id id;
  };
  thread_local std::vector<entry> order;
  order.clear();
  std::size_t limit = 0;  // the policy's first victim that may go, or the request: no larger ones first
  {
    std::lock_guard lock(*table_mtx_);
    for (tensor_id const id : victims) {
      entry e{kNoForecast, 0, id};  // gone meanwhile: first, the round learns it is gone
      if (auto const* r = table_->find(static_cast<std::uint64_t>(id))) {
        e.next_use = (*r)->next_use.load(std::memory_order_relaxed);
        e.bytes = (*r)->bytes;
        bool const guarded = e.next_use != kNoForecast && e.next_use >= guard_from && e.next_use <= guard_until;
        if (limit == 0 && !guarded) { limit = e.bytes; }
      }
      order.push_back(e);
    }
  }
  limit = std::max(limit, bytes);
  // Latest forecast first, larger victims than the limit last; ties (no forecast: plan mode
  // orders those least recently used first, Note [The planner's step]) in the policy's order.
  std::stable_sort(order.begin(), order.end(), [limit](entry const& a, entry const& b) {
    bool const a_over = a.bytes > limit;
    bool const b_over = b.bytes > limit;
    if (a_over != b_over) { return b_over; }
    return !a_over && a.next_use > b.next_use;
  });
  for (std::size_t i = 0; i < order.size(); ++i) { victims[i] = order[i].id; }
}

evict_outcome migration_engine::evict_round(std::uint32_t k, std::size_t bytes, place_mode mode, tensor_id incoming,
                                            std::uint32_t tenant, evict_pass pass, evict_handoff* handoff,
                                            std::unique_lock<std::mutex>* held, std::span<tensor_id const> chosen)
{
  // The planner's protections (transfer_planner.cpp): a planned prefetch does no harm; any
  // other eviction in the planner's tier keeps what is needed before the horizon, except a
  // window the ladder chose on the tier's layout (Note [The keep window]).
  planning_terms const& pt = planning();
  tick guard_from = 0;
  tick guard_until = 0;
  if (pt.active) {
    guard_from = pt.now;
    guard_until = pt.protect;
  } else if (pass == evict_pass::shares && chosen.empty() && k == keep_tier_.load(std::memory_order_relaxed)) {
    guard_until = keep_until_.load(std::memory_order_relaxed);
    guard_from = keep_from_.load(std::memory_order_relaxed);
  }
  tier_state& ts = *tiers_[k];
  evict_outcome out;
  claim_scope scope;
  std::vector<claim>& claimed = scope.list();
  bool handoff_ok = false;
  {
    std::unique_lock<std::mutex> own;
    if (held == nullptr || !held->owns_lock()) { own = std::unique_lock(ts.mem->mutex()); }
    drain_accesses_locked(ts);
    thread_local std::vector<std::uint32_t> givers;  // Note [Tenants' shares of a tier]
    bool const filtered = tenants_that_give(ts, tenant, bytes, pass, givers);
    std::size_t extra = 0;
    std::size_t got = 0;
    eviction_request req{};
    req.from = tier_id{k};
    req.contiguous_bytes = bytes;
    req.now = backend_->now();
    req.incoming = incoming;
    int const asks = filtered ? kMaxProposalsFiltered : kMaxProposals;
    for (int ask = 0; ask < asks && got < bytes; ++ask) {
      req.bytes_needed = sat_add(bytes, extra);
      if (chosen.empty()) {
        // Note [Prefetch victims the forecast needs last], transfer_planner.cpp
        bool const sample = pt.active && pt.sample > 1;
        if (sample) {  // (sample - 1) x bytes more, saturating
          std::size_t const more = pt.sample - 1;
          req.bytes_needed = sat_add(req.bytes_needed, bytes > std::numeric_limits<std::size_t>::max() / more
                                                           ? std::numeric_limits<std::size_t>::max()
                                                           : bytes * more);
        }
        ts.policy->propose(req, ts.proposal);
        if (sample && ts.proposal.victims.size() > 1) { order_by_forecast(ts.proposal.victims, bytes, guard_from, guard_until); }
      } else {  // the ladder chose them (Note [Evicting a window for a large request], window_eviction.cpp)
        if (ask != 0) { break; }
        ts.proposal.clear();
        ts.proposal.victims.assign(chosen.begin(), chosen.end());
      }
      if (ts.proposal.empty()) { break; }
      bool learned = false;
      for (tensor_id const id : ts.proposal.victims) {
        if (got >= bytes) { break; }
        if (std::any_of(claimed.begin(), claimed.end(), [&](auto const& c) { return c.first->id == id; })) {
          continue;
        }
        record_ref rec;
        {
          std::lock_guard lock(*table_mtx_);
          if (auto const* r = table_->find(static_cast<std::uint64_t>(id))) {
            prefetch_victim(r->get());  // overlaps the record's misses with the control block's (the copy below)
            rec = *r;
          }
        }
        if (rec == nullptr) {  // freed meanwhile and not yet erased, or unknown to us
          ts.policy->on_erase(id);
          learned = true;
          continue;
        }
        if (filtered && std::find(givers.begin(), givers.end(), rec->tenant) == givers.end()) {
          extra = sat_add(extra, rec->bytes);  // within its tenant's share (a constant field: no lock)
          out.kept = true;
          add_under_tier_lock(ts.share_skips, std::uint64_t{1});
          learned = true;
          continue;
        }
        if (holds_record(*rec)) {  // this thread is working on it (the tensor being placed)
          extra = sat_add(extra, rec->bytes);
          learned = true;
          continue;
        }
        record_lock vl(*rec, std::try_to_lock);
        if (!vl.owns()) {  // busy in another thread: "in flight"
          extra = sat_add(extra, rec->bytes);
          out.busy_bytes = sat_add(out.busy_bytes, rec->bytes);
          learned = true;
          continue;
        }
        copy_slot& s = rec->slots[k];
        if (rec->freed || s.state == copy_state::absent) {
          ts.policy->on_erase(id);
          learned = true;
          continue;
        }
        if (s.pins != 0) {
          out.pinned_bytes = sat_add(out.pinned_bytes, rec->bytes);
          if (!s.policy_pinned) {
            ts.policy->on_pin(id);  // see policy.hpp, Note [How a policy learns that a tensor is pinned]
            s.policy_pinned = true;
          } else {
            extra = sat_add(extra, rec->bytes);  // the policy proposes pinned tensors anyway
          }
          learned = true;
          continue;
        }
        if (rec->no_compress && !can_leave_locked(*rec, k)) [[unlikely]] {
          extra = sat_add(extra, rec->bytes);  // dirty, and every tier below compresses: it stays
          learned = true;
          continue;
        }
        if (guard_until != 0) {
          tick const nu = rec->next_use.load(std::memory_order_relaxed);
          if (nu != kNoForecast && nu >= guard_from && nu <= guard_until) {
            extra = sat_add(extra, rec->bytes);
            out.kept = true;
            if (pt.active) { ++planning().harm_skips; }
            learned = true;
            continue;
          }
        }
        got += s.blk.slot.size;
        claimed.emplace_back(std::move(rec), std::move(vl));
      }
      if (!learned) { break; }
    }
    // The one victim may go to the request (Note [The evicted block goes to the request that
    // evicted it]) when the ladder's next climb would take that very block: of the request's
    // slot size, no free block beside it, and no other vacated block in the tier.
    if (handoff != nullptr && claimed.size() == 1 && ts.mem->deferred_bytes() == 0) {
      tensor_record& v = *claimed.front().first;
      copy_slot const& s = v.slots[k];
      handoff_ok = s.pins == 0 && s.blk.slot.size == ts.mem->slot_bytes(bytes) && ts.mem->walled_in(s.blk.slot);
      bool clean = false;  // another valid copy: dropped, nothing can keep it resident
      for (std::uint32_t j = 0; j < v.slots.size() && !clean; ++j) {
        clean = j != k && v.slots[j].state == copy_state::valid;
      }
      if (handoff_ok && clean) {  // tell the policy and the figures now, under this lock
        hand_off_told_locked(ts, v, k);
        handoff->told = true;
        if (handoff->incoming != nullptr) {  // and the tensor the block is for: no lock of its own later
          insert_into_policy_locked(ts, *handoff->incoming, k, handoff->incoming_write);
          handoff->inserted = true;
        }
      }
    }
    if (held != nullptr && held->owns_lock()) { held->unlock(); }
  }

  std::size_t wb_busy = 0;
  for (auto& [rec, vl] : claimed) {
    copy_slot& s = rec->slots[k];
    bool dirty = s.state == copy_state::valid;
    for (std::uint32_t j = 0; j < rec->slots.size() && dirty; ++j) {
      dirty = !(j != k && rec->slots[j].state == copy_state::valid);
    }
    if (dirty && rec->discarded) {  // dead bytes: dropped, nothing written (Note [Discarded contents], tensor_ops.cpp)
      dirty = false;
      counters_->evicted_discarded.fetch_add(1, std::memory_order_relaxed);
      counters_->evicted_discarded_bytes.fetch_add(rec->bytes, std::memory_order_relaxed);
    }
    bool recompute = false;  // Note [Choosing an eviction action]
    std::uint32_t wrote_to = k;
    if (dirty) {
      double const rc = recompute_price(*rec);
      recompute = rc >= 0.0 && rc < cheapest_round_trip(*rec, k);
      status failed = status::ok;
      if (!recompute && !write_back_locked(*rec, k, mode, &wb_busy, &failed, &wrote_to)) {
        if (failed != status::ok || rc < 0.0) {  // stays resident
          if (failed != status::ok) {
            out.write_back_status = failed;  // Note [A failed write-back], placement.cpp
            out.write_back_victim = rec->id;
          }
          continue;
        }
        recompute = true;  // no room below: rebuilding it later beats keeping it here
      }
    }
    if (recompute) {
      rec->needs_rebuild = true;  // its last copy goes: the recipe holds its bytes now
      counters_->evicted_recompute.fetch_add(1, std::memory_order_relaxed);
      counters_->evicted_recompute_bytes.fetch_add(rec->bytes, std::memory_order_relaxed);
    } else if (!dirty) {
      counters_->evicted_dropped.fetch_add(1, std::memory_order_relaxed);
    } else if (compressed_tier(wrote_to)) {
      counters_->evicted_compressed.fetch_add(1, std::memory_order_relaxed);
    } else {
      counters_->evicted_moved.fetch_add(1, std::memory_order_relaxed);
    }
    rec->cleaned_early = false;  // the early write-back spared this eviction its copy (a hand-off skips vacate_locked)
    if (rec->prefetched) {
      counters_->prefetch_wasted.fetch_add(1, std::memory_order_relaxed);
      counters_->prefetch_wasted_bytes.fetch_add(rec->bytes, std::memory_order_relaxed);
      rec->prefetched = false;
    }
    if (handoff_ok) {
      hand_off_locked(*rec, k, *handoff);  // Note [The evicted block goes to the request that evicted it]
    } else {
      vacate_locked(*rec, k);
    }
    ts.evictions.fetch_add(1, std::memory_order_relaxed);
    if (!dirty || recompute) { ts.evictions_clean.fetch_add(1, std::memory_order_relaxed); }
    out.progress = true;
  }
  out.busy_bytes = sat_add(out.busy_bytes, wb_busy);  // a lower tier full of busy victims: busy too
  return out;  // `scope` unlocks the victims
}

}  // namespace tierpool::detail

namespace tierpool::detail {

void migration_engine::add_tenant(std::uint32_t tenant)
{
  {
    std::lock_guard g(tenants_mtx_);
    if (std::find(known_tenants_.begin(), known_tenants_.end(), tenant) != known_tenants_.end()) { return; }
  }
  for (auto const& tp : tiers_) {
    tier_state& ts = *tp;
    std::lock_guard tl(ts.mem->mutex());
    if (std::any_of(ts.tenant_bytes.begin(), ts.tenant_bytes.end(), [&](auto const& e) { return e.first == tenant; })) {
      continue;
    }
    ts.tenant_bytes.reserve(ts.tenant_bytes.size() + 1);
    ts.tenant_bytes.emplace_back(tenant, 0);  // may throw bad_alloc: nothing else changed
  }
  std::lock_guard g(tenants_mtx_);
  known_tenants_.push_back(tenant);  // may throw bad_alloc: the next call adds nothing twice
}

namespace {

tier_state::tenant_rank& rank_entry(tier_state& ts, std::uint32_t tenant)  // under the tier's lock
{
  for (auto& r : ts.tenant_ranks) {
    if (r.tenant == tenant) { return r; }
  }
  return ts.tenant_ranks.emplace_back(tier_state::tenant_rank{tenant});  // may throw bad_alloc
}

}  // namespace

void migration_engine::set_tenant_rank(std::uint32_t tenant, int priority, bool hard)
{
  add_tenant(tenant);
  for (auto const& tp : tiers_) {
    tier_state& ts = *tp;
    std::lock_guard tl(ts.mem->mutex());
    auto& r = rank_entry(ts, tenant);
    r.priority = priority;
    r.hard = hard;
    ts.ranked = std::any_of(ts.tenant_ranks.begin(), ts.tenant_ranks.end(),
                            [](auto const& e) { return e.hard || e.priority != 0; });
  }
}

void migration_engine::set_tenant_quota(std::uint32_t tenant, std::size_t quota)
{
  add_tenant(tenant);
  for (auto const& tp : tiers_) {
    tier_state& ts = *tp;
    std::lock_guard tl(ts.mem->mutex());
    rank_entry(ts, tenant).quota = quota;
  }
}

void migration_engine::set_tenant_share(std::uint32_t k, std::uint32_t tenant, std::size_t bytes)
{
  add_tenant(tenant);
  tier_state& ts = *tiers_.at(k);
  std::lock_guard tl(ts.mem->mutex());
  auto it = std::find_if(ts.tenant_shares.begin(), ts.tenant_shares.end(), [&](auto const& e) { return e.first == tenant; });
  if (bytes == 0) {
    if (it != ts.tenant_shares.end()) { ts.tenant_shares.erase(it); }
  } else if (it != ts.tenant_shares.end()) {
    it->second = bytes;
  } else {
    ts.tenant_shares.emplace_back(tenant, bytes);
  }
}

}  // namespace tierpool::detail

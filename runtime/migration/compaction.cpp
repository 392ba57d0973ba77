// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// compaction.cpp — owns moving copies within one tier so that its free space coalesces:
// the out-of-memory ladder's compaction step (compact_for_locked: clear one run of the
// request's size) and pool::compact's whole-tier pass (compact_tier). The pool side
// (closing the quiesce gate, the report) is core's (pool_control.cpp).
//
// Note [Compaction]
// -----------------
// Rationale: the pool hands out handles, not pointers, so a copy nobody holds may change
// address. A tier whose free bytes cover a request but whose largest free block does not
// (external fragmentation: rand85 through a pool) used to evict resident tensors for it,
// each a write-back now and a copy-in at the next use; moving a few copies within the tier
// (device to device, or host to host) costs one copy each and evicts nothing.
// Approach: a copy may move only when nothing can see its address: no lease (pins == 0;
// every pointer a live lease holds stays as it is), its fill event complete and every
// recorded use of it settled (no queued work reads or writes the block), its record not
// paused by a low-memory callback, and the record try-locked (busy: left where it is).
// The tier lock is held from the look at the layout to the last move, so the layout the
// plan was made on is the layout the moves see (Note [Lock order of the pool]: records are
// only try-locked under a tier lock, as eviction claims victims). A move takes the exact
// destination range (tier::allocate_at), copies on one of the pool's copy streams and
// waits for the copy on the host, then points the slot at the new block and frees the old
// one at once (nothing uses it). A failed copy frees the destination and leaves the copy
// where it was: no byte is lost and nothing else changes.
//   The ladder (compact_for_locked): among the runs of free and movable blocks in one chunk
// that span the request, the one whose movable bytes are fewest and can all go to free
// blocks outside the run (best fit, largest first); the request takes the run's start.
//   pool::compact (compact_tier): passes over the copies from the highest offset down, each
// moved to the lowest free block before it that holds it, until a pass moves nothing: the
// copies settle towards the start of the tier and the free space gathers after them.
// The last resort (pool_options::compact_before_failing) runs the ladder's step once more
// before a request fails, and there the host also waits for an unleased copy's fill and
// recorded uses rather than pass over it: the alternative is the failure.
// Limitations: the host waits for each move's copy, with the tier lock held (as the
// ladder's wait for a vacated block does), and the copy runs on one of the pool's copy
// streams, behind whatever is queued there (a write-back waiting for a user's stream: the
// host waits for that too); finding a block's record walks the pool's records
// (O(tensors) per attempt, only where the ladder would otherwise evict); a run that needs
// no move (a free block the arena's bounded scan passed over) also counts as a compaction;
// storage tiers are never compacted (their copies are file I/O).
#include <tierpool/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "migration/migration_engine.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {
namespace {

// Windows of the ladder's step whose moves are checked for room, cheapest first.
constexpr std::size_t kWindowsTried = 8;
// Passes of compact_tier at most (each moves at least one copy, or ends it).
constexpr int kMaxPasses = 16;

// What a block of the layout is to compaction.
enum class block_role : std::uint8_t { free, movable, wall };

struct layout_entry {
  std::uint64_t offset{0};
  std::uint64_t size{0};
  std::uint32_t chunk{0};
  block_role role{block_role::wall};
  std::size_t copy{0};  // movable: index into the copies
};

}  // namespace

bool migration_engine::movable_locked(tensor_record& rec, std::uint32_t k) noexcept
{
  if (rec.freed || rec.paused != 0 || k >= rec.slots.size()) { return false; }
  copy_slot& s = rec.slots[k];
  if (s.state == copy_state::absent || s.pins != 0) { return false; }
  if (!ready_complete(s)) { return false; }
  for (stream_use const& u : s.users) {
    if (!streams_->use_done(u)) { return false; }
  }
  s.users.clear();  // every use settled: nothing to order after
  return true;
}

void migration_engine::resident_copies_locked(tier_state& ts, std::vector<resident_copy>& out)
{
  out.clear();
  std::vector<record_ref> recs;
  {
    std::lock_guard lock(*table_mtx_);  // a leaf
    recs.reserve(table_->size());
    table_->for_each([&](record_ref const& r) { recs.push_back(r); });
  }
  std::uint32_t const k = ts.index;
  for (record_ref& r : recs) {
    if (holds_record(*r)) { continue; }  // the request's own tensor (its copy here is not placed yet)
    record_lock const rl(*r, std::try_to_lock);
    if (!rl.owns() || r->freed || k >= r->slots.size()) { continue; }
    copy_slot const& s = r->slots[k];
    if (s.state == copy_state::absent) { continue; }
    out.push_back(resident_copy{.offset = s.blk.slot.offset, .size = s.blk.slot.size, .rec = std::move(r)});
  }
  std::sort(out.begin(), out.end(), [](resident_copy const& a, resident_copy const& b) { return a.offset < b.offset; });
}

bool migration_engine::move_copy_locked(tier_state& ts, tensor_record& rec, std::uint64_t to) noexcept
{
  std::uint32_t const k = ts.index;
  copy_slot& s = rec.slots[k];
  std::optional<block> const nb = ts.mem->allocate_at(to, rec.bytes);
  if (!nb) { return false; }
  copy_desc d{};
  d.dst = nb->ptr;
  d.src = s.blk.ptr;
  d.bytes = rec.bytes;
  d.dst_kind = ts.kind;
  d.src_kind = ts.kind;
  stream_handle const c = copy_stream(k, k);
  auto const t0 = std::chrono::steady_clock::now();
  status st = backend_->copy_async(d, c);
  if (st == status::ok) {
    event_handle e = streams_->record_or_sync(c);  // null: the host waited for the stream
    if (e) {
      st = backend_->synchronize_event(e);
      if (st != status::ok) { (void)backend_->synchronize_stream(c); }  // the destination is not ours to free before
      streams_->release_event(e);
    }
  }
  streams_->add_stall(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (st != status::ok) {
    ts.mem->deallocate(*nb);  // the copy stays where it was, bytes and all
    add_under_tier_lock(ts.compaction_copy_failures, std::uint64_t{1});
    return false;
  }
  block const old = s.blk.whole(rec.bytes);
  s.blk = *nb;
  s.pages_on_device = false;  // managed: where the copy left the pages is not ours to assume
  ts.mem->deallocate(old);    // nothing uses it: the fill, every use and the move are done
  add_under_tier_lock(ts.bytes_freed, static_cast<std::int64_t>(old.slot.size));
  add_under_tier_lock(ts.bytes_allocated, static_cast<std::int64_t>(nb->slot.size));
  add_under_tier_lock(ts.compacted_tensors, std::uint64_t{1});
  add_under_tier_lock(ts.compacted_bytes, static_cast<std::uint64_t>(rec.bytes));
  return true;
}

bool migration_engine::move_resident_locked(tier_state& ts, resident_copy const& c, std::uint64_t to,
                                            bool wait_for_uses) noexcept
{
  record_lock const rl(*c.rec, std::try_to_lock);
  if (!rl.owns()) { return false; }
  tensor_record& rec = *c.rec;
  if (rec.freed || ts.index >= rec.slots.size()) { return false; }
  copy_slot& s = rec.slots[ts.index];
  if (s.state == copy_state::absent || s.blk.slot.offset != c.offset || s.blk.slot.size != c.size) { return false; }
  if (wait_for_uses && s.pins == 0 && rec.paused == 0) { host_wait_slot(s, true); }
  if (!movable_locked(rec, ts.index)) { return false; }
  return move_copy_locked(ts, rec, to);
}

std::optional<block> migration_engine::compact_for_locked(tier_state& ts, std::size_t bytes, bool wait_for_uses)
{
  if (ts.file || is_storage(ts.kind)) { return std::nullopt; }
  std::uint64_t const need = ts.mem->slot_bytes(bytes);
  std::vector<resident_copy> copies;
  resident_copies_locked(ts, copies);
  std::vector<layout_entry> layout;
  ts.mem->for_each_block([&](tier::block_view const& b) {
    layout_entry e{.offset = b.offset, .size = b.size, .chunk = b.chunk};
    if (b.use == tier::block_use::free) {
      e.role = block_role::free;
    } else if (b.use == tier::block_use::live) {
      auto const it = std::lower_bound(copies.begin(), copies.end(), b.offset,
                                       [](resident_copy const& c, std::uint64_t o) { return c.offset < o; });
      if (it != copies.end() && it->offset == b.offset && it->size == b.size) {
        e.role = block_role::movable;
        e.copy = static_cast<std::size_t>(it - copies.begin());
      }
    }
    layout.push_back(e);
  });

  // The runs of free and movable blocks spanning the request, by the bytes they would move.
  struct window {
    std::uint64_t moved{0};
    std::size_t first{0};
    std::size_t last{0};  // inclusive: the block holding the run's last byte
  };
  std::vector<window> windows;
  std::uint64_t moved = 0;
  std::size_t j = 0;  // layout[i..j) spans less than the request, or reaches it
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (j < i) {
      j = i;
      moved = 0;
    }
    if (layout[i].role == block_role::wall) {
      j = i + 1;
      moved = 0;
      continue;
    }
    std::uint64_t const end = layout[i].offset + need;
    while (j < layout.size() && layout[j].chunk == layout[i].chunk && layout[j].role != block_role::wall &&
           layout[j].offset < end) {
      if (layout[j].role == block_role::movable) { moved += layout[j].size; }
      ++j;
    }
    if (j > i && layout[j - 1].offset + layout[j - 1].size >= end) {
      windows.push_back(window{.moved = moved, .first = i, .last = j - 1});
    }
    if (layout[i].role == block_role::movable) { moved -= layout[i].size; }
  }
  if (windows.empty()) { return std::nullopt; }
  std::stable_sort(windows.begin(), windows.end(), [](window const& a, window const& b) { return a.moved < b.moved; });

  // The free blocks, by size, to plan the moves in (best fit, largest copy first).
  std::multimap<std::uint64_t, std::uint64_t> holes;  // size -> offset
  for (layout_entry const& e : layout) {
    if (e.role == block_role::free) { holes.emplace(e.size, e.offset); }
  }
  std::vector<std::pair<std::size_t, std::uint64_t>> plan;  // layout index -> destination offset
  for (std::size_t w = 0; w < windows.size() && w < kWindowsTried; ++w) {
    window const& win = windows[w];
    std::uint64_t const lo = layout[win.first].offset;
    std::uint64_t const hi = lo + need;
    std::multimap<std::uint64_t, std::uint64_t> room = holes;
    std::vector<std::size_t> movers;
    for (std::size_t i = win.first; i <= win.last; ++i) {
      layout_entry const& e = layout[i];
      if (e.role == block_role::movable) {
        movers.push_back(i);
        continue;
      }
      // A free block of the run is not room for its movers, but what lies past the run is.
      auto range = room.equal_range(e.size);
      for (auto it = range.first; it != range.second; ++it) {
        if (it->second == e.offset) {
          room.erase(it);
          break;
        }
      }
      if (e.offset + e.size > hi) { room.emplace(e.offset + e.size - hi, hi); }
    }
    std::sort(movers.begin(), movers.end(), [&](std::size_t a, std::size_t b) { return layout[a].size > layout[b].size; });
    plan.clear();
    bool fits = true;
    for (std::size_t i : movers) {
      std::uint64_t const sz = ts.mem->slot_bytes(copies[layout[i].copy].rec->bytes);
      auto it = room.lower_bound(sz);
      if (it == room.end()) {
        fits = false;
        break;
      }
      auto const [hole_size, hole_offset] = *it;
      room.erase(it);
      plan.emplace_back(i, hole_offset);
      if (hole_size > sz) { room.emplace(hole_size - sz, hole_offset + sz); }
    }
    if (!fits) { continue; }
    for (auto const& [i, to] : plan) {
      if (!move_resident_locked(ts, copies[layout[i].copy], to, wait_for_uses)) {
        return std::nullopt;  // the moves made stay: valid
      }
    }
    return ts.mem->allocate_at(lo, bytes);
  }
  return std::nullopt;
}

compact_totals migration_engine::compact_tier(std::uint32_t k)
{
  compact_totals tot;
  tier_state& ts = *tiers_[k];
  if (ts.file || is_storage(ts.kind)) { return tot; }
  std::lock_guard tl(ts.mem->mutex());
  drain_accesses_locked(ts);
  std::vector<resident_copy> copies;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> holes;  // offset, size: in offset order
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    resident_copies_locked(ts, copies);
    holes.clear();
    ts.mem->for_each_block([&](tier::block_view const& b) {
      if (b.use == tier::block_use::free) { holes.emplace_back(b.offset, b.size); }
    });
    std::uint64_t moved = 0;
    tot.skipped = 0;  // the last pass's
    for (auto c = copies.rbegin(); c != copies.rend(); ++c) {
      std::uint64_t const sz = ts.mem->slot_bytes(c->rec->bytes);
      auto h = std::find_if(holes.begin(), holes.end(), [&](auto const& x) { return x.second >= sz; });
      if (h == holes.end() || h->first >= c->offset) { continue; }  // only ever downwards
      if (!move_resident_locked(ts, *c, h->first)) {
        ++tot.skipped;
        continue;
      }
      ++moved;
      tot.moved_bytes += c->rec->bytes;
      h->first += sz;
      h->second -= sz;
    }
    tot.moved += moved;
    if (moved == 0) { break; }
  }
  return tot;
}

}  // namespace tierpool::detail

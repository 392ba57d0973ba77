// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_snapshot.cpp — owns pool::residency() (where one tensor lives, under its lock) and
// pool::snapshot() (every tensor and every tier's blocks at one moment). Their JSON and SVG
// forms are in snapshot_json.cpp and snapshot_plot.cpp; the types in
// include/tierpool/snapshot.hpp; the contract in docs/chapters/monitoring.md.
//
// Note [A snapshot is one moment]
// -------------------------------
// Rationale: a snapshot is read as a whole: every used block names its tensor, every copy
// of a tensor is a used block, used + pending + free blocks tile each chunk, and the sums
// agree with stats() and fits(). Locking each record in turn and then each tier (as fits()
// does, where a moment's drift only shifts a count) would show an allocate or an eviction
// half done: a block no record owns, a copy whose block is free.
// Approach: as validate(): close the quiesce gate (Note [The quiesce gate], op_gate.hpp),
// so no operation is running, then read the records without their locks and each tier's
// layout under its lock (taken only against the tier's own readers). Every figure of the
// snapshot is of that moment. Nothing is changed: a copy's `ready` event is queried, not
// released.
// Limitations: the world stops for the walk, linear in tensors + blocks (other threads
// wait at the gate, they never fail); a copy "in flight" is so at the query, which follows
// the gate's moment by the walk's length. pool::residency is the cheap per-tensor answer.
//
// Note [Last use]
// ---------------
// Rationale: a snapshot says how recently each tensor was used (what is cold, what a policy
// will evict), but the hit path cannot read the clock on every acquire (~20 ns, a virtual
// call; an acquire + release costs about as much).
// Approach: every acquire stamps tensor_record::last_use with its shard's clock
// (counter_shard::clock): a miss reads the backend clock (it costs microseconds anyway),
// and so does every 64th hit of the shard; the other hits reuse the shard's last reading.
// The stamp is one store to the record, in its tail padding (Note [Record layout]), and
// one load of the shard's line, which the hit counter has just written. An allocation
// stamps its tensor too, so that a tensor never acquired has a last use.
// Limitations: a hit's stamp may be up to 63 hits of its thread old (threads past the
// first kShards share one shard, and its count); access_count orders tensors used within
// that window. Prefetches, demotions and evictions are not uses.
#include <tierpool/error.hpp>
#include <tierpool/snapshot.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/detail/pool_impl.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {

namespace {

/// Fill `r` from the record (locked, or read with the gate closed).
void fill_residency(tensor_record const& rec, backend& be, tensor_residency& r)
{
  r.id = rec.id;
  r.bytes = rec.bytes;
  r.prefetch_queued = rec.prefetch_queued;
  r.prefetched = rec.prefetched;
  r.dropped_for_recompute = rec.needs_rebuild;
  r.discarded = rec.discarded;
  r.recomputable = rec.has_recipe;
  r.leases = rec.pins;
  r.write_leases = rec.write_pins;
  r.access_count = rec.access_count;
  r.last_use = rec.last_use;
  auto const n = static_cast<std::uint32_t>(rec.slots.size());
  std::uint32_t lowest_valid = n;  // past the last tier: none
  for (std::uint32_t k = n; k-- > 0;) {
    if (rec.slots[k].state == copy_state::valid) {
      lowest_valid = k;
      break;
    }
  }
  bool home_set = false;
  r.copies.clear();
  r.copies.reserve(2);
  for (std::uint32_t k = 0; k < n; ++k) {
    copy_slot const& s = rec.slots[k];
    if (s.state == copy_state::absent) { continue; }
    tensor_copy c;
    c.tier = tier_id{k};
    c.valid = s.state == copy_state::valid;
    // Newer than every copy below: the lowest valid one, with a tier below it.
    c.dirty = c.valid && k == lowest_valid && k + 1 < n;
    c.in_flight = s.ready && be.query_event(s.ready) != status::ok;
    c.leases = s.pins;
    c.offset = s.blk.slot.offset;
    c.block_bytes = s.blk.slot.size;
    if (c.valid && !home_set) {
      r.home = c.tier;
      r.dirty = c.dirty;
      home_set = true;
    }
    r.in_flight = r.in_flight || c.in_flight;
    r.copies.push_back(c);
  }
  r.in_flight = r.in_flight || r.prefetch_queued;
}

block_state state_of(tier::block_use u) noexcept
{
  switch (u) {
    case tier::block_use::free: return block_state::free;
    case tier::block_use::live: return block_state::used;
    case tier::block_use::deferred: return block_state::pending;
    case tier::block_use::released: return block_state::released;
  }
  return block_state::free;
}

}  // namespace

tensor_residency pool_impl::residency(tensor const& t) const
{
  tensor_record& rec = checked_record(t, "residency");
  tensor_residency r;
  record_lock const lock(rec);
  TIERPOOL_EXPECTS(!rec.freed, "pool::residency: the tensor was freed");
  fill_residency(rec, *backend_, r);
  return r;
}

pool_snapshot pool_impl::snapshot() const
{
  check_open("snapshot");
  if (gate_.inside()) {
    throw logic_error("pool::snapshot: called from inside a pool operation on this thread (a low-memory "
                      "callback of a nested call); call it from outside the pool's calls");
  }
  pool_snapshot snap;
  snap.backend = std::string(backend_->caps().name);
  std::size_t const n = engine_.tiers().size();
  // Offsets of each tier's used blocks -> their tensors, sorted for the layout walk.
  std::vector<std::vector<std::pair<std::uint64_t, tensor_id>>> owners(n);
  {
    op_gate::closed const quiet(gate_);  // Note [A snapshot is one moment]
    snap.time = backend_->now();
    std::vector<record_ref> const recs = records_by_id();
    snap.tensors.reserve(recs.size());
    for (record_ref const& rec : recs) {
      if (rec->freed) { continue; }
      tensor_snapshot ts;
      fill_residency(*rec, *backend_, ts);
      ts.name = rec->name();
      ts.tenant = rec->tenant;
      ts.priority = rec->priority;
      ts.free_pending = rec->free_when_unpinned;
      for (tensor_copy const& c : ts.copies) {
        owners[static_cast<std::uint32_t>(c.tier)].emplace_back(c.offset, ts.id);
      }
      snap.tensors.push_back(std::move(ts));
    }
    snap.tiers.reserve(n);
    for (std::size_t k = 0; k < n; ++k) {
      tier_state const& ts = *engine_.tiers()[k];
      auto& own = owners[k];
      std::sort(own.begin(), own.end());
      tier_snapshot t;
      t.tier = tier_id{static_cast<std::uint32_t>(k)};
      t.name = ts.name;
      t.kind = ts.kind;
      t.pinned_bytes = ts.pinned_bytes();
      std::lock_guard tl(ts.mem->mutex());
      tier_usage const u = ts.mem->usage();
      t.capacity_bytes = u.capacity_bytes;
      t.reserved_bytes = u.reserved_bytes;
      t.used_bytes = u.used_bytes;
      t.pending_bytes = u.deferred_bytes;
      t.free_bytes = u.free_bytes;
      t.largest_free_block = u.largest_free_block;
      t.blocks.reserve(u.allocation_count + u.deferred_count + own.size() + 8);
      ts.mem->for_each_block([&](tier::block_view const& b) {
        if (t.chunks.size() <= b.chunk) {
          t.chunks.push_back({.offset = b.offset - b.chunk_offset, .bytes = 0,
                              .released = b.use == tier::block_use::released});
        }
        t.chunks.back().bytes += b.size;
        block_snapshot bs{.offset = b.offset, .bytes = b.size, .chunk = b.chunk, .chunk_offset = b.chunk_offset,
                          .state = state_of(b.use), .tensor = tensor_id{}};
        if (bs.state == block_state::used) {
          auto const it = std::lower_bound(own.begin(), own.end(), std::make_pair(b.offset, tensor_id{}));
          if (it != own.end() && it->first == b.offset) { bs.tensor = it->second; }
        }
        t.blocks.push_back(bs);
      });
      snap.tiers.push_back(std::move(t));
    }
  }
  return snap;
}

}  // namespace tierpool::detail

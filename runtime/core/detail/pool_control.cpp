// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_control.cpp — owns what a program does to the pool's figures and budgets at run
// time: reset_peak_stats(), trim() (empty_cache), set_capacity() and the device-pressure
// check (pool_options::pressure). The tier side is tier::set_capacity and
// release_unused_chunks (runtime/tiers); moving copies out is the migration engine's.
//
// Note [Shrinking a tier]
// A tier's memory is whole backend chunks, so shrinking is giving chunks back, and a chunk
// can go only when no block lives in it. set_capacity(k, c) therefore:
//   1. closes the quiesce gate (no operation runs: nothing allocates into a chunk being
//      emptied, and no record lock is held elsewhere);
//   2. waits for the copy streams and the tier's stream-ordered frees, and releases the
//      chunks already empty;
//   3. if the chunks held still pass c, empties the emptiest chunks first (fewest bytes to
//      move), skipping any with a leased copy (a lease's bytes cannot move) or a record a
//      low-memory callback has paused. A copy leaves as eviction would have it leave: dropped
//      when another tier holds the newest bytes, otherwise written to a lower tier first
//      (write_back_locked, with the full out-of-memory ladder there); a copy with no room
//      below stays, and so does its chunk;
//   4. waits again for the write-backs and the freed blocks, releases the emptied chunks,
//      and sets the capacity to max(c, what is still held).
// No byte is lost: a slot is vacated only once another valid copy exists, and a failure
// leaves the copy where it was. The figures go into capacity_report.
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/log.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/detail/pool_impl.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {

void pool_impl::reset_peak_stats()
{
  check_open("reset_peak_stats");
  for (auto const& ts : engine_.tiers()) {
    std::lock_guard tl(ts->mem->mutex());
    ts->mem->reset_peak();
  }
  tenants_.reset_peaks();
}

std::size_t pool_impl::trim()
{
  check_open("trim");
  std::size_t released = 0;
  for (auto const& ts : engine_.tiers()) {
    std::lock_guard tl(ts->mem->mutex());
    released += ts->mem->release_unused_chunks();
  }
  return released;
}

namespace {

// Wait for every stream-ordered free of a tier (the caller waited for the copy streams).
void drain_deferred(tier& t)
{
  std::lock_guard tl(t.mutex());
  while (t.deferred_bytes() != 0) {
    if (t.reclaim_oldest_blocking() != status::ok) { break; }
  }
}

}  // namespace

capacity_report pool_impl::set_capacity(tier_id tier_index, std::size_t bytes)
{
  check_open("set_capacity");
  auto const k = static_cast<std::uint32_t>(tier_index);
  if (k >= engine_.tiers().size()) {
    throw logic_error("pool::set_capacity: tier " + std::to_string(k) + " out of range (the pool has " +
                      std::to_string(engine_.tiers().size()) + " tiers)");
  }
  if (gate_.inside()) {
    throw logic_error("pool::set_capacity: called from inside a pool operation on this thread (a low-memory "
                      "callback); call it from outside the pool's calls");
  }
  tier_state& ts = *engine_.tiers()[k];
  tier& mem = *ts.mem;
  std::size_t const align = mem.config().alignment;
  if (bytes < align) {
    throw logic_error("pool::set_capacity: " + std::to_string(bytes) + " bytes for tier '" + ts.name +
                      "' is below its alignment (" + std::to_string(align) + " bytes); a tier holds at least one block");
  }
  if (ts.file && bytes > ts.file->capacity()) {  // the file was sized (and its space checked) at construction
    throw logic_error("pool::set_capacity: tier '" + ts.name + "' is a storage file of " +
                      std::to_string(ts.file->capacity()) + " bytes; it cannot grow beyond that (" +
                      std::to_string(bytes) + " bytes asked)");
  }

  op_gate::closed const quiet(gate_);  // Note [Shrinking a tier], step 1
  check_open("set_capacity");
  capacity_report r;
  r.tier = ts.name;
  r.requested_bytes = bytes & ~(align - 1);
  {
    std::lock_guard tl(mem.mutex());
    r.previous_bytes = mem.config().capacity_bytes;
    r.reserved_before = mem.reserved_bytes();
    if (r.requested_bytes >= r.reserved_before) {  // growing, or shrinking within what is unused
      mem.set_capacity(r.requested_bytes);
      ts.capacity = mem.config().capacity_bytes;
      r.capacity_bytes = ts.capacity;
      r.reserved_bytes = r.reserved_before;
      return r;
    }
  }
  // Give back the chunks now empty and set the capacity as far down as they allow.
  auto const settle = [&] {
    std::lock_guard tl(mem.mutex());
    r.released_bytes += mem.release_unused_chunks();
    r.reserved_bytes = mem.reserved_bytes();
    mem.set_capacity(std::max(r.requested_bytes, r.reserved_bytes));
    ts.capacity = mem.config().capacity_bytes;
    r.capacity_bytes = ts.capacity;
    r.reached = r.capacity_bytes == r.requested_bytes;
  };
  // Step 2: what is already free goes first.
  engine_.synchronize_copy_streams();
  drain_deferred(mem);
  settle();
  if (r.reached) { return r; }

  // Step 3: the chunks to empty, emptiest first.
  std::vector<chunk_range> chunks;
  {
    std::lock_guard tl(mem.mutex());
    chunks = mem.chunk_ranges();
  }
  struct chunk_load {
    std::size_t used{0};
    bool held{false};  // a leased copy or a paused record: cannot be emptied now
  };
  std::vector<chunk_load> load(chunks.size());
  std::vector<record_ref> const recs = records_by_id();
  for (auto const& rp : recs) {
    record_lock rl(*rp);
    copy_slot const& s = rp->slots[k];
    if (rp->freed || s.state == copy_state::absent || s.blk.slot.region >= load.size()) { continue; }
    chunk_load& c = load[s.blk.slot.region];
    c.used += s.blk.slot.size;
    c.held = c.held || s.pins != 0 || rp->paused != 0;
  }
  std::vector<std::uint32_t> order;
  std::size_t held_bytes = 0;
  for (std::uint32_t c = 0; c < chunks.size(); ++c) {
    if (chunks[c].base == nullptr) { continue; }
    if (load[c].held) {
      held_bytes += chunks[c].bytes;
      continue;
    }
    order.push_back(c);
  }
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return load[a].used != load[b].used ? load[a].used < load[b].used : a > b;
  });
  std::size_t reserved = 0;
  for (chunk_range const& c : chunks) { reserved += c.base != nullptr ? c.bytes : 0; }
  std::unordered_set<std::uint32_t> victims;
  for (std::uint32_t c : order) {
    if (reserved <= r.requested_bytes) { break; }
    victims.insert(c);
    reserved -= chunks[c].bytes;
  }

  std::size_t stuck_bytes = 0;  // copies that found no room below
  for (auto const& rp : recs) {
    record_lock rl(*rp);
    tensor_record& rec = *rp;
    copy_slot& s = rec.slots[k];
    if (rec.freed || s.state == copy_state::absent || victims.count(s.blk.slot.region) == 0) { continue; }
    bool elsewhere = s.state == copy_state::stale;
    for (std::uint32_t j = 0; j < rec.slots.size() && !elsewhere; ++j) {
      elsewhere = j != k && rec.slots[j].state == copy_state::valid;
    }
    if (!elsewhere) {
      if (!engine_.write_back_locked(rec, k, place_mode::ladder)) {
        stuck_bytes += rec.bytes;
        continue;
      }
      ++r.written_back;
    }
    engine_.vacate_locked(rec, k);
    engine_.tiers()[k]->moved_down.fetch_add(1, std::memory_order_relaxed);
    ++r.moved_tensors;
    r.moved_bytes += rec.bytes;
  }

  // Step 4.
  engine_.synchronize_copy_streams();
  drain_deferred(mem);
  settle();
  if (!r.reached) {
    std::string why;
    if (held_bytes != 0) {
      why = format_byte_size(held_bytes) + " of chunks hold leased copies (end the leases, then call again)";
    }
    if (stuck_bytes != 0) {
      why += (why.empty() ? "" : "; ") + format_byte_size(stuck_bytes) +
             " of copies found no room in the tiers below (make room there, or free them)";
    }
    if (why.empty()) { why = "the chunks still held are needed by copies that could not move"; }
    r.why = std::move(why);
  }
  return r;
}

compact_result pool_impl::compact(std::optional<tier_id> tier)
{
  check_open("compact");
  std::size_t const n = engine_.tiers().size();
  if (tier && static_cast<std::size_t>(*tier) >= n) {
    throw logic_error("pool::compact: tier " + std::to_string(static_cast<std::uint32_t>(*tier)) +
                      " out of range (the pool has " + std::to_string(n) + " tiers)");
  }
  if (gate_.inside()) {
    throw logic_error("pool::compact: called from inside a pool operation on this thread (a low-memory "
                      "callback); call it from outside the pool's calls");
  }
  // As set_capacity (Note [Shrinking a tier], steps 1 and 2): no operation runs, and the
  // copies and stream-ordered frees already issued are done, so that more copies may move.
  op_gate::closed const quiet(gate_);
  check_open("compact");
  engine_.synchronize_copy_streams();
  compact_result out;
  for (std::uint32_t k = 0; k < n; ++k) {
    if (tier && k != static_cast<std::uint32_t>(*tier)) { continue; }
    tier_state& ts = *engine_.tiers()[k];
    if (is_storage(ts.kind)) { continue; }
    drain_deferred(*ts.mem);
    tier_compaction c;
    c.tier = ts.name;
    {
      std::lock_guard tl(ts.mem->mutex());
      tier_usage const u = ts.mem->usage();
      c.largest_free_before = u.largest_free_block;
      c.fragmentation_before = u.external_fragmentation;
    }
    compact_totals const t = engine_.compact_tier(k);
    c.moved_tensors = t.moved;
    c.moved_bytes = static_cast<std::size_t>(t.moved_bytes);
    c.skipped_tensors = t.skipped;
    {
      std::lock_guard tl(ts.mem->mutex());
      tier_usage const u = ts.mem->usage();
      c.free_bytes = u.free_bytes;
      c.largest_free_after = u.largest_free_block;
      c.fragmentation_after = u.external_fragmentation;
    }
    out.moved_tensors += c.moved_tensors;
    out.moved_bytes += c.moved_bytes;
    out.tiers.push_back(std::move(c));
  }
  return out;
}

std::optional<capacity_report> pool_impl::check_memory_pressure()
{
  check_open("check_memory_pressure");
  std::size_t const floor = pressure_.device_free_floor;
  if (floor == 0) { return std::nullopt; }
  std::optional<std::uint32_t> dev;
  for (auto const& ts : engine_.tiers()) {
    if (ts->kind == tier_kind::device) {
      dev = ts->index;
      break;
    }
  }
  if (!dev) { return std::nullopt; }
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  if (backend_->device_memory_info(&free_bytes, &total_bytes) != status::ok || free_bytes >= floor) {
    return std::nullopt;
  }
  std::size_t const shortfall = floor - free_bytes;
  tier_state& ts = *engine_.tiers()[*dev];
  std::size_t held = 0;
  std::size_t align = 256;
  {
    std::lock_guard tl(ts.mem->mutex());
    held = ts.mem->reserved_bytes();
    align = ts.mem->config().alignment;
  }
  std::size_t const target = held > shortfall + align ? held - shortfall : align;
  capacity_report r = set_capacity(tier_id{*dev}, target);
  if (r.capacity_bytes < r.previous_bytes || r.released_bytes != 0) {
    counters_.pressure_shrinks.fetch_add(1, std::memory_order_relaxed);
    counters_.pressure_released_bytes.fetch_add(r.released_bytes, std::memory_order_relaxed);
    if (log_enabled(log_level::info)) {
      log_message(log_level::info, "tierpool: device free memory " + format_byte_size(free_bytes) + " is below the floor " +
                                     format_byte_size(floor) + " (pool_options::pressure): tier '" + r.tier +
                                     "' shrank to " + format_byte_size(r.capacity_bytes) + ", " +
                                     format_byte_size(r.released_bytes) + " given back" +
                                     (r.reached ? std::string() : "; " + r.why));
    }
  }
  return r;
}

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// runtime/tiers/tier.cpp — one tier: backend chunks + arena + budget + deferred frees.
// Entry points: tier::allocate (the ladder's completed frees, arena and grow), tier::deallocate_after
// (stream-ordered free), tier::reclaim_oldest_blocking. Externally synchronized.
//
// Invariants (checked by validate()):
//   used_ + deferred_bytes_ + arena_.free_bytes() == reserved_ <= capacity
//   arena_.capacity()   == reserved_ + placeholder_bytes_
//   arena_.used_bytes() == used_ + deferred_bytes_ + placeholder_bytes_
//   SUM(chunk.blocks)   == live_count_ + deferred_count_
//   chunks_.size()      == arena_.region_count(), chunks_[r].bytes == region_capacity(r)
//
// Note [Deferred frees: one FIFO per stream]
//
// Rationale: a block freed after event e may return to the arena only once e has
// completed. Polling must be cheap (it runs on every allocation) and must not stall
// behind an unrelated slow stream.
//
// Approach: deferred frees are kept in one FIFO ("lane") per stream the event was
// recorded on, in deferral order, each entry stamped with a global sequence number.
// Events recorded on one stream complete in recording order, so in a lane the first
// not-ready event means the rest are not ready either: polling queries each lane's head
// until the first not-ready, i.e. (lanes + entries reclaimed) queries in all. A single
// global FIFO that stops at the first not-ready would be head-of-line blocked by a slow
// stream (a long compute stream's last-use event hides a finished d2h copy behind it);
// polling everything would cost a query per pending entry per allocation. The oldest
// deferral overall (for reclaim_oldest_blocking) is the lane head with the smallest seq.
// Correctness never rests on the ordering assumption: an entry is reclaimed only when
// its own event queries ok. If a caller defers out of recording order on one stream
// (two threads record, then lock in the other order), a reclaim is merely delayed until
// the later event completes.
//
// Limitations: a query error (e.g. device_error) counts as not ready; such an entry only
// leaves via reclaim_oldest_blocking (which reports the error) or the destructor.
#include "tiers/tier.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>
#include <utility>

#include "backends/event_pool.hpp"

namespace tierpool::detail {

namespace {

// Storage of dropped lanes kept for new ones (a pool has a few streams that defer frees).
constexpr std::size_t kSpareFifos = 8;

constexpr std::size_t round_up(std::size_t v, std::size_t a) noexcept { return (v + a - 1) & ~(a - 1); }
constexpr std::size_t round_down(std::size_t v, std::size_t a) noexcept { return v & ~(a - 1); }

tier_config checked(backend const& be, event_pool const& events, tier_config c)
{
  std::size_t const base = c.source != nullptr ? c.source->alignment() : be.caps().allocation_alignment;
  TIERPOOL_EXPECTS(&events.get_backend() == &be, "tier: the event pool belongs to another backend");
  TIERPOOL_EXPECTS(std::has_single_bit(c.alignment) && c.alignment >= 8,
                   "tier: alignment must be a power of two >= 8");
  TIERPOOL_EXPECTS(c.alignment <= base, "tier: alignment " + std::to_string(c.alignment) +
                                          " exceeds the backend's allocation alignment " + std::to_string(base));
  TIERPOOL_EXPECTS(c.capacity_bytes >= c.alignment, "tier: capacity_bytes must be at least alignment");
  TIERPOOL_EXPECTS(c.chunk_bytes > 0, "tier: chunk_bytes must be > 0");
  TIERPOOL_EXPECTS(c.initial_bytes <= c.capacity_bytes, "tier: initial_bytes exceeds capacity_bytes");
  TIERPOOL_EXPECTS(c.numa_node >= -1, "tier: numa_node must be >= -1");
  c.capacity_bytes = round_down(c.capacity_bytes, c.alignment);
  c.chunk_bytes = std::min(round_up(c.chunk_bytes, c.alignment), c.capacity_bytes);
  c.initial_bytes = std::min(round_up(c.initial_bytes, c.alignment), c.capacity_bytes);
  if (c.name.empty()) {
    c.name = std::string{to_string(c.kind)};
  }
  return c;
}

}  // namespace

std::string_view to_string(tier_alloc_result r) noexcept
{
  switch (r) {
    case tier_alloc_result::ok: return "ok";
    case tier_alloc_result::no_fit: return "no_fit";
    case tier_alloc_result::over_capacity: return "over_capacity";
    case tier_alloc_result::backend_failed: return "backend_failed";
  }
  return "unknown";
}

tier::tier(backend& be, event_pool& events, tier_config config)
  : backend_{&be},
    events_{&events},
    config_{checked(be, events, std::move(config))},
    gran_{config_.alignment},
    base_align_{config_.source != nullptr ? config_.source->alignment() : be.caps().allocation_alignment},
    arena_{0, arena_options{.min_alignment = config_.alignment}}
{
  if (config_.initial_bytes > 0) {
    tier_alloc_report r;
    grow(config_.initial_bytes, r);
    if (r.result != tier_alloc_result::ok) {
      detail::throw_backend_error(__FILE__, __LINE__, r.backend_status,
                                  ("tier '" + config_.name + "': initial chunk").c_str());
    }
  }
}

tier::~tier()
{
  for (lane& l : lanes_) {
    for (deferred_free const& d : l.fifo) {
      (void)backend_->synchronize_event(d.event);  // the memory is freed below: wait for its users
      (void)events_->try_release(d.event);
    }
  }
  for (chunk const& c : chunks_) {
    if (c.base != nullptr) {
      deallocate_chunk(c.base, c.bytes);
    }
  }
}

status tier::allocate_chunk(std::size_t bytes, void** out) noexcept
{
  if (config_.source != nullptr) { return config_.source->allocate_chunk(bytes, out); }
  return backend_->allocate(config_.kind, bytes, out, config_.numa_node);
}

void tier::deallocate_chunk(void* base, std::size_t bytes) noexcept
{
  if (config_.source != nullptr) {
    config_.source->deallocate_chunk(base, bytes);
  } else {
    backend_->deallocate(config_.kind, base, bytes);
  }
}

std::byte* tier::slot_base(arena::allocation const& a) const
{
  return static_cast<std::byte*>(chunks_[a.region].base) + (a.offset - arena_.region_base(a.region));
}

void tier::fill_report(tier_alloc_report& report) const noexcept
{
  report.deferred_bytes = deferred_bytes_;
  report.free_bytes = arena_.free_bytes();
}

std::optional<block> tier::allocate(std::size_t bytes, std::size_t alignment, tier_alloc_report* report,
                                    tier_grow grow_mode)
{
  TIERPOOL_EXPECTS(bytes > 0, "tier::allocate: bytes must be > 0");
  TIERPOOL_EXPECTS(alignment == 0 || std::has_single_bit(alignment),
                   "tier::allocate: alignment must be a power of two (or 0)");
  tier_alloc_report local;
  tier_alloc_report& rep = report != nullptr ? *report : local;
  rep = {};
  std::size_t const align = std::max(alignment, gran_);
  // Up to base_align_ the arena's region-relative alignment is absolute (chunk bases are
  // base_align_-aligned). Beyond it, pad the slot and align the pointer inside it.
  std::size_t const pad = align > base_align_ ? align - base_align_ : 0;
  std::size_t const cap = config_.capacity_bytes;
  if (bytes > cap || pad > cap - bytes) {
    rep.result = tier_alloc_result::over_capacity;
    fill_report(rep);
    return std::nullopt;
  }
  std::size_t const request = bytes + pad;
  std::size_t const arena_align = pad != 0 ? base_align_ : align;

  if (deferred_count_ != 0) {
    rep.reclaimed_bytes = reclaim_completed();  // completed frees
  }
  std::optional<arena::allocation> slot = arena_.allocate(request, arena_align);  // the arena
  if (!slot) {
    if (grow_mode == tier_grow::allow) {
      grow(round_up(request, gran_), rep);  // grow
      if (rep.result == tier_alloc_result::ok) {
        // A fresh region's block heads its bin's free list, so the arena finds it.
        slot = arena_.allocate(request, arena_align);
        if (!slot) {
          rep.result = tier_alloc_result::no_fit;
        }
      }
    } else {
      rep.result = tier_alloc_result::no_fit;
    }
  }
  if (!slot) {
    fill_report(rep);
    return std::nullopt;
  }
  std::byte* p = slot_base(*slot);
  if (pad != 0) {
    auto const addr = reinterpret_cast<std::uintptr_t>(p);
    p += round_up(addr, align) - addr;
  }
  ++chunks_[slot->region].blocks;
  used_ += slot->size;
  peak_used_ = std::max(peak_used_, used_);
  ++live_count_;
  ++layout_version_;
  fill_report(rep);
  return block{*slot, p, bytes};
}

std::optional<block> tier::allocate_at(std::uint64_t offset, std::size_t bytes) noexcept
{
  if (bytes == 0) { return std::nullopt; }
  std::optional<arena::allocation> const slot = arena_.allocate_at(offset, bytes);
  if (!slot) { return std::nullopt; }
  if (chunks_[slot->region].placeholder) {  // cannot be: a released chunk's region is one live block
    [[maybe_unused]] bool const undone = arena_.try_deallocate(*slot);
    return std::nullopt;
  }
  ++chunks_[slot->region].blocks;
  used_ += slot->size;
  peak_used_ = std::max(peak_used_, used_);
  ++live_count_;
  ++layout_version_;
  return block{*slot, slot_base(*slot), bytes};
}

// Grow by a chunk able to hold `need` bytes (a multiple of gran_). Changes nothing on failure.
void tier::grow(std::size_t need, tier_alloc_report& report)
{
  std::size_t const remaining = config_.capacity_bytes - reserved_;
  if (need > remaining) {
    report.result = tier_alloc_result::over_capacity;
    return;
  }
  if (revive_chunk(need, remaining, report)) {
    return;
  }
  if (report.result != tier_alloc_result::ok) {
    return;
  }
  // max(chunk, need), but never beyond the budget (remaining is a multiple of gran_).
  std::size_t size = std::min(std::max(config_.chunk_bytes, need), remaining);
  chunks_.reserve(chunks_.size() + 1);  // may throw bad_alloc: nothing changed yet
  void* p = nullptr;
  status s = allocate_chunk(size, &p);
  if (s == status::out_of_memory && size > need) {
    ++grow_failures_;
    size = need;  // the device may still have room for the request alone
    s = allocate_chunk(size, &p);
  }
  if (s != status::ok) {
    ++grow_failures_;
    report.result = tier_alloc_result::backend_failed;
    report.backend_status = s;
    return;
  }
  TIERPOOL_ASSERT(reinterpret_cast<std::uintptr_t>(p) % base_align_ == 0);
  if (config_.kind == tier_kind::managed && backend_->caps().has_managed_prefetch) {
    // Map the chunk into the device's page tables, so that device access to pages living
    // on the host neither faults nor migrates them behind the pool's back (a hint: the
    // pool steers pages itself with prefetch_async; a failure changes nothing).
    memory_location dev{};
    dev.kind = tier_kind::device;
    (void)backend_->advise(p, size, mem_advice::set_accessed_by, dev);
  }
  try {
    [[maybe_unused]] std::uint32_t const r = arena_.add_region(size);
    TIERPOOL_ASSERT(r == chunks_.size());
  } catch (...) {
    deallocate_chunk(p, size);
    throw;
  }
  chunks_.push_back(chunk{p, size, 0, std::nullopt});  // capacity reserved above
  reserved_ += size;
  ++grow_count_;
  ++layout_version_;
  report.grew = true;
}

// Revive the smallest released chunk with need <= bytes <= remaining. Returns true when
// one was revived; false with report.result set when its backend allocate failed; false
// with ok when there is no candidate.
bool tier::revive_chunk(std::size_t need, std::size_t remaining, tier_alloc_report& report)
{
  chunk* best = nullptr;
  for (chunk& c : chunks_) {
    if (c.placeholder && c.bytes >= need && c.bytes <= remaining && (best == nullptr || c.bytes < best->bytes)) {
      best = &c;
    }
  }
  if (best == nullptr) {
    return false;
  }
  void* p = nullptr;
  status const s = allocate_chunk(best->bytes, &p);
  if (s != status::ok) {
    ++grow_failures_;
    report.result = tier_alloc_result::backend_failed;
    report.backend_status = s;
    return false;
  }
  [[maybe_unused]] bool const freed = arena_.try_deallocate(*best->placeholder);
  TIERPOOL_ASSERT(freed);
  best->placeholder.reset();
  best->base = p;
  reserved_ += best->bytes;
  placeholder_bytes_ -= best->bytes;
  ++grow_count_;
  ++layout_version_;
  report.grew = true;
  return true;
}

void tier::check_block(block const& b, char const* what) const
{
  TIERPOOL_EXPECTS(arena_.owns(b.slot), std::string{what} + ": block is not live in tier '" + config_.name +
                                          "' (double free, or another tier's block)");
  TIERPOOL_EXPECTS(!deferred_offsets_.contains(b.slot.offset),
                   std::string{what} + ": block is already awaiting a deferred free in tier '" + config_.name + "'");
  std::byte const* const lo = slot_base(b.slot);
  auto const* const p = static_cast<std::byte const*>(b.ptr);
  TIERPOOL_EXPECTS(p >= lo && b.bytes <= b.slot.size && p - lo <= static_cast<std::ptrdiff_t>(b.slot.size - b.bytes),
                   std::string{what} + ": block's pointer or size does not match its slot in tier '" +
                     config_.name + "'");
}

void tier::deallocate(block const& b)
{
  check_block(b, "tier::deallocate");
  [[maybe_unused]] bool const freed = arena_.try_deallocate(b.slot);
  TIERPOOL_ASSERT(freed);
  --chunks_[b.slot.region].blocks;
  used_ -= b.slot.size;
  --live_count_;
  ++layout_version_;
}

void tier::deallocate_after(block const& b, event_handle e, stream_handle recorded_on)
{
  if (!e) {
    deallocate(b);
    return;
  }
  check_block(b, "tier::deallocate_after");
  TIERPOOL_EXPECTS(events_->owns(e), "tier::deallocate_after: the event is not outstanding in the tier's event pool");
  auto it = std::find_if(lanes_.begin(), lanes_.end(), [&](lane const& l) { return l.stream == recorded_on; });
  if (it == lanes_.end()) {
    lanes_.reserve(lanes_.size() + 1);  // may throw: nothing changed
    std::vector<deferred_free> storage;
    if (!spare_fifos_.empty()) {
      storage = std::move(spare_fifos_.back());
      spare_fifos_.pop_back();
    }
    lanes_.push_back(lane{recorded_on, deferred_fifo{std::move(storage)}});  // capacity reserved: no throw
    it = std::prev(lanes_.end());
  }
  try {
    deferred_offsets_.insert(b.slot.offset);
    try {
      it->fifo.push_back(deferred_free{b, e, next_seq_});
    } catch (...) {
      deferred_offsets_.erase(b.slot.offset);
      throw;
    }
  } catch (...) {
    drop_empty_lanes();  // a lane created above stays only if it holds something
    throw;
  }
  ++next_seq_;
  used_ -= b.slot.size;
  --live_count_;
  deferred_bytes_ += b.slot.size;
  ++deferred_count_;
  ++layout_version_;
}

// Note [Stream-ordered reuse of deferred blocks]
//
// Rationale: a block vacated behind a write-back is reusable once that copy completes.
// Waiting for it on the host (reclaim_oldest_blocking) puts a round trip between every
// eviction and the copy-in that needed the room: the host sleeps, wakes, then enqueues.
// Approach: take_deferred hands the block itself to the next user together with its
// pending event; the pool makes the slot's `ready` that event, so the copy into it (or
// the user's stream, or a host access) waits for the write-back in stream order, as a
// stream-ordered allocator does across streams. The block keeps its slot; its size may
// exceed the request by a quarter (plus 4 KiB), the waste bounded. Only lanes the caller
// allows are used: the pool's copy streams, never the retire stream, whose events follow
// users' queues (a copy stream waiting there would stall every later copy behind user work).
// Limitations: only a deferred slot of about the right size can be reused this way; other
// sizes take several blocks, or the head of a larger one (Note [Merging deferred blocks]).
std::optional<block> tier::take_deferred_at(lane& l, std::size_t i, std::size_t bytes, event_handle* after) noexcept
{
  deferred_free const d = l.fifo[i];
  l.fifo.erase_at(i);
  deferred_offsets_.erase(d.b.slot.offset);
  deferred_bytes_ -= d.b.slot.size;
  --deferred_count_;
  used_ += d.b.slot.size;
  peak_used_ = std::max(peak_used_, used_);
  ++live_count_;
  ++layout_version_;
  drop_empty_lanes();
  *after = d.event;
  return block{d.b.slot, slot_base(d.b.slot), bytes};
}

// Note [Merging deferred blocks]
//
// Rationale: take_deferred reuses one deferred block of about the requested size. When
// none fits (the victims were smaller, or of other sizes, as in a training step whose
// tensors all differ), the request used to wait on the host for the oldest deferred free
// (reclaim_oldest_blocking), although waiting could only turn deferred blocks into free
// ones: whatever room it made, the deferred blocks and their free neighbours already
// describe. Every such wait put the host in step with the device (on the virtual clock it
// was nearly the whole makespan of a training replay: 239 waits, 419 of 422 ms).
// Approach: take_deferred_span looks for a window of deferred blocks, each next to the one
// before or one free block away, in one chunk, which with the free blocks around it holds
// the request. Of the windows (at most kMaxParts blocks, waste bounded as take_deferred's)
// it takes the one whose newest deferral is oldest, then the least waste: the arena frees
// the window's blocks and carves the result out of the free block they make
// (arena::merge_into); every merged block lies wholly inside the result, so no byte still
// in use becomes free. The caller gets every pending event and orders the block's first
// use after all of them (the pool joins them on one of its join streams).
// Limitations: O(D log D) in the deferred blocks D of allowed lanes, only on the path that
// used to wait; the oldest-deferral score is a proxy for completion time.
// Note [A failed span search is remembered]
//
// Rationale: take_deferred_span builds a candidate per deferred block (its free neighbours
// from the arena), sorts them by offset and scans the windows: O(D log D) per call. The
// planner's prefetches call it from their no-wait placements, often several times between
// two changes of the tier: profiling a `plan` replay of GPT-2 small at 50 % (callgrind)
// showed it as a fifth of the run's instructions, and 2148 of its 4929 calls repeated a
// search that had just failed, for no fewer bytes, with nothing changed in between.
// Approach: the tier counts every change of its layout or of its deferred blocks
// (layout_version_: a block placed, freed, deferred, taken or reclaimed, a chunk grown,
// revived or released). A search that finds no window remembers the version, the bytes
// and which lanes it was allowed; a later one for at least as many bytes over the same
// lanes at the same version fails at once. A window that holds a request holds any smaller
// one, so the answer is the same.
// Limitations: any change forgets it, however far away in the arena.
std::optional<block> tier::take_deferred_span_impl(std::size_t bytes, deferred_span* out) noexcept
{
  std::uint64_t const need = (bytes + gran_ - 1) / gran_ * gran_;
  // Note [A failed span search is remembered]: nothing changed since a search for no more
  // bytes, over the same lanes, found no window: none holds these either.
  if (span_miss_.valid && span_miss_.version == layout_version_ && need >= span_miss_.need &&
      span_miss_.allowed == lane_allowed_) {
    ++span_miss_.skipped;
    return std::nullopt;
  }
  auto const missed = [&]() noexcept {
    try {
      span_miss_.allowed = lane_allowed_;
      span_miss_.version = layout_version_;
      span_miss_.need = need;
      span_miss_.valid = true;
    } catch (...) {  // bad_alloc copying the lanes: remember nothing
      span_miss_.valid = false;
    }
  };
  try {
    span_scratch_.clear();
    for (std::uint32_t li = 0; li < lanes_.size(); ++li) {
      if (lane_allowed_[li] == 0) { continue; }
      deferred_fifo const& f = lanes_[li].fifo;
      for (std::uint32_t i = 0; i < f.size(); ++i) {
        arena::free_around const fa = arena_.free_neighbours(f[i].b.slot);
        span_scratch_.push_back(span_candidate{f[i].b.slot, fa.before, fa.after, f[i].seq, li, i});
      }
    }
  } catch (...) {
    return std::nullopt;
  }
  std::vector<span_candidate>& c = span_scratch_;
  if (c.empty()) {
    missed();
    return std::nullopt;
  }
  std::sort(c.begin(), c.end(), [](span_candidate const& x, span_candidate const& y) {
    return x.slot.offset < y.slot.offset;
  });
  // The window: blocks a..b, from `start`, `need` long. It covers a..b-1 wholly, and b
  // wholly or its head (then b's tail stays deferred: `split`).
  std::size_t best_a = c.size();
  std::size_t best_b = 0;
  std::uint64_t best_seq = 0;
  std::uint64_t best_start = 0;
  bool best_split = false;
  for (std::size_t a = 0; a < c.size(); ++a) {
    std::uint64_t const lo = c[a].slot.offset - c[a].before;
    std::uint64_t newest = 0;
    for (std::size_t b = a; b < c.size() && b - a < deferred_span::kMaxParts; ++b) {
      if (b > a && (c[b].slot.region != c[a].slot.region ||
                    c[b - 1].slot.offset + c[b - 1].slot.size + c[b - 1].after != c[b].slot.offset)) {
        break;
      }
      newest = std::max(newest, c[b].seq);
      if (best_a != c.size() && newest > best_seq) { break; }
      std::uint64_t const end = c[b].slot.offset + c[b].slot.size;
      if (end + c[b].after - lo < need) { continue; }
      bool const split = end - c[a].slot.offset > need;  // the blocks alone overrun the request
      std::uint64_t const start = split || end < lo + need ? lo : end - need;  // max(lo, end - need), unsigned
      if (split && start + need <= c[b].slot.offset) { break; }  // b not needed (cannot happen: b-1 fell short)
      if (best_a == c.size() || newest < best_seq || (best_split && !split)) {
        best_a = a;
        best_b = b;
        best_seq = newest;
        best_start = start;
        best_split = split;
      }
      break;  // more blocks only add events
    }
  }
  if (best_a == c.size()) {
    missed();
    return std::nullopt;
  }
  std::size_t const n = best_b - best_a + 1;
  std::array<arena::allocation, deferred_span::kMaxParts> parts{};
  for (std::size_t i = 0; i < n; ++i) { parts[i] = c[best_a + i].slot; }
  span_candidate const& last = c[best_b];
  // Everything that could fail comes first: nodes for the split and the merge, and the
  // tail's entry in the set of deferred offsets. After that nothing fails.
  if (!arena_.reserve_nodes(3)) { return std::nullopt; }
  std::uint64_t const cut = best_start + need - last.slot.offset;
  if (best_split) {
    try {
      (void)deferred_offsets_.insert(last.slot.offset + cut);
    } catch (...) {
      return std::nullopt;
    }
  }
  arena::allocation tail{};  // b's part left deferred, when split
  arena::allocation merged{};
  try {
    if (best_split) {
      auto const halves = arena_.split(last.slot, cut);
      parts[n - 1] = halves.first;
      tail = halves.second;
    }
    merged = arena_.merge_into(std::span<arena::allocation const>(parts.data(), n), best_start, need);
  } catch (...) {  // cannot happen: the window is laid out as merge_into needs, the nodes are there
    TIERPOOL_ASSERT(false);
    if (best_split) {  // put the split block back together (two nodes are still reserved)
      std::array<arena::allocation, 2> const halves{parts[n - 1], tail};
      arena::allocation const whole = arena_.merge_into(halves, last.slot.offset, last.slot.size);
      lanes_[last.lane].fifo[last.index].b.slot = whole;
      deferred_offsets_.erase(tail.offset);
    }
    return std::nullopt;
  }
  // The merged parts are inside `merged` now: take them out of their lanes (highest FIFO
  // index first, so that the others' indices hold). A split block stays in its lane with
  // its tail and its event; the taker only borrows the event.
  std::array<std::size_t, deferred_span::kMaxParts> order{};
  for (std::size_t i = 0; i < n; ++i) { order[i] = best_a + i; }
  std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n),
            [&](std::size_t x, std::size_t y) { return c[x].index > c[y].index; });
  out->count = n;
  for (std::size_t j = 0; j < n; ++j) {
    span_candidate const& p = c[order[j]];
    deferred_fifo& f = lanes_[p.lane].fifo;
    out->events[j] = f[p.index].event;
    out->streams[j] = lanes_[p.lane].stream;
    if (best_split && order[j] == best_b) {
      out->borrowed[j] = true;
      f[p.index].b.slot = tail;
      f[p.index].b.ptr = slot_base(tail);
      f[p.index].b.bytes = tail.size;
      deferred_offsets_.erase(p.slot.offset);  // the tail's offset went in above
      deferred_bytes_ -= p.slot.size - tail.size;
      continue;  // its chunk holds one more block (the tail) and one fewer (the head, merged)
    }
    out->borrowed[j] = false;
    f.erase_at(p.index);
    deferred_offsets_.erase(p.slot.offset);
    deferred_bytes_ -= p.slot.size;
    --deferred_count_;
    --chunks_[p.slot.region].blocks;
  }
  ++chunks_[merged.region].blocks;
  used_ += merged.size;
  peak_used_ = std::max(peak_used_, used_);
  ++live_count_;
  ++layout_version_;
  drop_empty_lanes();
  return block{merged, slot_base(merged), bytes};
}

bool tier::deferred_run_fits(std::size_t bytes) const noexcept
{
  if (deferred_count_ == 0) { return false; }
  std::uint64_t run = 0;
  std::uint32_t region = 0;
  bool found = false;
  arena_.for_each_block([&](arena::block_info const& b) {
    if (b.region != region) {
      region = b.region;
      run = 0;
    }
    if (b.free || deferred_offsets_.contains(b.offset)) {
      run += b.size;
      found = found || run >= bytes;
    } else {
      run = 0;
    }
  });
  return found;
}

void tier::finish_deferred(deferred_free const& d) noexcept
{
  [[maybe_unused]] bool const freed = arena_.try_deallocate(d.b.slot);
  TIERPOOL_ASSERT(freed);
  --chunks_[d.b.slot.region].blocks;
  deferred_offsets_.erase(d.b.slot.offset);
  deferred_bytes_ -= d.b.slot.size;
  --deferred_count_;
  ++layout_version_;
  (void)events_->try_release(d.event);
}

void tier::drop_empty_lanes() noexcept
{
  for (lane& l : lanes_) {
    if (l.fifo.empty() && spare_fifos_.size() < kSpareFifos) {
      try {
        spare_fifos_.push_back(l.fifo.take_storage());
      } catch (...) {  // bad_alloc: the storage is simply freed with the lane
      }
    }
  }
  std::erase_if(lanes_, [](lane const& l) { return l.fifo.empty(); });
}

std::size_t tier::reclaim_completed() noexcept
{
  std::size_t bytes = 0;
  for (lane& l : lanes_) {
    while (!l.fifo.empty() && backend_->query_event(l.fifo.front().event) == status::ok) {
      bytes += l.fifo.front().b.slot.size;
      finish_deferred(l.fifo.front());
      l.fifo.pop_front();
    }
  }
  drop_empty_lanes();
  return bytes;
}

status tier::reclaim_oldest_blocking(std::size_t* reclaimed) noexcept
{
  if (reclaimed != nullptr) {
    *reclaimed = 0;
  }
  lane* oldest = nullptr;
  for (lane& l : lanes_) {
    if (!l.fifo.empty() && (oldest == nullptr || l.fifo.front().seq < oldest->fifo.front().seq)) {
      oldest = &l;
    }
  }
  if (oldest == nullptr) {
    return status::ok;
  }
  status const s = backend_->synchronize_event(oldest->fifo.front().event);
  if (s != status::ok) {
    return s;
  }
  std::size_t bytes = oldest->fifo.front().b.slot.size;
  finish_deferred(oldest->fifo.front());
  oldest->fifo.pop_front();
  bytes += reclaim_completed();  // also drops the lane if it emptied
  if (reclaimed != nullptr) {
    *reclaimed = bytes;
  }
  return status::ok;
}

std::size_t tier::release_unused_chunks() noexcept
{
  ++layout_version_;  // whatever it releases (rare: no finer bookkeeping)
  if (deferred_count_ != 0) {
    (void)reclaim_completed();
  }
  std::size_t released = 0;
  std::vector<arena::allocation> held;  // other regions' blocks taken while searching
  for (std::uint32_t r = 0; r < chunks_.size(); ++r) {
    chunk& c = chunks_[r];
    if (c.base == nullptr || c.blocks != 0) {
      continue;
    }
    // The region is one free block of c.bytes. Allocate exactly that size until the arena
    // hands out this region (another region's equal or larger free block may come first).
    std::optional<arena::allocation> whole;
    try {
      held.reserve(2 * chunks_.size() + 8);
    } catch (...) {
      return released;
    }
    for (std::size_t attempt = 0; attempt < held.capacity(); ++attempt) {
      std::optional<arena::allocation> a = arena_.allocate(c.bytes, gran_);
      if (!a) {
        break;
      }
      if (a->region == r) {
        whole = a;
        break;
      }
      held.push_back(*a);
    }
    for (arena::allocation const& h : held) {
      (void)arena_.try_deallocate(h);
    }
    held.clear();
    if (!whole) {
      continue;
    }
    deallocate_chunk(c.base, c.bytes);
    c.base = nullptr;
    c.placeholder = whole;
    reserved_ -= c.bytes;
    placeholder_bytes_ += c.bytes;
    released += c.bytes;
    ++chunk_releases_;
  }
  return released;
}

bool tier::owns(block const& b) const noexcept
{
  return arena_.owns(b.slot) && !deferred_offsets_.contains(b.slot.offset);
}

tier_usage tier::usage() const noexcept
{
  tier_usage u;
  u.capacity_bytes = config_.capacity_bytes;
  u.reserved_bytes = reserved_;
  u.used_bytes = used_;
  u.peak_used_bytes = peak_used_;
  u.deferred_bytes = deferred_bytes_;
  u.free_bytes = arena_.free_bytes();
  u.largest_free_block = arena_.largest_free_block();
  u.external_fragmentation = arena_.external_fragmentation();
  u.chunk_count = static_cast<std::size_t>(
    std::count_if(chunks_.begin(), chunks_.end(), [](chunk const& c) { return c.base != nullptr; }));
  u.allocation_count = live_count_;
  u.deferred_count = deferred_count_;
  u.grow_count = grow_count_;
  u.grow_failure_count = grow_failures_;
  u.chunk_release_count = chunk_releases_;
  return u;
}

void tier::set_capacity(std::size_t bytes)
{
  std::size_t const cap = round_down(bytes, config_.alignment);
  TIERPOOL_EXPECTS(cap >= config_.alignment, "tier '" + config_.name + "': capacity " + std::to_string(bytes) +
                                              " is below the alignment (" + std::to_string(config_.alignment) + ")");
  TIERPOOL_EXPECTS(cap >= reserved_, "tier '" + config_.name + "': capacity " + std::to_string(cap) +
                                      " is below the chunks held (" + std::to_string(reserved_) +
                                      "); release chunks first");
  config_.capacity_bytes = cap;
}

std::vector<chunk_range> tier::chunk_ranges() const
{
  std::vector<chunk_range> out;
  out.reserve(chunks_.size());
  for (chunk const& c : chunks_) {
    out.push_back(chunk_range{c.base, c.bytes});
  }
  return out;
}

tier::fit_figures tier::fit(std::size_t bytes, std::vector<std::uint64_t> const& reclaimable) const
{
  return fit_impl(bytes, reclaimable, false);
}

tier::fit_figures tier::fit_except(std::size_t bytes, std::vector<std::uint64_t> const& held) const
{
  return fit_impl(bytes, held, true);
}

// `offsets` lists the reclaimable blocks, or (held) the blocks that are not.
tier::fit_figures tier::fit_impl(std::size_t bytes, std::vector<std::uint64_t> const& offsets, bool held) const
{
  fit_figures f;
  std::size_t const gran = config_.alignment;
  std::size_t const slot = std::max<std::size_t>(gran, (bytes + gran - 1) / gran * gran);
  f.slot_bytes = slot;
  f.growable_bytes = config_.capacity_bytes - reserved_;
  // Growth: chunks of max(chunk_bytes, slot) until the budget is spent; the last may be smaller.
  std::size_t grown = 0;
  if (slot <= f.growable_bytes) {
    std::size_t const step = std::max(config_.chunk_bytes, slot);
    std::size_t const full = f.growable_bytes / step;
    grown = full * (step / slot) + (f.growable_bytes - full * step) / slot;
  }
  // Deferred frees: a lane's completed prefix is what allocate's first step reclaims (free
  // now); the rest frees once its streams get there (counted "reclaimed").
  std::vector<std::uint64_t> done;
  std::vector<std::uint64_t> deferred;
  for (lane const& l : lanes_) {
    bool prefix = true;
    for (deferred_free const& d : l.fifo) {
      prefix = prefix && backend_->query_event(d.event) == status::ok;
      (prefix ? done : deferred).push_back(d.b.slot.offset);
      if (!prefix) { f.pending_bytes += d.b.slot.size; }
    }
  }
  std::sort(done.begin(), done.end());
  std::sort(deferred.begin(), deferred.end());
  auto is_in = [](std::vector<std::uint64_t> const& v, std::uint64_t x) { return std::binary_search(v.begin(), v.end(), x); };
  // Runs of free blocks (now) and of free-or-reclaimable blocks (reclaimed), per live chunk.
  std::uint64_t run_now = 0;
  std::uint64_t run_all = 0;
  std::uint32_t region = 0xFFFF'FFFFU;
  auto close_runs = [&] {
    f.now += static_cast<std::size_t>(run_now / slot);
    f.reclaimed += static_cast<std::size_t>(run_all / slot);
    f.largest_now = std::max(f.largest_now, static_cast<std::size_t>(run_now));
    f.largest_reclaimed = std::max(f.largest_reclaimed, static_cast<std::size_t>(run_all));
    run_now = run_all = 0;
  };
  for (arena::block_info const& b : arena_.blocks()) {
    if (b.region != region) {
      close_runs();
      region = b.region;
    }
    if (chunks_[b.region].base == nullptr) { continue; }  // released: its budget is in growable_bytes
    bool const free_now = b.free || is_in(done, b.offset);
    bool const evictable =
      !free_now && (held ? !is_in(offsets, b.offset) && !is_in(deferred, b.offset) : is_in(offsets, b.offset));
    if (evictable) { f.reclaimable_bytes += static_cast<std::size_t>(b.size); }
    if (free_now) {
      run_now += b.size;
    } else {
      f.now += static_cast<std::size_t>(run_now / slot);
      f.largest_now = std::max(f.largest_now, static_cast<std::size_t>(run_now));
      run_now = 0;
    }
    if (free_now || evictable || is_in(deferred, b.offset)) {
      run_all += b.size;
    } else {
      f.reclaimed += static_cast<std::size_t>(run_all / slot);
      f.largest_reclaimed = std::max(f.largest_reclaimed, static_cast<std::size_t>(run_all));
      run_all = 0;
    }
  }
  close_runs();
  f.now += grown;
  f.reclaimed += grown;
  f.largest_now = std::max(f.largest_now, f.growable_bytes);
  f.largest_reclaimed = std::max(f.largest_reclaimed, f.growable_bytes);
  return f;
}

bool tier::validate() const
{
  if (!arena_.validate()) {
    return false;
  }
  if (arena_.region_count() != chunks_.size()) {
    return false;
  }
  std::size_t live_bytes = 0;
  std::size_t placeholder_bytes = 0;
  std::size_t blocks = 0;
  std::size_t placeholders = 0;
  for (std::uint32_t r = 0; r < chunks_.size(); ++r) {
    chunk const& c = chunks_[r];
    if (arena_.region_capacity(r) != c.bytes || (c.base == nullptr) != c.placeholder.has_value()) {
      return false;
    }
    if (c.placeholder) {
      if (c.blocks != 0 || !arena_.owns(*c.placeholder) || c.placeholder->size != c.bytes) {
        return false;
      }
      placeholder_bytes += c.bytes;
      ++placeholders;
    } else {
      if (reinterpret_cast<std::uintptr_t>(c.base) % base_align_ != 0) {
        return false;
      }
      live_bytes += c.bytes;
      blocks += c.blocks;
    }
  }
  std::size_t deferred = 0;
  std::size_t deferred_bytes = 0;
  for (lane const& l : lanes_) {
    if (l.fifo.empty()) {
      return false;  // empty lanes are dropped after every reclaim
    }
    for (std::size_t i = 0; i < l.fifo.size(); ++i) {
      deferred_free const& d = l.fifo[i];
      if (!arena_.owns(d.b.slot) || !deferred_offsets_.contains(d.b.slot.offset) || !d.event ||
          d.seq >= next_seq_ || (i != 0 && d.seq <= l.fifo[i - 1].seq)) {
        return false;
      }
      ++deferred;
      deferred_bytes += d.b.slot.size;
    }
  }
  return live_bytes == reserved_ && placeholder_bytes == placeholder_bytes_ &&
         reserved_ <= config_.capacity_bytes && arena_.capacity() == reserved_ + placeholder_bytes_ &&
         arena_.used_bytes() == used_ + deferred_bytes_ + placeholder_bytes_ &&
         used_ + deferred_bytes_ + arena_.free_bytes() == reserved_ && deferred == deferred_count_ &&
         deferred_bytes == deferred_bytes_ && deferred_offsets_.size() == deferred_count_ &&
         blocks == live_count_ + deferred_count_ &&
         arena_.allocation_count() == live_count_ + deferred_count_ + placeholders && peak_used_ >= used_ &&
         used_ <= reserved_;
}

}  // namespace tierpool::detail

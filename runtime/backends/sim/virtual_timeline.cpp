// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// virtual_timeline.cpp — the sim backend's deterministic discrete-event engine
// (sim_clock_mode::virtual_clock). No threads: every operation takes effect at enqueue
// and is given a completion time from the stream tail, waited events and link occupancy;
// now() moves only on synchronize_* and advance_*. Main entry point: make_virtual_timeline.
//
// Note [Virtual copy timing]
//   ready = max(now, stream.tail)                 (waited events are folded into tail)
//   start = the earliest t >= ready at which the link is idle for the whole copy
//   end   = start + link.transfer_ns(bytes)        (latency + bytes / bandwidth)
//   stream.tail = end; the link is busy over [start, end)
// A link is busy for the whole copy, latency included, so two copies on one link never
// overlap, while copies on different links do. A copy that is ready takes the first idle
// gap that holds it, even one before a copy enqueued earlier on another stream that
// waits for an event: a copy engine serves the streams whose work is ready, it does not
// stall behind one that waits (before, the link was one FIFO in enqueue order, and a
// copy waiting for a kernel far ahead held up every later copy on every stream). A copy
// placed earlier never moves (non-preemptive, no reordering within a stream). Busy spans
// that end by now() are dropped; a link keeps one span per copy still ahead of the host. Events take the stream tail at
// record; query_event is ok iff event.time <= now. Host functions run at enqueue, on the
// calling thread, like every other data effect (so they see bytes in enqueue order).
//
// Note [Handles index a slot table]
//   Rationale: a miss-heavy replay makes ~10 timeline calls per miss, most of them checks
//   (has_stream, has_event, query_event, link_stats), and keeps tens of thousands of events
//   alive (deferred frees). A std::unordered_map under the mutex cost a heap node per
//   create_event, a cache miss per lookup and a lock per check.
//   Approach: streams and events live in slot tables: pages of slots that never move
//   (a fixed directory of page pointers), each slot an atomic handle and an atomic tick.
//   A handle carries its slot and the slot's generation (n = generation << SlotBits |
//   slot, then make_handle), so a lookup is one index and one compare. Changes happen
//   under the mutex; the checks and query_event read without it: handle, tick, handle
//   again (a slot reused meanwhile holds another handle, so the read is discarded, as in
//   a seqlock; a destroy clears the handle and fences before the slot is written again).
//   A destroyed slot is reused by the next create with its generation incremented, so a
//   value is never handed out twice; a slot whose generation is exhausted is retired.
//   Link figures are read under a sequence counter, also without the mutex.
//   A page is raw storage whose entries are constructed as slots are first handed out
//   (find() ignores slots at or above the high-water mark), so a pool that keeps a few
//   hundred events alive touches a few KiB of the 96 KiB page, not all of it: fresh pages
//   cost ~14 us each to fault in on the development VM, a third of a small replay's run.
//   Limitations: at most 2^SlotBits streams (2^16) or events (2^24) alive at once; create
//   then fails with out_of_memory. Pages stay allocated until the timeline is destroyed.
#include "sim_timeline.hpp"

#include "util/spin_mutex.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace tierpool::detail {

namespace {

/// Handles of one kind (stream or event) -> a tick (Note [Handles index a slot table]).
/// create / destroy / set run under the owner's mutex; find and read may run without it.
template <unsigned SlotBits, unsigned PageBits>
class slot_table {
  static_assert(SlotBits > PageBits && SlotBits < 64 - kHandleNumberShift);

 public:
  static constexpr std::uint64_t kMaxSlots = std::uint64_t{1} << SlotBits;
  static constexpr std::uint64_t kMaxGen = (std::uint64_t{1} << (64U - kHandleNumberShift - SlotBits)) - 1;

  /// One handle's state.
  struct entry {
    std::atomic<std::uintptr_t> handle{0};  ///< 0: free
    std::atomic<tick> value{0};
    std::uint64_t gen{0};                   ///< under the mutex
  };

  slot_table(std::uintptr_t tag, int device) noexcept : tag_(tag), device_(device) {}
  slot_table(slot_table const&) = delete;
  slot_table& operator=(slot_table const&) = delete;
  ~slot_table() = default;

  /// Register a new handle with `value` (under the mutex). @throws std::bad_alloc (unchanged).
  std::uintptr_t create(tick value)
  {
    std::uint64_t slot = 0;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      std::uint64_t const used = used_.load(std::memory_order_relaxed);
      if (used >= kMaxSlots) { throw std::bad_alloc(); }
      std::size_t const p = static_cast<std::size_t>(used >> PageBits);
      if (pages_[p].load(std::memory_order_relaxed) == nullptr) {
        owned_.reserve(owned_.size() + 1);
        // Raw storage: a slot's entry is constructed when first handed out, so a page's
        // memory is touched (faulted in) only as far as slots are used.
        std::unique_ptr<storage[]> page(new storage[kPageSize]);
        pages_[p].store(reinterpret_cast<entry*>(page.get()), std::memory_order_release);
        owned_.push_back(std::move(page));  // capacity reserved: no throw
      }
      if (free_.capacity() <= used) {  // destroy() then never allocates
        free_.reserve(std::max<std::size_t>(64, 2 * free_.capacity()));
      }
      slot = used;
      ::new (static_cast<void*>(&at(slot))) entry{};
      used_.store(used + 1, std::memory_order_release);  // publishes the constructed entry to find()
    }
    entry& e = at(slot);
    ++e.gen;
    e.value.store(value);  // seq_cst, as in read() and destroy()
    std::uintptr_t const h = make_handle((e.gen << SlotBits) | slot, device_, tag_);
    e.handle.store(h, std::memory_order_release);
    return h;
  }

  /// The entry of live handle `h`, or null (under the mutex: stable; without it: a hint).
  [[nodiscard]] entry* find(std::uintptr_t h) const noexcept
  {
    if (handle_tag(h) != tag_ || handle_device(h) != (device_ & 0xFF)) { return nullptr; }
    std::uint64_t const slot = handle_number(h) & (kMaxSlots - 1);
    if (slot >= used_.load(std::memory_order_acquire)) { return nullptr; }  // never handed out: not constructed
    entry* const page = pages_[static_cast<std::size_t>(slot >> PageBits)].load(std::memory_order_acquire);
    if (page == nullptr) { return nullptr; }
    entry& e = page[slot & (kPageSize - 1)];
    return e.handle.load(std::memory_order_acquire) == h ? &e : nullptr;
  }

  /// Without the mutex: the tick of live handle `h` in `*out`. @return false when not live.
  [[nodiscard]] bool read(std::uintptr_t h, tick* out) const noexcept
  {
    entry const* const e = find(h);
    if (e == nullptr) { return false; }
    // Sequentially consistent, not relaxed plus fences: ThreadSanitizer does not model
    // fences (GCC refuses them under -fsanitize=thread); on x86 these loads are plain loads.
    // A value stored by a later create() is ordered after destroy()'s store of 0, so a read
    // that sees it sees the handle changed.
    tick const v = e->value.load();
    if (e->handle.load() != h) { return false; }  // destroyed meanwhile
    *out = v;
    return true;
  }

  /// Forget `h` (under the mutex). @return false when it was not live.
  bool destroy(std::uintptr_t h) noexcept
  {
    entry* const e = find(h);
    if (e == nullptr) { return false; }
    e->handle.store(0);  // seq_cst: readers that see a later value see 0 here (see read())
    if (e->gen < kMaxGen) {
      free_.push_back(handle_number(h) & (kMaxSlots - 1));  // capacity reserved by create
    }
    return true;
  }

 private:
  static constexpr std::uint64_t kPageSize = std::uint64_t{1} << PageBits;
  [[nodiscard]] entry& at(std::uint64_t slot) const noexcept
  {
    return pages_[static_cast<std::size_t>(slot >> PageBits)].load(std::memory_order_relaxed)[slot & (kPageSize - 1)];
  }

  // Uninitialized room for one entry (entries are trivially destructible: freeing a page
  // needs no destructor calls).
  struct alignas(entry) storage {
    unsigned char bytes[sizeof(entry)];
  };
  static_assert(std::is_trivially_destructible_v<entry>);

  std::uintptr_t tag_;
  int device_;  // the simulated device, in every handle
  std::array<std::atomic<entry*>, (std::size_t{1} << (SlotBits - PageBits))> pages_{};
  std::vector<std::unique_ptr<storage[]>> owned_;  // the pages, for destruction
  std::vector<std::uint64_t> free_;                // free slots, most recently freed last
  // Slots ever handed out (high-water mark); slots below it hold constructed entries.
  // Written under the owner's mutex, read by find() without it.
  std::atomic<std::uint64_t> used_{0};
};

using stream_table = slot_table<16, 8>;   // few streams: a 2 KiB directory, 6 KiB pages
using event_table = slot_table<24, 12>;   // many events (deferred frees): 32 KiB, 96 KiB pages

class virtual_timeline final : public sim_timeline, public virtual_timeline_ops {
 public:
  virtual_timeline(sim_links const& links, timeline_options const& t)
    : links_(links), serialize_(t.serialize_host_functions), record_(t.record_spans),
      streams_{kStreamTag, t.device}, events_{kEventTag, t.device}
  {
  }

  ~virtual_timeline() override { shutdown(); }

  bool has_stream(stream_handle s) const noexcept override
  {
    return s.is_default() || streams_.find(s.value) != nullptr;
  }

  bool has_event(event_handle e) const noexcept override { return events_.find(e.value) != nullptr; }

  status create_stream(stream_handle* out) noexcept override
  {
    std::lock_guard lock(mtx_);
    try {
      *out = stream_handle{streams_.create(tick{0})};
      return status::ok;
    } catch (...) {
      return status::out_of_memory;
    }
  }

  bool destroy_stream(stream_handle s) noexcept override
  {
    // Its work already took effect at enqueue and keeps its times (events recorded on it
    // stay valid), so destroying a stream never changes the clock.
    if (s.is_default()) {
      return false;
    }
    std::lock_guard lock(mtx_);
    return streams_.destroy(s.value);
  }

  status synchronize_stream(stream_handle s) noexcept override
  {
    tick target = 0;
    {
      std::lock_guard lock(mtx_);
      std::atomic<tick> const* const tail = find_tail(s);
      if (tail == nullptr) {
        return status::invalid_value;
      }
      target = tail->load(std::memory_order_relaxed);
    }
    advance_to(target);
    return status::ok;
  }

  status create_event(event_handle* out) noexcept override
  {
    std::lock_guard lock(mtx_);
    try {
      *out = event_handle{events_.create(tick{0})};
      return status::ok;
    } catch (...) {
      return status::out_of_memory;
    }
  }

  bool destroy_event(event_handle e) noexcept override
  {
    std::lock_guard lock(mtx_);
    return events_.destroy(e.value);
  }

  status record_event(event_handle e, stream_handle s) noexcept override
  {
    std::lock_guard lock(mtx_);
    std::atomic<tick> const* const tail = find_tail(s);
    event_table::entry* const ev = events_.find(e.value);
    if (tail == nullptr || ev == nullptr) {
      return status::invalid_value;
    }
    ev->value.store(tail->load(std::memory_order_relaxed), std::memory_order_release);
    return status::ok;
  }

  status query_event(event_handle e) noexcept override
  {
    tick t = 0;
    if (!events_.read(e.value, &t)) {
      return status::invalid_value;
    }
    return t <= now_.load(std::memory_order_acquire) ? status::ok : status::not_ready;
  }

  status synchronize_event(event_handle e) noexcept override
  {
    tick target = 0;
    {
      std::lock_guard lock(mtx_);
      event_table::entry const* const ev = events_.find(e.value);
      if (ev == nullptr) {
        return status::invalid_value;
      }
      target = ev->value.load(std::memory_order_relaxed);
    }
    advance_to(target);
    return status::ok;
  }

  status stream_wait_event(stream_handle s, event_handle e) noexcept override
  {
    std::lock_guard lock(mtx_);
    std::atomic<tick>* const tail = find_tail(s);
    event_table::entry const* const ev = events_.find(e.value);
    if (tail == nullptr || ev == nullptr) {
      return status::invalid_value;
    }
    tail->store(std::max(tail->load(std::memory_order_relaxed), ev->value.load(std::memory_order_relaxed)),
                std::memory_order_relaxed);
    return status::ok;
  }

  status enqueue_transfer(stream_handle s, sim_link link, std::size_t bytes, sim_effect effect) noexcept override
  {
    std::lock_guard lock(mtx_);
    std::atomic<tick>* const tail = find_tail(s);
    if (tail == nullptr) {
      return status::invalid_value;
    }
    auto const l = static_cast<std::size_t>(link);
    tick const ready = std::max(now_.load(std::memory_order_relaxed), tail->load(std::memory_order_relaxed));
    tick const cost = links_.get(link).transfer_ns(bytes);
    tick start = ready;
    try {
      start = place_on_link(l, ready, cost);
    } catch (std::bad_alloc const&) {
      return status::out_of_memory;
    }
    tick const end = start + cost;
    tail->store(end, std::memory_order_relaxed);
    if (record_) { keep_span(sim_span{sim_span_kind::copy, link, s.value, start, end, bytes}); }
    // Link figures: a sequence counter lets link_stats read them without the mutex (writers
    // hold it). No fences (see slot_table::read): each figure is a release store, which
    // orders the odd counter before it, and the even counter is a release store after
    // them; link_stats reads with acquire loads. On x86 these are plain moves (seq_cst
    // stores were five locked exchanges per copy).
    std::uint64_t const seq = stats_seq_.load(std::memory_order_relaxed);
    stats_seq_.store(seq + 1, std::memory_order_relaxed);  // odd: being written
    link_counters& c = stats_[l];
    c.copies.store(c.copies.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    c.bytes.store(c.bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_release);
    c.busy_ns.store(c.busy_ns.load(std::memory_order_relaxed) + cost, std::memory_order_release);
    stats_seq_.store(seq + 2, std::memory_order_release);
    effect.apply();  // eager: data effects follow enqueue order
    return status::ok;
  }

  status enqueue_compute(stream_handle s, tick duration) noexcept override
  {
    std::lock_guard lock(mtx_);
    std::atomic<tick>* const tail = find_tail(s);
    if (tail == nullptr) {
      return status::invalid_value;
    }
    tick const start = std::max(now_.load(std::memory_order_relaxed), tail->load(std::memory_order_relaxed));
    tail->store(start + duration, std::memory_order_relaxed);
    if (record_ && duration != 0) {
      keep_span(sim_span{sim_span_kind::compute, sim_link::h2d, s.value, start, start + duration, 0});
    }
    return status::ok;
  }

  status enqueue_host_func(stream_handle s, host_fn fn, void* user_data) noexcept override
  {
    // Eager like every other operation: the function observes data effects in enqueue
    // order. It runs on the calling thread with no lock held.
    if (!has_stream(s)) {
      return status::invalid_value;
    }
    if (serialize_) {  // sim_options::serialize_host_functions: one at a time, in call order
      std::lock_guard lock(host_fn_mtx_);
      fn(user_data);
    } else {
      fn(user_data);
    }
    return status::ok;
  }

  tick now() const noexcept override { return now_.load(std::memory_order_acquire); }

  sim_link_stats link_stats(sim_link link) const noexcept override
  {
    link_counters const& c = stats_[static_cast<std::size_t>(link)];
    for (;;) {
      std::uint64_t const seq = stats_seq_.load(std::memory_order_acquire);
      sim_link_stats s{};
      // Acquire loads: a figure newer than `seq` makes the odd counter visible to the
      // second load below (which the acquires keep after them), so a torn read retries.
      s.copies = c.copies.load(std::memory_order_acquire);
      s.bytes = c.bytes.load(std::memory_order_acquire);
      s.busy_ns = c.busy_ns.load(std::memory_order_acquire);
      if ((seq & 1U) == 0 && stats_seq_.load(std::memory_order_acquire) == seq) {
        return s;
      }
    }
  }

  void shutdown() noexcept override {}  // nothing runs later than its enqueue

  // ---- virtual_timeline_ops ----
  void advance_to(tick t) noexcept override
  {
    std::lock_guard lock(mtx_);
    if (t > now_.load(std::memory_order_relaxed)) {
      now_.store(t, std::memory_order_release);
    }
  }

  std::optional<tick> event_time(event_handle e) const noexcept override
  {
    std::lock_guard lock(mtx_);
    event_table::entry const* const ev = events_.find(e.value);
    if (ev == nullptr) {
      return std::nullopt;
    }
    return ev->value.load(std::memory_order_relaxed);
  }

  std::optional<tick> stream_tail(stream_handle s) const noexcept override
  {
    std::lock_guard lock(mtx_);
    std::atomic<tick> const* const tail = find_tail(s);
    if (tail == nullptr) {
      return std::nullopt;
    }
    return tail->load(std::memory_order_relaxed);
  }

  std::vector<sim_span> spans() const override
  {
    std::lock_guard lock(mtx_);
    return spans_;
  }

 private:
  // Under mtx_. A span that cannot be kept (no memory) is dropped: the timeline is a record
  // of the run, never a reason for a copy to fail.
  void keep_span(sim_span const& sp) noexcept
  {
    try {
      spans_.push_back(sp);
    } catch (std::bad_alloc const&) {
    }
  }

  struct link_counters {
    std::atomic<std::uint64_t> copies{0};
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<tick> busy_ns{0};
  };

  // A stream's tail: the completion time of the last work queued (tail >= every waited
  // event). The default stream (handle 0) has its own. Null when `s` is unknown.
  // (Declared below: the first gap of link l idle for `cost` from `ready` on; see Note
  // [Virtual copy timing].)
  [[nodiscard]] std::atomic<tick>* find_tail(stream_handle s) const noexcept
  {
    if (s.is_default()) {
      return &default_tail_;
    }
    stream_table::entry* const e = streams_.find(s.value);
    return e != nullptr ? &e->value : nullptr;
  }

  sim_links const links_;
  bool const serialize_;   // host functions one at a time (sim_options::serialize_host_functions)
  bool const record_;      // sim_options::record_spans
  std::vector<sim_span> spans_;  // under mtx_, when record_
  std::mutex host_fn_mtx_;  // held while a host function runs, when serialize_
  mutable spin_mutex mtx_;  // serializes every change (short sections); checks, queries and figures read without it
  std::atomic<tick> now_{0};
  mutable std::atomic<tick> default_tail_{0};
  stream_table streams_;
  event_table events_;  // event -> time of its last record (0: never)
  struct busy_span {
    tick start;
    tick end;
  };
  // Under mtx_. Sorted by start and disjoint (so sorted by end too).
  std::array<std::vector<busy_span>, sim_link_count> busy_{};

  tick place_on_link(std::size_t l, tick ready, tick cost)
  {
    std::vector<busy_span>& v = busy_[l];
    tick const now = now_.load(std::memory_order_relaxed);
    auto const done = std::find_if(v.begin(), v.end(), [now](busy_span const& b) { return b.end > now; });
    v.erase(v.begin(), done);
    tick t = ready;
    auto it = std::lower_bound(v.begin(), v.end(), t, [](busy_span const& b, tick x) { return b.end <= x; });
    for (; it != v.end(); ++it) {
      if (it->start >= t + cost) { break; }
      t = std::max(t, it->end);
    }
    if (cost == 0) { return t; }
    // A span that starts where the previous one ends (a saturated link) extends it: a link
    // busy back to back holds one span, not one per copy.
    if (it != v.begin() && std::prev(it)->end == t) {
      std::prev(it)->end = t + cost;
      if (it != v.end() && it->start == t + cost) {  // and closes the gap to the next one
        std::prev(it)->end = it->end;
        v.erase(it);
      }
    } else if (it != v.end() && it->start == t + cost) {
      it->start = t;
    } else {
      v.insert(it, busy_span{t, t + cost});
    }
    return t;
  }
  std::atomic<std::uint64_t> stats_seq_{0};  // even: stats_ stable; odd: being written
  std::array<link_counters, sim_link_count> stats_{};
};

}  // namespace

std::unique_ptr<sim_timeline> make_virtual_timeline(sim_links const& links, timeline_options const& t)
{
  return std::make_unique<virtual_timeline>(links, t);
}

}  // namespace tierpool::detail

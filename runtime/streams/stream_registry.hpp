// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file stream_registry.hpp
 * @brief Internal: the streams a pool knows and the ordering between them — user streams
 *        (create_stream, wrap_native_stream, the default stream), the pool's own copy
 *        streams, the marks recorded on each (Note [Last-use marks]), and the primitives
 *        that order work after a recorded use: stream waits, host waits as a fallback.
 *
 * Owns: the stream table (read without locks), the user streams' lifetimes, the marks,
 * the host-stall figure and the exceptions of host callables (host_faults.hpp). May call: the backend and the event pool (layer backends) and
 * util. Never throws from an ordering primitive: a failed event call falls back to a host
 * wait, whose time is counted in stall_ns().
 *
 * Locks: `mtx_` (the table and the stream lists) and each entry's `stream_entry::mtx`
 * are leaves; an entry's lock is taken without `mtx_` except by retire (destroy), which
 * takes it under `mtx_`.
 */
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <tierpool/backend.hpp>
#include <tierpool/event.hpp>

#include "backends/event_pool.hpp"
#include "streams/host_faults.hpp"

namespace tierpool::detail {

/**
 * @brief A stream the pool knows (made by create_stream, wrapped, the default stream, or
 *        one of the pool's copy streams), with the events the pool recorded on it.
 *
 * See Note [Last-use marks] in stream_registry.cpp: `gen` counts the events recorded on the
 * stream by the pool; a use of a tensor stamped with generation g (read at lease release,
 * or right after a copy was enqueued) is covered by any mark with a larger generation.
 * Entries live as long as the pool (a destroyed stream is only marked not live).
 */
struct stream_entry {
  struct mark {
    std::uint64_t gen{0};
    event_handle event{};
  };
  static constexpr std::size_t kMarks = 8;  ///< recent marks kept (older ones are released)

  stream_handle handle{};
  bool internal{false};               ///< a copy or retire stream of the pool (not usable by callers)
  std::uint32_t trace_id{0};          ///< number in recorded traces: 0 default, 1, 2, ... in creation order
  std::atomic<bool> live{true};       ///< false once destroy_stream ran (set under mtx, after a last mark)
  std::atomic<std::uint64_t> gen{0};  ///< generation of the newest mark (incremented before recording)
  std::mutex mtx;                     ///< leaf: guards marks / first / count
  std::array<mark, kMarks> marks{};   ///< ring, oldest at `first`
  std::size_t first{0};
  std::size_t count{0};
};

/// @brief A stream that used a copy, and when (see stream_entry).
struct stream_use {
  stream_entry* stream{nullptr};
  std::uint64_t gen{0};  ///< stream's generation when the use was known to be enqueued (or kStampAtUnpin)
};

/// @brief The generation of a use stamped when the copy's last lease ends, not before
///        (pool::record_stream: the program's work on that stream is enqueued by then).
///        Larger than every mark's, so it counts as not settled until stamped.
inline constexpr std::uint64_t kStampAtUnpin = ~std::uint64_t{0};

/**
 * @brief The streams that used a copy (copy_slot::users): a vector with room for one
 *        entry inline.
 *
 * A miss-heavy run fills a fresh slot per miss: a std::vector allocated on each. A copy
 * read by a copy stream, or a device copy used by its lease's stream, has one user; holds
 * kInline entries without allocating, more go to one heap array (doubling), whose pointer
 * shares the inline entry's storage (24 bytes in all: issue 19). A second user (a dirty
 * device copy written back while its lease's use is still listed) costs one allocation.
 * clear() keeps the storage. Not synchronized (the record's mutex guards it).
 */
class use_list {
 public:
  static constexpr std::uint32_t kInline = 1;

  constexpr use_list() noexcept = default;
  use_list(use_list const& o) { assign(o); }
  use_list(use_list&& o) noexcept { take(o); }
  use_list& operator=(use_list const& o)
  {
    if (this != &o) {
      size_ = 0;
      assign(o);
    }
    return *this;
  }
  use_list& operator=(use_list&& o) noexcept
  {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~use_list() { release(); }

  [[nodiscard]] stream_use* begin() noexcept { return data(); }
  [[nodiscard]] stream_use* end() noexcept { return data() + size_; }
  [[nodiscard]] stream_use const* begin() const noexcept { return data(); }
  [[nodiscard]] stream_use const* end() const noexcept { return data() + size_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// @brief Remove every entry (keeps the storage).
  void clear() noexcept { size_ = 0; }
  /// @brief Append `u`. @throws std::bad_alloc when the storage must grow and cannot (unchanged).
  void push_back(stream_use u)
  {
    if (size_ == cap_) { grow(); }
    data()[size_++] = u;
  }

 private:
  [[nodiscard]] bool on_heap() const noexcept { return cap_ > kInline; }
  [[nodiscard]] stream_use* data() noexcept { return on_heap() ? store_.heap : store_.inline_entries.data(); }
  [[nodiscard]] stream_use const* data() const noexcept { return on_heap() ? store_.heap : store_.inline_entries.data(); }
  void release() noexcept
  {
    if (on_heap()) { delete[] store_.heap; }
    store_.inline_entries = {};
    cap_ = kInline;
    size_ = 0;
  }
  void grow()
  {
    std::uint32_t const cap = cap_ * 2;
    auto* const next = new stream_use[cap];  // may throw: unchanged
    std::copy(begin(), end(), next);
    if (on_heap()) { delete[] store_.heap; }
    store_.heap = next;
    cap_ = cap;
  }
  void assign(use_list const& o)  // *this is empty
  {
    while (cap_ < o.size_) { grow(); }
    std::copy(o.begin(), o.end(), data());
    size_ = o.size_;
  }
  void take(use_list& o) noexcept  // *this holds no heap array
  {
    store_ = o.store_;
    size_ = o.size_;
    cap_ = o.cap_;
    o.store_.inline_entries = {};
    o.size_ = 0;
    o.cap_ = kInline;
  }

  // Size first, then the first entry: an empty or one-entry list reads one cache line.
  std::uint32_t size_{0};
  std::uint32_t cap_{kInline};  ///< kInline: the entries are inline; more: on the heap
  union storage {
    std::array<stream_use, kInline> inline_entries{};
    stream_use* heap;
  } store_{};
};

/// @brief Record that stream `s` used a copy at generation `gen` (one entry per stream:
///        the newest generation wins).
inline void add_use(use_list& users, stream_entry& s, std::uint64_t gen)
{
  for (stream_use& u : users) {
    if (u.stream == &s) {
      u.gen = std::max(u.gen, gen);
      return;
    }
  }
  users.push_back(stream_use{&s, gen});
}

/// @brief The copy's last lease ended: stamp the uses waiting for it (kStampAtUnpin) with
///        their streams' generations now (copy's record lock held).
inline void stamp_uses_at_unpin(use_list& users) noexcept
{
  for (stream_use& u : users) {
    if (u.gen == kStampAtUnpin) { u.gen = u.stream->gen.load(std::memory_order_seq_cst); }
  }
}

/**
 * @brief The streams of one pool and the ordering primitives over them.
 *
 * Every member is internally synchronized. Entries are never removed before the registry
 * dies (a destroyed stream is only marked not live), so a stream_entry* stays valid.
 */
class stream_registry {
 public:
  /// @brief A registry over `be`, taking events from `events` (both outlive it).
  /// @throws std::bad_alloc
  stream_registry(backend& be, event_pool& events) : be_(be), events_(events), faults_(std::make_shared<host_faults>())
  {
  }
  stream_registry(stream_registry const&) = delete;
  stream_registry& operator=(stream_registry const&) = delete;
  /// @brief Destroys the user streams made here, forgets the wrapped ones, releases every mark.
  ~stream_registry();

  // ---- the table ----
  /// @brief The entry of `s` (the default stream included), or null. Takes no lock.
  [[nodiscard]] stream_entry* find(stream_handle s) const noexcept;
  /// @brief The entry of `s`, made when new (live again when it was destroyed).
  ///        `internal`: one of the pool's own streams (never usable by callers).
  /// @throws tierpool::logic_error past 512 distinct streams over the registry's life
  stream_entry& add(stream_handle s, bool internal);

  // ---- user streams ----
  /// @brief pool::create_stream. @throws backend_error, logic_error (as add)
  stream_handle create(int priority);
  /// @brief pool::wrap_native_stream. @throws logic_error for a null, internal or created stream
  stream_handle wrap(void* native);
  /// @brief pool::destroy_stream: a last mark, then not live; the backend stream is destroyed
  ///        (made here) or forgotten (wrapped). @throws logic_error for a stream of neither kind
  void destroy(stream_handle s);
  /// @brief pool::synchronize: the host waits for `s` (counted as a stall), then rethrows
  ///        the first exception of a host callable on `s` not reported yet.
  /// @throws backend_error, or that exception
  void synchronize(stream_handle s);
  /// @brief pool::enqueue_host on a stream already checked: run `work` in stream order on
  ///        `s`, its exception kept for synchronize(s) (Note [Exceptions of host callables]).
  /// @throws backend_error when the backend cannot queue it (`work` is destroyed, not run)
  void enqueue_host(stream_handle s, std::unique_ptr<host_work> work);

  // ---- ordering (never throw; fall back to host waits) ----
  /// @brief Make `waiter` wait for `use`. `settled`: the use's stamp is final (no live lease).
  /// @return false when nothing was pending (no wait enqueued).
  bool order_after_use(stream_handle waiter, stream_use const& use, bool settled) noexcept;
  /// @brief True when a mark recorded after `use` on its stream has completed (no backend wait).
  [[nodiscard]] bool use_settled(stream_use const& use) noexcept;
  /// @brief As use_settled, but when no mark covers `use` yet, record one now and ask
  ///        whether it completed (compaction: an idle stream's use is over). Never waits,
  ///        unless recording the mark fails (then the host waits for the stream: done).
  [[nodiscard]] bool use_done(stream_use const& use) noexcept;
  /// @brief Record a new mark on `se` (se.mtx held); on failure the host waits for the
  ///        stream and the result is null.
  [[nodiscard]] event_handle add_mark_locked(stream_entry& se) noexcept;
  /// @brief Make `waiter` wait for the work queued on `source` so far.
  void wait_stream(stream_handle waiter, stream_handle source) noexcept;
  /// @brief Make `waiter` wait for `e` (null: nothing), or the host when the backend cannot.
  void wait_event_or_sync(stream_handle waiter, event_handle e) noexcept;
  /// @brief An event recorded on `s` now, or null after the host waited for `s` instead.
  [[nodiscard]] event_handle record_or_sync(stream_handle s) noexcept;
  /// @brief As record_or_sync, recording `e` (an event of the pool the caller owns; null:
  ///        one from the pool) again: its previous record must not be needed any more (every
  ///        wait on it already enqueued). On failure `e` goes back to the pool.
  [[nodiscard]] event_handle rerecord_or_sync(stream_handle s, event_handle e) noexcept;
  /// @brief The host waits until the work of `use` on its stream is done (a destroyed
  ///        stream: its last mark).
  void host_wait_use(stream_use const& use) noexcept;
  /// @brief Give `e` back to the event pool (null: nothing) and clear it.
  void release_event(event_handle& e) noexcept
  {
    if (e) { (void)events_.try_release(e); }
    e = event_handle{};
  }

  // ---- host stalls ----
  /// @brief Count `seconds` of host waiting.
  void add_stall(double seconds) noexcept
  {
    stall_ns_.fetch_add(static_cast<std::uint64_t>(seconds * 1e9), std::memory_order_relaxed);
  }
  /// @brief Host waiting so far, in nanoseconds.
  [[nodiscard]] std::uint64_t stall_ns() const noexcept { return stall_ns_.load(std::memory_order_relaxed); }

 private:
  /// destroy's half for one stream: a last mark, then not live (mtx_ held).
  void retire_locked(stream_handle s) noexcept;
  [[nodiscard]] static std::size_t home(stream_handle s) noexcept;

  backend& be_;
  event_pool& events_;

  // An open-addressing table read without locks (keys then values are published with
  // release stores under mtx_; entries are never removed or freed before the registry).
  // Key 0 is free; the default stream has its own entry.
  static constexpr std::size_t kTable = 1024;  // power of two; at most half used
  mutable std::mutex mtx_;                     // leaf
  std::vector<stream_handle> owned_;           ///< create(): destroyed with the registry
  std::vector<stream_handle> wrapped_;         ///< wrap(): forgotten, never destroyed
  std::vector<std::unique_ptr<stream_entry>> store_;
  std::array<std::atomic<std::uintptr_t>, kTable> keys_{};
  std::array<std::atomic<stream_entry*>, kTable> vals_{};
  std::size_t count_{0};                       ///< under mtx_
  std::uint32_t user_streams_{0};              ///< under mtx_: trace ids handed out
  stream_entry default_{};
  std::atomic<std::uint64_t> stall_ns_{0};
  std::shared_ptr<host_faults> faults_;  ///< shared with the callables still queued
};

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file op_gate.hpp
 * @brief Internal: tierpool::detail::op_gate, the pool-wide quiesce gate. Every operation
 *        that changes the pool's state passes it (shared, per-thread shards); validate()
 *        closes it to see a state no operation is changing. See Note [The quiesce gate].
 */
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace tierpool::detail {

// Note [The quiesce gate]
// -----------------------
// Rationale: validate() (and whatever later needs a consistent picture of the whole pool:
// a snapshot, a compaction) must see the records, the tiers and the policies at one
// moment. Locking each record in turn sees a mix of moments (an allocate or a free between
// two locks looks like corruption); holding every record lock at once starves eviction in
// other threads (every victim is busy) and does not cover the tiers' own state. The
// architecture will split the pool into components with locks of their own, so the check
// must not depend on which locks exist.
// Approach: a gate in front of every mutating operation. An operation *enters* (its
// thread's slot counter goes up, then it loads `closed_`) and *leaves* (the counter goes
// down) around its whole body, before it takes any lock. The exclusive side closes the
// gate, waits until every slot is zero, does its work and reopens it. Entry and close form
// a Dekker pair (each side stores, then loads the other's word): either the entrant sees
// the gate closed and backs out, or the closer sees the entrant and waits for it. The
// store-then-load order costs a full barrier on one side. The hit path (an acquire and a
// release per kernel) cannot pay a locked instruction for it (20 ns a pair, measured), so
// the barrier is asymmetric where Linux has membarrier(2): an operation on its own slot
// (one writer: the first kShards threads have one each) does a plain store, a compiler
// barrier and a load; the closer, rare, runs MEMBARRIER_CMD_PRIVATE_EXPEDITED between its
// store and its loads, which puts a full barrier into every running thread of the process
// (the scheme of liburcu and folly's asymmetric fences). The shared last slot, and every
// slot where membarrier is missing, use seq_cst read-modify-writes. An operation
// already inside (a nested call from the same thread: a lease released by a callback, a
// drop from record_lock's unlock) re-enters without looking at the gate, so a closer never
// waits for a thread that waits for it. Waits are on a condition variable, never a spin.
// Limitations: an operation that blocks while inside (a host wait for a copy) holds the
// closer back for as long; operations never wait for another thread's entry, so the
// closer always gets through. Low-memory callbacks run outside the gate (the request
// leaves it around them: they may do anything, waiting for other threads included).
class op_gate {
 public:
  /// One slot per hit-path shard (thread_shard(); the last one shared), each on its own lines.
  static constexpr std::size_t kSlots = 17;

  op_gate() noexcept = default;
  op_gate(op_gate const&) = delete;
  op_gate& operator=(op_gate const&) = delete;
  ~op_gate() = default;

  /// @brief Enter as an operation on shard `shard` (waits while the gate is closed, unless
  ///        the calling thread is already inside).
  void enter(std::size_t shard) noexcept { (void)enter_entry(shard); }

  /// @brief Leave (the matching enter on this thread).
  void leave() noexcept { leave_entry(mine()); }

 private:
  struct gate_slot;
  struct depth_entry;

 public:
  /// @brief RAII: one operation (enter ... leave); keeps the thread's entry between them.
  class scope {
   public:
    [[gnu::always_inline]] scope(op_gate& g, std::size_t shard) noexcept : g_(g), d_(g.enter_entry(shard)) {}
    [[gnu::always_inline]] ~scope() { g_.leave_entry(d_); }
    scope(scope const&) = delete;
    scope& operator=(scope const&) = delete;

   private:
    op_gate& g_;
    depth_entry& d_;
  };

 private:
  // The fast path, inlined into every operation: the thread's entry (one compare in the
  // common case of one pool), a plain store and a load. The rest is out of line.
  [[gnu::always_inline]] depth_entry& enter_entry(std::size_t shard) noexcept
  {
    depth_entry& d = mine();
    if (d.depth++ != 0) [[unlikely]] { return d; }
    if (shard < kSlots - 1 && asym_) [[likely]] {
      gate_slot& s = slots_[shard];
      d.where = &s;
      d.own = true;
      s.n.store(s.n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);  // the closer's membarrier orders it
      if (!closed_.load(std::memory_order_acquire)) [[likely]] { return d; }
      leave_slot(s, true);
    }
    enter_slow(d, shard);
    return d;
  }

  [[gnu::noinline]] void enter_slow(depth_entry& d, std::size_t shard) noexcept
  {
    bool const own = shard < kSlots - 1 && asym_;
    gate_slot& s = slots_[shard < kSlots ? shard : kSlots - 1];
    d.where = &s;
    d.own = own;
    bool wait = own;  // an own slot came here because the gate was closed
    for (;;) {
      if (wait) {
        std::unique_lock lk(mtx_);  // wait while closed (a closer that is done opens it)
        cv_.wait(lk, [this] { return !closed_.load(std::memory_order_relaxed); });
      }
      wait = true;
      if (own) {
        s.n.store(s.n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (!closed_.load(std::memory_order_acquire)) { return; }
      } else {
        s.n.fetch_add(1, std::memory_order_seq_cst);
        if (!closed_.load(std::memory_order_seq_cst)) { return; }
      }
      leave_slot(s, own);  // closed: back out, then wait until it opens
    }
  }

  [[gnu::always_inline]] void leave_entry(depth_entry& d) noexcept
  {
    if (--d.depth != 0) { return; }
    leave_slot(*d.where, d.own);
    d.where = nullptr;
  }

 public:

  /// @brief True when the calling thread is inside (between enter and leave).
  [[nodiscard]] bool inside() const noexcept
  {
    depth_entry const* d = find();
    return d != nullptr && d->depth != 0;
  }

  /// @brief Leave for a while (a request around its low-memory callbacks) when this is
  ///        the thread's outermost operation; a nested one stays inside (its caller may be
  ///        half-way through a change). @return true when it left: pass it to resume().
  bool suspend() noexcept
  {
    depth_entry& d = mine();
    if (d.depth != 1) { return false; }
    leave();
    return true;
  }
  /// @brief Enter again after suspend() returned true.
  void resume(bool suspended, std::size_t shard) noexcept
  {
    if (suspended) { enter(shard); }
  }

  /// @brief Close the gate and wait until no operation is inside (one closer at a time).
  ///        The caller must not be inside (it would wait for itself).
  void close() noexcept
  {
    closer_.lock();
    closed_.store(true, std::memory_order_seq_cst);
    heavy_barrier();  // the other half of the entrants' plain store + load
    std::unique_lock lk(mtx_);
    cv_.wait(lk, [this] { return busy() == 0; });
  }

  /// @brief Open the gate again (after close()), waking the operations waiting at it.
  void open() noexcept
  {
    {
      std::lock_guard lk(mtx_);
      closed_.store(false, std::memory_order_seq_cst);
    }
    cv_.notify_all();
    closer_.unlock();
  }

  /// @brief RAII: the gate closed (close ... open).
  class closed {
   public:
    explicit closed(op_gate& g) noexcept : g_(g) { g_.close(); }
    ~closed() { g_.open(); }
    closed(closed const&) = delete;
    closed& operator=(closed const&) = delete;

   private:
    op_gate& g_;
  };

 private:
  struct alignas(128) gate_slot {
    std::atomic<std::int64_t> n{0};
  };
  struct depth_entry {
    op_gate const* gate{nullptr};
    std::uint32_t depth{0};
    bool own{false};  ///< entered by a plain store on a slot of its own (asymmetric())
    gate_slot* where{nullptr};
  };

  /// True when membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is registered for the process
  /// (decided once; op_gate.cpp).
  [[nodiscard]] static bool asymmetric() noexcept
  {
    static bool const yes = register_asymmetric();
    return yes;
  }
  [[nodiscard]] static bool register_asymmetric() noexcept;
  /// A full barrier in every running thread of the process (when asymmetric()); else
  /// nothing (every entrant then uses seq_cst read-modify-writes).
  static void heavy_barrier() noexcept;
  // Gates a thread is inside at once: a few (one per pool whose callback calls another).
  static constexpr std::size_t kNested = 8;
  struct thread_gates {
    std::array<depth_entry, kNested> e{};
  };
  static thread_gates& gates() noexcept
  {
    thread_local thread_gates g;
    return g;
  }
  [[nodiscard]] depth_entry const* find() const noexcept
  {
    for (depth_entry const& d : gates().e) {
      if (d.gate == this) { return &d; }
    }
    return nullptr;
  }
  [[gnu::always_inline]] depth_entry& mine() noexcept
  {
    auto& e = gates().e;
    depth_entry* free_entry = nullptr;
    for (depth_entry& d : e) {
      if (d.gate == this) { return d; }
      if (free_entry == nullptr && (d.gate == nullptr || d.depth == 0)) { free_entry = &d; }
    }
    if (free_entry == nullptr) { free_entry = &overflow(); }  // more than kNested pools at once: share one
    *free_entry = depth_entry{this, 0, false, nullptr};
    return *free_entry;
  }
  static depth_entry& overflow() noexcept
  {
    thread_local depth_entry o;
    return o;
  }
  [[gnu::always_inline]] void leave_slot(gate_slot& s, bool own) noexcept
  {
    if (own) [[likely]] {
      s.n.store(s.n.load(std::memory_order_relaxed) - 1, std::memory_order_release);
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      s.n.fetch_sub(1, std::memory_order_seq_cst);
    }
    if (closed_.load(std::memory_order_seq_cst)) [[unlikely]] { wake_closer(); }
  }
  [[gnu::noinline]] void wake_closer() noexcept
  {
    std::lock_guard lk(mtx_);  // the closer checks busy() under mtx_: no lost wake-up
    cv_.notify_all();
  }
  [[nodiscard]] std::int64_t busy() const noexcept
  {
    std::int64_t n = 0;
    for (gate_slot const& s : slots_) { n += s.n.load(std::memory_order_seq_cst); }
    return n;
  }

  std::array<gate_slot, kSlots> slots_{};
  std::atomic<bool> closed_{false};
  bool const asym_{asymmetric()};  // read once: the hit path tests a member, not a static's guard
  std::mutex mtx_;                 // guards the waits on cv_
  std::condition_variable cv_;     // the closer waits for zero; entrants wait for open
  std::mutex closer_;              // one closer at a time
};

}  // namespace tierpool::detail

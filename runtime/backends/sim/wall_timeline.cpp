// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// wall_timeline.cpp — the sim backend's wall-clock engine (sim_clock_mode::wall): each
// stream is an in-order queue run by its own worker thread; copies are memcpy, throttled
// to the link model by sleeping until the modelled completion time. Main entry point:
// make_wall_timeline.
//
// Note [One worker thread per stream]
//   Rationale: a stream may block on an event recorded on another stream
//   (stream_wait_event). With a shared pool, a blocked task would hold a pool thread and
//   enough blocked streams could starve the stream they wait for. A thread per stream
//   makes in-order execution and blocking waits trivially correct, and the runtime
//   creates few streams (caps().max_copy_streams = 16).
//   Approach: the worker sleeps on the stream's condition variable when its queue is
//   empty, after a bounded poll (Note [Bounded idle spin]); an event wait polls the same
//   way, then sleeps on that record alone (Note [Waiting on one record]), and a
//   synchronize_stream sleeps until the worker reaches its target (Note [Waking only who waits]).
//   Limitations: a program creating thousands of streams gets thousands of threads.
//
// Note [Wall-clock link throttling]
//   A copy on link L that starts executing at time t is given
//   end = max(t, L.free) + L.transfer_ns(bytes); L.free = end; the worker memcpys and
//   then sleeps until `end`. So copies on one link serialize and never finish before
//   their modelled time; unthrottled links (the default) cost only the memcpy.
//
// Note [Idle streams run inline]
//   Rationale: on an unthrottled link a copy is only a memcpy, yet handing it to the
//   stream's worker cost a lock, a queue node, and a wake-up or a spinning worker: on a
//   2-core machine the pool's 4 KiB miss took 5x its virtual-clock time (bench scale
//   --sim real-wall), most of it in the hand-off and in workers spinning beside the
//   program's thread, so the demo and the stress tests measured the simulator.
//   Approach: when the stream is idle (nothing queued, nothing running: completed ==
//   enqueued, under the stream's mutex) a copy on an unthrottled link, or an event record,
//   runs at once on the calling thread, under that mutex (a later op of another thread
//   queues behind it). Stream order holds, because nothing is ahead of it; CUDA allows an
//   async copy to be complete when the call returns. `posted` counts queued ops only, so
//   the worker's idle spin is not fooled by ops that never reached it.
//   Limitations: a copy on a throttled link, a kernel, a host function and a wait on an
//   incomplete event always go to the worker; the calling thread pays the memcpy. Fewer
//   copies are in flight at once, so sim_options::inline_idle_copies = false keeps the
//   old behaviour for tests that want every copy asynchronous (the stress tests run both).
#include "sim_timeline.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tierpool::detail {

namespace {

using steady = std::chrono::steady_clock;

/// One record_event: done once the stream's worker reaches it. See Note [Waiting on one record].
struct record_state {
  std::atomic<std::uint32_t> done{0};     // 0 -> 1 once, by the recording stream's worker
  std::atomic<std::uint32_t> waiters{0};  // threads blocked (or about to block) in done.wait
  // Where the record sits, set once under the recording stream's mutex before the record is
  // published (Note [Coalescing waits]): the stream's serial and the op's position in it.
  std::uint64_t stream_serial{0};
  std::uint64_t position{0};
};

enum class op_kind : std::uint8_t { transfer, compute, host_func, record, wait };

struct wall_op {
  op_kind kind{op_kind::compute};
  sim_link link{sim_link::h2d};
  std::size_t bytes{0};
  sim_effect effect{};
  tick duration{0};
  host_fn fn{nullptr};
  void* user_data{nullptr};
  std::shared_ptr<record_state> rec{};
};

struct wall_stream {
  std::mutex mtx;
  std::condition_variable cv;       // queue non-empty / stop; only the worker waits on it
  std::condition_variable done_cv;  // completed reached wake_at; synchronize_stream waits on it
  std::deque<wall_op> queue;
  std::uint64_t enqueued{0};   // completed <= enqueued
  std::uint64_t completed{0};
  std::uint64_t wake_at{kNever};  // smallest target of a waiting synchronize_stream, else kNever
  std::uint64_t queued{0};               // ops ever queued for the worker (not those run inline)
  std::atomic<std::uint64_t> posted{0};  // == queued; read without mtx by the idle spin
  bool idle{false};            // the worker sleeps on cv (an enqueue must notify it)
  std::uint64_t serial{0};     // unique per timeline, never reused (Note [Coalescing waits])
  bool stop{false};            // set once: drain the queue, then exit
  std::atomic<bool> exited{false};  // the worker drained its queue after stop and returned (joinable at once)
  std::thread worker;

  static constexpr std::uint64_t kNever = ~std::uint64_t{0};
};

// Note [One host-function executor]
//   sim_options::serialize_host_functions models a CUDA driver that runs the host
//   functions of all streams on one thread: a stream's worker that reaches a host function
//   hands it to the executor and waits until it has run; the executor runs them one at a
//   time, in the order they became ready. A host function that waits for work of another
//   stream (which may be a host function queued behind it) then hangs here as it would
//   on CUDA, instead of passing because every stream has a thread of its own.
//   The executor outlives the stream workers: shutdown() joins them first.
class host_executor {
 public:
  host_executor() : worker_([this] { run(); }) {}  // may throw std::system_error
  host_executor(host_executor const&) = delete;
  host_executor& operator=(host_executor const&) = delete;
  ~host_executor() { stop(); }

  /// Run fn(user_data) on the executor and return once it has run (inline when the queue
  /// cannot grow: still one at a time).
  void run_and_wait(host_fn fn, void* user_data) noexcept
  {
    job j{fn, user_data};
    {
      std::lock_guard lock(mtx_);
      try {
        queue_.push_back(&j);
      } catch (...) {
        j.fn = nullptr;  // no room: run it here, under the lock that orders the executor's jobs
      }
    }
    if (j.fn == nullptr) {
      std::lock_guard running(run_mtx_);
      fn(user_data);
      return;
    }
    cv_.notify_one();
    while (j.done.load(std::memory_order_acquire) == 0) { j.done.wait(0, std::memory_order_acquire); }
  }

  /// Run what is queued, then join the thread. Idempotent.
  void stop() noexcept
  {
    {
      std::lock_guard lock(mtx_);
      stop_ = true;
    }
    cv_.notify_one();
    if (worker_.joinable()) { worker_.join(); }
  }

 private:
  struct job {
    host_fn fn;
    void* user_data;
    std::atomic<std::uint32_t> done{0};
  };

  void run() noexcept
  {
    for (;;) {
      job* j = nullptr;
      {
        std::unique_lock lock(mtx_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) { return; }
        j = queue_.front();
        queue_.pop_front();
      }
      {
        std::lock_guard running(run_mtx_);
        j->fn(j->user_data);
      }
      j->done.store(1, std::memory_order_release);
      j->done.notify_one();
    }
  }

  std::mutex mtx_;      // guards queue_ and stop_
  std::mutex run_mtx_;  // held while a host function runs (the executor's, or one run inline)
  std::condition_variable cv_;
  std::deque<job*> queue_;
  bool stop_{false};
  std::thread worker_;  // last: starts once the members above exist
};

// Stream and event numbers, shared by every wall timeline of the process, so that two sim
// backends of one device ordinal never hand out the same handle either.
std::atomic<std::uint64_t> next_handle_number{0};  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

class wall_timeline final : public sim_timeline {
 public:
  wall_timeline(sim_links const& links, timeline_options const& t)
    : links_(links), device_(t.device), inline_(t.inline_idle_copies), epoch_(steady::now())
  {
    if (t.serialize_host_functions) { executor_ = std::make_unique<host_executor>(); }  // may throw
    auto def = start_stream();  // may throw std::system_error; the executor stops with this object
    try {
      streams_.emplace(0, def);
    } catch (...) {
      stop_and_join(*def);
      throw;
    }
  }

  ~wall_timeline() override { shutdown(); }

  bool has_stream(stream_handle s) const noexcept override
  {
    std::shared_lock lock(streams_mtx_);
    return streams_.contains(s.value);  // no reference taken (find_stream's costs two locked adds)
  }

  bool has_event(event_handle e) const noexcept override
  {
    std::lock_guard lock(ev_mtx_);
    return find_event(e.value) != nullptr;
  }

  status create_stream(stream_handle* out) noexcept override
  {
    try {
      auto st = start_stream();
      std::unique_lock lock(streams_mtx_);
      std::uintptr_t const h = make_handle(next_handle_number.fetch_add(1, std::memory_order_relaxed) + 1, device_, kStreamTag);
      try {
        streams_.emplace(h, st);
      } catch (...) {
        lock.unlock();
        stop_and_join(*st);
        return status::out_of_memory;
      }
      *out = stream_handle{h};
      return status::ok;
    } catch (...) {  // std::system_error from std::thread, or bad_alloc
      return status::out_of_memory;
    }
  }

  bool destroy_stream(stream_handle s) noexcept override
  {
    if (s.is_default()) {
      return false;
    }
    std::shared_ptr<wall_stream> st;
    {
      std::unique_lock lock(streams_mtx_);
      auto const it = streams_.find(s.value);
      if (it == streams_.end()) {
        return false;
      }
      st = std::move(it->second);
      streams_.erase(it);
    }
    // As cudaStreamDestroy: return at once; the worker drains the queue (its events still
    // complete), then exits, and is joined by a later destroy_stream or by shutdown().
    {
      std::lock_guard lock(st->mtx);
      st->stop = true;
    }
    st->cv.notify_one();
    std::lock_guard lock(retired_mtx_);
    std::erase_if(retired_, [this](std::shared_ptr<wall_stream> const& r) {
      if (!r->exited.load(std::memory_order_acquire)) { return false; }
      stop_and_join(*r);
      return true;
    });
    try {
      retired_.push_back(std::move(st));
    } catch (...) {
      stop_and_join(*st);  // no room to keep it: wait for it here instead
    }
    return true;
  }

  status synchronize_stream(stream_handle s) noexcept override
  {
    auto const st = find_stream(s);
    if (st == nullptr) {
      return status::invalid_value;
    }
    std::unique_lock lock(st->mtx);
    std::uint64_t const target = st->enqueued;
    while (st->completed < target) {  // see Note [Waking only who waits]
      st->wake_at = std::min(st->wake_at, target);
      st->done_cv.wait(lock);
    }
    return status::ok;
  }

  status create_event(event_handle* out) noexcept override
  {
    std::lock_guard lock(ev_mtx_);
    try {
      std::uint32_t slot = 0;
      if (!ev_free_.empty()) {
        slot = ev_free_.back();
        ev_free_.pop_back();
      } else {
        if (ev_slots_.size() >= kEventSlots) { return status::out_of_memory; }
        // A new slot's first generation comes from the process-wide counter, so that two
        // timelines of one device ordinal rarely hand out the same handle (a foreign
        // handle is then still refused).
        auto const first = static_cast<std::uint32_t>(next_handle_number.fetch_add(1, std::memory_order_relaxed) & kGenMask);
        ev_free_.reserve(ev_slots_.size() + 1);  // destroy_event's push_back never allocates
        ev_slots_.push_back(event_slot{first, false, nullptr});
        slot = static_cast<std::uint32_t>(ev_slots_.size() - 1);
      }
      event_slot& es = ev_slots_[slot];
      es.live = true;
      *out = event_handle{make_handle((std::uint64_t{es.gen} << kEventSlotBits) | slot, device_, kEventTag)};
      return status::ok;
    } catch (...) {
      return status::out_of_memory;
    }
  }

  bool destroy_event(event_handle e) noexcept override
  {
    // Records in flight keep their record_state alive through the queued op.
    std::lock_guard lock(ev_mtx_);
    event_slot* const es = find_event(e.value);
    if (es == nullptr) { return false; }
    es->live = false;
    es->rec.reset();
    es->gen = (es->gen + 1) & kGenMask;
    if (es->gen != 0) {  // else the slot's generations are spent: retired
      ev_free_.push_back(static_cast<std::uint32_t>(es - ev_slots_.data()));  // capacity: see create_event
    }
    return true;
  }

  status record_event(event_handle e, stream_handle s) noexcept override
  {
    std::shared_ptr<record_state> rec;
    try {
      rec = std::make_shared<record_state>();
    } catch (...) {
      return status::out_of_memory;
    }
    // The event is checked once, after the enqueue (sim_backend checked it before the call):
    // a record queued for an event destroyed meanwhile completes harmlessly.
    wall_op op;
    op.kind = op_kind::record;
    op.rec = rec;
    if (status const r = enqueue(s, std::move(op)); r != status::ok) {
      return r;
    }
    std::lock_guard lock(ev_mtx_);
    event_slot* const es = find_event(e.value);
    if (es == nullptr) {
      return status::invalid_value;  // destroyed meanwhile; the queued record completes harmlessly
    }
    es->rec = std::move(rec);
    return status::ok;
  }

  status query_event(event_handle e) noexcept override
  {
    std::lock_guard lock(ev_mtx_);
    event_slot const* const es = find_event(e.value);
    if (es == nullptr) {
      return status::invalid_value;
    }
    return es->rec == nullptr || es->rec->done.load(std::memory_order_acquire) != 0 ? status::ok : status::not_ready;
  }

  // The record `e` last captured (null: never recorded) in `out`. @return false for an unknown event.
  bool last_record(event_handle e, std::shared_ptr<record_state>& out) noexcept
  {
    std::lock_guard lock(ev_mtx_);
    event_slot const* const es = find_event(e.value);
    if (es == nullptr) { return false; }
    out = es->rec;
    return true;
  }

  status synchronize_event(event_handle e) noexcept override
  {
    std::shared_ptr<record_state> rec;
    if (!last_record(e, rec)) { return status::invalid_value; }
    if (rec != nullptr) {
      wait_done(*rec);
    }
    return status::ok;
  }

  status stream_wait_event(stream_handle s, event_handle e) noexcept override
  {
    std::shared_ptr<record_state> rec;
    if (!last_record(e, rec)) { return status::invalid_value; }
    if (rec == nullptr || rec->done.load(std::memory_order_acquire) != 0) {
      // never recorded, or already complete: nothing to wait for
      return has_stream(s) ? status::ok : status::invalid_value;
    }
    wall_op op;
    op.kind = op_kind::wait;
    op.rec = std::move(rec);
    return enqueue(s, std::move(op));
  }

  status enqueue_transfer(stream_handle s, sim_link link, std::size_t bytes, sim_effect effect) noexcept override
  {
    wall_op op;
    op.kind = op_kind::transfer;
    op.link = link;
    op.bytes = bytes;
    op.effect = effect;
    return enqueue(s, std::move(op));
  }

  status enqueue_compute(stream_handle s, tick duration) noexcept override
  {
    wall_op op;
    op.kind = op_kind::compute;
    op.duration = duration;
    return enqueue(s, std::move(op));
  }

  status enqueue_host_func(stream_handle s, host_fn fn, void* user_data) noexcept override
  {
    wall_op op;
    op.kind = op_kind::host_func;
    op.fn = fn;
    op.user_data = user_data;
    return enqueue(s, std::move(op));
  }

  tick now() const noexcept override
  {
    return static_cast<tick>(std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - epoch_).count());
  }

  sim_link_stats link_stats(sim_link link) const noexcept override
  {
    std::lock_guard lock(link_mtx_);
    return stats_[static_cast<std::size_t>(link)];
  }

  void shutdown() noexcept override
  {
    std::vector<std::shared_ptr<wall_stream>> all;
    {
      std::unique_lock lock(streams_mtx_);
      try {
        all.reserve(streams_.size());
      } catch (...) {
      }
      for (auto& [h, st] : streams_) {
        if (all.size() < all.capacity()) {
          all.push_back(std::move(st));
        } else {
          stop_and_join(*st);  // out of memory: join serially under the lock (no waits across)
        }
      }
      streams_.clear();
    }
    // Stop every stream first, then join: a stream waiting on another's event still
    // progresses because every worker keeps draining until its queue is empty.
    for (auto const& st : all) {
      std::lock_guard lock(st->mtx);
      st->stop = true;
      st->cv.notify_one();
    }
    for (auto const& st : all) {
      stop_and_join(*st);
    }
    {
      std::lock_guard lock(retired_mtx_);
      for (auto const& st : retired_) { stop_and_join(*st); }  // destroyed streams: drained by now or soon
      retired_.clear();
    }
    if (executor_) { executor_->stop(); }  // after the workers: they hand it their host functions
  }

 private:
  std::shared_ptr<wall_stream> start_stream()
  {
    auto st = std::make_shared<wall_stream>();
    st->serial = next_serial_.fetch_add(1, std::memory_order_relaxed) + 1;
    st->worker = std::thread([this, raw = st.get()] { run(*raw); });
    return st;
  }

  void stop_and_join(wall_stream& st) noexcept
  {
    {
      std::lock_guard lock(st.mtx);
      st.stop = true;
    }
    st.cv.notify_one();
    if (st.worker.joinable()) {
      if (st.worker.get_id() == std::this_thread::get_id()) {
        st.worker.detach();  // misuse (a host function destroying its own stream): don't self-join
      } else {
        st.worker.join();
      }
    }
  }

  std::shared_ptr<wall_stream> find_stream(stream_handle s) const noexcept
  {
    std::shared_lock lock(streams_mtx_);
    auto const it = streams_.find(s.value);
    return it == streams_.end() ? nullptr : it->second;
  }

  status enqueue(stream_handle s, wall_op op) noexcept
  {
    auto const st = find_stream(s);
    if (st == nullptr) {
      return status::invalid_value;
    }
    bool wake = false;
    bool done = false;
    {
      std::lock_guard lock(st->mtx);
      if (st->stop) {
        return status::invalid_value;
      }
      if (op.kind == op_kind::wait && coalesce_wait(*st, op.rec)) {
        return status::ok;
      }
      if (op.kind == op_kind::record) {
        op.rec->stream_serial = st->serial;
        op.rec->position = st->enqueued + 1;
      }
      if (st->completed == st->enqueued && runs_inline(op)) {  // Note [Idle streams run inline]
        ++st->enqueued;
        execute(op);
        ++st->completed;
        if (st->completed >= st->wake_at) {
          st->wake_at = wall_stream::kNever;
          done = true;
        }
      } else {
        try {
          st->queue.push_back(std::move(op));
        } catch (...) {
          return status::out_of_memory;
        }
        ++st->enqueued;
        st->posted.store(++st->queued, std::memory_order_release);
        wake = st->idle;
      }
    }
    if (wake) {
      st->cv.notify_one();
    }
    if (done) {
      st->done_cv.notify_all();
    }
    return status::ok;
  }

  // Note [Idle streams run inline]: what may run on the calling thread of an idle stream.
  bool runs_inline(wall_op const& op) const noexcept
  {
    return inline_ &&
           (op.kind == op_kind::record || (op.kind == op_kind::transfer && links_.get(op.link).unthrottled()));
  }

  // Note [Coalescing waits]
  //   Rationale: a stream that waits on every copy of another stream (a user stream
  //   ordered after each copy-in) blocks and is woken once per copy; here a wake-up costs
  //   the waking copy worker tens of microseconds (a futex wake and an IPI in a VM).
  //   Approach: streams run in order, so a record placed later on the same stream
  //   completes after an earlier one. A wait queued right behind a wait on the same
  //   stream's records (nothing between them to order) keeps only the later record: the
  //   queued op is retargeted, or the new wait is dropped when it is the earlier one.
  //   Positions and serials are never reused, so the comparison is exact.
  //   Under st.mtx; true when `rec` is covered by the queue's last op (nothing to enqueue).
  static bool coalesce_wait(wall_stream& st, std::shared_ptr<record_state> const& rec) noexcept
  {
    if (st.queue.empty()) {
      return false;
    }
    wall_op& last = st.queue.back();
    if (last.kind != op_kind::wait || last.rec->stream_serial != rec->stream_serial || rec->stream_serial == 0) {
      return false;
    }
    if (rec->position > last.rec->position) {
      last.rec = rec;  // the later record covers both
    }
    return true;
  }

  // See Note [Bounded idle spin]: true if `ready()` turned true within the spin budget.
  template <class Pred>
  static bool spin_briefly(Pred ready) noexcept
  {
    auto const until = steady::now() + kIdleSpin;
    for (;;) {
      for (int i = 0; i < 64; ++i) {
        if (ready()) { return true; }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      if (steady::now() >= until) { return ready(); }
    }
  }

  void run(wall_stream& st) noexcept
  {
    std::uint64_t taken = 0;
    for (;;) {
      wall_op op;
      {
        if (st.posted.load(std::memory_order_acquire) == taken) {
          (void)spin_briefly([&] { return st.posted.load(std::memory_order_acquire) != taken; });
        }
        std::unique_lock lock(st.mtx);
        if (!st.stop && st.queue.empty()) {
          st.idle = true;
          st.cv.wait(lock, [&] { return st.stop || !st.queue.empty(); });
          st.idle = false;
        }
        if (st.queue.empty()) {
          st.exited.store(true, std::memory_order_release);
          return;  // stop requested and drained
        }
        op = std::move(st.queue.front());
        st.queue.pop_front();
        ++taken;
      }
      execute(op);
      bool wake = false;
      {
        std::lock_guard lock(st.mtx);
        ++st.completed;
        if (st.completed >= st.wake_at) {
          st.wake_at = wall_stream::kNever;
          wake = true;
        }
      }
      if (wake) {
        st.done_cv.notify_all();
      }
    }
  }

  void execute(wall_op const& op) noexcept
  {
    switch (op.kind) {
      case op_kind::transfer: transfer(op); break;
      case op_kind::compute: std::this_thread::sleep_for(std::chrono::nanoseconds(op.duration)); break;
      case op_kind::host_func:
        if (executor_) {
          executor_->run_and_wait(op.fn, op.user_data);  // Note [One host-function executor]
        } else {
          op.fn(op.user_data);
        }
        break;
      case op_kind::record: complete(*op.rec); break;
      case op_kind::wait: wait_done(*op.rec); break;
    }
  }

  // Note [Waking only who waits]
  //   A worker used to notify its stream's one condition variable after every op, waking
  //   every synchronize_stream caller to re-check its target. Now the host waits on
  //   done_cv and leaves its target in wake_at (the smallest pending one); the worker
  //   notifies only when `completed` reaches it, and a woken caller whose target is
  //   further on sets wake_at again. Enqueues notify the worker's cv only when it sleeps.

  // Note [Waiting on one record]
  //   Rationale: with one backend-wide condition variable, every completed record woke
  //   every thread waiting on any event (each stream blocked in a cross-stream wait, each
  //   host in synchronize_event); on a 2-core machine each needless wake-up is a context
  //   switch that preempts a copy. A thread waiting on a record should wake only for it.
  //   Approach: a record is an atomic flag with its own count of blocked waiters. The
  //   worker that completes it stores the flag and notifies (C++20 atomic notify) only
  //   when a waiter is counted; a waiter polls the flag briefly (as the idle spin) and
  //   then counts itself and blocks in atomic wait. Both sides use seq_cst on the flag and
  //   the count, so either the waiter sees the flag set or the worker sees the waiter.
  //   The store publishes the stream's earlier work (release; waiters load with acquire).
  static void complete(record_state& rec) noexcept
  {
    rec.done.store(1, std::memory_order_seq_cst);
    if (rec.waiters.load(std::memory_order_seq_cst) != 0) {
      rec.done.notify_all();
    }
  }

  static void wait_done(record_state& rec) noexcept
  {
    auto const ready = [&] { return rec.done.load(std::memory_order_acquire) != 0; };
    if (ready() || spin_briefly(ready)) {
      return;
    }
    rec.waiters.fetch_add(1, std::memory_order_seq_cst);
    while (rec.done.load(std::memory_order_seq_cst) == 0) {
      rec.done.wait(0, std::memory_order_seq_cst);
    }
    rec.waiters.fetch_sub(1, std::memory_order_relaxed);
  }

  // See Note [Wall-clock link throttling].
  void transfer(wall_op const& op) noexcept
  {
    auto const l = static_cast<std::size_t>(op.link);
    link_model const& model = links_.get(op.link);
    tick const cost = model.transfer_ns(op.bytes);
    tick end = 0;
    {
      std::lock_guard lock(link_mtx_);
      stats_[l].copies += 1;
      stats_[l].bytes += op.bytes;
      stats_[l].busy_ns += cost;
      if (!model.unthrottled()) {
        end = std::max(now(), link_free_[l]) + cost;
        link_free_[l] = end;
      }
    }
    op.effect.apply();
    if (end != 0) {
      std::this_thread::sleep_until(epoch_ + std::chrono::nanoseconds(end));
    }
  }

  // Note [Bounded idle spin]
  //   A worker whose queue just ran dry polls it (pause loop, no lock) for at most
  //   kIdleSpin before sleeping on its condition variable. A pool that waits for one copy
  //   and then enqueues the next (eviction: write-back, then copy-in) finds the worker
  //   still awake instead of paying a futex wake + reschedule per copy. Bounded: an idle
  //   stream costs at most kIdleSpin of CPU after its last op, then sleeps as before.
  static constexpr std::chrono::microseconds kIdleSpin{50};

  sim_links const links_;
  int const device_;  // the simulated device, in every handle
  bool const inline_;  // sim_options::inline_idle_copies (Note [Idle streams run inline])
  steady::time_point const epoch_;
  std::unique_ptr<host_executor> executor_;  // sim_options::serialize_host_functions; else null

  mutable std::shared_mutex streams_mtx_;
  std::unordered_map<std::uintptr_t, std::shared_ptr<wall_stream>> streams_;
  std::mutex retired_mtx_;
  std::vector<std::shared_ptr<wall_stream>> retired_;  // destroyed, their workers not joined yet
  std::atomic<std::uint64_t> next_serial_{0};  // wall_stream::serial

  // Note [Event slots]
  //   An event handle carries its slot in ev_slots_ and the slot's generation
  //   (n = gen << kEventSlotBits | slot, then make_handle), so a lookup is an index and a
  //   compare, not a hash table's probe (the pool keeps an event per copy slot: 100,000
  //   tensors, 100,000 events, and a lookup per record, wait and query). A destroyed
  //   slot's generation moves on, so a stale handle is refused; a slot whose generations
  //   are spent is never reused. As before, all of it is guarded by ev_mtx_.
  struct event_slot {
    std::uint32_t gen{0};
    bool live{false};
    std::shared_ptr<record_state> rec{};  // null: never recorded
  };
  static constexpr unsigned kEventSlotBits = 24;
  static constexpr std::size_t kEventSlots = std::size_t{1} << kEventSlotBits;
  static constexpr std::uint32_t kGenMask = (std::uint32_t{1} << 24U) - 1U;  // 48-bit numbers

  // The live slot `h` names, or null (unknown, destroyed, another device's or not an event). Under ev_mtx_.
  [[nodiscard]] event_slot* find_event(std::uintptr_t h) const noexcept
  {
    if (handle_tag(h) != kEventTag || handle_device(h) != (device_ & 0xFF)) { return nullptr; }
    std::uint64_t const n = handle_number(h);
    std::uint64_t const slot = n & (kEventSlots - 1);
    if (slot >= ev_slots_.size()) { return nullptr; }
    event_slot& es = ev_slots_[static_cast<std::size_t>(slot)];
    return es.live && es.gen == (n >> kEventSlotBits) ? &es : nullptr;
  }

  mutable std::mutex ev_mtx_;        // guards ev_slots_ and ev_free_
  mutable std::vector<event_slot> ev_slots_;  // Note [Event slots]
  std::vector<std::uint32_t> ev_free_;  // destroyed slots to reuse, most recent last

  mutable std::mutex link_mtx_;  // guards link_free_ and stats_
  std::array<tick, sim_link_count> link_free_{};  // ns since epoch_ when the link is free
  std::array<sim_link_stats, sim_link_count> stats_{};
};

}  // namespace

std::unique_ptr<sim_timeline> make_wall_timeline(sim_links const& links, timeline_options const& t)
{
  return std::make_unique<wall_timeline>(links, t);
}

}  // namespace tierpool::detail

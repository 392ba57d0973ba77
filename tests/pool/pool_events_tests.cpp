// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_events_tests.cpp — the pool's stream calls for the program (include/tierpool/event.hpp,
// the "events and host work" block of pool.hpp): events recorded, queried, synchronized and
// waited on across streams on the wall and the virtual clock, and after their pool is gone;
// host callables in stream order with captured (move-only) state, their exceptions
// rethrown by synchronize() or logged; misuse and backend failures with their messages;
// two streams on one tensor (order, record_stream) with bytes checked under eviction
// pressure; and many threads (more than cores) ordering streams at once.
#include "unit/pool_test_util.hpp"

#include <gtest/gtest.h>

#include <tierpool/event.hpp>
#include <tierpool/log.hpp>
#include <tierpool/pool.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tierpool::test {
namespace {

pool_options quiet(pool_options o)
{
  o.publish.enabled = false;
  return o;
}


/// A host callable that holds its stream until opened (as stream_gate, for enqueue_host).
struct gate {
  std::shared_ptr<std::atomic<bool>> open = std::make_shared<std::atomic<bool>>(false);
  [[nodiscard]] std::function<void()> hold() const
  {
    return [o = open] {
      auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!o->load() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    };
  }
  void release() const { open->store(true); }
};

/// Gives work that is wrongly not held back time to run (up to 100 ms, or until `done`):
/// a check after it that the work did not run then catches a missing wait on a busy machine.
template <class Done>
void grace(Done&& done)
{
  for (int i = 0; i < 100 && !done(); ++i) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }
}

/// Collects the library's messages while it lives.
struct log_capture {
  std::mutex mtx;
  std::vector<std::string> lines;
  log_level old = get_log_level();
  log_capture()
  {
    set_log_level(log_level::warning);
    set_log_sink([this](log_level, std::string_view m) {
      std::lock_guard lock(mtx);
      lines.emplace_back(m);
    });
  }
  log_capture(log_capture const&) = delete;
  log_capture& operator=(log_capture const&) = delete;
  ~log_capture()
  {
    set_log_sink({});
    set_log_level(old);
  }
  std::vector<std::string> taken()
  {
    std::lock_guard lock(mtx);
    return lines;
  }
  /// Waits (up to 10 s) for `n` messages: some come from a backend's worker thread.
  std::vector<std::string> wait_for(std::size_t n)
  {
    for (int i = 0; i < 10000 && taken().size() < n; ++i) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }
    return taken();
  }
};

// ---------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------

TEST(PoolEvents, RecordQuerySynchronizeOnTheWallClock)
{
  pool p{quiet(small_tiers(make_sim()))};
  stream_handle const s = p.create_stream();
  event e = p.create_event();
  ASSERT_TRUE(e.valid());
  EXPECT_NE(e.native_handle(), event_handle{});
  EXPECT_TRUE(e.query()) << "a never-recorded event counts as complete";
  gate g;
  p.enqueue_host(s, g.hold());
  e.record(s);
  EXPECT_FALSE(e.query()) << "the event completed before the work it follows";
  g.release();
  e.synchronize();
  EXPECT_TRUE(e.query());
  e.record();  // the default stream, idle
  e.synchronize();
  EXPECT_TRUE(e.query());
}

TEST(PoolEvents, WaitMakesAnotherStreamWaitNotTheHost)
{
  pool p{quiet(small_tiers(make_sim()))};
  stream_handle const a = p.create_stream();
  stream_handle const b = p.create_stream();
  std::mutex mtx;
  std::vector<int> order;
  auto note = [&](int v) {
    return [&order, &mtx, v] {
      std::lock_guard lock(mtx);
      order.push_back(v);
    };
  };
  for (bool const through_pool : {false, true}) {
    SCOPED_TRACE(through_pool ? "pool::wait" : "event::wait");
    order.clear();
    gate g;
    p.enqueue_host(a, g.hold());
    p.enqueue_host(a, note(1));
    event e = p.create_event();
    e.record(a);
    if (through_pool) {
      p.wait(b, e);
    } else {
      e.wait(b);
    }
    p.enqueue_host(b, note(2));
    event behind = p.create_event();
    behind.record(b);
    EXPECT_FALSE(behind.query()) << "b did not wait for a";  // the host was not held either: we are here
    g.release();
    p.synchronize(b);
    EXPECT_TRUE(behind.query());
    std::lock_guard lock(mtx);
    EXPECT_EQ(order, (std::vector<int>{1, 2}));
  }
}

TEST(PoolEvents, OnTheVirtualClockTheWaitingStreamStartsAfterTheEvent)
{
  auto be = make_sim(sim_clock_mode::virtual_clock);
  pool p{quiet(small_tiers(be))};
  stream_handle const a = p.create_stream();
  stream_handle const b = p.create_stream();
  ASSERT_EQ(be->compute_async(a, 1'000'000), status::ok);  // 1 ms of work on a
  event e = p.create_event();
  e.record(a);
  tick const done = be->stream_tail(a).value_or(0);
  EXPECT_EQ(be->event_time(e.native_handle()), done);
  EXPECT_FALSE(e.query());
  p.wait(b, e);
  ASSERT_EQ(be->compute_async(b, 10'000), status::ok);
  EXPECT_EQ(be->stream_tail(b).value_or(0), done + 10'000) << "b's work started before the event";
  tick const before = be->now();
  e.synchronize();
  EXPECT_TRUE(e.query());
  EXPECT_EQ(be->now(), std::max(before, done));
}

TEST(PoolEvents, AnEventOutlivesItsPool)
{
  event e;
  event e_closed;
  tensor keeps_pool_open;
  {
    pool p{quiet(small_tiers(make_sim()))};
    stream_handle const s = p.create_stream();
    e = p.create_event();
    e.record(s);
    {
      pool q{quiet(small_tiers(make_sim()))};
      keeps_pool_open = q.allocate(4_KiB);
      e_closed = q.create_event();
    }  // q is closed; its tensor keeps it from being gone
  }
  EXPECT_NO_THROW(e.synchronize());
  EXPECT_TRUE(e.query());
  EXPECT_EQ(logic_message([&] { e.record(); }),
            "event::record: the event's pool is gone (its pool object and every tensor handle were destroyed); "
            "record events of a live pool (query() and synchronize() still work)");
  EXPECT_EQ(logic_message([&] { e.wait(stream_handle{}); }),
            "event::wait: the event's pool is gone (its pool object and every tensor handle were destroyed); make "
            "streams wait on events of a live pool (query() and synchronize() still work)");
  EXPECT_EQ(logic_message([&] { e_closed.record(); }), "event::record: the pool is closed");
  EXPECT_TRUE(e_closed.query());
  event moved = std::move(e);
  EXPECT_FALSE(e.valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(moved.query());
}

TEST(PoolEvents, MisuseIsALogicErrorThatSaysWhatToDo)
{
  auto be = make_sim();
  pool p{quiet(small_tiers(be))};
  pool other{quiet(small_tiers(make_sim()))};
  stream_handle const s = p.create_stream();
  stream_handle foreign{};  // the backend's, never wrapped: the pool does not know it
  ASSERT_EQ(be->create_stream(&foreign), status::ok);
  event empty;
  EXPECT_FALSE(empty);
  std::string const empty_msg = ": empty event (default-constructed or moved from); make one with pool::create_event()";
  EXPECT_EQ(logic_message([&] { empty.record(s); }), "event::record" + empty_msg);
  EXPECT_EQ(logic_message([&] { (void)empty.query(); }), "event::query" + empty_msg);
  EXPECT_EQ(logic_message([&] { empty.synchronize(); }), "event::synchronize" + empty_msg);
  EXPECT_EQ(logic_message([&] { empty.wait(s); }), "event::wait" + empty_msg);
  EXPECT_EQ(logic_message([&] { p.wait(s, empty); }), "pool::wait" + empty_msg);

  event e = p.create_event();
  event theirs = other.create_event();
  EXPECT_EQ(logic_message([&] { p.wait(s, theirs); }),
            "pool::wait: the event belongs to another pool (or to one that is gone); wait on events made by this "
            "pool's create_event()");
  EXPECT_EQ(logic_message([&] { e.record(foreign); }),
            "event::record: unknown stream " + std::to_string(foreign.value) +
              " (not made by the pool's create_stream or wrap_native_stream, nor the default stream); use a stream "
              "of this pool");
  be->destroy_stream(foreign);
  stream_handle const gone = p.create_stream();
  p.destroy_stream(gone);
  EXPECT_EQ(logic_message([&] { e.record(gone); }),
            "event::record: unknown stream " + std::to_string(gone.value) + " (destroyed); use a stream of this pool");
  EXPECT_EQ(logic_message([&] { e.wait(gone); }),
            "event::wait: unknown stream " + std::to_string(gone.value) + " (destroyed); use a stream of this pool");
  EXPECT_EQ(logic_message([&] { p.enqueue_host(stream_handle{987654}, [] {}); }),
            "pool::enqueue_host: unknown stream 987654 (not made by the pool's create_stream or wrap_native_stream, "
            "nor the default stream); use a stream of this pool");
  p.close();
  EXPECT_EQ(logic_message([&] { (void)p.create_event(); }), "pool::create_event: the pool is closed");
  EXPECT_EQ(logic_message([&] { e.record(s); }), "event::record: the pool is closed");
  EXPECT_EQ(logic_message([&] { p.enqueue_host(s, [] {}); }), "pool::enqueue_host: the pool is closed");
  EXPECT_TRUE(e.query());
}

TEST(PoolEvents, ABackendFailureIsABackendErrorWithTheBackendsReason)
{
  auto be = make_sim();
  pool p{quiet(small_tiers(be))};
  stream_handle const s = p.create_stream();
  be->set_faults({.seed = 0, .rules = {{.kind = sim_call::event, .nth = 1}}});
  try {
    (void)p.create_event();
    ADD_FAILURE() << "no backend_error";
  } catch (backend_error const& e) {
    EXPECT_EQ(e.code(), status::injected_fault);
    std::string const what = e.what();
    EXPECT_EQ(what.rfind("pool::create_event: the sim backend failed: ", 0), 0U) << what;
    EXPECT_EQ(what.find("[injected_fault] [injected_fault]"), std::string::npos) << what;
  }
  event e = p.create_event();  // the rule fired once
  be->set_faults({.seed = 0, .rules = {{.kind = sim_call::event, .nth = 1}}});
  try {
    e.record(s);
    ADD_FAILURE() << "no backend_error";
  } catch (backend_error const& x) {
    EXPECT_EQ(std::string(x.what()).rfind("event::record: recording on stream " + std::to_string(s.value) +
                                            ": the sim backend failed: ",
                                          0),
              0U)
      << x.what();
  }
  be->clear_faults();
  bool ran = false;
  be->set_faults({.seed = 0, .rules = {{.kind = sim_call::host_func, .nth = 1}}});
  try {
    p.enqueue_host(s, [&ran] { ran = true; });
    ADD_FAILURE() << "no backend_error";
  } catch (backend_error const& x) {
    EXPECT_EQ(std::string(x.what()).rfind("pool::enqueue_host: the sim backend could not queue the callable on "
                                          "stream " + std::to_string(s.value) + ": ",
                                          0),
              0U)
      << x.what();
  }
  be->clear_faults();
  p.synchronize(s);
  EXPECT_FALSE(ran) << "a callable the backend refused ran";
}

// ---------------------------------------------------------------------------------------
// Host callables
// ---------------------------------------------------------------------------------------

TEST(PoolHostWork, CallablesRunInStreamOrderWithTheirStateAndDieAfter)
{
  for (auto clock : {sim_clock_mode::wall, sim_clock_mode::virtual_clock}) {
    SCOPED_TRACE(clock == sim_clock_mode::wall ? "wall clock" : "virtual clock");
    pool p{quiet(small_tiers(make_sim(clock)))};
    stream_handle const s = p.create_stream();
    std::vector<int> seen;  // written by the stream's thread only, read after synchronize
    auto token = std::make_shared<int>(7);
    std::weak_ptr<int> const watch = token;
    p.enqueue_host(s, [&seen, t = std::move(token)] { seen.push_back(*t); });              // copyable, shared state
    p.enqueue_host(s, [&seen, u = std::make_unique<int>(8)] { seen.push_back(*u); });      // move-only
    std::function<void()> f = [&seen] { seen.push_back(9); };
    p.enqueue_host(s, f);                                                                 // a std::function, copied
    p.enqueue_host(s, std::move(f));
    struct functor {
      std::vector<int>* out;
      void operator()() const { out->push_back(10); }
    };
    p.enqueue_host(s, functor{&seen});
    p.synchronize(s);
    EXPECT_EQ(seen, (std::vector<int>{7, 8, 9, 9, 10}));
    EXPECT_TRUE(watch.expired()) << "the callable was not destroyed after it ran";
  }
}

// A callable queued after a lease's acquire sees the bytes the pool copied in for it: the
// stream waits for the copy, and the callable comes after in stream order.
TEST(PoolHostWork, ACallableSeesTheBytesOfALeaseAcquiredBeforeIt)
{
  four_resident f;  // t4..t7 in pinned_host: acquiring one copies it in
  auto& p = f.p;
  std::atomic<int> good{0};
  for (std::uint64_t i = 4; i < 8; ++i) {
    lease l = p.acquire(f.t[i], access_mode::read, f.s);
    p.enqueue_host(f.s, [&good, ptr = l.data(), n = l.bytes(), i] { good += has_pattern(ptr, n, i, 1) ? 1 : 0; });
  }
  p.synchronize(f.s);
  EXPECT_EQ(good.load(), 4);
  EXPECT_TRUE(p.validate());
}

struct not_a_std_exception {
  int code;
};

TEST(PoolHostWork, AnExceptionIsRethrownBySynchronizeAndLaterWorkStillRuns)
{
  for (auto clock : {sim_clock_mode::wall, sim_clock_mode::virtual_clock}) {
    SCOPED_TRACE(clock == sim_clock_mode::wall ? "wall clock" : "virtual clock");
    pool p{quiet(small_tiers(make_sim(clock)))};
    stream_handle const s = p.create_stream();
    std::atomic<int> after{0};
    p.enqueue_host(s, [] { throw std::out_of_range("boom"); });
    p.enqueue_host(s, [&after] { ++after; });
    try {
      p.synchronize(s);
      ADD_FAILURE() << "synchronize did not rethrow";
    } catch (std::out_of_range const& e) {  // the callable's own type
      EXPECT_STREQ(e.what(), "boom");
    }
    EXPECT_EQ(after.load(), 1);
    EXPECT_NO_THROW(p.synchronize(s)) << "reported once";
    EXPECT_NO_THROW(p.synchronize(stream_handle{}));  // another stream's synchronize never sees it

    // Several: the first is rethrown, a warning counts the others.
    log_capture logs;
    p.enqueue_host(s, [] { throw not_a_std_exception{1}; });
    p.enqueue_host(s, [] { throw std::runtime_error("second"); });
    p.enqueue_host(s, [] { throw std::runtime_error("third"); });
    try {
      p.synchronize(s);
      ADD_FAILURE() << "synchronize did not rethrow";
    } catch (not_a_std_exception const& e) {
      EXPECT_EQ(e.code, 1);
    }
    EXPECT_EQ(logs.taken(), (std::vector<std::string>{
                              "tierpool: pool::synchronize: 3 host callables on stream " + std::to_string(s.value) +
                              " threw since the last synchronize; the first is rethrown, the other 2 are dropped; "
                              "synchronize more often to see each"}));
    EXPECT_NO_THROW(p.synchronize(s));
  }
}

TEST(PoolHostWork, AnExceptionNoSynchronizeCanReportIsLogged)
{
  log_capture logs;
  std::string const tail = "; call pool::synchronize(stream) before destroying the stream or the pool to get the exception";
  {
    pool p{quiet(small_tiers(make_sim()))};
    // Thrown, then the stream destroyed without a synchronize.
    stream_handle const s1 = p.create_stream();
    p.enqueue_host(s1, [] { throw std::runtime_error("one"); });
    p.enqueue_host(s1, [] { throw std::runtime_error("one more"); });
    event e = p.create_event();
    e.record(s1);
    e.synchronize();
    p.destroy_stream(s1);
    auto got = logs.wait_for(1);
    ASSERT_EQ(got.size(), 1U);
    EXPECT_EQ(got[0], "tierpool: a host callable (pool::enqueue_host) on stream " + std::to_string(s1.value) +
                        " threw 'one' (and 1 more after it) before pool::destroy_stream, and no "
                        "pool::synchronize(stream) reported it" + tail);

    // Thrown after the stream was destroyed (the callable was queued behind a gate).
    stream_handle const s2 = p.create_stream();
    gate g;
    p.enqueue_host(s2, g.hold());
    p.enqueue_host(s2, [] { throw std::runtime_error("two"); });
    p.destroy_stream(s2);  // returns at once; the queued work still runs
    g.release();
    got = logs.wait_for(2);
    ASSERT_EQ(got.size(), 2U);
    EXPECT_EQ(got[1], "tierpool: a host callable (pool::enqueue_host) on stream " + std::to_string(s2.value) +
                        " threw 'two' after its stream was destroyed or its pool ended" + tail);

    // Thrown, and the pool ends first.
    p.enqueue_host(stream_handle{}, [] { throw 3; });
    event d = p.create_event();
    d.record();
    d.synchronize();
  }
  auto const got = logs.wait_for(3);
  ASSERT_EQ(got.size(), 3U);
  EXPECT_EQ(got[2], "tierpool: a host callable (pool::enqueue_host) on stream 0 threw an exception not derived from "
                    "std::exception before its pool ended, and no pool::synchronize(stream) reported it" + tail);
}

// ---------------------------------------------------------------------------------------
// Two streams on one tensor
// ---------------------------------------------------------------------------------------

// A writer on stream a, still held (a kernel running after its lease ended), then a reader
// on stream b. Without order() the reader runs at once and sees the old bytes; with it, b
// waits for the writer (the host does not) and the reader sees the new bytes.
TEST(PoolOrder, AReaderOnAnotherStreamWaitsForTheWriter)
{
  for (bool const ordered : {false, true}) {
    SCOPED_TRACE(ordered ? "order(t, a, b)" : "no order (the hazard it removes)");
    pool p{quiet(small_tiers(make_sim()))};
    stream_handle const a = p.create_stream();
    stream_handle const b = p.create_stream();
    tensor t = p.allocate(64_KiB, {.name = "t"});
    fill(p, t, 1, 1);
    gate g;
    {
      lease w = p.acquire(t, access_mode::read_write, a);
      p.enqueue_host(a, g.hold());
      p.enqueue_host(a, [ptr = w.data(), n = w.bytes()] { write_pattern(ptr, n, 1, 2); });
    }
    if (ordered) { p.order(t, a, b); }
    std::atomic<int> saw{-1};
    {
      lease r = p.acquire(t, access_mode::read, b);
      p.enqueue_host(b, [&saw, ptr = r.data(), n = r.bytes()] { saw = has_pattern(ptr, n, 1, 2) ? 2 : has_pattern(ptr, n, 1, 1) ? 1 : 0; });
    }
    event behind = p.create_event();
    behind.record(b);
    if (ordered) {
      grace([&] { return saw.load() != -1; });
      EXPECT_EQ(saw.load(), -1) << "the reader on b ran while the writer on a was held";
      EXPECT_FALSE(behind.query()) << "b did not wait for the writer on a";
      g.release();
      p.synchronize(b);
      EXPECT_EQ(saw.load(), 2) << "the reader on b did not see the writer's bytes";
    } else {
      p.synchronize(b);  // b waits for nothing: the writer is still held
      EXPECT_EQ(saw.load(), 1) << "without order() the reader ran before the writer";
      g.release();
    }
    p.synchronize(a);
    EXPECT_TRUE(check(p, t, 1, 2));
    EXPECT_TRUE(p.validate());
  }
}

// order() waits for the tensor's use on `from`, not for everything there: a tensor the pool
// knows no use of on `from` orders nothing, and b goes on while a is held.
TEST(PoolOrder, ATensorWithoutAUseOnFromOrdersNothing)
{
  pool p{quiet(small_tiers(make_sim()))};
  stream_handle const a = p.create_stream();
  stream_handle const b = p.create_stream();
  tensor t = p.allocate(64_KiB);
  fill(p, t, 3, 1);
  { lease r = p.acquire(t, access_mode::read, b); }
  gate g;
  p.enqueue_host(a, g.hold());
  p.order(t, a, b);
  p.order(t, b, b);  // a no-op
  event behind = p.create_event();
  behind.record(b);
  behind.synchronize();  // would hang (60 s, then fail below) had b waited for a
  event on_a = p.create_event();
  on_a.record(a);
  EXPECT_FALSE(on_a.query()) << "the gate gave up: b waited for a";
  g.release();
  p.synchronize(a);
}

// The writer on a, the reader on b after order(), then eviction pressure: the tensor's
// device copy is dirty, so evicting it writes it back behind the writer, and its block is
// reused only after the reader on b. While the writer is held nothing moves.
TEST(PoolOrder, UnderEvictionTheBlockWaitsForTheWriterAndTheReader)
{
  four_resident f;
  auto& p = f.p;
  stream_handle const a = p.create_stream();
  stream_handle const b = p.create_stream();
  std::vector<lease> pinned;  // t1..t3: t0 is the only victim
  for (std::size_t i = 1; i < 4; ++i) { pinned.push_back(p.acquire(f.t[i], access_mode::read, f.s)); }
  gate g;
  {
    lease w = p.acquire(f.t[0], access_mode::read_write, a);
    p.enqueue_host(a, g.hold());
    p.enqueue_host(a, [ptr = w.data(), n = w.bytes()] { write_pattern(ptr, n, 0, 2); });
  }
  p.order(f.t[0], a, b);
  std::atomic<int> saw{-1};
  {
    lease r = p.acquire(f.t[0], access_mode::read, b);
    p.enqueue_host(b, [&saw, ptr = r.data(), n = r.bytes()] { saw = has_pattern(ptr, n, 0, 2) ? 1 : 0; });
  }
  p.prefetch(f.t[4]);  // evicts t0 (writing it back behind the writer); t4 waits for the block
  grace([&] { return saw.load() != -1; });
  pool_stats const st = p.stats();
  EXPECT_EQ(saw.load(), -1) << "the reader ran before the writer";
  EXPECT_EQ(st.prefetches, 0U) << "t4 was copied into t0's block before the reader on b was done";
  EXPECT_EQ(st.tiers[0].in_flight_bytes, 256_KiB) << "t0's block does not wait for its last uses";
  g.release();
  p.synchronize(a);
  p.synchronize(b);
  EXPECT_EQ(saw.load(), 1) << "the reader on b did not see the writer's bytes";
  pinned.clear();
  p.synchronize(f.s);
  EXPECT_TRUE(check(p, f.t[0], 0, 2)) << "the write-back did not carry the writer's bytes";
  for (std::uint64_t i = 1; i < 8; ++i) { EXPECT_TRUE(check(p, f.t[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
}

// A lease taken on stream a whose bytes the program also reads on stream b (no lease
// there): record_stream(lease, b) keeps the block from reuse until b's reader is done.
// record_stream comes before the reader is queued: the use is stamped at the lease's end.
TEST(PoolRecordStream, TheBlockIsNotReusedBeforeTheRecordedStreamsWork)
{
  four_resident f;
  auto& p = f.p;
  stream_handle const b = p.create_stream();
  std::vector<lease> pinned;  // t1..t3: t0 is the only victim
  for (std::size_t i = 1; i < 4; ++i) { pinned.push_back(p.acquire(f.t[i], access_mode::read, f.s)); }
  gate g;
  std::atomic<int> saw{-1};
  {
    lease l = p.acquire(f.t[0], access_mode::read, f.s);
    p.record_stream(l, b);
    p.record_stream(l, f.s);  // the lease's own stream: a no-op
    p.enqueue_host(b, g.hold());
    p.enqueue_host(b, [&saw, ptr = l.data(), n = l.bytes()] { saw = has_pattern(ptr, n, 0, 1) ? 1 : 0; });
  }
  p.prefetch(f.t[4]);  // evicts t0 (clean: dropped); its block waits for b
  // Every other use of the block is over: pool calls that serve the queued prefetch would
  // take the block now if the pool did not know of b's reader.
  p.synchronize(f.s);
  grace([&] {
    { lease x = p.acquire(f.t[1], access_mode::read, f.s); }
    return p.stats().prefetches != 0;
  });
  pool_stats const st = p.stats();
  EXPECT_EQ(st.prefetches, 0U) << "t4 was copied into t0's block while b still reads it";
  EXPECT_EQ(st.prefetch_queued, 1U);
  EXPECT_EQ(st.tiers[0].in_flight_bytes, 256_KiB) << "t0's block does not wait for b";
  EXPECT_EQ(saw.load(), -1);
  g.release();
  p.synchronize(b);
  EXPECT_EQ(saw.load(), 1) << "t0's block was reused under the reader on b";
  pinned.clear();
  p.synchronize(f.s);
  for (std::uint64_t i = 0; i < 8; ++i) { EXPECT_TRUE(check(p, f.t[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
}

// A use recorded with record_stream is stamped when the copy's last lease ends, not when
// an earlier lease on that same stream ends: here lease x on a ends first (and a mark on a
// covers its use at once), then the program reads lease y's bytes on a (recorded there),
// then y ends. The block must wait for that later reader on a.
TEST(PoolRecordStream, AnEarlierLeaseEndingDoesNotStampTheRecordedUse)
{
  four_resident f;
  auto& p = f.p;
  stream_handle const a = p.create_stream();
  stream_handle const b = p.create_stream();
  stream_handle const c = p.create_stream();
  std::vector<lease> pinned;  // t1..t3: t0 is the only victim
  for (std::size_t i = 1; i < 4; ++i) { pinned.push_back(p.acquire(f.t[i], access_mode::read, f.s)); }
  lease x = p.acquire(f.t[0], access_mode::read, a);
  lease y = p.acquire(f.t[0], access_mode::read, b);
  p.record_stream(y, a);
  x.release();           // a's own lease ends: it must not stamp the use y recorded on a
  p.order(f.t[0], a, c);  // records a mark on a now (y is live), complete at once
  p.synchronize(a);
  gate g;
  std::atomic<int> saw{-1};
  p.enqueue_host(a, g.hold());
  p.enqueue_host(a, [&saw, ptr = y.data(), n = y.bytes()] { saw = has_pattern(ptr, n, 0, 1) ? 1 : 0; });
  y.release();
  p.prefetch(f.t[4]);  // evicts t0 (clean: dropped); its block waits for the reader on a
  p.synchronize(f.s);
  p.synchronize(b);
  grace([&] {
    { lease z = p.acquire(f.t[1], access_mode::read, f.s); }
    return p.stats().prefetches != 0;
  });
  EXPECT_EQ(p.stats().prefetches, 0U) << "t4 was copied into t0's block while a still reads it";
  g.release();
  p.synchronize(a);
  EXPECT_EQ(saw.load(), 1) << "t0's block was reused under the reader on a";
  pinned.clear();
  p.synchronize(f.s);
  for (std::uint64_t i = 0; i < 8; ++i) { EXPECT_TRUE(check(p, f.t[i], i, 1)) << i; }
  EXPECT_TRUE(p.validate());
}

TEST(PoolRecordStream, MisuseIsALogicError)
{
  pool p{quiet(small_tiers(make_sim()))};
  pool other{quiet(small_tiers(make_sim()))};
  tensor t = p.allocate(4_KiB);
  tensor u = other.allocate(4_KiB);
  lease ended;
  EXPECT_EQ(logic_message([&] { p.record_stream(ended, stream_handle{}); }),
            "pool::record_stream: the lease has ended (released or moved from); record streams on a live lease");
  lease theirs = other.acquire(u, access_mode::read);
  EXPECT_EQ(logic_message([&] { p.record_stream(theirs, stream_handle{}); }),
            "pool::record_stream: the lease belongs to another pool; call record_stream on the pool that made it");
  lease l = p.acquire(t, access_mode::read);
  EXPECT_EQ(logic_message([&] { p.record_stream(l, stream_handle{424242}); }),
            "pool::record_stream: unknown stream 424242 (not made by the pool's create_stream or wrap_native_stream, "
            "nor the default stream); use a stream of this pool");
  EXPECT_EQ(logic_message([&] { p.order(t, stream_handle{}, stream_handle{424242}); }),
            "pool::order: unknown stream 424242 (not made by the pool's create_stream or wrap_native_stream, nor the "
            "default stream); use a stream of this pool");
  EXPECT_EQ(logic_message([&] { p.order(u, stream_handle{}, stream_handle{}); }),
            "pool::order: the tensor belongs to another pool");
  tensor empty;
  EXPECT_EQ(logic_message([&] { p.order(empty, stream_handle{}, stream_handle{}); }),
            "pool::order: empty tensor handle (moved from or freed)");
  // A host lease: its bytes used on a stream (a copy from them, say) are kept for it too.
  stream_handle const s = p.create_stream();
  {
    lease h = p.acquire_host(t, access_mode::read);
    p.record_stream(h, s);
  }
  EXPECT_TRUE(p.validate());
}

// ---------------------------------------------------------------------------------------
// Many threads
// ---------------------------------------------------------------------------------------

// More threads than cores, each with two streams of its own and two tensors, on a device
// tier that holds about half the tensors: each round writes a tensor on stream a (a host
// callable after its lease ended), orders b after it (order(), an event, or pool::wait,
// by round), reads it on b and checks every byte there, and reads it on a's lease through
// record_stream(b) as well. Eviction moves the tensors between rounds.
//
// Every thread's tensors are made before any thread starts and live until all have ended:
// made inside the threads, a thread scheduled late could find the others' tensors already
// freed, and a run could end without a single eviction (it did, once in 200 runs, in CI).
TEST(PoolEventsThreads, ManyThreadsOrderTheirStreamsUnderEviction)
{
  unsigned const n_threads = std::max(6U, 3 * std::thread::hardware_concurrency());
  constexpr std::size_t kBytes = 32_KiB;
  constexpr int kRounds = 40;
  auto be = make_sim();
  // device: room for one leased tensor per thread and two more, of two per thread.
  pool p{quiet(small_tiers(be, kBytes * (n_threads + 2), 0, 64_MiB))};
  std::vector<std::vector<tensor>> tensors(n_threads);
  for (unsigned i = 0; i < n_threads; ++i) {
    for (std::uint64_t k = 0; k < 2; ++k) {
      tensors[i].push_back(p.allocate(kBytes));
      fill(p, tensors[i].back(), i * 2 + k, 0);
    }
  }
  // 2n tensors, room for n + 2: the rounds must evict, whatever order the threads run in.
  std::uint64_t const evictions_before = p.stats().tiers[0].evictions;
  std::atomic<int> bad{0};
  auto const body = [&](unsigned i) {
    stream_handle const a = p.create_stream();
    stream_handle const b = p.create_stream();
    std::vector<tensor> const& ts = tensors[i];
    event e = p.create_event();
    for (int r = 1; r <= kRounds; ++r) {
      tensor const& t = ts[static_cast<std::size_t>(r) % 2];
      std::uint64_t const key = i * 2 + static_cast<std::uint64_t>(r % 2);
      auto const v = static_cast<std::uint32_t>(r);
      {
        lease w = p.acquire(t, access_mode::write_discard, a);
        p.enqueue_host(a, [ptr = w.data(), n = w.bytes(), key, v] { write_pattern(ptr, n, key, v); });
        p.record_stream(w, b);
        p.enqueue_host(b, [] {});  // nothing reads w's bytes on b: record_stream must not hurt
      }
      switch (r % 3) {
        case 0: p.order(t, a, b); break;
        case 1:
          e.record(a);
          e.wait(b);
          break;
        default:
          e.record(a);
          p.wait(b, e);
          break;
      }
      {
        lease rd = p.acquire(t, access_mode::read, b);
        p.enqueue_host(b, [&bad, ptr = rd.data(), n = rd.bytes(), key, v] {
          if (!has_pattern(ptr, n, key, v)) { ++bad; }
        });
      }
      if (r % 8 == 0) {
        p.synchronize(a);
        p.synchronize(b);
      }
    }
    p.synchronize(a);
    p.synchronize(b);
    for (std::uint64_t k = 0; k < 2; ++k) {
      auto const last = static_cast<std::uint32_t>(kRounds - (kRounds % 2 == static_cast<int>(k) ? 0 : 1));
      if (!check(p, ts[k], i * 2 + k, last)) { ++bad; }
    }
    p.destroy_stream(a);
    p.destroy_stream(b);
  };
  EXPECT_EQ(run_threads(n_threads, body), 0);
  EXPECT_EQ(bad.load(), 0) << "a reader on b saw bytes other than the writer's on a";
  EXPECT_GT(p.stats().tiers[0].evictions, evictions_before) << "no eviction pressure during the rounds";
  EXPECT_TRUE(p.validate());
  tensors.clear();
  EXPECT_TRUE(p.validate());
}

}  // namespace
}  // namespace tierpool::test

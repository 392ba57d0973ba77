// Note [Device times measured with events]
//   Rationale: the planner's copy-ins at the latest start (Note [Copy-ins at the latest
//   start], pool_impl.cpp) need two device times: the compute the program queues between
//   accesses, and the h2d queue ahead of the stream. The sim's virtual clock knows both ahead
//   (backend::known_stream_time). A GPU does not: the host runs ahead of the device, and a
//   device time is known only once the work has run.
//   Approach (where the backend times events: backend::event_elapsed, cudaEventElapsedTime):
//   - At a planned acquire's start the pool records an event on its stream (mark), after the
//     program's kernels; when the access is told, after the acquire queued its own waits for
//     copy-ins, another. The compute before an access is the time from the stream's event at
//     its access before to this acquire's first: the program's kernels, not the pool's waits.
//   - Each pair is read once both events have completed (resolve, at every planner step,
//     oldest first; the first not completed ends it), and its time goes into the forecast at
//     the access's position (plan_predictor::set_compute). The accesses ahead take their
//     counterparts' one period back, which a period later have completed: the same figures
//     the virtual clock gives at once.
//   - The h2d queue: each told access also records an event on every h2d copy stream with the
//     bytes queued on them so far; once those complete, that many bytes are known copied. The
//     backlog is the bytes queued and not known copied over the link's bandwidth, counted from
//     now rather than from the stream's point, which lies later when the host runs ahead: an
//     overestimate, and a copy-in estimated late goes at once (timing off), never later.
//   - Events come from a free list and go back once read; at most 4096 pairs and marks wait,
//     the oldest dropped past that (a host that never waits completes nothing it can read).
//   - Only where backend_caps::timed_events (CUDA, the sim's virtual clock with
//     sim_options::hide_device_times); the sim's wall clock does not time events.
//   Limitations: two event records per planned acquire and one per h2d stream (a few
//   microseconds on a GPU); on the virtual clock an event completes only when the host waits,
//   so a replay, which never waits, measures nothing and runs as with timing off.
#include "core/detail/device_timer.hpp"

#include <algorithm>

namespace tierpool::detail {

device_timer::~device_timer()
{
  std::lock_guard const lock(mtx_);
  for (auto& p : pending_) {
    be_->destroy_event(p.from);
    be_->destroy_event(p.to);
  }
  for (auto& m : marks_) {
    for (event_handle e : m.events) { be_->destroy_event(e); }
  }
  for (auto& [s, e] : last_told_) { be_->destroy_event(e); }
  for (event_handle e : free_) { be_->destroy_event(e); }
}

event_handle device_timer::take_locked() noexcept
{
  if (!free_.empty()) {
    event_handle const e = free_.back();
    free_.pop_back();
    return e;
  }
  event_handle e{};
  if (be_->create_timed_event(&e) != status::ok) { return event_handle{}; }
  return e;
}

void device_timer::give_locked(event_handle e) noexcept
{
  if (!e) { return; }
  try {
    free_.push_back(e);
  } catch (...) {
    be_->destroy_event(e);
  }
}

event_handle device_timer::record_locked(stream_handle s) noexcept
{
  event_handle const e = take_locked();
  if (!e) { return e; }
  if (be_->record_event(e, s) != status::ok) {
    give_locked(e);
    return event_handle{};
  }
  return e;
}

event_handle device_timer::mark(stream_handle s) noexcept
{
  std::lock_guard const lock(mtx_);
  return record_locked(s);
}

void device_timer::drop(event_handle e) noexcept
{
  std::lock_guard const lock(mtx_);
  give_locked(e);
}

void device_timer::told(stream_handle s, event_handle began, std::uint64_t position,
                        std::span<stream_handle const> h2d, std::uint64_t h2d_queued) noexcept
{
  std::lock_guard const lock(mtx_);
  event_handle const now = record_locked(s);
  auto it = std::find_if(last_told_.begin(), last_told_.end(), [&](auto const& e) { return e.first == s.value; });
  event_handle before{};
  try {
    if (it == last_told_.end()) {
      if (last_told_.size() >= 64) {  // streams come and go: bounded
        for (auto& [x, e] : last_told_) { give_locked(e); }
        last_told_.clear();
      }
      last_told_.emplace_back(s.value, now);
    } else {
      before = std::exchange(it->second, now);
    }
  } catch (...) {  // bad_alloc: this stream's point is not kept
    give_locked(now);
  }
  try {
    if (before && began) {
      pending_.push_back(pair{before, began, position});
    } else {
      give_locked(before);
      give_locked(began);
    }
    while (pending_.size() > kMaxPending) {
      give_locked(pending_.front().from);
      give_locked(pending_.front().to);
      pending_.pop_front();
    }
    h2d_mark m;
    m.bytes = h2d_queued;
    for (stream_handle const c : h2d) {
      if (event_handle const e = record_locked(c)) { m.events.push_back(e); }
    }
    marks_.push_back(std::move(m));
    while (marks_.size() > kMaxPending) {
      for (event_handle e : marks_.front().events) { give_locked(e); }
      marks_.pop_front();
    }
  } catch (...) {  // bad_alloc: this access goes unmeasured
    give_locked(before);
    give_locked(began);
  }
}

void device_timer::resolve(std::function<void(std::uint64_t, tick)> const& fn) noexcept
{
  std::lock_guard const lock(mtx_);
  while (!pending_.empty()) {
    pair const& p = pending_.front();
    tick ns = 0;
    status const st = be_->event_elapsed(p.from, p.to, &ns);
    if (st == status::not_ready) { break; }
    if (st == status::not_supported) { usable_.store(false, std::memory_order_relaxed); }  // caps said otherwise
    if (st == status::ok) {
      fn(p.position, ns);
      measured_.fetch_add(1, std::memory_order_relaxed);
    }
    give_locked(p.from);
    give_locked(p.to);
    pending_.pop_front();
  }
  while (!marks_.empty()) {
    h2d_mark& m = marks_.front();
    bool done = true;
    for (event_handle e : m.events) { done = done && be_->query_event(e) == status::ok; }
    if (!done) { break; }
    if (m.bytes > copied_in_.load(std::memory_order_relaxed)) { copied_in_.store(m.bytes, std::memory_order_relaxed); }
    for (event_handle e : m.events) { give_locked(e); }
    marks_.pop_front();
  }
}

}  // namespace tierpool::detail

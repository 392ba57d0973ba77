// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// sim_backend.cpp — the sim backend's facade: option checking, caps(), argument and
// handle validation, fault injection, last_error(), and dispatch to the memory registry
// (sim_memory.cpp) and to the clock engine (wall_timeline.cpp / virtual_timeline.cpp).
// Main entry points: make_sim_backend, sim_backend::sim_backend.
//
// Every fallible call follows the same order, so that a failure has no side effect:
//   1. validate arguments and handles          -> invalid_value / not_supported, not counted
//   2. faults_.check(kind)                     -> injected_fault, counted, nothing done
//   3. the effect (allocate / enqueue)         -> ok / out_of_memory
#include <tierpool/backends/sim_backend.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fault_injector.hpp"
#include "sim_memory.hpp"
#include "sim_timeline.hpp"

namespace tierpool {

namespace {

/// Last failure per thread; `owner` scopes it to one backend instance. Owners are ids,
/// not addresses: a new backend may reuse a destroyed one's address.
struct error_slot {
  std::uint64_t owner{0};
  std::string text;
};
thread_local error_slot tl_error;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
std::atomic<std::uint64_t> next_backend_id{1};  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

std::string format_bytes(std::size_t b)
{
  if (b != 0 && b % (1_GiB) == 0) {
    return std::to_string(b / 1_GiB) + " GiB";
  }
  if (b != 0 && b % (1_MiB) == 0) {
    return std::to_string(b / 1_MiB) + " MiB";
  }
  if (b != 0 && b % 1'000'000'000U == 0) {
    return std::to_string(b / 1'000'000'000U) + " GB";
  }
  return std::to_string(b) + " B";
}

bool valid_kind(tier_kind k) noexcept { return static_cast<std::size_t>(k) < tier_kind_count; }

void check_link(link_model const& l, char const* name)
{
  if (!std::isfinite(l.bandwidth_bytes_per_s) || l.bandwidth_bytes_per_s < 0.0) {
    detail::throw_logic_error(__FILE__, __LINE__,
                              std::string("sim_options.links.") + name +
                                ": bandwidth must be finite and >= 0 bytes/s");
  }
}

sim_options resolve(sim_options o)
{
  if (o.device_bytes == 0) {
    detail::throw_logic_error(__FILE__, __LINE__, "sim_options.device_bytes must be > 0");
  }
  if (o.device_ordinal < 0 || o.device_ordinal > 255) {
    detail::throw_logic_error(__FILE__, __LINE__,
                              "sim_options.device_ordinal must be in 0..255 (a simulated device), got " +
                                std::to_string(o.device_ordinal));
  }
  if (!o.links) {
    o.links = o.clock == sim_clock_mode::virtual_clock ? sim_links::from_host_link(link_model::pcie4())
                                                       : sim_links::unthrottled();
  }
  check_link(o.links->h2d, "h2d");
  check_link(o.links->d2h, "d2h");
  check_link(o.links->d2d, "d2d");
  check_link(o.links->h2h, "h2h");
  check_link(o.links->s2h, "s2h");
  check_link(o.links->h2s, "h2s");
  detail::fault_injector::validate(o.faults);
  return o;
}

backend_caps make_caps(sim_options const& o)
{
  backend_caps c;
  c.name = "sim";
  c.device_name = !o.device_name.empty()
                    ? o.device_name
                    : "simulated device " + (o.device_ordinal != 0 ? std::to_string(o.device_ordinal) + " " : std::string()) +
                        "(" + format_bytes(o.device_bytes) + ", " +
                        (o.memory == sim_memory_mode::real ? "real memory" : "phantom memory") + ", " +
                        (o.clock == sim_clock_mode::wall ? "wall clock" : "virtual clock") + ")";
  c.device_ordinal = o.device_ordinal;
  c.device_bytes = o.device_bytes;
  c.pinned_host_bytes = o.pinned_host_bytes;
  c.managed_bytes = o.managed_bytes;
  c.allocation_alignment = detail::sim_alignment;
  c.copy_granularity = detail::sim_alignment;
  c.real_memory = o.memory == sim_memory_mode::real;
  c.virtual_clock = o.clock == sim_clock_mode::virtual_clock;
  c.timed_events = c.virtual_clock;  // a wall clock does not time events
  c.has_managed = o.managed_bytes > 0;
  // Managed memory is host memory here, so the host may always touch it; the option models
  // a GPU where it may not (and where, as there, prefetch and advice are not supported).
  c.concurrent_managed_access = o.managed_bytes > 0 && o.concurrent_managed_access;
  c.has_managed_prefetch = c.concurrent_managed_access;
  c.managed_shares_device = o.managed_shares_device;
  c.has_numa_binding = false;
  c.max_copy_streams = o.max_copy_streams;
  c.host_numa_node = -1;
  return c;
}

}  // namespace

// Note [Simulated capture]
//   begin_capture / end_capture (sim_backend.hpp) let the capture rules of the pool be
//   tested without a GPU. The facade keeps the captures: while a stream is captured, the
//   copies, kernels and host functions queued on it are recorded (validated and counted,
//   not run) and replayed by launch_graph; the calls CUDA forbids during a capture in
//   thread-local mode (host waits and event queries on the capturing thread, anything on
//   the stream that is not captured) fail with invalid_value and invalidate it, so that a
//   test sees the first forbidden call in end_capture's last_error(). With no capture
//   underway every call pays one relaxed load (`captures`).
namespace {

struct captured_op {
  enum class op : std::uint8_t { transfer, compute, host_func };
  op kind{op::compute};
  sim_link link{sim_link::h2d};
  std::size_t bytes{0};
  detail::sim_effect effect{};
  tick duration{0};
  host_fn fn{nullptr};
  void* user_data{nullptr};
};

struct capture_state {
  std::thread::id thread;           // the thread that began it (thread-local mode)
  std::vector<captured_op> ops;     // in capture order
  std::string invalidated;          // the first forbidden call; empty: still valid
};

}  // namespace

struct sim_backend::impl {
  explicit impl(sim_options o)
    : opts(resolve(std::move(o))),
      caps(make_caps(opts)),
      mem(opts.memory, {opts.device_bytes, opts.pinned_host_bytes, opts.managed_bytes, 0}, opts.device_ordinal),
      timeline(opts.clock == sim_clock_mode::wall
                 ? detail::make_wall_timeline(*opts.links, {opts.device_ordinal, opts.serialize_host_functions,
                                                            opts.inline_idle_copies})
                 : detail::make_virtual_timeline(*opts.links, {opts.device_ordinal, opts.serialize_host_functions,
                                                               opts.inline_idle_copies, opts.record_spans})),
      vt(dynamic_cast<detail::virtual_timeline_ops*>(timeline.get())),
      charge_host(vt != nullptr && !opts.host_costs.none())
  {
    faults.set(opts.faults);
  }

  /// ": a stream of simulated device 1 (this is simulated device 0)" when `h` carries
  /// `tag` and another device's ordinal; "" otherwise.
  std::string foreign(std::uintptr_t h, std::uintptr_t tag, char const* what) const
  {
    if (h == 0 || detail::handle_tag(h) != tag || detail::handle_device(h) == opts.device_ordinal) { return {}; }
    return std::string(": ") + what + " of simulated device " + std::to_string(detail::handle_device(h)) +
           " (this backend is simulated device " + std::to_string(opts.device_ordinal) + ")";
  }
  /// The same for a pointer: only phantom addresses name their device.
  std::string foreign(void const* p) const
  {
    if (opts.memory != sim_memory_mode::phantom) { return {}; }
    int const d = detail::sim_memory::phantom_device(p);
    if (d < 0 || d == opts.device_ordinal) { return {}; }
    return " (it is memory of simulated device " + std::to_string(d) + "; this backend is simulated device " +
           std::to_string(opts.device_ordinal) + ")";
  }

  // ---- captures (Note [Simulated capture]) ----
  /// True when `s` is being captured.
  bool capturing_stream(stream_handle s) const noexcept
  {
    if (captures.load(std::memory_order_acquire) == 0) { return false; }
    std::lock_guard lock(cap_mtx);
    return capturing.contains(s.value);
  }
  /// A call CUDA forbids during a capture: on the capturing thread (every such call) or on
  /// `named` (a stream being captured). Invalidates those captures and returns
  /// invalid_value (recorded); ok when nothing is being captured that forbids it.
  status forbid_during_capture(char const* fn, stream_handle const* named) const noexcept
  {
    if (captures.load(std::memory_order_acquire) == 0) { return status::ok; }
    std::uintptr_t hit = 0;
    bool found = false;
    {
      std::lock_guard lock(cap_mtx);
      auto const self = std::this_thread::get_id();
      for (auto& [h, c] : capturing) {
        if (c.thread != self && (named == nullptr || named->value != h)) { continue; }
        if (c.invalidated.empty()) {
          try {
            c.invalidated = fn;
          } catch (...) {
            c.invalidated = "?";  // short: fits the small-string buffer
          }
        }
        hit = h;
        found = true;
      }
    }
    if (!found) { return status::ok; }
    violations.fetch_add(1, std::memory_order_relaxed);
    return fail(status::invalid_value, fn, ": not permitted while stream ", std::to_string(hit),
                " is being captured (the capture is invalidated)");
  }
  /// Record `op` into the capture of `s`: true when `s` is being captured (then `*r` is the result).
  bool capture_op(stream_handle s, captured_op const& op, status* r) noexcept
  {
    if (captures.load(std::memory_order_acquire) == 0) { return false; }
    std::lock_guard lock(cap_mtx);
    auto const it = capturing.find(s.value);
    if (it == capturing.end()) { return false; }
    try {
      it->second.ops.push_back(op);
      *r = counted(status::ok);
    } catch (...) {
      *r = fail(status::out_of_memory, "capture: out of memory recording an operation");
    }
    return true;
  }
  /// Queue one recorded operation on `s` (launch_graph).
  status replay(captured_op const& op, stream_handle s) noexcept
  {
    switch (op.kind) {
      case captured_op::op::transfer: return counted(timeline->enqueue_transfer(s, op.link, op.bytes, op.effect));
      case captured_op::op::compute: return counted(timeline->enqueue_compute(s, op.duration));
      case captured_op::op::host_func: return counted(timeline->enqueue_host_func(s, op.fn, op.user_data));
    }
    return status::invalid_value;
  }

  /// Record the concatenation of `parts` as this thread's last error and return `s`.
  template <class... Parts>
  status fail(status s, Parts const&... parts) const noexcept
  {
    try {
      tl_error.owner = id;
      tl_error.text.clear();
      (tl_error.text.append(std::string_view(parts)), ...);
      tl_error.text += " [";
      tl_error.text += to_string(s);
      tl_error.text += "]";
    } catch (...) {  // the status still reports the failure
    }
    return s;
  }

  /// Step 2 of every fallible call. Returns ok or injected_fault (recorded).
  // Note [Host time per call]
  //   On a virtual clock the host takes no time unless told: the pool's calls, however
  //   many, are all enqueued at the same instant, and only the device's work (copies on
  //   their links, kernels with compute_async) moves the timeline. On a GPU each CUDA
  //   call costs the host microseconds, and a training step of small kernels and copies
  //   is bound by the host: the demo's MLP on an H200 takes about 1.5 ms an iteration for
  //   126 kernels whose roofline time is 0.07 ms, and each eviction's copies and events
  //   add their calls' time (bench/results/suite-gpu-2026-12-04). sim_options::host_costs
  //   gives each kind of call a host time: a call that passes its checks moves now()
  //   forward by it before it takes effect, so its work is ready no earlier than the host
  //   could have enqueued it, and events the host polls complete as its time passes. A
  //   call that fails its checks costs nothing. Deterministic: now() moves only with the
  //   calls the host makes. With several host threads their costs add up on the one clock,
  //   as if one host thread made every call.
  status inject(sim_call kind) noexcept
  {
    std::string why;
    if (faults.check(kind, &why)) {
      return fail(status::injected_fault, why);
    }
    if (charge_host) {  // one predictable branch on every call when no cost is set
      if (tick const cost = opts.host_costs.of(kind); cost != 0) { vt->advance_to(timeline->now() + cost); }
    }
    return status::ok;
  }

  status counted(status s) noexcept
  {
    if (s == status::ok) {
      std::size_t const sh = detail::thread_shard();
      detail::bump(enqueued[sh].n, std::uint64_t{1}, sh);
    }
    return s;
  }

  status check_stream(stream_handle s, char const* fn) const noexcept
  {
    if (!timeline->has_stream(s)) {
      try {
        return fail(status::invalid_value, fn, ": unknown stream handle", foreign(s.value, detail::kStreamTag, "a stream"));
      } catch (...) {
        return fail(status::invalid_value, fn, ": unknown stream handle");
      }
    }
    return status::ok;
  }

  status check_event(event_handle e, char const* fn) const noexcept
  {
    return timeline->has_event(e) ? status::ok : unknown_event(e, fn);
  }

  /// invalid_value, recorded as "fn: unknown event handle" (naming another device's event).
  status unknown_event(event_handle e, char const* fn) const noexcept
  {
    try {
      return fail(status::invalid_value, fn, ": unknown event handle", foreign(e.value, detail::kEventTag, "an event"));
    } catch (...) {
      return fail(status::invalid_value, fn, ": unknown event handle");
    }
  }

  std::uint64_t const id{next_backend_id.fetch_add(1, std::memory_order_relaxed)};
  sim_options opts;
  backend_caps caps;
  detail::sim_memory mem;
  detail::fault_injector faults;
  std::unique_ptr<detail::sim_timeline> timeline;
  detail::virtual_timeline_ops* vt;  // non-null on a virtual clock
  bool charge_host;                  // a virtual clock with host costs (Note [Host time per call])
  std::atomic<std::uint64_t> invalid_deallocs{0};
  // Operations enqueued, counted per thread shard as the fault injector counts calls (no
  // locked add per call); enqueued_operations() sums them.
  struct alignas(128) op_count {
    std::atomic<std::uint64_t> n{0};
  };
  std::array<op_count, detail::kShards + 1> enqueued{};

  // Captures (Note [Simulated capture]); cap_mtx is a leaf.
  mutable std::mutex cap_mtx;
  std::atomic<std::uint32_t> captures{0};                       // streams being captured
  mutable std::unordered_map<std::uintptr_t, capture_state> capturing;  // under cap_mtx: stream -> capture
  std::unordered_map<std::uint64_t, std::vector<captured_op>> graphs;   // under cap_mtx
  std::uint64_t next_graph{0};                                  // under cap_mtx
  mutable std::atomic<std::uint64_t> violations{0};
};

sim_backend::sim_backend(sim_options options)
  : impl_(std::make_unique<impl>(options)),
    hide_times_(options.hide_device_times && options.clock == sim_clock_mode::virtual_clock)
{
}

sim_backend::~sim_backend()
{
  impl_->timeline->shutdown();
}

backend_caps const& sim_backend::caps() const noexcept { return impl_->caps; }

status sim_backend::allocate(tier_kind kind, std::size_t bytes, void** out, int numa_node) noexcept
{
  auto& m = *impl_;
  if (out == nullptr) {
    return m.fail(status::invalid_value, "allocate: out is null");
  }
  *out = nullptr;
  if (!valid_kind(kind)) {
    return m.fail(status::invalid_value, "allocate: unknown tier kind");
  }
  if (bytes == 0) {
    return m.fail(status::invalid_value, "allocate: bytes must be > 0");
  }
  if (numa_node < -1) {
    return m.fail(status::invalid_value, "allocate: numa_node must be >= -1");
  }
  if (kind == tier_kind::managed && m.opts.managed_bytes == 0) {
    return m.fail(status::not_supported, "allocate: this sim backend has no managed memory (managed_bytes = 0)");
  }
  if (kind == tier_kind::storage && m.opts.memory == sim_memory_mode::real) {
    // Phantom storage ranges model a storage tier for replay; with real memory the pool's
    // storage file holds the bytes (Note [Where a storage tier's bytes are]).
    return m.fail(status::not_supported, "allocate: storage in real memory is the pool's storage file, not the backend's");
  }
  if (status const c = m.forbid_during_capture("allocate", nullptr); c != status::ok) {
    return c;
  }
  if (status const f = m.inject(sim_call::allocate); f != status::ok) {
    return f;
  }
  status const r = m.mem.allocate(kind, bytes, out);
  if (r == status::out_of_memory) {
    try {
      std::size_t const cap = kind == tier_kind::device        ? m.opts.device_bytes
                              : kind == tier_kind::managed     ? m.opts.managed_bytes
                              : kind == tier_kind::pinned_host ? m.opts.pinned_host_bytes
                                                               : 0;
      std::string msg = "allocate(" + std::string(to_string(kind)) + ", " + std::to_string(bytes) +
                        " B): exceeds capacity";
      if (cap != 0) {
        msg += " (" + std::to_string(m.mem.used(kind)) + " of " + std::to_string(cap) + " B in use)";
      }
      return m.fail(r, msg);
    } catch (...) {
      return m.fail(r, "allocate: out of memory");
    }
  }
  return r;
}

void sim_backend::deallocate(tier_kind kind, void* ptr, std::size_t bytes) noexcept
{
  auto& m = *impl_;
  if (ptr == nullptr) {
    return;
  }
  (void)m.forbid_during_capture("deallocate", nullptr);  // freed anyway: nothing leaks
  using fr = detail::sim_memory::free_result;
  switch (valid_kind(kind) ? m.mem.deallocate(kind, ptr, bytes) : fr::wrong_kind) {
    case fr::ok:
    case fr::null_pointer: return;
    case fr::unknown_pointer:
      m.invalid_deallocs.fetch_add(1, std::memory_order_relaxed);
      (void)m.fail(status::invalid_value, "deallocate: pointer was not allocated by this backend (ignored)");
      return;
    case fr::wrong_kind:
      m.invalid_deallocs.fetch_add(1, std::memory_order_relaxed);
      (void)m.fail(status::invalid_value, "deallocate: pointer belongs to another tier kind (ignored)");
      return;
    case fr::size_mismatch:
      m.invalid_deallocs.fetch_add(1, std::memory_order_relaxed);
      (void)m.fail(status::invalid_value, "deallocate: bytes differs from the allocated size (freed anyway)");
      return;
  }
}

status sim_backend::device_memory_info(std::size_t* free_bytes, std::size_t* total_bytes) noexcept
{
  auto& m = *impl_;
  if (free_bytes == nullptr || total_bytes == nullptr) {
    return m.fail(status::invalid_value, "device_memory_info: null out-pointer");
  }
  *total_bytes = m.opts.device_bytes;
  *free_bytes = m.opts.device_bytes - m.mem.used(tier_kind::device);
  return status::ok;
}

status sim_backend::create_stream(stream_handle* out, int /*priority*/) noexcept
{
  auto& m = *impl_;
  if (out == nullptr) {
    return m.fail(status::invalid_value, "create_stream: out is null");
  }
  if (status const f = m.inject(sim_call::stream_create); f != status::ok) {
    return f;
  }
  status const r = m.timeline->create_stream(out);
  return r == status::ok ? r : m.fail(r, "create_stream: could not start the stream");
}

void sim_backend::destroy_stream(stream_handle s) noexcept
{
  if (s.is_default()) {
    return;
  }
  if (impl_->captures.load(std::memory_order_acquire) != 0) {  // a capture ends with its stream
    std::lock_guard lock(impl_->cap_mtx);
    if (impl_->capturing.erase(s.value) != 0) { impl_->captures.fetch_sub(1, std::memory_order_release); }
  }
  if (!impl_->timeline->destroy_stream(s)) {
    (void)impl_->fail(status::invalid_value, "destroy_stream: unknown stream handle (ignored)");
  }
}

status sim_backend::synchronize_stream(stream_handle s) noexcept
{
  if (status const r = impl_->check_stream(s, "synchronize_stream"); r != status::ok) { return r; }
  if (status const c = impl_->forbid_during_capture("synchronize_stream", &s); c != status::ok) { return c; }
  status const r = impl_->timeline->synchronize_stream(s);
  return r == status::ok ? r : impl_->fail(r, "synchronize_stream: unknown stream handle");
}

status sim_backend::adopt_stream(void* native, stream_handle* out) noexcept
{
  auto& m = *impl_;
  if (out == nullptr) { return m.fail(status::invalid_value, "adopt_stream: out is null"); }
  *out = stream_handle{};
  if (native == nullptr) { return m.fail(status::invalid_value, "adopt_stream: null stream"); }
  stream_handle const s{reinterpret_cast<std::uintptr_t>(native)};
  if (!m.timeline->has_stream(s)) {
    try {
      std::string const other = m.foreign(s.value, detail::kStreamTag, "a stream");
      if (!other.empty()) { return m.fail(status::invalid_value, "adopt_stream: not a stream of this device", other); }
    } catch (...) {
    }
    return m.fail(status::invalid_value, "adopt_stream: not a live stream of this backend");
  }
  *out = s;
  return status::ok;
}

status sim_backend::create_event(event_handle* out) noexcept
{
  auto& m = *impl_;
  if (out == nullptr) {
    return m.fail(status::invalid_value, "create_event: out is null");
  }
  if (status const f = m.inject(sim_call::event); f != status::ok) {
    return f;
  }
  status const r = m.timeline->create_event(out);
  return r == status::ok ? r : m.fail(r, "create_event: out of memory");
}

void sim_backend::destroy_event(event_handle e) noexcept
{
  if (!impl_->timeline->destroy_event(e)) {
    (void)impl_->fail(status::invalid_value, "destroy_event: unknown event handle (ignored)");
  }
}

status sim_backend::record_event(event_handle e, stream_handle s) noexcept
{
  auto& m = *impl_;
  if (status const r = m.check_event(e, "record_event"); r != status::ok) {
    return r;
  }
  if (status const r = m.check_stream(s, "record_event"); r != status::ok) {
    return r;
  }
  if (m.capturing_stream(s)) {
    return m.forbid_during_capture("record_event (the simulated capture holds copies, kernels and host functions only)", &s);
  }
  if (status const f = m.inject(sim_call::event); f != status::ok) {
    return f;
  }
  status const r = m.counted(m.timeline->record_event(e, s));
  return r == status::ok ? r : m.fail(r, "record_event: handle vanished or out of memory");
}

status sim_backend::query_event(event_handle e) noexcept
{
  if (status const c = impl_->forbid_during_capture("query_event", nullptr); c != status::ok) { return c; }
  status const r = impl_->timeline->query_event(e);
  return r == status::invalid_value ? impl_->unknown_event(e, "query_event") : r;
}

status sim_backend::synchronize_event(event_handle e) noexcept
{
  if (status const c = impl_->forbid_during_capture("synchronize_event", nullptr); c != status::ok) { return c; }
  status const r = impl_->timeline->synchronize_event(e);
  return r == status::ok ? r : impl_->unknown_event(e, "synchronize_event");
}

status sim_backend::stream_wait_event(stream_handle s, event_handle e) noexcept
{
  auto& m = *impl_;
  if (status const r = m.check_event(e, "stream_wait_event"); r != status::ok) {
    return r;
  }
  if (status const r = m.check_stream(s, "stream_wait_event"); r != status::ok) {
    return r;
  }
  if (m.capturing_stream(s)) {
    return m.forbid_during_capture("stream_wait_event (the simulated capture holds copies, kernels and host functions only)", &s);
  }
  if (status const f = m.inject(sim_call::event); f != status::ok) {
    return f;
  }
  status const r = m.counted(m.timeline->stream_wait_event(s, e));
  return r == status::ok ? r : m.fail(r, "stream_wait_event: handle vanished or out of memory");
}

status sim_backend::copy_async(copy_desc const& d, stream_handle s) noexcept
{
  auto& m = *impl_;
  if (d.dst == nullptr || d.src == nullptr) {
    return m.fail(status::invalid_value, "copy_async: null dst or src");
  }
  if (d.bytes == 0) {
    return m.fail(status::invalid_value, "copy_async: bytes must be > 0");
  }
  if (!valid_kind(d.dst_kind) || !valid_kind(d.src_kind)) {
    return m.fail(status::invalid_value, "copy_async: unknown tier kind");
  }
  auto const dst = reinterpret_cast<std::uintptr_t>(d.dst);
  auto const src = reinterpret_cast<std::uintptr_t>(d.src);
  if (dst < src + d.bytes && src < dst + d.bytes) {
    return m.fail(status::invalid_value, "copy_async: source and destination ranges overlap");
  }
  // Device and managed ranges must lie inside one live allocation of that kind; host
  // kinds may be any host memory (a user's buffer).
  auto const owned = [&](tier_kind k, void const* p) {
    return (k != tier_kind::device && k != tier_kind::managed) || m.mem.contains(k, p, d.bytes);
  };
  auto const other = [&](void const* p) {
    try {
      return m.foreign(p);
    } catch (...) {
      return std::string();
    }
  };
  if (!owned(d.dst_kind, d.dst)) {
    return m.fail(status::invalid_value, "copy_async: destination range is not inside a ",
                  to_string(d.dst_kind), " allocation of this backend", other(d.dst));
  }
  if (!owned(d.src_kind, d.src)) {
    return m.fail(status::invalid_value, "copy_async: source range is not inside a ",
                  to_string(d.src_kind), " allocation of this backend", other(d.src));
  }
  if (status const r = m.check_stream(s, "copy_async"); r != status::ok) {
    return r;
  }
  if (status const f = m.inject(sim_call::copy); f != status::ok) {
    return f;
  }
  detail::sim_effect effect{};
  if (m.opts.memory == sim_memory_mode::real) {
    effect = detail::sim_effect{d.dst, d.src, d.bytes};
  }
  sim_link const link = link_for(d.dst_kind, d.src_kind);
  if (status r = status::ok; m.capture_op(s, {.kind = captured_op::op::transfer, .link = link, .bytes = d.bytes, .effect = effect}, &r)) {
    return r;
  }
  status const r = m.counted(m.timeline->enqueue_transfer(s, link, d.bytes, effect));
  return r == status::ok ? r : m.fail(r, "copy_async: stream vanished or out of memory");
}

status sim_backend::prefetch_async(void* ptr, std::size_t bytes, memory_location to, stream_handle s) noexcept
{
  auto& m = *impl_;
  if (!m.caps.has_managed_prefetch) {
    return m.fail(status::not_supported, "prefetch_async: this sim backend has no managed memory");
  }
  if (ptr == nullptr || bytes == 0) {
    return m.fail(status::invalid_value, "prefetch_async: null pointer or zero bytes");
  }
  if (!valid_kind(to.kind)) {
    return m.fail(status::invalid_value, "prefetch_async: unknown destination kind");
  }
  if (!m.mem.contains(tier_kind::managed, ptr, bytes)) {
    return m.fail(status::invalid_value, "prefetch_async: range is not inside a managed allocation");
  }
  if (status const r = m.check_stream(s, "prefetch_async"); r != status::ok) {
    return r;
  }
  if (m.capturing_stream(s)) {
    return m.forbid_during_capture("prefetch_async (the simulated capture holds copies, kernels and host functions only)", &s);
  }
  if (status const f = m.inject(sim_call::prefetch); f != status::ok) {
    return f;
  }
  // Modelled as a transfer on the link towards `to`; managed memory is host memory here,
  // so no bytes move. Residency is not tracked: every prefetch costs a transfer.
  sim_link const link = to.kind == tier_kind::device ? sim_link::h2d : sim_link::d2h;
  status const r = m.counted(m.timeline->enqueue_transfer(s, link, bytes, detail::sim_effect{}));
  return r == status::ok ? r : m.fail(r, "prefetch_async: stream vanished or out of memory");
}

status sim_backend::advise(void* ptr, std::size_t bytes, mem_advice advice, memory_location where) noexcept
{
  auto& m = *impl_;
  if (!m.caps.has_managed_prefetch) {
    return m.fail(status::not_supported, "advise: this sim backend has no managed memory");
  }
  if (ptr == nullptr || bytes == 0) {
    return m.fail(status::invalid_value, "advise: null pointer or zero bytes");
  }
  if (static_cast<std::uint8_t>(advice) > static_cast<std::uint8_t>(mem_advice::unset_accessed_by) ||
      !valid_kind(where.kind)) {
    return m.fail(status::invalid_value, "advise: unknown advice or location kind");
  }
  if (!m.mem.contains(tier_kind::managed, ptr, bytes)) {
    return m.fail(status::invalid_value, "advise: range is not inside a managed allocation");
  }
  return m.inject(sim_call::prefetch);  // accepted; the sim keeps no placement state
}

status sim_backend::launch_host_func(stream_handle s, host_fn fn, void* user_data) noexcept
{
  auto& m = *impl_;
  if (fn == nullptr) {
    return m.fail(status::invalid_value, "launch_host_func: fn is null");
  }
  if (status const r = m.check_stream(s, "launch_host_func"); r != status::ok) {
    return r;
  }
  if (status const f = m.inject(sim_call::host_func); f != status::ok) {
    return f;
  }
  if (status r = status::ok; m.capture_op(s, {.kind = captured_op::op::host_func, .fn = fn, .user_data = user_data}, &r)) {
    return r;
  }
  status const r = m.counted(m.timeline->enqueue_host_func(s, fn, user_data));
  return r == status::ok ? r : m.fail(r, "launch_host_func: stream vanished or out of memory");
}

tick sim_backend::now() const noexcept { return impl_->timeline->now(); }

std::string sim_backend::last_error() const
{
  return tl_error.owner == impl_->id ? tl_error.text : std::string{};
}

sim_links const& sim_backend::links() const noexcept { return *impl_->opts.links; }

status sim_backend::compute_async(stream_handle s, tick duration) noexcept
{
  auto& m = *impl_;
  if (status const r = m.check_stream(s, "compute_async"); r != status::ok) {
    return r;
  }
  if (status const f = m.inject(sim_call::compute); f != status::ok) {
    return f;
  }
  if (status r = status::ok; m.capture_op(s, {.kind = captured_op::op::compute, .duration = duration}, &r)) {
    return r;
  }
  status const r = m.counted(m.timeline->enqueue_compute(s, duration));
  return r == status::ok ? r : m.fail(r, "compute_async: stream vanished or out of memory");
}

status sim_backend::advance_to(tick t) noexcept
{
  if (impl_->vt == nullptr) {
    return impl_->fail(status::not_supported, "advance_to: only a virtual clock can be advanced");
  }
  impl_->vt->advance_to(t);
  return status::ok;
}

status sim_backend::advance_by(tick d) noexcept
{
  if (impl_->vt == nullptr) {
    return impl_->fail(status::not_supported, "advance_by: only a virtual clock can be advanced");
  }
  impl_->vt->advance_to(impl_->timeline->now() + d);
  return status::ok;
}

std::optional<tick> sim_backend::event_time(event_handle e) const noexcept
{
  return impl_->vt == nullptr ? std::nullopt : impl_->vt->event_time(e);
}

status sim_backend::event_elapsed(event_handle from, event_handle to, tick* ns) noexcept
{
  auto& m = *impl_;
  if (ns == nullptr) { return m.fail(status::invalid_value, "event_elapsed: ns is null"); }
  *ns = 0;
  if (m.vt == nullptr) { return status::not_supported; }  // a wall clock does not time events
  std::optional<tick> const a = m.vt->event_time(from);
  std::optional<tick> const b = m.vt->event_time(to);
  if (!a) { return m.unknown_event(from, "event_elapsed"); }
  if (!b) { return m.unknown_event(to, "event_elapsed"); }
  tick const t = now();
  if (*a > t || *b > t) { return status::not_ready; }  // as on a GPU: only once both completed
  *ns = *b > *a ? *b - *a : 0;
  return status::ok;
}

std::optional<tick> sim_backend::stream_tail(stream_handle s) const noexcept
{
  return impl_->vt == nullptr ? std::nullopt : impl_->vt->stream_tail(s);
}

status sim_backend::is_capturing(stream_handle s, bool* out) const noexcept
{
  if (out == nullptr) { return impl_->fail(status::invalid_value, "is_capturing: out is null"); }
  *out = false;
  if (status const r = impl_->check_stream(s, "is_capturing"); r != status::ok) { return r; }
  *out = impl_->capturing_stream(s);
  return status::ok;
}

bool sim_backend::capture_underway() const noexcept { return impl_->captures.load(std::memory_order_acquire) != 0; }

status sim_backend::begin_capture(stream_handle s) noexcept
{
  auto& m = *impl_;
  if (s.is_default()) { return m.fail(status::invalid_value, "begin_capture: the default stream cannot be captured"); }
  if (status const r = m.check_stream(s, "begin_capture"); r != status::ok) { return r; }
  std::lock_guard lock(m.cap_mtx);
  try {
    auto const [it, fresh] = m.capturing.try_emplace(s.value);
    if (!fresh) { return m.fail(status::invalid_value, "begin_capture: the stream is being captured already"); }
    it->second.thread = std::this_thread::get_id();
  } catch (...) {
    return m.fail(status::out_of_memory, "begin_capture: out of memory");
  }
  m.captures.fetch_add(1, std::memory_order_release);
  return status::ok;
}

status sim_backend::end_capture(stream_handle s, sim_graph* out) noexcept
{
  auto& m = *impl_;
  if (out == nullptr) { return m.fail(status::invalid_value, "end_capture: out is null"); }
  *out = sim_graph{};
  std::lock_guard lock(m.cap_mtx);
  auto const it = m.capturing.find(s.value);
  if (it == m.capturing.end()) { return m.fail(status::invalid_value, "end_capture: the stream is not being captured"); }
  capture_state c = std::move(it->second);
  m.capturing.erase(it);
  m.captures.fetch_sub(1, std::memory_order_release);
  if (!c.invalidated.empty()) {
    return m.fail(status::invalid_value, "end_capture: the capture of stream ", std::to_string(s.value),
                  " was invalidated by ", c.invalidated, " during the capture");
  }
  try {
    std::uint64_t const id = ++m.next_graph;
    m.graphs.emplace(id, std::move(c.ops));
    *out = sim_graph{id};
  } catch (...) {
    return m.fail(status::out_of_memory, "end_capture: out of memory");
  }
  return status::ok;
}

status sim_backend::launch_graph(sim_graph g, stream_handle s) noexcept
{
  auto& m = *impl_;
  if (status const r = m.check_stream(s, "launch_graph"); r != status::ok) { return r; }
  if (m.capturing_stream(s)) { return m.fail(status::invalid_value, "launch_graph: the stream is being captured"); }
  std::vector<captured_op> ops;
  {
    std::lock_guard lock(m.cap_mtx);
    auto const it = m.graphs.find(g.value);
    if (it == m.graphs.end()) { return m.fail(status::invalid_value, "launch_graph: unknown graph"); }
    try {
      ops = it->second;
    } catch (...) {
      return m.fail(status::out_of_memory, "launch_graph: out of memory");
    }
  }
  for (captured_op const& op : ops) {
    if (status const r = m.replay(op, s); r != status::ok) { return m.fail(r, "launch_graph: the stream vanished"); }
  }
  return status::ok;
}

void sim_backend::destroy_graph(sim_graph g) noexcept
{
  std::lock_guard lock(impl_->cap_mtx);
  impl_->graphs.erase(g.value);
}

std::uint64_t sim_backend::capture_violations() const noexcept
{
  return impl_->violations.load(std::memory_order_relaxed);
}

void sim_backend::set_faults(sim_fault_options faults) { impl_->faults.set(std::move(faults)); }

void sim_backend::clear_faults() noexcept { impl_->faults.clear(); }

std::uint64_t sim_backend::call_count(sim_call kind) const noexcept { return impl_->faults.count(kind); }

void sim_backend::reset_call_counts() noexcept { impl_->faults.reset_counts(); }

std::uint64_t sim_backend::faults_injected() const noexcept { return impl_->faults.injected(); }

std::size_t sim_backend::allocated_bytes(tier_kind kind) const noexcept
{
  return valid_kind(kind) ? impl_->mem.used(kind) : 0;
}

std::size_t sim_backend::live_allocations() const noexcept { return impl_->mem.live(); }

std::uint64_t sim_backend::invalid_deallocations() const noexcept
{
  return impl_->invalid_deallocs.load(std::memory_order_relaxed);
}

std::uint64_t sim_backend::enqueued_operations() const noexcept
{
  std::uint64_t n = 0;
  for (auto const& c : impl_->enqueued) { n += c.n.load(std::memory_order_relaxed); }
  return n;
}

std::vector<sim_span> sim_backend::spans() const
{
  return impl_->vt == nullptr ? std::vector<sim_span>{} : impl_->vt->spans();
}

tick sim_activity::total_ns() const noexcept
{
  tick t = 0;
  for (tick const v : ns) { t += v; }
  return t;
}

tick sim_activity::compute_ns() const noexcept { return ns[1] + ns[3] + ns[5] + ns[7]; }

tick sim_activity::overlapped_ns() const noexcept { return ns[3] + ns[5] + ns[7]; }

tick sim_activity::exposed_copy_ns() const noexcept { return ns[2] + ns[4] + ns[6]; }

sim_activity summarize_activity(std::span<sim_span const> spans, tick end) { return summarize_activity(spans, 0, end); }

sim_activity summarize_activity(std::span<sim_span const> spans, tick begin, tick end)
{
  end = std::max(begin, end);
  // A sweep over the spans' ends: +1 at a start, -1 at an end, per kind of activity (a
  // count, since kernels of several streams overlap); between two boundaries the state is
  // the mask of kinds whose count is positive.
  struct edge {
    tick at;
    int delta;
    unsigned bit;
  };
  std::vector<edge> edges;
  edges.reserve(spans.size() * 2);
  for (sim_span const& sp : spans) {
    unsigned bit = 0;
    if (sp.kind == sim_span_kind::compute) {
      bit = 0;
    } else if (sp.link == sim_link::h2d) {
      bit = 1;
    } else if (sp.link == sim_link::d2h) {
      bit = 2;
    } else {
      continue;  // d2d, h2h: not counted
    }
    tick const a = std::clamp(sp.start, begin, end);
    tick const b = std::clamp(sp.end, begin, end);
    if (b <= a) { continue; }
    edges.push_back(edge{a, +1, bit});
    edges.push_back(edge{b, -1, bit});
  }
  std::sort(edges.begin(), edges.end(), [](edge const& x, edge const& y) { return x.at < y.at; });
  sim_activity out;
  std::array<int, 3> count{};
  tick t = begin;
  for (edge const& e : edges) {
    unsigned mask = 0;
    for (unsigned b = 0; b < 3; ++b) {
      if (count[b] > 0) { mask |= 1U << b; }
    }
    out.ns[mask] += e.at - t;
    t = e.at;
    count[e.bit] += e.delta;
  }
  out.ns[0] += end - std::min(end, t);
  return out;
}

sim_link_stats sim_backend::link_stats(sim_link link) const noexcept
{
  return static_cast<std::size_t>(link) < sim_link_count ? impl_->timeline->link_stats(link) : sim_link_stats{};
}

sim_options const& sim_backend::options() const noexcept { return impl_->opts; }

std::unique_ptr<backend> make_sim_backend(sim_options const& options)
{
  return std::make_unique<sim_backend>(options);
}

}  // namespace tierpool

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

#include <atomic>
#include <cmath>
#include <string>
#include <utility>

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
  if (!o.links) {
    o.links = o.clock == sim_clock_mode::virtual_clock ? sim_links::from_host_link(link_model::pcie4())
                                                       : sim_links::unthrottled();
  }
  check_link(o.links->h2d, "h2d");
  check_link(o.links->d2h, "d2h");
  check_link(o.links->d2d, "d2d");
  check_link(o.links->h2h, "h2h");
  detail::fault_injector::validate(o.faults);
  return o;
}

backend_caps make_caps(sim_options const& o)
{
  backend_caps c;
  c.name = "sim";
  c.device_name = !o.device_name.empty()
                    ? o.device_name
                    : "simulated device (" + format_bytes(o.device_bytes) + ", " +
                        (o.memory == sim_memory_mode::real ? "real memory" : "phantom memory") + ", " +
                        (o.clock == sim_clock_mode::wall ? "wall clock" : "virtual clock") + ")";
  c.device_bytes = o.device_bytes;
  c.pinned_host_bytes = o.pinned_host_bytes;
  c.managed_bytes = o.managed_bytes;
  c.allocation_alignment = detail::sim_alignment;
  c.copy_granularity = detail::sim_alignment;
  c.real_memory = o.memory == sim_memory_mode::real;
  c.virtual_clock = o.clock == sim_clock_mode::virtual_clock;
  c.has_managed = o.managed_bytes > 0;
  c.has_managed_prefetch = o.managed_bytes > 0;
  c.concurrent_managed_access = o.managed_bytes > 0;  // it is host memory
  c.managed_shares_device = o.managed_shares_device;
  c.has_numa_binding = false;
  c.max_copy_streams = o.max_copy_streams;
  c.host_numa_node = -1;
  return c;
}

}  // namespace

struct sim_backend::impl {
  explicit impl(sim_options o)
    : opts(resolve(std::move(o))),
      caps(make_caps(opts)),
      mem(opts.memory, {opts.device_bytes, opts.pinned_host_bytes, opts.managed_bytes, 0}),
      timeline(opts.clock == sim_clock_mode::wall ? detail::make_wall_timeline(*opts.links)
                                                  : detail::make_virtual_timeline(*opts.links)),
      vt(dynamic_cast<detail::virtual_timeline_ops*>(timeline.get()))
  {
    faults.set(opts.faults);
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
  status inject(sim_call kind) noexcept
  {
    std::string why;
    if (faults.check(kind, &why)) {
      return fail(status::injected_fault, why);
    }
    return status::ok;
  }

  status counted(status s) noexcept
  {
    if (s == status::ok) {
      enqueued.fetch_add(1, std::memory_order_relaxed);
    }
    return s;
  }

  status check_stream(stream_handle s, char const* fn) const noexcept
  {
    if (!timeline->has_stream(s)) {
      return fail(status::invalid_value, fn, ": unknown stream handle");
    }
    return status::ok;
  }

  status check_event(event_handle e, char const* fn) const noexcept
  {
    if (!timeline->has_event(e)) {
      return fail(status::invalid_value, fn, ": unknown event handle");
    }
    return status::ok;
  }

  std::uint64_t const id{next_backend_id.fetch_add(1, std::memory_order_relaxed)};
  sim_options opts;
  backend_caps caps;
  detail::sim_memory mem;
  detail::fault_injector faults;
  std::unique_ptr<detail::sim_timeline> timeline;
  detail::virtual_timeline_ops* vt;  // non-null on a virtual clock
  std::atomic<std::uint64_t> invalid_deallocs{0};
  std::atomic<std::uint64_t> enqueued{0};
};

sim_backend::sim_backend(sim_options options) : impl_(std::make_unique<impl>(std::move(options))) {}

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
  if (!impl_->timeline->destroy_stream(s)) {
    (void)impl_->fail(status::invalid_value, "destroy_stream: unknown stream handle (ignored)");
  }
}

status sim_backend::synchronize_stream(stream_handle s) noexcept
{
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
  if (status const f = m.inject(sim_call::event); f != status::ok) {
    return f;
  }
  status const r = m.counted(m.timeline->record_event(e, s));
  return r == status::ok ? r : m.fail(r, "record_event: handle vanished or out of memory");
}

status sim_backend::query_event(event_handle e) noexcept
{
  status const r = impl_->timeline->query_event(e);
  return r == status::invalid_value ? impl_->fail(r, "query_event: unknown event handle") : r;
}

status sim_backend::synchronize_event(event_handle e) noexcept
{
  status const r = impl_->timeline->synchronize_event(e);
  return r == status::ok ? r : impl_->fail(r, "synchronize_event: unknown event handle");
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
  if (!owned(d.dst_kind, d.dst)) {
    return m.fail(status::invalid_value, "copy_async: destination range is not inside a ",
                  to_string(d.dst_kind), " allocation of this backend");
  }
  if (!owned(d.src_kind, d.src)) {
    return m.fail(status::invalid_value, "copy_async: source range is not inside a ",
                  to_string(d.src_kind), " allocation of this backend");
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
  status const r = m.counted(m.timeline->enqueue_transfer(s, link_for(d.dst_kind, d.src_kind), d.bytes, effect));
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
  status const r = m.counted(m.timeline->enqueue_host_func(s, fn, user_data));
  return r == status::ok ? r : m.fail(r, "launch_host_func: stream vanished or out of memory");
}

tick sim_backend::now() const noexcept { return impl_->timeline->now(); }

std::string sim_backend::last_error() const
{
  return tl_error.owner == impl_->id ? tl_error.text : std::string{};
}

status sim_backend::compute_async(stream_handle s, tick duration) noexcept
{
  auto& m = *impl_;
  if (status const r = m.check_stream(s, "compute_async"); r != status::ok) {
    return r;
  }
  if (status const f = m.inject(sim_call::compute); f != status::ok) {
    return f;
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

std::optional<tick> sim_backend::stream_tail(stream_handle s) const noexcept
{
  return impl_->vt == nullptr ? std::nullopt : impl_->vt->stream_tail(s);
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
  return impl_->enqueued.load(std::memory_order_relaxed);
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

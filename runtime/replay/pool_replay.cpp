// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_replay.cpp — owns pool mode (detail::run_pool): the real tierpool::pool on a sim
// backend with phantom memory and a virtual clock, driven by the compiled event array.
//
// The pool has two tiers: the device tier of the run's capacity (one arena chunk) and a
// host tier that holds everything (run_options::staging adds tiers between the two). Each
// trace stream is a pool stream. Per event:
//   allocate -> pool::allocate (a cache trace's object is allocated in the host tier on
//               first sight: its bytes start there, so its first read copies it in)
//   access   -> pool::set_next_use(t, position of t's next access) then pool::acquire
//   compute  -> sim_backend::compute_async on the stream
//   prefetch -> pool::prefetch; free -> pool::free; a phase marker is timed when the run
//               records its activity (run_options::record_activity), else skipped.
//
// Note [Leases live until the stream's next compute]
//   Rationale: in a DNN trace the accesses before a `compute` are its operands; releasing
//   each lease at once would let the pool evict an operand before the kernel that reads it
//   is even enqueued. Approach: a lease is kept until the next compute event on its stream
//   has been enqueued, then released (so its last use is that kernel). In a trace without
//   any compute event (a cache trace) each lease ends at once. If an acquire runs out of
//   device memory because held leases pin it full, every held lease is released and the
//   acquire retried once. Limitations: an access that still does not fit is counted as
//   unserved, as is every access of a tensor larger than the device tier.
//
// The host issues events as fast as it can: virtual time moves only where the pool waits
// (space freed by an eviction still in flight), so copies run ahead of compute as far as
// device memory allows.
#include "replay/detail/engines.hpp"

#include "util/record_slab.hpp"

#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>

#include <algorithm>
#include <utility>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tierpool::replay::detail {

namespace {

constexpr std::size_t kAlign = 256;  // sim allocation granularity; tier capacities round down to it
constexpr std::size_t kHandlePrefetch = 4;  // events ahead whose tensor handle is prefetched

// The trace's true future, for the `oracle` planner: the device accesses after the event
// being replayed, in event positions (the units of the next-use hints the replay gives).
class trace_schedule final : public schedule_source {
 public:
  trace_schedule(compiled_data const& d, std::uint64_t cap) : d_(d), cap_(cap)
  {
    for (pool_op const& op : d_.ops) { streams_ = std::max<std::size_t>(streams_, std::size_t{op.stream} + 1); }
    compute_.resize(streams_);  // upcoming() is noexcept: its scratch is sized here
  }
  void attach(std::vector<tensor, tierpool::detail::big_array_allocator<tensor>> const* tensors) noexcept
  {
    tensors_ = tensors;
  }
  void at(std::size_t i) noexcept { cur_ = i; }
  std::size_t upcoming(std::span<planned_access> out) noexcept override
  {
    std::size_t n = 0;
    std::vector<tick>& compute = compute_;  // per trace stream: compute since the access before
    std::fill(compute.begin(), compute.end(), tick{0});
    for (std::size_t i = cur_ + 1; i < d_.ops.size() && n < out.size(); ++i) {
      pool_op const& op = d_.ops[i];
      if (op.kind == pool_op_kind::compute && op.stream < compute.size()) { compute[op.stream] += op.arg; }
      if (op.kind != pool_op_kind::access || op.host != 0 || op.bytes > cap_) { continue; }
      tensor const& t = (*tensors_)[op.obj];
      bool const discard = op.mode == trace::access_kind::write_discard;
      tensor_id const id = t.valid() ? t.id() : tensor_id{kUnbornTensor | op.obj};  // not allocated yet: its room counts
      bool const last = op.arg == kNoNext;  // no access after this one
      tick c = 0;
      if (op.stream < compute.size()) { c = std::exchange(compute[op.stream], 0); }
      out[n++] = planned_access{id, static_cast<std::size_t>(op.bytes), tick{i}, discard, last, c};
    }
    return n;
  }

 private:
  compiled_data const& d_;
  std::uint64_t cap_;
  std::size_t streams_{1};
  std::vector<tick> compute_;  // upcoming()'s scratch (called under the pool's prediction lock)
  std::vector<tensor, tierpool::detail::big_array_allocator<tensor>> const* tensors_{nullptr};
  std::size_t cur_{0};
};

// A phase marker's label with a trailing number merged ("step 0", "step 1" -> "step #"; a
// generated label per step would make a row per step).
std::string phase_label(std::string const& name)
{
  std::size_t k = name.size();
  while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9') { --k; }
  if (k == name.size() || k == 0) { return name; }
  return name.substr(0, k) + "#";
}

// replay_result::phase_activities: each marker's window [its time, the next marker's) summed
// per label (phase_label).
std::vector<replay_result::phase_activity> phase_activities(std::span<sim_span const> spans,
                                                            std::span<replay_result::phase_time const> marks, tick end)
{
  std::vector<replay_result::phase_activity> out;
  if (marks.empty()) { return out; }
  auto add = [&](std::string const& name, tick from, tick to) {
    if (to <= from) { return; }
    sim_activity const w = summarize_activity(spans, from, to);
    for (auto& pa : out) {
      if (pa.name == name) {
        for (std::size_t k = 0; k < pa.activity.ns.size(); ++k) { pa.activity.ns[k] += w.ns[k]; }
        return;
      }
    }
    out.push_back({name, w});
  };
  add("(start)", 0, marks.front().at);
  for (std::size_t k = 0; k < marks.size(); ++k) {
    add(phase_label(marks[k].name), marks[k].at, k + 1 < marks.size() ? marks[k + 1].at : end);
  }
  return out;
}

// replay_result::iteration_seconds: an iteration starts at each marker of the first label
// that recurs and runs to the next one (the last to `end`).
std::vector<double> iteration_seconds(std::span<replay_result::phase_time const> marks, tick end)
{
  std::vector<double> out;
  std::string first_recurring;
  for (std::size_t i = 0; i < marks.size() && first_recurring.empty(); ++i) {
    std::string const li = phase_label(marks[i].name);
    for (std::size_t j = i + 1; j < marks.size(); ++j) {
      if (phase_label(marks[j].name) == li) {
        first_recurring = li;
        break;
      }
    }
  }
  if (first_recurring.empty()) { return out; }
  std::vector<tick> starts;
  for (auto const& m : marks) {
    if (phase_label(m.name) == first_recurring) { starts.push_back(m.at); }
  }
  for (std::size_t k = 0; k < starts.size(); ++k) {
    tick const to = k + 1 < starts.size() ? starts[k + 1] : std::max(end, starts[k]);
    out.push_back(static_cast<double>(to - starts[k]) * 1e-9);
  }
  return out;
}

}  // namespace

void run_pool(compiled_data const& d, policy_registry const& registry, run_options const& o, replay_result& out)
{
  std::uint64_t const cap = o.capacity_bytes / kAlign * kAlign;
  if (cap == 0) {
    throw logic_error("replay: pool mode needs a capacity of at least 256 bytes (got " +
                      std::to_string(o.capacity_bytes) + ")");
  }

  sim_options so;
  so.device_bytes = static_cast<std::size_t>(cap);
  so.managed_bytes = 0;
  so.memory = sim_memory_mode::phantom;
  so.clock = sim_clock_mode::virtual_clock;
  so.links = sim_links::from_host_link(o.link);
  if (o.storage_read_link) { so.links->s2h = *o.storage_read_link; }
  if (o.storage_write_link) { so.links->h2s = *o.storage_write_link; }
  bool const record = o.record_activity || o.record_timeline;
  so.record_spans = record;
  auto backend = std::make_shared<sim_backend>(so);

  // Room to spare: the backing tier never evicts, so a fragmented one would fail the run
  // (GPT-2 small at 75 % with the oracle and belady did at twice the peak).
  // --host-capacity: a host tier that evicts, into the storage tier below it (--storage).
  std::uint64_t const host_cap =
    o.host_capacity_bytes != 0 ? std::max<std::uint64_t>(o.host_capacity_bytes / kAlign * kAlign, kAlign)
                               : 4 * d.peak_live_bytes + (1ULL << 30U);
  pool_options po;
  // The backing host tier holds every tensor (it never evicts): it keeps the pool's default
  // policy (pool_options::policy as constructed), whatever policy is replayed.
  std::string const backing_policy = po.policy;
  po.tiers = {
    tier_options{.kind = tier_kind::device, .capacity_bytes = cap, .chunk_bytes = cap, .policy = o.policy,
                 .name = "device"},
    tier_options{.kind = tier_kind::host, .capacity_bytes = host_cap,
                 .chunk_bytes = std::min<std::uint64_t>(host_cap, 1ULL << 30U), .policy = backing_policy, .name = "host"},
  };
  // run_options::staging: tiers between the device tier and the backing host tier.
  for (std::size_t i = 0; i < o.staging.size(); ++i) {
    staging_tier const& st = o.staging[i];
    std::uint64_t const bytes = st.capacity_bytes / kAlign * kAlign;
    po.tiers.insert(po.tiers.end() - 1,
                    tier_options{.kind = st.kind, .capacity_bytes = bytes, .chunk_bytes = bytes, .policy = o.policy,
                                 .name = std::string(to_string(st.kind)) + "_" + std::to_string(i)});
  }
  if (o.storage_bytes != 0) {  // phantom: no file; the backend times its copies (s2h, h2s)
    if (!(o.storage_ratio >= 1.0) || o.storage_ratio > 1e6) {
      throw logic_error("replay: the storage ratio must be in [1, 1e6] (got " + std::to_string(o.storage_ratio) + ")");
    }
    // A compressed tier holds ratio x its bytes of tensors (run_options::storage_ratio).
    double const logical = static_cast<double>(o.storage_bytes) * o.storage_ratio;
    std::uint64_t const sb = std::max<std::uint64_t>(
      static_cast<std::uint64_t>(std::min(logical, 9.0e18)) / kAlign * kAlign, kAlign);
    po.tiers.push_back(tier_options{.kind = tier_kind::storage, .capacity_bytes = sb,
                                    .chunk_bytes = std::min<std::uint64_t>(sb, 1ULL << 30U), .policy = backing_policy,
                                    .name = "storage"});
  }
  po.policy = o.policy;
  po.actions.recompute = o.recompute;
  po.compaction = o.compaction;
  po.prefetch = o.prefetch;  // the pool builds the predictor from the registry (unknown: a typed error)
  // The online planner learns its own forecast: the trace's next uses are not given to it
  // (they would be the oracle's). The oracle planner reads the trace's future.
  std::string_view const predictor = std::string_view(o.prefetch).substr(0, o.prefetch.find(':'));
  bool const learned = predictor == "plan";
  std::shared_ptr<trace_schedule> schedule;
  if (predictor == "oracle") {
    schedule = std::make_shared<trace_schedule>(d, cap);
    po.schedule = schedule;
  }
  po.backend = backend_choice::sim;
  po.backend_object = backend;
  po.registry = &registry;
  po.read_environment = false;
  po.notice = fallback_notice::silent;
  po.publish.enabled = false;  // a simulation: many short pools, nothing to watch live

  std::vector<std::uint64_t> stream_compute(d.streams, 0);
  std::uint64_t unserved = 0;
  std::uint64_t failed_acquires = 0;  // acquires that threw out_of_memory: the pool counted each as a miss
  std::uint64_t bytes_requested = 0;
  std::uint64_t bytes_missed = 0;
  tick makespan = 0;
  pool_stats st;
  {
    pool p(po);
    std::vector<stream_handle> streams(d.streams);
    for (auto& s : streams) { s = p.create_stream(); }
    // One handle per object, indexed at random: on huge pages when large (one fault per 2 MiB).
    std::vector<tensor, tierpool::detail::big_array_allocator<tensor>> tensors(d.objects);
    if (schedule) { schedule->attach(&tensors); }
    std::vector<std::vector<lease>> held(d.streams);
    // A recorded run (release events) holds each lease until its release; otherwise
    // Note [Leases live until the stream's next compute].
    bool const explicit_release = d.release_events != 0;
    bool const hold = explicit_release || d.compute_events != 0;
    std::vector<std::vector<lease>> held_by_obj(explicit_release ? d.objects : 0);
    auto release_all = [&] {
      for (auto& v : held) { v.clear(); }
      for (auto& v : held_by_obj) { v.clear(); }
    };

    std::size_t const n = d.ops.size();
    // Phase markers are timed only when a timeline is recorded.
    std::size_t next_mark = record ? 0 : d.phase_marks.size();
    auto time_marks = [&](std::size_t i) {
      while (next_mark < d.phase_marks.size() && d.phase_marks[next_mark].op <= i) {
        tick at = backend->now();
        for (stream_handle const s : streams) { at = std::max(at, backend->stream_tail(s).value_or(0)); }
        out.phases.push_back({d.phase_names[d.phase_marks[next_mark].name], at});
        ++next_mark;
      }
    };
    for (std::size_t begin = 0; begin < n; begin += kProgressStride) {
      std::size_t const end = std::min<std::size_t>(n, begin + kProgressStride);
      for (std::size_t i = begin; i < end; ++i) {
        if (next_mark < d.phase_marks.size()) [[unlikely]] { time_marks(i); }
        pool_op const& op = d.ops[i];
        // The handle of a later event's tensor (a random object of a large trace misses the
        // cache); a hint only. Everything the pool itself reads is the pool's business.
        if (i + kHandlePrefetch < n) {
          std::uint32_t const ahead = d.ops[i + kHandlePrefetch].obj;
          if (ahead < tensors.size()) { __builtin_prefetch(&tensors[ahead]); }
        }
        switch (op.kind) {
          case pool_op_kind::allocate: {
            tensor_options to;
            if (op.tier != kAnyTier) { to.preferred_tier = tier_id{op.tier}; }
            if (!learned) { to.next_use = op.arg == kNoNext ? tick{no_next_use} : tick{op.arg}; }
            if (!d.hints.empty()) [[unlikely]] {
              if (auto const h = d.hints.find(op.obj); h != d.hints.end()) {
                to.lossy_compression = (h->second.hints & trace::hint_lossy_ok) != 0;
                to.compressible = (h->second.hints & trace::hint_no_compress) == 0;
              }
            }
            tensors[op.obj] = p.allocate(static_cast<std::size_t>(op.bytes), std::move(to));
            break;
          }
          case pool_op_kind::free:
            if (explicit_release) {
              held_by_obj[op.obj].clear();  // recorded runs release first; a leftover would forbid the free
            } else if (hold) {
              release_all();  // a held lease of it would forbid the free
            }
            p.free(tensors[op.obj]);
            break;
          case pool_op_kind::release:
            if (explicit_release && !held_by_obj[op.obj].empty()) { held_by_obj[op.obj].pop_back(); }
            break;
          case pool_op_kind::discard: {
            // No lease of it may be live (a recorded run released them first). Only its own
            // end early: releasing every lease, as a free does, would let the next request
            // evict tensors the trace's next kernel is still using.
            tensor const& t = tensors[op.obj];
            if (explicit_release) {
              held_by_obj[op.obj].clear();
            } else if (hold) {
              for (auto& v : held) {
                std::erase_if(v, [id = t.id()](lease const& l) { return l.id() == id; });
              }
            }
            p.discard(t);
            break;
          }
          case pool_op_kind::access: {
            bytes_requested += op.bytes;
            if (op.bytes > cap) {
              ++unserved;
              bytes_missed += op.bytes;
              break;
            }
            tensor const& t = tensors[op.obj];
            if (!learned) {
              p.set_next_use(t, op.arg == kNoNext ? std::optional<tick>{no_next_use} : std::optional<tick>{op.arg});
            }
            if (schedule) { schedule->at(i); }
            auto const mode = static_cast<access_mode>(op.mode);  // same enumerators, same order
            std::uint64_t const before = backend->link_stats(sim_link::h2d).bytes;
            lease l;
            try {
              l = op.host != 0 ? p.acquire_host(t, mode) : p.acquire(t, mode, streams[op.stream]);
            } catch (out_of_memory const&) {
              ++failed_acquires;
              if (!hold) {
                ++unserved;
                bytes_missed += op.bytes;
                break;
              }
              release_all();
              try {
                l = op.host != 0 ? p.acquire_host(t, mode) : p.acquire(t, mode, streams[op.stream]);
              } catch (out_of_memory const&) {
                ++failed_acquires;
                ++unserved;
                bytes_missed += op.bytes;
                break;
              }
            }
            if (backend->link_stats(sim_link::h2d).bytes != before) { bytes_missed += op.bytes; }
            if (o.recompute && mode != access_mode::read && !d.hints.empty()) [[unlikely]] {
              // The bytes it holds now can be rebuilt at the trace's cost: its recipe (a
              // write ended the previous one). No inputs: the cost stands for the whole op.
              if (auto const h = d.hints.find(op.obj); h != d.hints.end() && h->second.recompute_ns != 0) {
                recompute_options ro;
                tick const ns = h->second.recompute_ns;
                sim_backend* const be = backend.get();
                ro.fn = [be, ns](recompute_call const& c) { TIERPOOL_TRY(be->compute_async(c.stream, ns)); };
                ro.on_device = true;
                ro.cost_seconds = static_cast<double>(ns) * 1e-9;
                p.set_recompute(t, std::move(ro));
              }
            }
            if (explicit_release) {
              held_by_obj[op.obj].push_back(std::move(l));
            } else if (hold && op.host == 0) {
              held[op.stream].push_back(std::move(l));
            }
            break;
          }
          case pool_op_kind::prefetch:
            if (!o.trace_prefetches) { break; }  // --no-trace-prefetch: the prefetchers of `prefetch` alone
            if (op.tier != 0 || tensors[op.obj].bytes() <= cap) { p.prefetch(tensors[op.obj], tier_id{op.tier}); }
            break;
          case pool_op_kind::compute:
            TIERPOOL_TRY(backend->compute_async(streams[op.stream], op.arg));
            stream_compute[op.stream] += op.arg;
            if (!explicit_release) { held[op.stream].clear(); }
            break;
        }
      }
      if (o.progress) { o.progress(end, n); }
    }
    if (next_mark < d.phase_marks.size()) { time_marks(n); }  // markers after the last op
    release_all();
    makespan = backend->now();
    double stall_ns = 0.0;
    for (std::size_t s = 0; s < streams.size(); ++s) {
      tick const tail = backend->stream_tail(streams[s]).value_or(0);
      makespan = std::max(makespan, tail);
      stall_ns += static_cast<double>(tail - std::min(tail, stream_compute[s]));
    }
    out.stall_seconds = stall_ns * 1e-9;
    if (record) {
      auto spans = std::make_shared<std::vector<sim_span>>(backend->spans());
      out.activity = summarize_activity(*spans, makespan);
      out.phase_activities = phase_activities(*spans, out.phases, makespan);
      out.iteration_seconds = iteration_seconds(out.phases, makespan);
      if (o.record_timeline) {
        out.timeline = std::move(spans);
        for (stream_handle const s : streams) { out.timeline_streams.push_back(s.value); }
      }
    }
    st = p.stats();
    tensors.clear();
    p.close();
  }
  out.hits = st.hits;
  out.misses = st.misses - std::min(st.misses, failed_acquires) + unserved;
  out.unserved = unserved;
  out.bytes_requested = bytes_requested;
  out.bytes_missed = bytes_missed;
  out.bytes_h2d = st.bytes_h2d;
  out.bytes_d2h = st.bytes_d2h;
  out.copies_h2d = st.copies_h2d;
  out.copies_d2h = st.copies_d2h;
  out.evictions = st.tiers.empty() ? 0 : st.tiers[0].evictions;
  out.prefetches = st.prefetches;
  out.prefetches_late = st.prefetch_late_device;
  out.prefetch_lateness_seconds = st.prefetch_lateness_seconds;
  out.prefetches_on_time = st.prefetch_on_time_device;
  out.prefetch_lead_seconds = st.prefetch_lead_seconds;
  out.prefetches_wasted = st.prefetch_wasted;
  out.prefetch_wasted_bytes = st.prefetch_wasted_bytes;
  out.planner_relearns = st.planner_relearns;
  out.planner_periods_prefetching = st.planner_periods_prefetching;
  out.planner_periods_without = st.planner_periods_without;
  out.early_write_backs = st.early_write_backs;
  out.early_write_backs_wasted = st.early_write_backs_wasted;
  out.early_write_back_wasted_bytes = st.early_write_back_wasted_bytes;
  out.evicted_recompute = st.evicted_recompute;
  out.rebuilds = st.rebuilds;
  if (!st.tiers.empty()) {
    out.fragmented_evictions = st.tiers[0].fragmented_evictions;
    out.compactions = st.tiers[0].compactions;
    out.compacted_bytes = st.tiers[0].compacted_bytes;
  }
  out.makespan_seconds = static_cast<double>(makespan) * 1e-9;
}

}  // namespace tierpool::replay::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_impl.cpp — owns the pool's life: construction from its configuration (backend,
// tiers and policies, streams, recording, prediction, publishing), close and destruction,
// and the calls it forwards to its components (streams, low-memory callbacks, quotas).
// The tensor operations are in tensor_ops.cpp; placement, the OOM ladder, eviction and
// the copies in runtime/migration/. Entry point: detail::pool_impl (behind tierpool::pool).
//
// Note [Lock order of the pool]
// -----------------------------
// Rationale: many threads allocate, acquire and free at once; eviction runs while one
// tensor is locked and must touch others.
// Approach: a mutex per tensor record and one per tier (tier::mutex()). Order: tensor
// before tier. A thread blocks on a tensor lock only while holding no other lock (or, in
// close(), only tensor locks in id order); victims are try-locked and skipped when busy.
// validate() takes no tensor lock: it closes the quiesce gate every changing call passes
// (Note [The quiesce gate], op_gate.hpp). A thread never holds two tier locks: eviction claims victims under the tier lock,
// drops it, writes dirty victims back (locking the lower tier), then relocks to vacate.
// A thread-local list of the records it holds keeps it from try-locking its own (UB on a
// std::mutex). Leaf locks: table_mtx_, the stream registry's, the prefetch queue's, the
// tenant ledger's, the callbacks', the predictor's, access_shard::busy. Hits buffer their
// policy access events per shard (Note [The hit path takes no shared lock] in
// runtime/migration/copy_engine.cpp), applied under the tier lock later.
// Limitations: a victim busy in another thread is skipped for this round (counted as
// "in flight" by asking the policy for more bytes), so eviction may pick a less ideal one;
// a request that finds only busy victims lets go and retries (Note [Busy victims are
// waited for, not failed on], runtime/migration/placement.cpp).
#include "core/detail/pool_impl.hpp"

#include <tierpool/backend_factory.hpp>
#include <tierpool/backends/sim_backend.hpp>
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/log.hpp>
#include <tierpool/topology.hpp>

#include <algorithm>
#include <bit>
#include <unordered_map>
#include <array>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/pool_config.hpp"
#include "migration/record_lock.hpp"

namespace tierpool::detail {
namespace {

// Note [A set cleared by a step's stamp]
//   Rationale: the planner's walk (pool_impl::plan_after) asks, for each of up to a window
//   of accesses ahead (1024), whether it has seen the tensor this step, on every device
//   acquire. A std::unordered_set allocated and freed a node per tensor each step, about
//   a fifth of the instructions of a replay with `plan`; a flat set cleared cell by cell
//   still spent 8 % in memset. Approach: open addressing (linear probing, Fibonacci hash)
//   over cells stamped with the step they were written in; clearing is one increment of
//   the stamp, and the cells are rewritten only when it wraps. The table doubles when half
//   full and never shrinks (a thread's largest window). Figures: GPT-2 small, lru, `plan`,
//   50 %, callgrind, whole replay: 1.63 G instructions with the std::unordered_set, 1.25 G
//   with a flat set cleared cell by cell, 1.12 G with this one.
class step_set {
 public:
  void clear() noexcept
  {
    n_ = 0;
    if (++stamp_ == 0) {
      for (cell& c : cells_) { c.stamp = 0; }
      stamp_ = 1;
    }
  }
  /// @return true when `key` was not in the set (it is now). @throws std::bad_alloc
  bool insert(std::uint64_t key)
  {
    if ((n_ + 1) * 2 > cells_.size()) { grow(); }
    std::size_t const mask = cells_.size() - 1;
    for (std::size_t i = home(key); ; i = (i + 1) & mask) {
      cell& c = cells_[i];
      if (c.stamp != stamp_) {
        c = cell{key, stamp_};
        ++n_;
        return true;
      }
      if (c.key == key) { return false; }
    }
  }

 private:
  struct cell {
    std::uint64_t key{0};
    std::uint32_t stamp{0};
  };
  [[nodiscard]] std::size_t home(std::uint64_t key) const noexcept
  {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> (64U - bits_));
  }
  void grow()
  {
    std::vector<cell> old(cells_.size() < 64 ? 128 : cells_.size() * 2);
    old.swap(cells_);
    bits_ = static_cast<unsigned>(std::countr_zero(cells_.size()));
    std::uint32_t const live = stamp_;
    stamp_ = 1;
    n_ = 0;
    for (cell const& c : old) {
      if (c.stamp == live) { (void)insert(c.key); }
    }
  }
  std::vector<cell> cells_;
  unsigned bits_{0};
  std::uint32_t stamp_{1};
  std::size_t n_{0};
};


// A spec with every parameter of the policy spelled out, defaults included, in the order
// the policy declares them ("s3fifo:small_ratio=0.1,..."): what stats() reports, so that a
// reader sees which settings ran. Plug-in specs and unknown names are kept as given.
std::string full_spec(std::vector<policy_info> const& infos, std::string const& spec)
{
  if (is_plugin_spec(spec)) { return spec; }
  std::string_view const sv = spec;
  std::size_t const colon = sv.find(':');
  std::string_view const name = sv.substr(0, colon);
  auto const it = std::find_if(infos.begin(), infos.end(), [&](policy_info const& i) { return i.name == name; });
  if (it == infos.end() || it->parameters.empty()) { return spec; }
  std::vector<std::pair<std::string_view, std::string_view>> given;
  std::string_view rest = colon == std::string_view::npos ? std::string_view{} : sv.substr(colon + 1);
  while (!rest.empty()) {
    std::size_t const comma = rest.find(',');
    std::string_view const kv = rest.substr(0, comma);
    std::size_t const eq = kv.find('=');
    if (eq != std::string_view::npos) { given.emplace_back(kv.substr(0, eq), kv.substr(eq + 1)); }
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  std::string out(name);
  char sep = ':';
  for (policy_parameter const& p : it->parameters) {
    std::string_view value = p.default_value;
    for (auto const& [k, v] : given) {
      if (k == p.name) { value = v; }
    }
    out += sep;
    out += p.name;
    out += '=';
    out += value;
    sep = ',';
  }
  return out;
}

/// The program's name (Linux: /proc/self/comm), for the figures it publishes.
std::string program_name()
{
  std::ifstream in("/proc/self/comm");
  std::string name;
  std::getline(in, name);
  return name.empty() ? std::string("tierpool") : name;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Construction
// ---------------------------------------------------------------------------------------

namespace {

// pool_options::actions with its defaults filled in: the sim backend's link models where
// it models them (a virtual clock, or a throttled wall clock), else the nominal figures.
action_prices resolve_action_prices(action_options const& a, backend& be)
{
  auto const check = [](double v, char const* name) {
    if (!(v >= 0.0)) {  // negative or NaN
      throw logic_error(std::string("pool_options::actions.") + name + " is " + std::to_string(v) +
                        ": a bandwidth in bytes per second, >= 0 (0: the default)");
    }
  };
  check(a.h2d_bytes_per_s, "h2d_bytes_per_s");
  check(a.d2h_bytes_per_s, "d2h_bytes_per_s");
  check(a.storage_write_bytes_per_s, "storage_write_bytes_per_s");
  check(a.storage_read_bytes_per_s, "storage_read_bytes_per_s");
  action_prices p;
  p.recompute = a.recompute;
  p.by_cost = a.by_cost;
  if (auto const* sim = dynamic_cast<sim_backend const*>(&be)) {
    sim_links const& l = sim->links();
    auto const take = [](double& to, link_model const& m) {
      if (m.bandwidth_bytes_per_s > 0.0) { to = m.bandwidth_bytes_per_s; }
    };
    take(p.h2d, l.h2d);
    take(p.d2h, l.d2h);
    take(p.h2h, l.h2h);
    take(p.storage_write, l.h2s);
    take(p.storage_read, l.s2h);
  }
  auto const given = [](double& to, double v) {
    if (v > 0.0) { to = v; }
  };
  given(p.h2d, a.h2d_bytes_per_s);
  given(p.d2h, a.d2h_bytes_per_s);
  given(p.storage_write, a.storage_write_bytes_per_s);
  given(p.storage_read, a.storage_read_bytes_per_s);
  return p;
}

}  // namespace

pool_impl::pool_impl(pool_options options)
{
  environment_overrides const env = apply_environment(options, process_environment());

  // Backend: given, or chosen (TIERPOOL_BACKEND overrides options.backend).
  if (options.backend_object) {
    backend_ = options.backend_object;
    backend_reason_ = "given by pool_options::backend_object";
  } else {
    backend_selection sel = env.backend
                              ? select_backend_from_env(options.sim, options.device, options.notice, options.backend)
                              : select_backend(options.backend, options.sim, options.device, options.notice);
    backend_ = std::shared_ptr<tierpool::backend>(std::move(sel.backend));
    backend_reason_ = std::move(sel.reason);
  }
  backend_caps const& caps = backend_->caps();

  // The configuration: the options, the environment and what the machine offers.
  platform_facts facts;
  if (caps.name == "cuda") {
    std::size_t free_b = 0;
    std::size_t total_b = 0;
    if (backend_->device_memory_info(&free_b, &total_b) == status::ok) { facts.device_free_bytes = free_b; }
  }
  facts.host_memory_share = default_host_memory_share();
  if (options.tiers.empty()) { facts.far_host_tiers = discover_far_host_tiers(caps); }
  pool_config const cfg = resolve_pool_config(options, caps, facts, env);
  for (auto const& [tenant, quota] : options.tenant_quotas) { tenants_.set_quota(tenant, quota); }
  contention_ = cfg.contention;

  events_ = std::make_unique<event_pool>(*backend_);
  streams_ = std::make_unique<stream_registry>(*backend_, *events_);
  engine_.attach(*backend_, *events_, *streams_, counters_, table_mtx_, table_);
  policy_registry const registry = options.registry != nullptr ? *options.registry : policy_registry::with_builtins();
  for (std::size_t i = 0; i < cfg.tiers.size(); ++i) {
    tier_plan const& plan = cfg.tiers[i];
    auto ts = std::make_unique<tier_state>();
    ts->kind = plan.config.kind;
    ts->name = plan.config.name;
    try {
      ts->policy.emplace(registry.create(plan.policy_spec));
    } catch (logic_error const& e) {
      if (env.policy) { throw logic_error(std::string("TIERPOOL_POLICY: ") + e.what()); }
      throw;
    }
    ts->policy_spec = full_spec(registry.list(), plan.policy_spec);
    tier_config tc = plan.config;
    if (tc.kind == tier_kind::storage && caps.real_memory) {
      // The file gives the tier its ranges and does its copies (Note [Where a storage
      // tier's bytes are]); every configuration problem throws storage_error here.
      ts->file = std::make_unique<storage_file>(plan.storage, tc.capacity_bytes, tc.name);
      tc.source = ts->file.get();
      tc.alignment = ts->file->alignment();
    }
    ts->mem = std::make_unique<tier>(*backend_, *events_, tc);
    ts->capacity = ts->mem->config().capacity_bytes;
    ts->index = static_cast<std::uint32_t>(i);
    ts->acc_drain.reserve((kShards + 1) * access_shard::kCap);
    ts->compact_in_ladder = options.compaction && !is_storage(ts->kind);  // Note [Compaction]
    ts->compact_last_resort = options.compact_before_failing && !is_storage(ts->kind);
    ts->window_share = is_storage(ts->kind) ? 0 : options.window_eviction_share;  // Note [Evicting a window for a large request]
    ts->split_by_default = ts->kind == tier_kind::device;  // Note [Tenants' shares of a tier]
    ts->tenant_bytes.emplace_back(0, 0);                  // tenant 0's entry: the default tenant
    for (auto const& [tenant, share] : plan.tenant_shares) {
      if (share == 0) { continue; }
      if (tenant != 0) { ts->tenant_bytes.emplace_back(tenant, 0); }
      ts->tenant_shares.emplace_back(tenant, share);
    }
    engine_.add_tier(std::move(ts));
  }
  engine_.set_actions(resolve_action_prices(options.actions, *backend_));  // Note [Choosing an eviction action]
  for (auto const& [tenant, quota] : options.tenant_quotas) { engine_.set_tenant_quota(tenant, quota); }
  for (auto const& [tenant, to] : options.tenants) { engine_.set_tenant_rank(tenant, to.priority, to.hard_shares); }

  // Recording (TIERPOOL_TRACE wins over pool_options::trace_path). A file that cannot be
  // created fails the pool, naming the variable when the path came from it.
  if (!options.trace_path.empty()) {
    try {
      tracer_.open(options.trace_path, options.notice == fallback_notice::silent);
    } catch (trace_error const& e) {
      if (env.trace_path) { throw trace_error(std::string("TIERPOOL_TRACE: ") + e.what()); }
      throw;
    }
  }

  // Prefetch predictor ("none": no hook on the acquire path at all).
  if (!options.prefetch.empty() && options.prefetch != "none") {
    try {
      prediction_.predictor.emplace(registry.create_predictor(options.prefetch));
    } catch (logic_error const& e) {
      if (env.prefetch) { throw logic_error(std::string("TIERPOOL_PREFETCH: ") + e.what()); }
      throw;
    }
    prediction_.active = prediction_.predictor->name() != "none";
    prefetch_spec_ = full_spec(registry.list_predictors(), options.prefetch);
    prediction_.plan.tensors.reserve(64);
    prediction_.planner = prediction_.predictor->target<plan_predictor>();
    if (prediction_.planner != nullptr) {
      if (prediction_.planner->options().oracle) {
        if (options.schedule == nullptr) {
          throw logic_error("pool: the oracle planner (prefetch = \"oracle\") needs the program's schedule in "
                            "pool_options::schedule (tierpool replay gives the trace's future); use \"plan\" to "
                            "learn it instead");
        }
        prediction_.schedule = options.schedule;
      }
      if (prediction_.planner->options().timing) { timer_ = std::make_unique<device_timer>(*backend_); }
      std::uint64_t device_bytes = 0;
      for (auto const& ts : engine_.tiers()) {
        if (is_device_accessible(ts->kind)) {
          device_bytes = ts->capacity;
          break;
        }
      }
      prediction_.budget = prediction_.planner->options().budget_bytes != 0 ? prediction_.planner->options().budget_bytes
                                                                             : device_bytes / 4;
    }
  }

  // Copy streams (at least one per direction) and the retire stream.
  engine_.make_copy_streams(cfg.h2d_streams, cfg.d2h_streams);

  // The device-pressure check (pool_options::pressure), on a thread of its own.
  pressure_ = options.pressure;
  if (pressure_.device_free_floor != 0 && pressure_.interval_ms != 0) {
    pressure_thread_.start(std::chrono::milliseconds(pressure_.interval_ms), [this] { (void)check_memory_pressure(); });
  }

  // Live figures, last: nothing after this throws, and the refresh thread reads a pool
  // that is whole. Best effort: a pool that cannot publish works as usual.
  if (options.publish.enabled) {
    std::string const name = options.publish.name.empty() ? program_name() : options.publish.name;
    try {
      publisher_ = telemetry::publisher::create(name, caps.name, caps.device_name, options.publish.interval_ms,
                                                [this] { return stats(); }, publish_error_, options.publish.group);
    } catch (std::exception const& e) {  // no memory, or no thread: the pool goes on without
      publish_error_ = e.what();
    }
    if (!publisher_ && options.notice == fallback_notice::stderr_line) {
      log_message(log_level::warning, "tierpool: not publishing live figures for `tierpool top`: " + publish_error_ +
                                        "; the pool works as usual; TIERPOOL_PUBLISH=0 (publish_options::enabled) "
                                        "turns publishing off without this message");
    }
  }
}

pool_impl::~pool_impl()
{
  pressure_thread_.stop();  // first: it calls into the pool
  stop_publishing();  // first: its thread reads the tiers
  tracer_.close();    // close() did not (live leases): report a failure, do not drop it
  // Every handle is gone (they hold shared_ptrs to us): free what is left.
  {
    std::lock_guard lock(table_mtx_);
    table_.for_each([this](record_ref const& rec) {
      std::lock_guard rl(rec->mtx);
      free_slots_locked(*rec);
    });
    table_.clear();
  }
  engine_.shutdown();  // waits for the copies, frees the tiers, destroys the copy streams
  streams_.reset();  // destroys the user streams, releases the marks' events
  events_.reset();
}

// ---------------------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------------------

void pool_impl::check_open(char const* what) const
{
  if (closed_.load(std::memory_order_acquire)) [[unlikely]] {
    throw logic_error(std::string("pool::") + what + ": the pool is closed");
  }
}

tensor_record& pool_impl::checked_record(tensor const& t, char const* what) const
{
  if (t.rec_ == nullptr) [[unlikely]] {
    throw logic_error(std::string("pool::") + what + ": empty tensor handle (moved from or freed)");
  }
  prefetch_lines(t.rec_.get(), kRecordHotLines);  // Note [Record layout] (record_slab.cpp)
  if (t.rec_->owner_index != owner_index_) [[unlikely]] {
    throw logic_error(std::string("pool::") + what + ": the tensor belongs to another pool");
  }
  check_open(what);
  return *t.rec_;
}

std::size_t pool_impl::device_tier() const
{
  for (std::size_t k = 0; k < engine_.tiers().size(); ++k) {
    if (is_device_accessible(engine_.tiers()[k]->kind)) { return k; }
  }
  throw logic_error("pool::acquire: the pool has no device-accessible tier (device or managed)");
}

// ---------------------------------------------------------------------------------------
// Low-memory callbacks, quotas, recording, prediction
// ---------------------------------------------------------------------------------------

std::uint64_t pool_impl::add_low_memory_callback(low_memory_callback cb) { return lowmem_.add(std::move(cb)); }

void pool_impl::remove_low_memory_callback(std::uint64_t id) { lowmem_.remove(id); }

bool pool_impl::run_low_memory_callbacks(std::uint32_t k, std::size_t bytes)
{
  if (!lowmem_.any()) { return false; }
  tier_state const& ts = *engine_.tiers()[k];
  low_memory_event ev{};
  ev.tier = tier_id{k};
  ev.tier_name = ts.name;
  ev.bytes_needed = bytes;
  ev.capacity_bytes = ts.capacity;
  ev.pinned_bytes = ts.pinned_bytes();
  return lowmem_.run(ev);
}

void pool_impl::set_quota(std::uint32_t tenant, std::size_t bytes)
{
  tenants_.set_quota(tenant, bytes);
  engine_.set_tenant_quota(tenant, bytes);  // a device tier's default share (Note [Hard shares and priorities])
}

void pool_impl::set_tenant(std::uint32_t tenant, tenant_options const& options)
{
  check_open("set_tenant");
  engine_.set_tenant_rank(tenant, options.priority, options.hard_shares);
}

void pool_impl::set_tenant_share(std::uint32_t tenant, tier_id tier, std::size_t bytes)
{
  check_open("set_tenant_share");
  auto const k = static_cast<std::size_t>(tier);
  TIERPOOL_EXPECTS(k < engine_.tiers().size(), "set_tenant_share: tier " + std::to_string(k) + " does not exist (the pool has " +
                                                  std::to_string(engine_.tiers().size()) + ")");
  engine_.set_tenant_share(static_cast<std::uint32_t>(k), tenant, bytes);
}

void pool_impl::trace_record(trace::event e) noexcept
{
  if (!tracer_.active()) { return; }
  if (closed_.load(std::memory_order_acquire)) { return; }  // close() closed the recorder: a call that is about to throw
  e.time_ns = backend_->now();
  tracer_.record(e);
}

void pool_impl::trace_access(lease const& l) noexcept
{
  if (!tracer_.active()) { return; }
  trace::event e{};
  e.kind = trace::event_kind::access;
  e.tensor = static_cast<std::uint64_t>(l.id());
  e.mode = l.access() == access_mode::read         ? trace::access_kind::read
           : l.access() == access_mode::read_write ? trace::access_kind::read_write
                                                   : trace::access_kind::write_discard;
  if (l.host_) {
    e.stream = trace::host_stream;
  } else if (stream_entry const* se = streams_->find(l.stream())) {
    e.stream = se->trace_id;
  }
  trace_record(std::move(e));
}


access_view pool_impl::tell_predictor(tensor_id id, std::size_t bytes, access_mode access, stream_handle stream)
{
  access_view a{};
  a.id = id;
  a.bytes = bytes;
  a.write = access != access_mode::read;
  a.discard = access == access_mode::write_discard;
  a.sequence = prediction_.seq++;
  a.stream = stream.value;
  // Device compute queued on the stream since its access before (Note [Copy-ins at the
  // latest start]): the stream's time when this acquire began, less its time when the one
  // before was told.
  if (std::optional<tick> const end = device_times_known(stream) ? backend_->known_stream_time(stream) : std::nullopt) {
    acquire_start const began = std::exchange(acquire_began(), acquire_start{});
    auto& told = prediction_.stream_told;
    auto it = std::find_if(told.begin(), told.end(), [&](auto const& e) { return e.first == stream.value; });
    if (it == told.end()) {
      if (told.size() >= 64) { told.clear(); }  // streams come and go: bounded (their compute restarts at 0)
      try {
        told.emplace_back(stream.value, *end);
      } catch (std::bad_alloc const&) {  // a stream more: its compute stays unknown (0)
      }
    } else {
      if (began.pool == this && began.stream == stream.value && began.at > it->second) { a.compute = began.at - it->second; }
      it->second = *end;
    }
  }
  prediction_.predictor->on_access(a, prediction_.plan);
  if (timer_ != nullptr && prediction_.planner != nullptr && measured_times(stream)) {
    // Note [Device times measured with events]: this access's compute is timed once its
    // events complete, and what has completed goes into the forecast.
    acquire_start const began = std::exchange(acquire_began(), acquire_start{});
    event_handle const ev = began.pool == this && began.stream == stream.value ? began.ev : event_handle{};
    if (began.ev && !ev && began.pool == this) { timer_->drop(began.ev); }
    timer_->told(stream, ev, prediction_.planner->position(), engine_.copy_in_streams(), engine_.copy_in_bytes_queued());
    plan_predictor& planner = *prediction_.planner;
    timer_->resolve([&planner](std::uint64_t position, tick ns) { planner.set_compute(position, ns); });
  }
  return a;
}

void pool_impl::predict_failed(tensor_id id, std::size_t bytes, access_mode access, stream_handle stream)
{
  if (closed_.load(std::memory_order_acquire) || lost()) { return; }  // a handle dropped after close()
  stream_entry const* const se = streams_->find(stream);
  if (se == nullptr || se->internal || !se->live.load(std::memory_order_relaxed)) { return; }  // destroyed since
  {
    std::lock_guard lock(table_mtx_);
    if (table_.find(static_cast<std::uint64_t>(id)) == nullptr) { return; }  // freed since
  }
  predict_after(id, bytes, access, stream);
}

void pool_impl::predict_after(tensor_id id, std::size_t bytes, access_mode access, stream_handle stream)
{
  if (capturing(stream)) [[unlikely]] { return; }  // prefetches are hints: Note [Acquire during stream capture]
  if (prediction_.planner != nullptr) {
    plan_after(id, bytes, access, stream);
    return;
  }
  op_gate::scope const op(gate_, thread_shard());
  thread_local std::vector<tensor_id> plan_ids_;  // this thread's copy of the plan (keeps its capacity)
  {
    std::lock_guard lock(prediction_.mtx);
    tell_predictor(id, bytes, access, stream);
    plan_ids_.assign(prediction_.plan.tensors.begin(), prediction_.plan.tensors.end());  // reserved: no allocation once warm
  }
  auto const d = static_cast<std::uint32_t>(device_tier());
  for (tensor_id const next : plan_ids_) {
    record_ref rec;
    {
      std::lock_guard lock(table_mtx_);
      if (auto const* r = table_.find(static_cast<std::uint64_t>(next))) { rec = *r; }
    }
    if (rec != nullptr && !holds_record(*rec)) { engine_.prefetch_record(rec, d, true); }
  }
}



// Note [The forecast before the access]
//   Rationale: a policy sees a tensor's forecast next use with its events (insert, access:
//   tensor_view::next_use), so pool::set_next_use is given before the acquire. The planner
//   gave the `plan` forecast after the acquire (plan_after), when the access event had
//   already been queued with the forecast of the access before: `belady` driven by `plan`
//   always ordered a tensor by the use it had just had. On mlp-train iterations=10, belady
//   with the learned forecast alone (plan:prefetch=off,writeback=off,keep=off) took 42.2 ms
//   per iteration at 25 % and 36.8 ms at 50 %, against 31.1 and 20.1 ms with the trace's
//   true forecast, although every forecast matched the trace once learned.
//   Approach: before a device acquire, the planner gives the tensor's next use after the
//   access about to be recorded (plan_predictor::next_use_if_next: one period back, as
//   next_use_of_last will); unplanned, or mispredicted there, the least-recently-used
//   order value plan_after gives. Oracle: the program gives the forecasts itself. Each
//   planner step leaves the forecast for the acquire its schedule expects next in two
//   atomics (a seqlock), so that acquire needs no lock; another tensor's takes the
//   prediction lock if it is free, and keeps its last step's forecast if not. Measured
//   (`tierpool bench hitpath -t 4 -r 7 --ops 200000`, TIERPOOL_PREFETCH=plan, 2 cores,
//   three alternating rounds against the build before, medians): 1 thread 243-256 ns per
//   acquire + release against 219-236; 4 threads 1167-1359 against 1009-1248. Without a
//   planner the path is unchanged (65-68 ns). Taking the lock on every acquire cost 250-286
//   and 1235-1348 ns, asking the backend whether the stream captures another 20 ns, and
//   sequentially consistent stores instead of release ones about 15 ns.
//   Limitations: device acquires only (pool::acquire, and acquire_all through it), as the
//   planner is told of no other; a stream in capture gets no forecast (prefetches are hints).
bool pool_impl::forecast_before(tensor_record& rec)
{
  plan_predictor const& planner = *prediction_.planner;
  // A capture anywhere: no forecast (capturing(stream) asks the backend, a cost on every acquire).
  if (planner.options().oracle || backend_->capture_underway()) { return true; }
  if (std::uint64_t const left = prediction_.asleep.load(std::memory_order_relaxed); left != 0) {
    // Asleep (Note [A planner that finds no schedule sleeps]): least recently used first.
    std::uint64_t const len = prediction_.sleep_len.load(std::memory_order_relaxed);
    std::uint64_t const at = prediction_.sleep_base.load(std::memory_order_relaxed) + (len > left ? len - left : 0) + 1;
    rec.next_use.store(lru_order(at), std::memory_order_relaxed);
    return false;
  }
  // The last step's forecast for the acquire it expected (a seqlock over two words; a torn
  // read only makes a forecast a little off, never a byte wrong).
  auto const id = static_cast<std::uint64_t>(rec.id);
  std::uint64_t const s1 = prediction_.next_id.load(std::memory_order_acquire);
  if (s1 == id || s1 == kAnyNextTensor) {
    tick const v = prediction_.next_value.load(std::memory_order_acquire);
    if (prediction_.next_id.load(std::memory_order_relaxed) == s1) {
      rec.next_use.store(v, std::memory_order_relaxed);
      return true;
    }
  }
  // Another tensor was expected: ask the planner, unless another thread holds it (then the
  // tensor keeps the forecast of its last step, as before).
  std::optional<tick> f;
  tick now = 0;
  {
    std::unique_lock lock(prediction_.mtx, std::try_to_lock);
    if (!lock.owns_lock()) { return true; }
    f = planner.next_use_if_next(rec.id);
    now = planner.position() + 1;
    if (!f) { f = unforecast_order(now); }  // least recently used first (slept read under the lock)
  }
  rec.next_use.store(*f, std::memory_order_relaxed);
  return true;
}

// Note [The planner's step]
//   Before each device acquire, plan mode gives the tensor its forecast next use (Note
//   [The forecast before the access]). After it, with the forecast (plan: learned; oracle:
//   the program's schedule), under the prediction lock: tell the forecast; plan mode gives
//   the tensor its forecast next use again (pool::set_next_use's field: belady and the
//   do-no-harm check read it; while there is no forecast, a value that orders tensors least
//   recently used first, far beyond any forecast); copy the accesses ahead. Then, without it:
//   1. the horizon: the position where the accesses ahead add up to more bytes than the
//      device tier holds; and the pressure point, where those still live do (Note
//      [Early write-backs only under pressure]);
//   2. early write-backs: tensors written lately (FIFO, tried 8 accesses after the write,
//      when a lease of a kernel's operand has usually ended; still leased: skipped),
//      whose next use lies past the pressure point are written back now, on the d2h stream behind
//      their last use, so that their eviction later drops them and the copy-in that takes
//      their room does not wait for a write-back;
//   3. planned prefetches, nearest use first, passing over victims needed before the
//      horizon too (Note [Conservative prefetches] for the stricter option), while the bytes prefetched and not yet used
//      stay within the budget and the accesses ahead fit the device tier
//      (migration_engine::plan_prefetch, Note [Planned prefetches]); the first that finds
//      no harmless room ends the walk.
// Note [Conservative prefetches]
//   Rationale: "do no harm" lets a prefetch of X evict Y whenever Y's next use comes after
//   X's. On a loop larger than the device that still evicts tensors the demand schedule
//   keeps: the weights read early in each pass (their next use is after X's), while the
//   tensors used between now and X, which Belady's MIN would evict at X's use (their reuse
//   lies a pass later), are still needed and protected. The demand path then fetches Y
//   again: more bytes in, which costs time wherever the link bounds the run. Approach
//   (plan_predictor::config::conservative; Cao, Felten, Karlin & Li's conservative
//   strategy): the accesses ahead give each tensor's second use in the window (its reuse;
//   a tensor used once there: the window's end); a prefetch of X also protects every
//   victim whose next use comes before the latest reuse of the tensors used ahead of X. So
//   the first access ahead may take the room of what was just used, as demand fetching
//   would, and later ones only room nothing ahead competes for. Limitations: the reuse is
//   the second use in the window, a lower bound when a tensor is used twice before X; the
//   policy's order still picks among the victims left, so with a policy other than
//   belady the replacements are not MIN's.
// Note [Early write-backs only under pressure]
//   Rationale: an early write-back pays off only if the tensor is evicted before its next
//   write or its free; else the copy was for nothing (pool_stats::early_write_backs_wasted).
//   The planner wrote back every written tensor whose forecast next use lay past the
//   horizon, where the distinct tensors ahead outgrow the device tier. That horizon counts
//   tensors freed on the way as holding their room: on GPT-2 small at 50 % (lru, `plan`),
//   136 of 152 early write-backs (1.9 GiB) were wasted, the tensors (attention maps, MLP
//   gradients) read and freed while still resident; with `oracle` 231 of them.
//   Approach: the schedule marks each tensor's last access (planned_access::last: the trace's
//   last access for the oracle, one period back for `plan`); the walk also finds the
//   pressure point, where the tensors ahead that are still live outgrow the tier (a last
//   access gives its room back), and only a tensor next used past it is written back early:
//   before it, nothing needs to be evicted at all. The horizon itself (the keep window, the
//   prefetch walk) is unchanged: moving it to the pressure point moved the `plan` rows by
//   0.95-1.06x and the oracle rows by 0.73-1.08x. Measured (virtual clock, pcie4, the five
//   traces, lru / belady / repeat at 25 % and 50 %; bench/results/early-write-backs-cpu-2026-12-05.md):
//   `oracle` rows 0.878-1.010x (geometric mean 0.988), `plan` rows 0.989-1.005x.
//   Limitations: necessary, not sufficient: the policy may still keep the tensor (lru keeps
//   a tensor written late in the backward pass over older ones), so `plan` still wastes
//   most of its early write-backs on GPT-2.
// Note [No early write-back while the tier evicts]
//   Rationale: an early write-back waits for an idle d2h link (Note [Early write-backs on an
//   idle link], transfer_planner.cpp), judged in device time at the accessing stream's point.
//   Where the run is copy-bound (an optimizer step: every copy-in waits for its victim's
//   room) the stream is held back by the copies, so the link looks idle after each one, and
//   the early copy then goes ahead of the next victim's write-back: the copy-in behind it
//   waits for both. On mlp-train layers=16 width=1024 batch=512 at 50 % (lru, `plan`) the
//   optimizer step took 23.6 ms, 20.5 without early write-backs, and the run 42.5 ms
//   against 41.6 with no prefetch at all.
//   Approach: early write-backs wait for a quiet stretch: kQuietSteps (32) planner steps in
//   a row in which the device tier's eviction count (tier_state::evictions) did not move;
//   the written tensors stay queued meanwhile. Tried first, on the step alone (no early
//   write-back in a step that finds the count moved since the step before): `plan` rows
//   0.971-1.014x, the layers=16 row 41.5 ms. Then the stretch, against that (the five
//   traces and the 16 generator variants, 25 % and 50 %; `plan` geometric mean per policy
//   lru / repeat / belady): 2 steps 1.001 / 0.999 / 0.999, 4 0.997 / 0.996 / 0.999, 8 0.996 /
//   0.995 / 0.998, 16 0.998 / 0.994 / 0.996, 32 0.9956 / 0.993 / 0.995 (max 1.012), 64
//   0.999 / 0.994 / 0.995 (max 1.042), 128 1.002 (max 1.109), the same as writeback=off.
//   Also tried: counting only demand misses' dirty victims (an early copy leaves its victim
//   clean, the next miss writes nothing back, and the early copies went on: all 72 of
//   ReplayPlanner.NoEarlyWriteBackWhileTheTierEvicts); demand misses' evictions but not a
//   prefetch's; dropping the held tensors rather than keeping them queued.
//   Measured against no rule (bench/results/early-write-backs-evicting-cpu-2026-12-05.md):
//   the layers=16 row 42.5 -> 40.8 ms (writeback=off 40.4), transformer-train batch=2
//   seq=512 at 25 % with lru 159.8 -> 156.4 ms (`none` 159.2).
//   A pool counts as quiet until its first eviction.
//   Limitations: 32 is measured, not derived; the signal is global (with threads
//   interleaving, one thread's eviction holds another's early write-backs).
// Note [Copy-ins at the latest start]
//   Rationale: the planner's walk is bounded in bytes (the horizon, the budget), not in time:
//   it copied in every tensor ahead it found harmless room for, however much compute lay
//   before its use. A copy-in that has to evict takes that room from then on: the tensors
//   it evicts (next used after it, so "no harm" by Cao et al.'s rule) are gone early, and
//   the copies the walk issued first stand in the h2d queue ahead of ones needed sooner at
//   the next step. The issue asks for each copy-in at the latest time that still completes
//   before its use, in device time, given the link's bandwidth and its queue.
//   Approach (where the backend knows device times ahead: the sim's virtual clock):
//   - The compute before each access is learned. At the start of a planned acquire the
//     pool reads its stream's device time; the compute queued on that stream since its
//     access before is that time less the stream's time when that one was told
//     (access_view::compute). plan_predictor keeps it per access, and upcoming() gives each
//     access ahead the compute of its counterpart one period back (planned_access::compute;
//     the oracle's schedule sums the trace's compute events on the access's stream).
//   - In the prefetch walk, a candidate that has no free room (the device tier's placed
//     bytes plus its own exceed the tier; free room harms nothing and is taken now) is held
//     back while, issued at the next step instead, it would still complete before its use:
//     behind the h2d queue at the stream's point (migration_engine::copy_in_backlog) and the
//     copies of the candidates before it, less the compute the stream runs until that step,
//     with the compute ahead counted at 80 %. The next access itself is never held back
//     (its acquire is the next step).
//   - A candidate issued now first issues the ones held back before it: on a FIFO link they
//     would queue behind it (without that, the `repeat` rows went up to 1.17x).
//   Measured (virtual clock, pcie4, the five traces and the 16 generator variants, 25 % and
//   50 %; bench/results/copy-in-timing-cpu-2026-12-05.md), timing against timing=off:
//   `plan` with lru 0.945-1.002x (geometric mean 0.996; transformer-train at 50 % 394.9 ->
//   387.6 ms), with repeat 0.988-1.014x, with belady 0.970-1.020x; `oracle` rows
//   0.954-1.090x (geometric mean about 1.000; GPT-2 small at 50 % with repeat 1.09x).
//   Without the free-room exception: `plan` with lru 0.935-1.048x (GPT-2 small at 50 % 1.048x).
//   Limitations: the compute ahead sums every access's compute whatever its stream (exact on
//   one stream, an overestimate on several). Tried on two-stream traces (data-parallel
//   training, `streams=2`; bench/results/two-streams-cpu-2026-12-07.md), not kept: the sum
//   per stream, and per stream from each stream's own point. Both issue more copies that must
//   evict: `plan` rows at a geometric mean of 1.000-1.002x, `oracle` rows 1.009-1.010x (up
//   to 1.166x). Where device times are not known ahead
//   but the backend times events (CUDA), they are measured once the work has run (Note
//   [Device times measured with events], device_timer.cpp); where neither (the sim's wall
//   clock) copy-ins go as before, as soon as room allows.
// Note [The schedule ahead in chunks]
//   Rationale: every device acquire runs the planner's step, and the step read the whole
//   window ahead (1024 accesses by default) from the forecast: two hash lookups per access
//   ahead, although the walks stop where the tensors ahead outgrow the device tier, often
//   a few dozen accesses in. On GPT-2 small (lru, `plan`, 50 %) the planner took about
//   six times the instructions of the rest of the pool. Approach: read 128 accesses ahead
//   under the prediction lock, and as many again each time a walk needs more, under the
//   lock again and only while the planner has not moved on (another thread's access): the
//   walk then ends where it is, as it would at the window's end. The oracle's schedule
//   (pool_options::schedule) is read whole, as before; `conservative` reads the whole
//   window (its guard needs each tensor's reuse in it). The same decisions as before:
//   every replay figure of the five traces is unchanged. Figures (callgrind, whole replay,
//   lru, `plan`, with Note [A set cleared by a step's stamp]): docs/chapters/policies.md,
//   "What a step costs"; the chunks alone saved 1-8 % of the instructions.
// Note [A quiet window is walked once]
//   Rationale: where the tensors of the whole window fit the device tier and every one is
//   resident (a working set that fits, or a phase of one that does not), each step walked
//   the window (1024 accesses) to find that nothing needs keeping, writing back or
//   prefetching: `TIERPOOL_PREFETCH=plan tierpool bench hitpath --tensors-per-thread 64`
//   took about 1050 ns per acquire and release against 130 ns with no predictor.
//   Approach: a full walk that finds no horizon, no pressure point, the whole window read
//   and every tensor ahead on the device marks the window quiet for kQuietWalk accesses.
//   While the device tier has evicted nothing, had nothing demoted or shrunk out of it
//   (tier_state::moved_down) and holds no more bytes than then, a step reads the next
//   access (the next acquire's forecast) and the accesses that entered the window's far
//   end since a step last looked (about one per step), and walks nothing if each of those
//   is of a tensor on the device. A tensor not born yet ends the quiet window there: its
//   room may bring pressure before any byte is allocated, and the walk writes back early
//   for it (without that rule GPT-2 small at 50 % with `plan:conservative=on` and repeat
//   took 2332.8 ms instead of 2126.4). A step outside a planned forecast (learning,
//   fallback) ends the quiet window: the next forecast is walked first. Limitation: a walk
//   without prefetches (the trials of Note [Measuring whether prefetching pays]) marks its
//   window quiet without checking residency (not marking it made those steps walk every
//   time: the hit path above about 350 -> 460 ns); when prefetching resumes, a tensor ahead
//   that is not resident waits up to kQuietWalk accesses for its prefetch. A full walk
//   that finds no pressure marks the window quiet with a tensor not born yet inside it
//   (its room is counted, nothing to fetch); resident tensors entering afterwards may add up
//   to pressure with it, unseen until its birth grows the tier's bytes or kQuietWalk
//   accesses pass: an early write-back is dropped or the keep window lags, no byte is at
//   risk (not marking such windows would leave few quiet ones in a training loop, where an
//   activation is born ahead most of the time). The accessed tensor's own forecast is still
//   stored. Tests: PoolPlanner.ADemotionEndsAQuietWindow, AStaleCopyEnteringAQuietWindowIsRefreshedAhead
//   (the far end) and ATensorBornAheadEndsAQuietWindow (the unborn rule); each fails
//   without its rule.
//   Every row of scripts/planner_rows.py (`plan`, `oracle`, `plan:conservative=on`,
//   `plan:prefetch=off`; lru, repeat, belady; the 50 standard and the 10 long rows) is
//   unchanged to the bit. The hit path above: about 1096 -> 343 ns with 1 thread, 5564 ->
//   1795 ns per thread with 4 (bench/results/planner-quiet-window-cpu-2026-12-07.md);
//   quiet for 8 accesses cost more, for 32 saved no more than 16.
tick pool_impl::unforecast_order(std::uint64_t position) const noexcept { return lru_order(position + prediction_.slept); }

bool pool_impl::sleep_step() noexcept
{
  std::uint64_t left = prediction_.asleep.load(std::memory_order_relaxed);
  while (left != 0 && !prediction_.asleep.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {}
  return left != 0;
}

// Note [A planner that finds no schedule sleeps]
//   Rationale: the planner's step tells every device acquire to plan_predictor under the
//   prediction lock, whether or not a schedule is ever learned. Where none repeats (threads
//   interleaving their loops in no fixed order, requests of an inference server, a random
//   workload) the step costs its learning and serialises the threads on that lock for
//   nothing: a replay of a random-reuse trace of 2 M accesses with `plan` ran at 0.77x the
//   speed of one with no predictor.
//   Approach: after `history` accesses told without a forecast or a candidate period
//   (learning or fallback; a period the planner can learn, at most half the history, is a
//   candidate within that; accesses while a candidate is checked do not count, so a long
//   set-up before a long loop does not put the planner to sleep in the loop's second
//   iteration), the planner sleeps: the next `history` device acquires are not told (a relaxed
//   countdown, no lock); then it learns again from where it was, and each sleep that
//   follows without a forecast found in between is twice as long, up to 16 x history. A
//   forecast resets the lengths. While asleep a tensor's next use is the least recently
//   used order a step would give it (forecast_before; the positions count the slept
//   accesses), nothing is kept, written back early or prefetched, as while learning, and
//   the device times of kernels are not measured. The summary and stats say `asleep`.
//   Measured: that replay at 0.94-0.97x, every replay row unchanged
//   (bench/results/planner-asleep-cpu-2026-12-07.md); about 19 more instructions per
//   planned acquire + release (callgrind, the hit path with 64 tensors, 1 thread: 161.17 M ->
//   161.92 M in all). Limitations: a schedule that starts repeating during a sleep is
//   learned only after it, up to 16 x history acquires late; one that needs more than the
//   history is never learned either way. Threads that interleave their loops (the hit path
//   with 4 threads on 2 cores) do not sleep: the planner learns one thread's loop within its
//   time slice and plans it, and the threads still serialise on the lock. Oracle: never asleep.
// Note [A planner step never waits for another thread's]
//   Rationale: every device acquire with `plan` ran a planner step under the prediction
//   lock (telling the access, reading the schedule ahead, the keep and write-back queues).
//   Threads that run their loops at the same time into one pool took turns on that lock:
//   `TIERPOOL_PREFETCH=plan tierpool bench hitpath -t 4` (4 threads, 2 cores) spent about
//   1300 ns per acquire + release and thread against about 430 with no predictor. The steps
//   bought nothing there: the accesses of threads running at once interleave in no fixed
//   order, so no period holds for long (the planner learns one thread's loop while the
//   scheduler runs it alone, and mispredicts at the next switch).
//   Approach: a `plan` step tries the lock. If another thread's planner work holds it (its
//   step, or its acquire's forecast_before), this access is not told
//   (pool_stats::planner_busy_skips counts it, per shard) and the acquire goes on as while
//   asleep: the forecast forecast_before gave it stays, nothing is kept, written back or
//   prefetched for it, and its device-time mark is dropped. stats() and the allocation or
//   free of a tensor mark their holds (prediction::outside_hold) and are waited for: they
//   are brief, and a publishing thread's stats() must not cost a single-threaded loop a
//   token of its schedule. A program whose threads take turns (PyTorch runs the backward
//   pass on its autograd thread, the forward on the caller's) never finds the lock held by
//   a step, so its one schedule across threads is learned as before; a replay (one
//   thread) is unchanged to the bit. The oracle still waits: its schedule moves with every
//   access told.
//   Measured (bench/results/planner-busy-skips-cpu-2026-12-08.md; the hit path above, 7
//   runs, three alternating rounds against the build before, medians): 4 threads 895-929
//   ns per pair and thread against 1280-1434 with 1 tensor per thread (25 % of the
//   4-thread steps skipped), 946-1024 against 1451-1555 with 64 (61 %); 1 thread and no
//   predictor unchanged. Skipping only when the holder had marked itself a step waited for
//   forecast_before's holds and kept about a third of the queue.
//   Limitations: threads that do run loops concurrently get no planned prefetches, as
//   before, only without the queue; a schedule per thread (lanes) would plan each, but
//   needs forecasts that compare across lanes for the shared eviction order, and must not
//   split a schedule that hands over between threads (above).
void pool_impl::plan_after(tensor_id id, std::size_t bytes, access_mode access, stream_handle stream)
{
  bool const write = access != access_mode::read;
  if (prediction_.asleep.load(std::memory_order_relaxed) != 0 && sleep_step()) {
    // Asleep since this acquire marked its start (another thread's step began the sleep): the
    // mark is not told, so it goes now (a later told access would take it for its own).
    acquire_start& b = acquire_began();
    if (b.ev && b.pool == this && timer_ != nullptr) { timer_->drop(b.ev); }
    if (b.pool == this) { b = acquire_start{}; }
    return;
  }
  op_gate::scope const op(gate_, thread_shard());
  constexpr std::size_t kAhead = 4096;  // most accesses ahead read per step (plan_predictor::config::window caps it)
  constexpr std::size_t kFirstChunk = 128;  // accesses ahead read at first; then as many again each time
  constexpr std::size_t kCleanPerStep = 8;
  constexpr std::uint64_t kCleanLag = 8;  // accesses after a write before its write-back is tried (the lease ends)
  constexpr std::uint32_t kQuietSteps = 32;  // steps without an eviction before early write-backs go (Note [No early write-back while the tier evicts])
  constexpr std::uint64_t kQuietWalk = 16;  // accesses a quiet window is not walked again (Note [A quiet window is walked once])
  thread_local std::vector<planned_access> ahead(kAhead);
  thread_local std::vector<record_ref> to_clean;
  plan_predictor& planner = *prediction_.planner;
  bool const oracle = planner.options().oracle;
  std::size_t n = 0;
  std::size_t want = 0;
  bool complete = true;  // every access ahead the window holds is in `ahead`
  bool cut = false;      // the planner moved on while the walks read more: the window is not whole
  tick now = 0;
  std::optional<tick> next;
  bool prefetch = planner.options().prefetch;  // this step issues planned prefetches
  bool quiet = false;  // Note [A quiet window is walked once]: this step walks nothing
  thread_local std::vector<planned_access> tail(kQuietWalk);  // quiet: the accesses that entered the window since
  std::size_t tail_n = 0;
  std::int64_t quiet_used = 0;  // the device tier's bytes held, and its evictions, at this step
  std::uint64_t quiet_evictions = 0;
  record_ref rec;
  {
    std::lock_guard lock(table_mtx_);
    if (auto const* r = table_.find(static_cast<std::uint64_t>(id))) { rec = *r; }
  }
  to_clean.clear();
  {
    std::unique_lock lock(prediction_.mtx, std::defer_lock);
    // Note [A planner step never waits for another thread's]: another step holds the lock:
    // this access goes untold. The oracle's schedule moves with every access told: it waits.
    if (!lock.try_lock()) [[unlikely]] {
      if (!oracle && !prediction_.outside.load(std::memory_order_relaxed)) {
        acquire_start& b = acquire_began();  // the mark is not told: dropped, as while asleep
        if (b.ev && b.pool == this && timer_ != nullptr) { timer_->drop(b.ev); }
        if (b.pool == this) { b = acquire_start{}; }
        std::size_t const sh = thread_shard();
        bump(counters_.shards[sh].planner_busy, std::uint64_t{1}, sh);
        return;
      }
      lock.lock();  // stats(), an allocation, a free: brief
    }
    access_view const a = tell_predictor(id, bytes, access, stream);
    want = std::min<std::size_t>(kAhead, planner.options().window);
    if (!oracle) {  // Note [A planner that finds no schedule sleeps]
      std::uint64_t const h = planner.options().history;
      if (planner.state() == plan_predictor::phase::planned) {
        if (prediction_.unplanned != 0 || prediction_.next_sleep != 0) {  // no store per step: lock-free readers share the line
          prediction_.unplanned = 0;
          prediction_.next_sleep = 0;
        }
      } else if (planner.period() == 0 && ++prediction_.unplanned >= h) {  // not even a candidate period
        constexpr std::uint64_t kLongestSleep = 16;  // x history
        std::uint64_t const len = prediction_.next_sleep == 0 ? h : prediction_.next_sleep;
        prediction_.next_sleep = std::min(len * 2, kLongestSleep * h);
        prediction_.sleep_base.store(planner.position() + prediction_.slept, std::memory_order_relaxed);
        prediction_.sleep_len.store(len, std::memory_order_relaxed);
        prediction_.slept += len;
        prediction_.unplanned = 0;
        prediction_.stream_told.clear();  // the compute since the last told access is unknown after it
        prediction_.asleep.store(len, std::memory_order_relaxed);
      }
    }
    if (oracle) {
      n = prediction_.schedule->upcoming(std::span<planned_access>(ahead.data(), want));
    } else {
      // A quiet window (Note [A quiet window is walked once]): nothing to walk, and one
      // access ahead for the next acquire's forecast.
      auto const& qt = *engine_.tiers()[device_tier()];
      quiet_used = qt.bytes_allocated.load(std::memory_order_relaxed) - qt.bytes_freed.load(std::memory_order_relaxed);
      quiet_evictions = qt.evictions.load(std::memory_order_relaxed) + qt.moved_down.load(std::memory_order_relaxed);
      if (planner.state() != plan_predictor::phase::planned) {  // a new forecast is walked first
        prediction_.quiet_until.store(0, std::memory_order_relaxed);
      }
      quiet = planner.state() == plan_predictor::phase::planned &&
              planner.position() < prediction_.quiet_until.load(std::memory_order_relaxed) &&
              quiet_evictions == prediction_.quiet_evictions.load(std::memory_order_relaxed) &&
              quiet_used <= prediction_.quiet_used.load(std::memory_order_relaxed);
      // The first chunk; the walks below ask for more while they need it (Note [The
      // schedule ahead in chunks]).
      std::size_t const first = quiet ? std::min<std::size_t>(want, 1) : std::min(want, kFirstChunk);
      n = planner.upcoming(std::span<planned_access>(ahead.data(), first));
      if (quiet) {  // the accesses that entered the window's far end since a step last looked
        std::uint64_t const seen = prediction_.quiet_seen.load(std::memory_order_relaxed);
        std::uint64_t const entered = planner.position() > seen ? std::min<std::uint64_t>(planner.position() - seen, kQuietWalk) : 0;
        quiet = entered < want;
        tail_n = quiet ? planner.upcoming(std::span<planned_access>(tail.data(), entered), want - entered) : 0;
      }
      complete = n < first || first == want;
      now = planner.position();
      next = planner.next_use_of_last();
      if (!next) { next = unforecast_order(now); }  // least recently used first
      // The forecast the next acquire will want, if it is of the tensor the schedule has
      // there (Note [The forecast before the access]): read without the lock.
      std::uint64_t sid = kAnyNextTensor;
      tick sv = unforecast_order(now + 1);
      if (planner.state() == plan_predictor::phase::planned) {
        sid = 0;  // mispredicted ahead: the next acquire asks under the lock
        if (n != 0 && (static_cast<std::uint64_t>(ahead[0].id) & kUnbornTensor) == 0) {
          if (auto const f = planner.next_use_if_next(ahead[0].id)) {
            sid = static_cast<std::uint64_t>(ahead[0].id);
            sv = *f;
          }
        }
      }
      // No fences (TSan does not take them): the value's release publishes the cleared id,
      // so a reader that acquires a newer value sees the id change (forecast_before).
      prediction_.next_id.store(0, std::memory_order_relaxed);
      prediction_.next_value.store(sv, std::memory_order_release);
      prediction_.next_id.store(sid, std::memory_order_release);
    }
    if (!oracle && planner.options().prefetch && planner.options().probe) { prefetch = probe_prefetching(planner, stream); }
    if (write && rec != nullptr && planner.options().write_back) { prediction_.written.emplace_back(id, a.sequence); }
    // Written tensors whose leases are likely released by now (kCleanLag accesses later),
    // oldest first; while the device tier evicts they wait (Note [No early write-back while
    // the tier evicts]).
    std::uint64_t const evicted = engine_.tiers()[device_tier()]->evictions.load(std::memory_order_relaxed);
    if (evicted != prediction_.device_evictions) {
      prediction_.quiet_steps = 0;
    } else if (prediction_.quiet_steps < kQuietSteps) {
      ++prediction_.quiet_steps;
    }
    bool const evicting = prediction_.quiet_steps < kQuietSteps;
    prediction_.device_evictions = evicted;
    auto& w = prediction_.written;
    while (!evicting && prediction_.written_head < w.size() && to_clean.size() < kCleanPerStep &&
           w[prediction_.written_head].second + kCleanLag <= a.sequence) {
      record_ref r;  // Note [Records count their references]: the table holds live tensors
      {
        std::lock_guard tl(table_mtx_);  // a leaf
        if (auto const* f = table_.find(static_cast<std::uint64_t>(w[prediction_.written_head].first))) { r = *f; }
      }
      ++prediction_.written_head;
      if (r != nullptr) { to_clean.push_back(std::move(r)); }
    }
    if (prediction_.written_head > 1024 && prediction_.written_head * 2 > w.size()) {
      w.erase(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(prediction_.written_head));
      prediction_.written_head = 0;
    }
  }
  if (!oracle && rec != nullptr && next) { rec->next_use.store(*next, std::memory_order_relaxed); }
  auto const d = static_cast<std::uint32_t>(device_tier());
  if (n == 0) { engine_.set_keep_window(d, 0, 0); }  // no forecast (learning, fallback): nothing is kept
  if (n == 0 && to_clean.empty()) { return; }
  // Quiet while the accesses that entered the window are of tensors on the device too.
  for (std::size_t i = 0; quiet && i < tail_n; ++i) {
    planned_access const& pa = tail[i];
    if ((static_cast<std::uint64_t>(pa.id) & kUnbornTensor) != 0) {  // born ahead: its room may bring pressure
      quiet = false;
      break;
    }
    if (pa.discard) { continue; }
    record_ref r;
    {
      std::lock_guard lock(table_mtx_);
      if (auto const* x = table_.find(static_cast<std::uint64_t>(pa.id))) { r = *x; }
    }
    if (r == nullptr || holds_record(*r)) { continue; }
    record_lock const rl(*r, std::try_to_lock);
    quiet = rl.owns() && (r->freed || r->slots[d].state == copy_state::valid);
  }
  if (quiet) {  // no pressure: no early write-back would go, nothing to prefetch or keep
    prediction_.quiet_seen.store(now, std::memory_order_relaxed);
    return;
  }
  std::uint64_t const cap = engine_.tiers()[d]->capacity;
  // More of the schedule ahead, under the prediction lock, while the planner is where it
  // was: false when there is no more (or it has moved on: the walk ends there).
  auto more = [&]() -> bool {
    if (complete) { return false; }
    std::size_t const chunk = std::min(want - n, n);
    std::lock_guard lock(prediction_.mtx);
    if (chunk == 0 || planner.position() != now || planner.state() != plan_predictor::phase::planned) {
      cut = cut || chunk != 0;  // moved on: the walk ends before the window's end
      complete = true;
      return false;
    }
    std::size_t const got = planner.upcoming(std::span<planned_access>(ahead.data() + n, chunk), n);
    n += got;
    complete = got < chunk || n == want;
    return got != 0;
  };

  // 1. The horizon: where the distinct tensors ahead outgrow the device tier; the pressure
  // point: where those still live do (Note [Early write-backs only under pressure]).
  thread_local step_set seen;  // Note [A set cleared by a step's stamp]
  seen.clear();
  tick horizon = no_next_use;
  tick pressure = no_next_use;
  std::uint64_t sum = 0;
  std::uint64_t live = 0;
  for (std::size_t i = 0; i < n || (more() && i < n); ++i) {
    bool const first = seen.insert(static_cast<std::uint64_t>(ahead[i].id));
    if (first) {
      sum += ahead[i].bytes;
      live += ahead[i].bytes;
    }
    if (first && live > cap) {
      pressure = ahead[i].when;
      break;
    }
    if (ahead[i].last) { live -= std::min<std::uint64_t>(live, ahead[i].bytes); }  // its room comes back
    if (horizon != no_next_use) { continue; }
    if (first && sum > cap) {
      horizon = ahead[i].when;
      continue;
    }
    if (!first) { continue; }
    // plan: a tensor ahead is next used where the forecast puts it (its hint from its last
    // access may predate the forecast); the oracle's hints are the program's.
    if (!oracle && (static_cast<std::uint64_t>(ahead[i].id) & kUnbornTensor) == 0) {
      std::lock_guard lock(table_mtx_);
      if (auto const* x = table_.find(static_cast<std::uint64_t>(ahead[i].id))) {
        (*x)->next_use.store(ahead[i].when, std::memory_order_relaxed);
      }
    }
  }
  // The whole window fits the tier (no horizon, no pressure, every access ahead read): a
  // candidate for a quiet window, if the prefetch walk finds every tensor resident too.
  bool walk_quiet = !oracle && horizon == no_next_use && pressure == no_next_use && complete && !cut;
  if (horizon == no_next_use) { horizon = pressure; }
  tick const keep_until = n == 0 ? 0 : horizon == no_next_use ? ahead[n - 1].when : horizon;
  if (n != 0 && planner.options().keep) { engine_.set_keep_window(d, now, keep_until); }
  // 2. Early write-backs.
  for (auto const& r : to_clean) {
    tick const nu = r->next_use.load(std::memory_order_relaxed);
    // Only a forecast use past the pressure point (Note [Early write-backs only under
    // pressure]): a tensor never used again is dropped, not saved, and one without a
    // forecast (learning) is not worth a speculative copy.
    bool const far = nu < kNoForecast / 2 && nu > pressure;
    // Only on an idle link (Note [Early write-backs on an idle link], transfer_planner.cpp).
    if (far && !holds_record(*r) && engine_.write_back_link_idle(stream)) { (void)engine_.write_back_early(r, d); }
  }
  if (planner.options().clean_ahead) { (void)engine_.clean_ahead(d, static_cast<std::size_t>(cap / 8)); }
  // 3. Planned prefetches.
  seen.clear();
  auto note_quiet = [&] {
    if (!walk_quiet) { return; }
    prediction_.quiet_evictions.store(quiet_evictions, std::memory_order_relaxed);
    prediction_.quiet_used.store(quiet_used, std::memory_order_relaxed);
    prediction_.quiet_until.store(now + kQuietWalk, std::memory_order_relaxed);
    prediction_.quiet_seen.store(now, std::memory_order_relaxed);
  };
  if (!prefetch) {
    note_quiet();
    return;
  }
  bool const conservative = planner.options().conservative;
  thread_local std::unordered_map<std::uint64_t, tick> reuse;  // conservative: a tensor's second use ahead
  if (conservative) {
    while (more()) {}  // its guard reads the whole window
    reuse.clear();
    for (std::size_t i = 0; i < n; ++i) {
      auto const [it, first] = reuse.try_emplace(static_cast<std::uint64_t>(ahead[i].id), no_next_use);
      if (!first && it->second == no_next_use) { it->second = ahead[i].when; }
    }
  }
  tick const window_end = n == 0 ? 0 : ahead[n - 1].when;
  // Copy-ins at the latest start (Note [Copy-ins at the latest start]): the h2d link's queue
  // ahead of the stream's point, in device time (empty: device times not known ahead).
  constexpr double kLateMargin = 0.2;  // the compute ahead counted at 80 %: room for copies the estimate misses
  double const h2d_ns_per_byte = 1e9 / std::max(engine_.actions().h2d, 1.0);
  std::optional<tick> backlog;
  if (planner.options().timing) {
    if (device_times_known(stream)) {
      backlog = engine_.copy_in_backlog(stream);
    } else if (measured_times(stream)) {
      // Where device times are measured after the fact (Note [Device times measured with
      // events]): the bytes queued and not known copied, from now.
      std::uint64_t const queued = engine_.copy_in_bytes_queued();
      std::uint64_t const copied = std::min(timer_->copied_in(), queued);
      backlog = static_cast<tick>(static_cast<double>(queued - copied) * h2d_ns_per_byte);
    }
  }
  double link_ns = backlog ? static_cast<double>(*backlog) : 0.0;  // plus the copies of the candidates so far
  double const next_gap = n != 0 ? static_cast<double>(ahead[0].compute) : 0.0;  // the stream's advance by the next step
  double t_ahead = 0.0;  // compute from the stream's point to the access
  plan_terms const terms{.stream_reuse = planner.options().stream_reuse, .victim_sample = planner.options().victim_sample};
  thread_local std::vector<std::pair<record_ref, tick>> waiting;  // deferred, nearer than the next one issued
  waiting.clear();
  std::uint64_t waiting_bytes = 0;
  auto const& dts = *engine_.tiers()[d];
  tick guard = 0;  // conservative: the latest next use, after their use, of the tensors used before this one
  std::uint64_t outstanding = 0;
  sum = 0;
  for (std::size_t i = 0; i < n || (more() && i < n); ++i) {
    planned_access const& pa = ahead[i];
    t_ahead += static_cast<double>(pa.compute);
    tick const before = guard;
    if (conservative) {
      auto const it = reuse.find(static_cast<std::uint64_t>(pa.id));
      // Used once in the window: its next use after it is past the window's end (or never).
      guard = std::max(guard, it == reuse.end() || it->second == no_next_use ? window_end : it->second);
    }
    if (!seen.insert(static_cast<std::uint64_t>(pa.id))) { continue; }
    sum += pa.bytes;
    if (sum > cap) { break; }
    if (pa.discard || (static_cast<std::uint64_t>(pa.id) & kUnbornTensor) != 0) { continue; }  // room only
    record_ref r;
    {
      std::lock_guard lock(table_mtx_);
      if (auto const* x = table_.find(static_cast<std::uint64_t>(pa.id))) { r = *x; }
    }
    if (r == nullptr || holds_record(*r)) { continue; }
    {
      // Under the record's lock (another thread's acquire, eviction or release writes these
      // fields under it: reading them without it was a data race, seen under TSan); busy:
      // skipped, as plan_prefetch would.
      record_lock const rl(*r, std::try_to_lock);
      if (!rl.owns()) {
        walk_quiet = false;  // busy: not known resident
        continue;
      }
      if (r->freed) { continue; }
      if (r->slots[d].state == copy_state::valid) {
        if (r->prefetched) { outstanding += r->bytes; }
        continue;
      }
    }
    walk_quiet = false;  // a tensor ahead is not on the device
    if (outstanding + waiting_bytes + r->bytes > prediction_.budget) { break; }  // held-back ones count as issued
    double const copy_ns = static_cast<double>(r->bytes) * h2d_ns_per_byte;
    // Issued at the next step instead, measured from the stream's point then: it completes
    // behind the copies queued before it (deferred ones too) and must be done by its use.
    double const done_next = std::max(link_ns - next_gap, 0.0) + copy_ns;
    double const use_next = t_ahead - next_gap;
    link_ns += copy_ns;
    tick const protect = std::max({pa.when, keep_until, before});
    // Free room taken harms nothing: that copy goes now. One that has to evict waits while
    // a later step still completes it before its use.
    std::int64_t const used = dts.bytes_allocated.load(std::memory_order_relaxed) - dts.bytes_freed.load(std::memory_order_relaxed);
    bool const room_free = used >= 0 && static_cast<std::uint64_t>(used) + r->bytes <= cap;
    if (backlog && !room_free && i != 0 && done_next < use_next * (1.0 - kLateMargin)) {
      waiting_bytes += r->bytes;
      waiting.emplace_back(std::move(r), protect);
      continue;
    }
    bool stop = false;
    for (auto& [wr, wp] : waiting) {  // the nearer ones first: they would queue behind this one
      plan_outcome const wo = engine_.plan_prefetch(wr, d, wp, now, terms);
      if (wo == plan_outcome::issued) { outstanding += wr->bytes; }
      if (wo == plan_outcome::no_room) { stop = true; break; }
    }
    waiting.clear();
    waiting_bytes = 0;
    if (stop) { break; }
    plan_outcome const o = engine_.plan_prefetch(r, d, protect, now, terms);
    if (o == plan_outcome::issued) { outstanding += r->bytes; }
    if (o == plan_outcome::no_room) { break; }
  }
  waiting.clear();  // the ones a later step issues (their references go now)
  note_quiet();
}

// Note [Measuring whether prefetching pays]
//   Rationale: planned prefetches take room and link time from the demand schedule; on most
//   rows they pay, on some they cost, run after run: `repeat` on llm-infer-stream at 50 %
//   took 5.34 s with them, 3.44 s with `plan:prefetch=off` (the forecast, the keep window
//   and the early write-backs, no prefetches) and 3.44 s with no planner. No figure known
//   ahead (the late fraction, the budget, the period) told such rows apart; a period's time
//   does. Approach: an A/B test along the run. While the forecast holds, each period (as
//   many accesses as the period learned, from wherever the timing began) is timed on the
//   clock of the stream that makes the access (its device time where the backend knows it,
//   the host's otherwise; a period's first and last accesses are the same token, so the
//   same stream). The first 4 planned periods prefetch (the warm-up); then a trial runs 3
//   periods without, and the mean of its last 2 (the first still has the other mode's
//   copies in flight and its resident set) must beat the running mean of the mode in use
//   (3/4 old, 1/4 new period: periods differ, a prefill among decode steps) by 1 %, or
//   the mode in use stays. The losing mode is tried again after 16 periods, then after
//   twice as many each time it loses again (at most 1024). A new period (another batch
//   shape, a longer sequence) keeps the mode chosen and the trial's due date but not the
//   timings, which no longer compare; a trial under way is dropped. Early write-backs and
//   the keep window run in both modes.
//   Measured (virtual clock, pcie4, lru / repeat / belady, 25 % and 50 %; against
//   probe=off): on the five traces and the 16 generator variants, which plan at most 4
//   periods, only llm-infer-stream's rows change (56 periods): lru at 50 % 6.45 -> 6.18 s,
//   repeat at 50 % 5.34 -> 3.65 s, at 25 % 5.86 -> 5.48 s; no row slower. On training
//   traces of 10-20 iterations (mlp-train, transformer-train and three variants) the trials
//   cost or gain 0.955-1.032x (geometric mean about 1.003), and every row stays faster
//   than no planner. Limitations: a trial costs up to 3 periods of the slower mode, which
//   only a long run amortizes; on a wall clock the machine's noise enters the timings.
bool pool_impl::probe_prefetching(plan_predictor const& planner, stream_handle stream)
{
  constexpr std::uint64_t kWarm = 4;         // planned periods with prefetches before the first trial without
  constexpr std::uint64_t kFirstTrial = 16;  // periods before the losing mode is tried again
  constexpr std::uint64_t kLastTrial = 1024;
  constexpr std::uint32_t kTrialPeriods = 3;  // a trial's length; its first period is not timed
  constexpr double kMargin = 0.01;            // a trial wins only by more than this
  auto& pr = prediction_.probe;
  if (planner.state() != plan_predictor::phase::planned) {
    pr.measuring = false;  // an interrupted period is not timed
    return pr.on;
  }
  std::uint64_t const pos = planner.position();
  std::uint64_t const p = planner.period();
  // The clock (device time where the backend knows it, the host's otherwise) is read only
  // where a period begins or ends: most steps are within one.
  std::optional<tick> t_read;
  auto t = [&]() -> tick {
    if (!t_read) {
      std::optional<tick> const device = device_times_known(stream) ? backend_->known_stream_time(stream) : std::nullopt;
      t_read = device ? *device : backend_->now();
    }
    return *t_read;
  };
  auto begin = [&] {
    pr.measuring = true;
    pr.start_pos = pos;
    pr.start_time = t();
  };
  if (pr.period == 0) {  // the first schedule: prefetching, for the warm-up
    pr.period = p;
    pr.on = true;
    pr.next_trial = kWarm;
  } else if (pr.period != p) {
    // Another schedule (another batch shape, a longer sequence): the mode chosen stays, and
    // so does when the next trial comes; the timings of the old one are not comparable.
    if (pr.trial != 0) {
      pr.on = !pr.on;
      pr.trial = 0;
      pr.trial_sum = 0;
      pr.trial_n = 0;
    }
    pr.period = p;
    pr.took_on = 0;
    pr.took_off = 0;
    pr.measuring = false;
  }
  if (!pr.measuring) {
    begin();
    return pr.on;
  }
  if (pos - pr.start_pos < p) { return pr.on; }
  tick const took = std::max<tick>(t() > pr.start_time ? t() - pr.start_time : 0, 1);
  ++(pr.on ? prediction_.periods_on : prediction_.periods_off);
  begin();
  tick& mine = pr.on ? pr.took_on : pr.took_off;
  tick const other = pr.on ? pr.took_off : pr.took_on;
  if (pr.trial > 1) {  // a trial's first period: the previous mode's copies still shape it
    if (pr.trial < kTrialPeriods) {
      pr.trial_sum += took;
      ++pr.trial_n;
    }
    --pr.trial;
    return pr.on;
  }
  if (pr.trial == 1) {  // the trial ends: it wins by more than the margin, or its mode waits longer
    mine = (pr.trial_sum + took) / (pr.trial_n + 1);
    pr.trial_sum = 0;
    pr.trial_n = 0;
    bool const won = static_cast<double>(mine) < static_cast<double>(other) * (1.0 - kMargin);
    pr.next_trial = won ? kFirstTrial : std::clamp(pr.next_trial * 2, kFirstTrial, kLastTrial);
    if (!won) { pr.on = !pr.on; }
    pr.trial = 0;
    pr.since = 0;
    return pr.on;
  }
  // The mode in use: a running mean of its periods (they differ: a prefill among decode
  // steps), which the next trial has to beat.
  mine = mine == 0 ? took : (3 * mine + took) / 4;
  if (++pr.since >= pr.next_trial) {
    pr.trial = kTrialPeriods;
    pr.on = !pr.on;
  }
  return pr.on;
}

void pool_impl::note_prefetch_timing(copy_slot const& slot, stream_handle stream) noexcept
{
  std::optional<tick> const use = backend_->known_stream_time(stream);
  if (!use) { return; }
  std::optional<tick> const ready = slot.ready ? backend_->known_completion(slot.ready) : std::optional<tick>{0};
  if (!ready) { return; }
  if (*ready <= *use) {
    counters_.prefetch_on_time_device.fetch_add(1, std::memory_order_relaxed);
    counters_.prefetch_lead_ns.fetch_add(*use - *ready, std::memory_order_relaxed);
  } else {
    counters_.prefetch_late_device.fetch_add(1, std::memory_order_relaxed);
    counters_.prefetch_lateness_ns.fetch_add(*ready - *use, std::memory_order_relaxed);
  }
}

void pool_impl::plan_allocated(tensor_id id, std::size_t bytes)
{
  prediction::outside_hold const lock(prediction_);
  prediction_.planner->on_allocate(id, bytes);
}

// ---------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------

stream_handle pool_impl::create_stream(int priority)
{
  check_open("create_stream");
  return streams_->create(priority);
}

stream_handle pool_impl::wrap_native_stream(void* native)
{
  check_open("wrap_native_stream");
  return streams_->wrap(native);
}

void pool_impl::destroy_stream(stream_handle s) { streams_->destroy(s); }

void pool_impl::synchronize(stream_handle s)
{
  if (lost()) [[unlikely]] { throw_lost("synchronize"); }
  streams_->synchronize(s);
  flush_write_throughs();  // Note [Write-through tensors]: complete once synchronize returns
}

// ---------------------------------------------------------------------------------------
// close
// ---------------------------------------------------------------------------------------

void pool_impl::close()
{
  // Before the gate: a pressure check may be shrinking a tier with the gate closed, and
  // waits for operations to leave (this one would never leave while joining it).
  pressure_thread_.stop();
  op_gate::scope const op(gate_, thread_shard());
  std::lock_guard cl(close_mtx_);
  if (closed_.load(std::memory_order_acquire)) { return; }
  std::vector<record_ref> const recs = records_by_id();
  // Every record stays locked from the lease check to its free (in id order):
  // an acquire racing with close() either pinned before the check (close throws) or sees
  // the record freed afterwards (it throws), never a lease on freed memory.
  std::vector<std::unique_lock<record_mutex>> rlocks;
  rlocks.reserve(recs.size());
  for (auto const& rec : recs) { rlocks.emplace_back(rec->mtx); }
  std::string leased;
  std::size_t n_leases = 0;
  for (auto const& rec : recs) {
    if (rec->pins != 0) {
      n_leases += rec->pins;
      if (leased.size() < 400) {
        leased += (leased.empty() ? "" : ", ") + std::to_string(static_cast<std::uint64_t>(rec->id));
        leased += rec->quoted_name();
        leased += " (" + std::to_string(rec->pins) + ")";
      }
    }
  }
  if (n_leases != 0) {
    throw logic_error("pool::close: " + std::to_string(n_leases) + " lease(s) still live on tensors " + leased +
                      "; end them first (nothing was freed)");
  }
  closed_.store(true, std::memory_order_release);
  engine_.close_prefetch_queue();
  for (auto const& rec : recs) { free_slots_locked(*rec); }
  rlocks.clear();
  {
    std::lock_guard lock(table_mtx_);
    table_.clear();
  }
  {  // the recipes' functions go now (they may hold what holds the pool: a Python closure)
    std::unordered_map<std::uint64_t, std::shared_ptr<recipe>> gone;
    {
      std::lock_guard g(recipes_mtx_);
      gone.swap(recipes_);
      dependents_.clear();
      recipes_live_.store(0, std::memory_order_release);
    }
  }
  engine_.synchronize_copy_streams();
  for (auto& ts : engine_.tiers()) {
    std::lock_guard tl(ts->mem->mutex());
    while (ts->mem->deferred_bytes() != 0) {
      if (ts->mem->reclaim_oldest_blocking() != status::ok) { break; }
    }
    (void)ts->mem->release_unused_chunks();
  }
  stop_publishing();  // a closed pool has no figures to show
  tracer_.close();    // the trace is complete when close() returns; tracing_error() says if not
}

void pool_impl::stop_publishing() noexcept
{
  std::unique_ptr<telemetry::publisher> p;
  {
    std::lock_guard lock(publish_mtx_);
    p = std::move(publisher_);
  }
  p.reset();  // joins the refresh thread (which takes no lock of ours but the tiers') and unlinks
}

void pool_impl::publish()
{
  std::lock_guard lock(publish_mtx_);
  if (publisher_) { publisher_->publish(); }
}

std::string pool_impl::stats_segment() const
{
  std::lock_guard lock(publish_mtx_);
  return publisher_ ? publisher_->segment() : std::string();
}

std::string pool_impl::publishing_error() const
{
  std::lock_guard lock(publish_mtx_);
  return publish_error_;
}

void pool_impl::close_from_destructor() noexcept
{
  try {
    close();
  } catch (logic_error const& e) {
    try {
      log_message(log_level::error, std::string("tierpool: pool destroyed with live leases: ") + e.what() +
                                      "; its memory is kept until the last one ends; end every lease before "
                                      "destroying the pool");
    } catch (...) {  // no memory for the message
    }
  } catch (std::exception const& e) {
    try {
      log_message(log_level::error, std::string("tierpool: pool destroyed: close failed: ") + e.what() +
                                      "; the pool's memory is freed when its last tensor handle and lease end");
    } catch (...) {  // no memory for the message
    }
  }
}

}  // namespace tierpool::detail

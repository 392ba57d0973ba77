// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// compiled_trace.cpp — owns compiled_trace::compile() (from a span of events or straight
// from a reader) and compile_file(): trace events -> the compact arrays of compiled_data
// (dense ids, resolved sizes, next-access positions), the capacity parsing, and
// compute_must_move() (the transfer floors of the ideal time).
//
// Note [Next use in a backward pass]
//   Walking the compiled array from the end, next_pos[obj] holds the position of the
//   object's next access; a free (or an allocate, in the pool array) ends a life, so it
//   resets next_pos[obj] to "none": an access before a free is never followed by the next
//   life's accesses. O(n), one 4-byte slot per object.
//
// Note [Compiling from a reader]
//   compile(reader&) never holds the trace's events: it takes them a batch at a time
//   (kBatchEvents, a few tens of KiB, reused) and keeps only what the replay loops read, so
//   a cache-mode compile of an oracleGeneral file needs 12 bytes per request where
//   read_all() + compile(span) needed the 80-byte events as well (and the vector's growth).
//   A --loop above 1 keeps a 24-byte `step` per event of the first pass (the later passes
//   replay them; the reader cannot be rewound). compile_file() reserves the arrays from the
//   file's size where the records have a fixed size (oracleGeneral).
#include "replay/detail/compiled_data.hpp"

#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <system_error>
#include <unordered_map>

namespace tierpool::replay {

std::string_view to_string(replay_mode m) noexcept
{
  switch (m) {
    case replay_mode::pool: return "pool";
    case replay_mode::cache: return "cache";
    case replay_mode::uvm: return "uvm";
    case replay_mode::uvm_hints: return "uvm-hints";
  }
  return "pool";
}

replay_mode parse_replay_mode(std::string_view text)
{
  if (text == "pool") { return replay_mode::pool; }
  if (text == "cache") { return replay_mode::cache; }
  if (text == "uvm") { return replay_mode::uvm; }
  if (text == "uvm-hints") { return replay_mode::uvm_hints; }
  throw logic_error("unknown replay mode '" + std::string(text) + "' (valid: pool, cache, uvm, uvm-hints)");
}

std::uint64_t capacity_spec::resolve(std::uint64_t base) const noexcept
{
  if (!relative) { return bytes; }
  auto const v = static_cast<std::uint64_t>(std::floor(fraction * static_cast<double>(base)));
  return std::max<std::uint64_t>(v, 1);
}

capacity_spec parse_capacity(std::string_view text)
{
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) { s.remove_prefix(1); }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) { s.remove_suffix(1); }
    return s;
  };
  std::string_view const t = trim(text);
  capacity_spec c;
  c.label = std::string(t);
  if (!t.empty() && t.back() == '%') {
    std::string_view const num = trim(t.substr(0, t.size() - 1));
    double pct = 0.0;
    auto const r = std::from_chars(num.data(), num.data() + num.size(), pct);
    if (num.empty() || r.ec != std::errc{} || r.ptr != num.data() + num.size() || !(pct > 0.0) || pct > 100.0) {
      throw logic_error("invalid capacity '" + std::string(text) +
                        "': a percentage must be a number in (0, 100] followed by '%' (e.g. 10%)");
    }
    c.relative = true;
    c.fraction = pct / 100.0;
    return c;
  }
  c.bytes = tierpool::detail::parse_byte_size(t);
  if (c.bytes == 0) { throw logic_error("invalid capacity '" + std::string(text) + "': must be > 0"); }
  return c;
}

std::vector<capacity_spec> parse_capacities(std::string_view list)
{
  std::vector<capacity_spec> out;
  while (!list.empty()) {
    auto const comma = list.find(',');
    out.push_back(parse_capacity(list.substr(0, comma)));
    if (comma == std::string_view::npos) { break; }
    list.remove_prefix(comma + 1);
  }
  if (out.empty()) { throw logic_error("no capacity given (e.g. 10%,25%,50% or 64MiB)"); }
  return out;
}

namespace {

__extension__ typedef unsigned __int128 u128;  // exact sums of 64-bit sizes (GCC and clang)

struct object_state {
  std::uint64_t size{0};
  bool live{false};
  bool born_on_device{false};
  bool first_access_pending{false};
  bool discarded{false};  // a discard event since its last write_discard access (or its allocate)
};

// Note [Dense ids]
//   Every access looks its id up once (later --loop passes reuse the first pass's answer),
//   so this table is the inner loop of compile(). Open addressing with linear probing over
//   16-byte slots, at most half full (three quarters probed measurably longer), Fibonacci
//   hashing (ids are often small consecutive integers, or already hashed, as in
//   oracleGeneral files): one cache line per lookup almost always. A slot whose value is
//   kNoNext is empty (dense indices are below it).
//   The table outgrows the caches on a trace with many objects, so compile(reader&) asks
//   for the slot of the event kPrefetchAhead places ahead before it looks one up: the
//   misses overlap instead of queuing one behind the other.
class id_table {
 public:
  id_table() { rehash(kMinSlots); }

  /// Starts loading the slot `id` hashes to (see Note [Dense ids]).
  void prefetch(std::uint64_t id) const noexcept { __builtin_prefetch(&slots_[home(id)]); }

  /// The dense index of `id`, or kNoNext.
  [[nodiscard]] std::uint32_t find(std::uint64_t id) const noexcept
  {
    for (std::size_t i = home(id);; i = (i + 1) & mask_) {
      slot const& s = slots_[i];
      if (s.value == detail::kNoNext || s.key == id) { return s.value; }
    }
  }

  /// The dense index of `id`; a new id gets `fresh_index` (and `fresh` is set).
  std::uint32_t insert(std::uint64_t id, std::uint32_t fresh_index, bool& fresh)
  {
    for (std::size_t i = home(id);; i = (i + 1) & mask_) {
      slot& s = slots_[i];
      if (s.value == detail::kNoNext) {
        fresh = true;
        s.key = id;
        s.value = fresh_index;
        if (++used_ * 2 > slots_.size()) { rehash(slots_.size() * 2); }
        return fresh_index;
      }
      if (s.key == id) {
        fresh = false;
        return s.value;
      }
    }
  }

 private:
  struct slot {
    std::uint64_t key{0};
    std::uint32_t value{detail::kNoNext};
  };
  static constexpr std::size_t kMinSlots = 1024;

  [[nodiscard]] std::size_t home(std::uint64_t id) const noexcept
  {
    return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ULL) >> shift_);
  }

  void rehash(std::size_t slots)
  {
    std::vector<slot, tierpool::detail::big_array_allocator<slot>> old(slots);
    old.swap(slots_);
    mask_ = slots - 1;
    shift_ = 64U - static_cast<unsigned>(std::countr_zero(slots));
    for (slot const& s : old) {
      if (s.value == detail::kNoNext) { continue; }
      std::size_t i = home(s.key);
      while (slots_[i].value != detail::kNoNext) { i = (i + 1) & mask_; }
      slots_[i] = s;
    }
  }

  std::vector<slot, tierpool::detail::big_array_allocator<slot>> slots_;  // large ones on huge pages
  std::size_t mask_{0};
  unsigned shift_{64};
  std::size_t used_{0};
};

// The errors of compile(), out of line: the per-event code stays small.
[[noreturn, gnu::cold, gnu::noinline]] void throw_too_large(std::uint64_t id, std::uint64_t bytes)
{
  throw logic_error("replay: tensor " + std::to_string(id) + " has " + std::to_string(bytes) +
                    " bytes (at most 2^60 - 1 = " + std::to_string(detail::kMaxBytes) + ")");
}

[[noreturn, gnu::cold, gnu::noinline]] void throw_zero_allocate(std::uint64_t id)
{
  throw logic_error("replay: allocate of tensor " + std::to_string(id) + " with 0 bytes");
}

[[noreturn, gnu::cold, gnu::noinline]] void throw_unsized_access(std::uint64_t id, std::uint64_t event)
{
  throw logic_error("replay: access of tensor " + std::to_string(id) +
                    " before any allocate, without a size (event " + std::to_string(event) + ")");
}

[[noreturn, gnu::cold, gnu::noinline]] void throw_read_after_discard(std::uint64_t id, std::uint64_t event)
{
  throw logic_error("replay: event " + std::to_string(event) + " reads tensor " + std::to_string(id) +
                    " after its discard event, before a write_discard access gave it new contents (a pool "
                    "refuses such a lease: pool::discard)");
}

[[noreturn, gnu::cold, gnu::noinline]] void throw_too_many(std::uint64_t events, compile_options const& o)
{
  throw logic_error("replay: " + std::to_string(events) + " events" +
                    (o.loop > 1 ? " looped " + std::to_string(o.loop) + " times" : std::string()) +
                    " are too many (at most 2^32 - 2 accesses and frees" +
                    std::string(o.pool ? ", and 2^32 - 2 events in pool mode)" : ")"));
}

constexpr std::size_t kBatchEvents = 512;  // events per reader::next_batch (40 KiB)
constexpr std::size_t kPrefetchAhead = 8;  // see Note [Dense ids]

// One event as compile() needs it once its id is resolved (24 bytes): what a --loop pass
// after the first replays when the events themselves are not kept (compile from a reader).
struct step {
  trace::event_kind kind{trace::event_kind::access};
  trace::access_kind mode{trace::access_kind::read};
  std::uint32_t where{0};  // access, compute, release: the stream; allocate, prefetch: the tier
  std::uint32_t obj{detail::kNoNext};  // dense index, kNoNext for an id never allocated or accessed
  std::uint64_t value{0};  // compute: duration_ns; otherwise bytes
};
static_assert(sizeof(step) == 24);

// Builds a compiled_data from events fed in order (first pass: events; later passes:
// steps). See compile() for what it refuses.
class compiler {
 public:
  compiler(compile_options options, std::uint64_t expected_cache_entries) : options_(options)
  {
    d_ = std::make_shared<detail::compiled_data>();
    d_->options = options;
    stream_index_.emplace(0U, 0U);  // stream 0 always exists: cache traces use it
    stream_compute_.push_back(0);
    d_->cache.reserve(expected_cache_entries);
  }

  void reserve_ops(std::uint64_t n)
  {
    if (options_.pool) { d_->ops.reserve(n); }
  }

  void prefetch(trace::event const& e) const noexcept { ids_.prefetch(e.tensor); }

  /// The first pass, in trace order: checks `e` and resolves its id into `obj` (also
  /// starting to load the object's state); false, changing nothing, when compile() must
  /// refuse it (refuse() says why).
  bool resolve(trace::event const& e, std::uint32_t& obj)
  {
    obj = detail::kNoNext;
    switch (e.kind) {
      case trace::event_kind::allocate:
      case trace::event_kind::access:
        if ((e.kind == trace::event_kind::allocate && e.bytes == 0) || too_large(e.bytes)) [[unlikely]] {
          return false;
        }
        obj = obj_of(e.tensor);
        __builtin_prefetch(&objs_[obj], 1);
        if (e.kind == trace::event_kind::allocate && e.hints != 0 && options_.pool) [[unlikely]] {
          d_->hints[obj] = {.recompute_ns = (e.hints & trace::hint_recomputable) != 0 ? e.duration_ns : 0,
                            .hints = e.hints};
        }
        break;
      case trace::event_kind::free:
      case trace::event_kind::release:
      case trace::event_kind::discard:
      case trace::event_kind::prefetch: obj = ids_.find(e.tensor); break;
      case trace::event_kind::compute: break;
      case trace::event_kind::phase: obj = phase_of(e.name); break;
    }
    return true;
  }

  /// Throws what resolve(e) refused.
  [[noreturn]] void refuse(trace::event const& e) const
  {
    if (e.kind == trace::event_kind::allocate && e.bytes == 0) { throw_zero_allocate(e.tensor); }
    throw_too_large(e.tensor, e.bytes);
  }

  /// `e` with its id resolved to `obj`.
  static step make_step(trace::event const& e, std::uint32_t obj) noexcept
  {
    bool const tiered = e.kind == trace::event_kind::allocate || e.kind == trace::event_kind::prefetch;
    return {.kind = e.kind,
            .mode = e.mode,
            .where = tiered ? e.tier : e.stream,
            .obj = obj,
            .value = e.kind == trace::event_kind::compute ? e.duration_ns : e.bytes};
  }

  /// One event (any pass), its id resolved.
  void apply(step const& e)
  {
    ++d_->events;
    switch (e.kind) {
      case trace::event_kind::allocate: {
        std::uint32_t const obj = e.obj;
        if (objs_[obj].live) { end_life(obj); }  // allocated again while live: the old one ends
        bool const host = e.where != trace::no_tier && e.where != 0;
        begin_life(obj, sized(e.value), !host);
        if (options_.pool) {
          push_op({.kind = detail::pool_op_kind::allocate,
                   .obj = obj,
                   .tier = e.where == trace::no_tier ? detail::kAnyTier : (host ? 1U : 0U),
                   .bytes = e.value});
        }
        break;
      }
      case trace::event_kind::free: {
        if (e.obj != detail::kNoNext && objs_[e.obj].live) { end_life(e.obj); }
        break;
      }
      case trace::event_kind::access: {
        std::uint32_t const obj = e.obj;
        std::uint64_t const bytes = e.value;
        if (!objs_[obj].live) {
          if (bytes == 0) [[unlikely]] { throw_unsized_access(id_of_[obj], d_->events); }
          // A cache trace's object: its bytes start in host memory.
          begin_life(obj, sized(bytes), false);
          if (options_.pool) { push_op({.kind = detail::pool_op_kind::allocate, .obj = obj, .tier = 1U, .bytes = bytes}); }
        }
        object_state& o = objs_[obj];
        if (o.discarded) [[unlikely]] {
          if (e.mode != trace::access_kind::write_discard) { throw_read_after_discard(id_of_[obj], d_->events); }
          o.discarded = false;
        }
        std::uint64_t const req = bytes != 0 ? sized(bytes) : o.size;
        TIERPOOL_EXPECTS(d_->requests + 1 < detail::kNoNext, "replay: too many requests (at most 2^32 - 2)");
        ++d_->requests;
        requested_ += req;
        bool const by_host = e.where == trace::host_stream;
        std::uint32_t const s = by_host ? 0U : stream_of(e.where);
        std::uint32_t w = req < detail::kBigSize ? static_cast<std::uint32_t>(req) : detail::kBigSize;
        if (w == detail::kBigSize) {  // Note [Twelve-byte requests]
          d_->big_sizes.push_back(req);
          d_->flagged = true;
        }
        if (e.mode != trace::access_kind::read) { w |= detail::kWriteFlag; }
        if (e.mode == trace::access_kind::write_discard) {
          w |= detail::kDiscardFlag;
          d_->discards = true;
        }
        if (o.first_access_pending && o.born_on_device) { w |= detail::kBornOnDeviceFlag; }
        if (w > detail::kSizeMask) { d_->flagged = true; }
        push_cache({obj, detail::kNoNext, w});
        o.first_access_pending = false;
        if (options_.pool) {
          push_op({.kind = detail::pool_op_kind::access, .mode = e.mode,
                   .host = static_cast<std::uint8_t>(by_host ? 1 : 0), .obj = obj, .stream = s,
                   .bytes = o.size, .arg = detail::kNoNext});
        }
        break;
      }
      case trace::event_kind::prefetch: {
        if (options_.pool && e.obj != detail::kNoNext && objs_[e.obj].live) {
          push_op({.kind = detail::pool_op_kind::prefetch,
                   .obj = e.obj,
                   .tier = (e.where == trace::no_tier || e.where == 0) ? 0U : 1U});
        }
        break;
      }
      case trace::event_kind::compute: {
        std::uint32_t const s = stream_of(e.where);
        if (stream_compute_[s] > std::numeric_limits<std::uint64_t>::max() - e.value) {
          throw logic_error("replay: the compute durations of stream " + std::to_string(e.where) +
                            " sum past 2^64 - 1 ns");
        }
        stream_compute_[s] += e.value;
        compute_ += e.value;
        ++d_->compute_events;
        if (options_.pool) { push_op({.kind = detail::pool_op_kind::compute, .stream = s, .arg = e.value}); }
        break;
      }
      case trace::event_kind::phase:
        if (options_.pool && e.obj != detail::kNoNext) {
          d_->phase_marks.push_back({static_cast<std::uint32_t>(d_->ops.size()), e.obj});
        }
        break;
      case trace::event_kind::discard: {
        // Its next access must be a write_discard, which the floors already count as needing
        // no copy-in and ending the dirty episode before it: they need nothing else.
        if (e.obj != detail::kNoNext && objs_[e.obj].live) {
          objs_[e.obj].discarded = true;
          ++d_->discard_events;
          if (options_.pool) { push_op({.kind = detail::pool_op_kind::discard, .obj = e.obj}); }
        }
        break;
      }
      case trace::event_kind::release: {
        ++d_->release_events;
        if (options_.pool && e.obj != detail::kNoNext) {
          bool const by_host = e.where == trace::host_stream;
          push_op({.kind = detail::pool_op_kind::release,
                   .host = static_cast<std::uint8_t>(by_host ? 1 : 0),
                   .obj = e.obj,
                   .stream = by_host ? 0U : stream_of(e.where)});
        }
        break;
      }
    }
  }

  [[nodiscard]] std::uint64_t events() const noexcept { return d_->events; }
  [[nodiscard]] std::uint64_t cache_entries() const noexcept { return d_->cache.size(); }

  /// The arrays, next-access positions filled in.
  std::shared_ptr<detail::compiled_data> finish();

 private:
  [[noreturn]] void too_long() const { throw_too_many(d_->events, options_); }
  void push_cache(detail::cache_req const& r)
  {
    if (d_->cache.size() >= detail::kNoNext - 1) [[unlikely]] { too_long(); }
    d_->cache.push_back(r);
  }
  void push_op(detail::pool_op const& op)
  {
    if (d_->ops.size() >= detail::kNoNext - 1) [[unlikely]] { too_long(); }
    d_->ops.push_back(op);
  }
  [[nodiscard]] bool too_large(std::uint64_t bytes) const noexcept
  {
    return !options_.ignore_size && bytes > detail::kMaxBytes;
  }
  // The index of phase label `name` (interned; a trace has a handful). kNoNext past 2^20
  // distinct labels (a generated label per step): such markers are not timed.
  std::uint32_t phase_of(std::string const& name)
  {
    auto const it = phase_index_.find(name);
    if (it != phase_index_.end()) { return it->second; }
    if (d_->phase_names.size() >= (1U << 20U)) { return detail::kNoNext; }
    auto const k = static_cast<std::uint32_t>(d_->phase_names.size());
    d_->phase_names.push_back(name);
    phase_index_.emplace(name, k);
    return k;
  }

  std::uint32_t obj_of(std::uint64_t id)
  {
    bool fresh = false;
    auto const next = static_cast<std::uint32_t>(objs_.size());
    std::uint32_t const obj = ids_.insert(id, next, fresh);
    if (fresh) {
      TIERPOOL_EXPECTS(objs_.size() < detail::kNoNext - 1, "replay: too many distinct ids (at most 2^32 - 1)");
      objs_.emplace_back();
      id_of_.push_back(id);
    }
    return obj;
  }
  std::uint32_t stream_of(std::uint32_t s)
  {
    if (s == last_stream_) [[likely]] { return last_stream_index_; }  // the common case: one stream
    return new_stream(s);
  }
  [[gnu::noinline]] std::uint32_t new_stream(std::uint32_t s)
  {
    auto [it, fresh] = stream_index_.try_emplace(s, static_cast<std::uint32_t>(stream_compute_.size()));
    if (fresh) { stream_compute_.push_back(0); }
    last_stream_ = s;
    last_stream_index_ = it->second;
    return it->second;
  }
  void begin_life(std::uint32_t obj, std::uint64_t size, bool on_device)
  {
    object_state& o = objs_[obj];
    // Working set: every distinct id at the size it had when first seen
    // (sizes are never 0, so size 0 means "never seen").
    if (o.size == 0) { working_set_ += size; }
    o.live = true;
    o.size = size;
    o.born_on_device = on_device;
    o.first_access_pending = true;
    o.discarded = false;
    live_bytes_ += size;
    peak_live_ = std::max(peak_live_, live_bytes_);
  }
  void end_life(std::uint32_t obj)
  {
    object_state& o = objs_[obj];
    d_->flagged = true;
    push_cache({obj, detail::kNoNext, detail::kFreeFlag});
    if (options_.pool) { push_op({.kind = detail::pool_op_kind::free, .obj = obj}); }
    live_bytes_ -= o.size;
    o.live = false;
  }
  [[nodiscard]] std::uint64_t sized(std::uint64_t b) const noexcept
  {
    return options_.ignore_size ? std::uint64_t{1} : b;
  }

  compile_options options_;
  std::shared_ptr<detail::compiled_data> d_;
  std::unordered_map<std::string, std::uint32_t> phase_index_;  // phase label -> index in phase_names
  id_table ids_;
  std::vector<std::uint64_t> id_of_;  // dense index -> id (messages)
  std::vector<object_state> objs_;
  std::unordered_map<std::uint32_t, std::uint32_t> stream_index_;
  std::vector<std::uint64_t> stream_compute_;
  std::uint32_t last_stream_{0};
  std::uint32_t last_stream_index_{0};
  // Sums of sizes and durations are exact (128 bits) and refused past 2^64 - 1, not wrapped.
  u128 working_set_{0};
  u128 requested_{0};
  u128 compute_{0};
  u128 live_bytes_{0};
  u128 peak_live_{0};
};

std::shared_ptr<detail::compiled_data> compiler::finish()
{
  auto const fits = [](u128 v, char const* what, char const* unit) {
    if (v > std::numeric_limits<std::uint64_t>::max()) {
      throw logic_error(std::string("replay: the trace's ") + what + " sum past 2^64 - 1 " + unit +
                        " (the figures would wrap)");
    }
    return static_cast<std::uint64_t>(v);
  };
  detail::compiled_data& d = *d_;
  d.working_set_bytes = fits(working_set_, "distinct objects' sizes (the working set)", "bytes");
  d.peak_live_bytes = fits(peak_live_, "live sizes (the peak live bytes)", "bytes");
  d.requested_bytes = fits(requested_, "requested sizes", "bytes");
  d.compute_ns = fits(compute_, "compute durations", "ns");
  d.objects = objs_.size();
  d.streams = static_cast<std::uint32_t>(stream_compute_.size());
  d.max_stream_compute_ns = *std::max_element(stream_compute_.begin(), stream_compute_.end());

  // See Note [Next use in a backward pass].
  std::vector<std::uint32_t> next_pos(objs_.size(), detail::kNoNext);
  for (std::size_t i = d.cache.size(); i-- > 0;) {
    detail::cache_req& r = d.cache[i];
    if ((r.word & detail::kFreeFlag) != 0) {
      next_pos[r.obj] = detail::kNoNext;
    } else {
      r.next = next_pos[r.obj];
      next_pos[r.obj] = static_cast<std::uint32_t>(i);
    }
  }
  if (!d.ops.empty()) {
    TIERPOOL_EXPECTS(d.ops.size() < detail::kNoNext, "replay: too many events (at most 2^32 - 2)");
    std::fill(next_pos.begin(), next_pos.end(), detail::kNoNext);
    for (std::size_t i = d.ops.size(); i-- > 0;) {
      detail::pool_op& op = d.ops[i];
      switch (op.kind) {
        case detail::pool_op_kind::allocate:
          op.arg = next_pos[op.obj];  // its first access: the forecast allocate gives the policies
          next_pos[op.obj] = detail::kNoNext;
          break;
        case detail::pool_op_kind::free: next_pos[op.obj] = detail::kNoNext; break;
        case detail::pool_op_kind::access:
          op.arg = next_pos[op.obj];
          next_pos[op.obj] = static_cast<std::uint32_t>(i);
          break;
        default: break;
      }
    }
  }
  return std::move(d_);
}

void check_options(compile_options const& options)
{
  TIERPOOL_EXPECTS(options.loop >= 1, "replay: --loop must be at least 1");
  if (options.pool && options.ignore_size) {
    throw logic_error("replay: ignoring sizes is a cache-mode option (pool mode moves real tensor sizes)");
  }
}

// The first pass over `chunk` (at most kBatchEvents): every id resolved (and its slot and
// state loaded ahead, Note [Dense ids]), then every event applied; objs[i] gets event i's
// dense index. An event compile() refuses is thrown after the ones before it are applied,
// so the first error in trace order is the one reported.
void first_pass(compiler& c, std::span<trace::event const> chunk, std::uint32_t* objs)
{
  std::size_t const n = chunk.size();
  for (std::size_t i = 0; i < std::min(n, kPrefetchAhead); ++i) { c.prefetch(chunk[i]); }
  std::size_t ok = 0;
  for (; ok < n; ++ok) {
    if (ok + kPrefetchAhead < n) { c.prefetch(chunk[ok + kPrefetchAhead]); }
    if (!c.resolve(chunk[ok], objs[ok])) [[unlikely]] { break; }
  }
  for (std::size_t i = 0; i < ok; ++i) { c.apply(compiler::make_step(chunk[i], objs[i])); }
  if (ok < n) { c.refuse(chunk[ok]); }
}

}  // namespace

compiled_trace compiled_trace::compile(std::span<trace::event const> events, compile_options options)
{
  check_options(options);
  // The arrays' sizes before anything is reserved: a --loop that makes them too long for
  // their 32-bit positions is refused here, not met as std::bad_alloc.
  std::uint64_t cache_entries = 0;  // accesses and frees
  for (trace::event const& e : events) {
    if (e.kind == trace::event_kind::access || e.kind == trace::event_kind::free) { ++cache_entries; }
  }
  auto const limit = static_cast<u128>(detail::kNoNext - 1);
  if (static_cast<u128>(cache_entries) * options.loop > limit ||
      (options.pool && static_cast<u128>(events.size()) * options.loop > limit)) {
    throw_too_many(events.size(), options);
  }
  compiler c(options, cache_entries * options.loop);
  c.reserve_ops(events.size() * options.loop);
  // Ids are hashed in the first pass only; later passes (--loop) reuse each event's index.
  std::vector<std::uint32_t> event_obj(options.loop > 1 ? events.size() : 0, detail::kNoNext);
  std::vector<std::uint32_t> chunk_obj(event_obj.empty() ? kBatchEvents : 0);
  for (std::size_t k = 0; k < events.size(); k += kBatchEvents) {
    auto const chunk = events.subspan(k, std::min(kBatchEvents, events.size() - k));
    first_pass(c, chunk, event_obj.empty() ? chunk_obj.data() : event_obj.data() + k);
  }
  for (std::uint32_t pass = 1; pass < options.loop; ++pass) {
    for (std::size_t k = 0; k < events.size(); ++k) { c.apply(compiler::make_step(events[k], event_obj[k])); }
  }
  compiled_trace t;
  t.data_ = c.finish();
  return t;
}

compiled_trace compiled_trace::compile(trace::reader& events, compile_options options, std::uint64_t expected_events)
{
  check_options(options);
  // A hint, not a promise (oracleGeneral skips size-0 records): capped where the arrays stop.
  auto const expected = static_cast<std::uint64_t>(
    std::min<u128>(static_cast<u128>(expected_events) * options.loop, detail::kNoNext - 1));
  compiler c(options, expected);
  c.reserve_ops(expected);
  // See Note [Compiling from a reader].
  std::vector<step> steps;
  if (options.loop > 1) { steps.reserve(std::min<std::uint64_t>(expected_events, detail::kNoNext - 1)); }
  std::vector<trace::event> batch(kBatchEvents);
  std::vector<std::uint32_t> batch_obj(kBatchEvents);
  for (;;) {
    std::size_t const n = events.next_batch(batch);
    if (n == 0) { break; }
    first_pass(c, std::span<trace::event const>(batch.data(), n), batch_obj.data());
    if (options.loop > 1) {
      for (std::size_t i = 0; i < n; ++i) { steps.push_back(compiler::make_step(batch[i], batch_obj[i])); }
    }
  }
  if (options.loop > 1) {
    // As compile(span) does before it reserves: the first pass's counts, times the loop.
    auto const limit = static_cast<u128>(detail::kNoNext - 1);
    if (static_cast<u128>(c.cache_entries()) * options.loop > limit ||
        (options.pool && static_cast<u128>(c.events()) * options.loop > limit)) {
      throw_too_many(c.events(), options);
    }
    for (std::uint32_t pass = 1; pass < options.loop; ++pass) {
      for (step const& s : steps) { c.apply(s); }
    }
  }
  compiled_trace t;
  t.data_ = c.finish();
  return t;
}

compiled_trace compiled_trace::compile_file(std::filesystem::path const& path, trace::reader_options const& reader,
                                            compile_options options)
{
  check_options(options);
  auto r = trace::open_reader(path, reader);
  std::uint64_t expected = 0;
  if (r->encoding() == trace::format::oracle_general) {
    // Fixed 24-byte records: the file's size says how many (a pipe has none: 0, no hint).
    std::error_code ec;
    auto const bytes = std::filesystem::file_size(path, ec);
    if (!ec) { expected = bytes / 24; }
  }
  return compile(*r, options, expected);
}

std::uint64_t compiled_trace::events() const noexcept { return data_->events; }
std::uint64_t compiled_trace::requests() const noexcept { return data_->requests; }
std::uint64_t compiled_trace::objects() const noexcept { return data_->objects; }
std::uint64_t compiled_trace::working_set_bytes() const noexcept { return data_->working_set_bytes; }
std::uint64_t compiled_trace::compiled_bytes() const noexcept
{
  detail::compiled_data const& d = *data_;
  return d.cache.size() * sizeof(d.cache[0]) + d.ops.size() * sizeof(detail::pool_op) +
         d.big_sizes.size() * sizeof(std::uint64_t);
}
std::uint64_t compiled_trace::peak_live_bytes() const noexcept { return data_->peak_live_bytes; }
std::uint64_t compiled_trace::compute_ns() const noexcept { return data_->compute_ns; }
std::uint32_t compiled_trace::streams() const noexcept { return data_->streams; }
compile_options const& compiled_trace::options() const noexcept { return data_->options; }

std::uint64_t compiled_trace::resolve(capacity_spec const& spec, replay_mode mode) const noexcept
{
  return spec.resolve(mode == replay_mode::cache ? data_->working_set_bytes : data_->peak_live_bytes);
}

namespace detail {

// See docs/chapters/replay.md, "The ideal time". Two floors, one pass each.
//
// h2d: byte-granular (fractional) Belady MIN, Note [Fractional Belady is a floor].
// d2h: Note [Dirty episodes]. Objects larger than the capacity are never admitted and are
// left out of both.
//
// Note [Dirty episodes]
//   A write (or the birth of a tensor on the device) makes an object's bytes exist only on
//   the device: an episode, from that access to the last read of those bytes (the next
//   write or free ends it; an episode never read needs nothing). Every byte of an episode
//   is either resident from its start to its end or written back during it, else it is
//   lost. Relax the problem: clean bytes take no room, and an access needs no room; what is
//   left is to keep as many episode bytes resident as the capacity allows. That is unit-page
//   caching again, each episode byte requested at its start and at its end, a miss at the
//   end costing a write-back: fractional MIN (keep the episodes that end soonest, take
//   bytes off the one that ends furthest) is optimal for it, so its write-backs are a floor
//   for every schedule. It replaces "peak of device-only bytes needed later, minus the
//   capacity", which counted the shortfall once per trace.
//
// Note [Fractional Belady is a floor]
//   Cut every object into bytes, each byte a unit page requested whenever its object is.
//   Any schedule of whole objects (demand or prefetching, any policy) is a schedule of those
//   pages, and copies in at least as many bytes as the pages' optimum. For unit pages,
//   Belady's MIN (evict the page whose next request is furthest; may bypass, i.e. evict the
//   page just requested) copies in the fewest, and no prefetching schedule copies fewer
//   (a prefetching schedule can be made demand-only without adding a fetch). The bytes of
//   one object share their request times, so MIN on the pages is: on each request, bring
//   the object's missing bytes in, then take bytes off the objects whose next request is
//   furthest (the requested one included) until the resident bytes fit the capacity, a
//   partial object allowed. Its bytes in are a floor for every policy with and without
//   prefetch. A write_discard needs no copy, and neither does the first access of a tensor
//   that could be born on the device; an object whose next access is a discard, a free or
//   none is dropped at once (MIN's first victim). An indexed max-heap keyed by next
//   request holds each resident object once: O(log n) per request, 24 bytes per object.
namespace {

// Resident objects by next request, furthest on top; an object is in the heap at most once.
class next_use_heap {
 public:
  explicit next_use_heap(std::uint64_t objects) : pos_(objects, kNone) {}
  [[nodiscard]] bool empty() const noexcept { return heap_.empty(); }
  [[nodiscard]] std::uint32_t top() const noexcept { return heap_.front().obj; }
  // Insert `obj` keyed by `next`, or move it to that key.
  void set(std::uint32_t obj, std::uint32_t next)
  {
    std::uint32_t i = pos_[obj];
    if (i == kNone) {
      i = static_cast<std::uint32_t>(heap_.size());
      heap_.push_back(entry{next, obj});
      pos_[obj] = i;
    } else {
      heap_[i].next = next;
    }
    up(down(i));
  }
  void erase(std::uint32_t obj) noexcept
  {
    std::uint32_t const i = pos_[obj];
    if (i == kNone) { return; }
    pos_[obj] = kNone;
    entry const last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) { return; }
    heap_[i] = last;
    pos_[last.obj] = i;
    up(down(i));
  }

 private:
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  struct entry {
    std::uint32_t next;
    std::uint32_t obj;
  };
  void place(std::uint32_t i, entry e) noexcept
  {
    heap_[i] = e;
    pos_[e.obj] = i;
  }
  std::uint32_t down(std::uint32_t i) noexcept
  {
    entry const e = heap_[i];
    auto const n = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t c = 2 * i + 1;
      if (c >= n) { break; }
      if (c + 1 < n && heap_[c + 1].next > heap_[c].next) { ++c; }
      if (heap_[c].next <= e.next) { break; }
      place(i, heap_[c]);
      i = c;
    }
    place(i, e);
    return i;
  }
  void up(std::uint32_t i) noexcept
  {
    entry const e = heap_[i];
    while (i > 0) {
      std::uint32_t const p = (i - 1) / 2;
      if (heap_[p].next >= e.next) { break; }
      place(i, heap_[p]);
      i = p;
    }
    place(i, e);
  }
  std::vector<entry> heap_;
  std::vector<std::uint32_t> pos_;
};

// The h2d floor: Note [Fractional Belady is a floor].
void fractional_belady(compiled_data const& d, std::uint64_t capacity, must_move& m, std::vector<std::uint8_t> const& out)
{
  std::vector<std::uint64_t> resident(d.objects, 0);
  std::vector<std::uint8_t> seen(d.objects, 0);
  next_use_heap heap(d.objects);
  std::uint64_t total = 0;
  size_cursor size_of(d.big_sizes.data());
  auto const& cache = d.cache;
  for (cache_req const& r : cache) {
    std::uint32_t const o = r.obj;
    if ((r.word & kFreeFlag) != 0) {
      total -= resident[o];
      resident[o] = 0;
      seen[o] = 0;  // a later life starts over
      heap.erase(o);
      continue;
    }
    std::uint64_t const size = size_of(r);  // before any skip: the cursor walks every access
    if (size > capacity || (!out.empty() && out[o] != 0)) { continue; }
    bool const first = seen[o] == 0;
    seen[o] = 1;
    bool const copies = (r.word & kDiscardFlag) == 0 && !(first && (r.word & kBornOnDeviceFlag) != 0);
    if (copies) {
      m.h2d_bytes += size - resident[o];
      if (first) { ++m.h2d_copies; }
    }
    total += size - resident[o];
    resident[o] = size;
    std::uint32_t next = r.next;
    if (next != kNoNext && d.discards && (cache[next].word & kDiscardFlag) != 0) { next = kNoNext; }
    if (next == kNoNext) {  // never read again: MIN's first victim
      total -= size;
      resident[o] = 0;
      heap.erase(o);
      continue;
    }
    heap.set(o, next);
    while (total > capacity) {
      std::uint32_t const v = heap.top();
      std::uint64_t const off = std::min(resident[v], total - capacity);
      resident[v] -= off;
      total -= off;
      if (resident[v] == 0) { heap.erase(v); }
    }
  }
}

// The d2h floor: Note [Dirty episodes].
void dirty_episodes(compiled_data const& d, std::uint64_t capacity, must_move& m, std::vector<std::uint8_t> const& out)
{
  auto const& cache = d.cache;
  auto const n = static_cast<std::uint32_t>(cache.size());
  // Backward: for each access that makes an object's bytes device-only, the last read of
  // those bytes (kNoNext: never read, nothing to keep).
  std::vector<std::uint32_t> episode_end(n, kNoNext);
  {
    std::vector<std::uint32_t> last_read(d.objects, kNoNext);
    std::vector<std::uint8_t> later(d.objects, 0);  // a later access of this life was seen
    for (std::uint32_t i = n; i-- > 0;) {
      cache_req const& r = cache[i];
      std::uint32_t const o = r.obj;
      if (!out.empty() && out[o] != 0) { continue; }  // no episode: episode_end stays kNoNext
      if ((r.word & kFreeFlag) != 0) {
        last_read[o] = kNoNext;
        later[o] = 0;
        continue;
      }
      bool const writes = (r.word & kWriteFlag) != 0 || (r.word & kBornOnDeviceFlag) != 0;
      bool const reads = (r.word & kDiscardFlag) == 0;
      if (writes) {
        episode_end[i] = last_read[o];
        last_read[o] = reads ? i : kNoNext;  // an rw reads the episode before it
      } else if (last_read[o] == kNoNext) {
        last_read[o] = i;
      }
      later[o] = 1;
    }
  }
  // Forward: fractional MIN over the episodes' bytes, keyed by their ends.
  std::vector<std::uint64_t> resident(d.objects, 0);
  std::vector<std::uint32_t> open_end(d.objects, kNoNext);
  next_use_heap heap(d.objects);
  std::uint64_t total = 0;
  size_cursor size_of(d.big_sizes.data());
  auto close = [&](std::uint32_t o) {
    total -= resident[o];
    resident[o] = 0;
    open_end[o] = kNoNext;
    heap.erase(o);
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    cache_req const& r = cache[i];
    std::uint32_t const o = r.obj;
    if ((r.word & kFreeFlag) != 0) {
      close(o);
      continue;
    }
    std::uint64_t const size = size_of(r);
    if (size > capacity) { continue; }
    if (open_end[o] == i) { close(o); }  // the episode's last read
    std::uint32_t const end = episode_end[i];
    if (end == kNoNext) { continue; }
    if (open_end[o] != kNoNext) { close(o); }  // rewritten before its last read: that episode is over
    resident[o] = size;
    total += size;
    open_end[o] = end;
    heap.set(o, end);
    while (total > capacity) {
      std::uint32_t const v = heap.top();
      std::uint64_t const off = std::min(resident[v], total - capacity);
      resident[v] -= off;
      total -= off;
      m.d2h_bytes += off;
      if (resident[v] == 0) { heap.erase(v); }
    }
  }
}

}  // namespace

// Note [Floors with recompute]
// ------------------------------
// Rationale: with recipes (a trace's recomputable tensors, replayed with recompute on) a
// schedule may drop a tensor's last copy and rebuild it on its next use: no write-back,
// no copy-in. The byte floors and the phase floor count every tensor's bytes, so a run
// with recompute finished under them (transformer-train at 25 %: 343.9 ms against a
// 416.2 ms phase floor), and they were not floors any more.
// Approach: the floors of such a run leave the recomputable tensors out of the trace,
// as if they took no room and needed no copy. Leaving objects out is a relaxation (any
// schedule of the whole trace, restricted to the other objects, is a schedule of the
// smaller one that moves no more bytes and takes no longer), so what remains is still a
// floor, a looser one; the rebuilds' own compute is not counted, which only lowers it.
// `--no-recompute` runs, and traces without recipes, keep the full floors.
std::vector<std::uint8_t> recomputable_mask(compiled_data const& d)
{
  std::vector<std::uint8_t> out;
  for (auto const& [obj, h] : d.hints) {
    if (h.recompute_ns == 0 || obj >= d.objects) { continue; }
    if (out.empty()) { out.assign(d.objects, 0); }
    out[obj] = 1;
  }
  return out;
}

must_move compute_must_move(compiled_data const& d, std::uint64_t capacity, std::vector<std::uint8_t> const& leave_out)
{
  must_move m;
  fractional_belady(d, capacity, m, leave_out);
  if (d.flagged) { dirty_episodes(d, capacity, m, leave_out); }  // plain reads: nothing is ever only on the device
  return m;
}

}  // namespace detail

}  // namespace tierpool::replay

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// compiled_trace.cpp — owns compiled_trace::compile(): trace events -> the compact arrays
// of compiled_data (dense ids, resolved sizes, next-access positions), the capacity
// parsing, and compute_must_move() (the transfer floor of the lower bound).
//
// Note [Next use in a backward pass]
//   Walking the compiled array from the end, next_pos[obj] holds the position of the
//   object's next access; a free (or an allocate, in the pool array) ends a life, so it
//   resets next_pos[obj] to "none": an access before a free is never followed by the next
//   life's accesses. O(n), one 4-byte slot per object.
#include "replay/detail/compiled_data.hpp"

#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>

namespace tierpool::replay {

std::string_view to_string(replay_mode m) noexcept { return m == replay_mode::pool ? "pool" : "cache"; }

replay_mode parse_replay_mode(std::string_view text)
{
  if (text == "pool") { return replay_mode::pool; }
  if (text == "cache") { return replay_mode::cache; }
  throw logic_error("unknown replay mode '" + std::string(text) + "' (valid: pool, cache)");
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
};

}  // namespace

compiled_trace compiled_trace::compile(std::span<trace::event const> events, compile_options options)
{
  TIERPOOL_EXPECTS(options.loop >= 1, "replay: --loop must be at least 1");
  if (options.pool && options.ignore_size) {
    throw logic_error("replay: ignoring sizes is a cache-mode option (pool mode moves real tensor sizes)");
  }
  // The arrays' sizes before anything is reserved: a --loop that makes them too long for
  // their 32-bit positions is refused here, not met as std::bad_alloc.
  {
    std::uint64_t cache_entries = 0;  // accesses and frees
    for (trace::event const& e : events) {
      if (e.kind == trace::event_kind::access || e.kind == trace::event_kind::free) { ++cache_entries; }
    }
    auto const limit = static_cast<u128>(detail::kNoNext - 1);
    if (static_cast<u128>(cache_entries) * options.loop > limit ||
        (options.pool && static_cast<u128>(events.size()) * options.loop > limit)) {
      throw logic_error("replay: " + std::to_string(events.size()) + " events looped " + std::to_string(options.loop) +
                        " times are too many (at most 2^32 - 2 accesses and frees" +
                        std::string(options.pool ? ", and 2^32 - 2 events in pool mode)" : ")"));
    }
  }
  auto d = std::make_shared<detail::compiled_data>();
  d->options = options;
  // Sums of sizes and durations are exact (128 bits) and refused past 2^64 - 1, not wrapped.
  u128 working_set = 0;
  u128 requested = 0;
  u128 compute = 0;
  auto check_size = [&options](std::uint64_t id, std::uint64_t bytes) {
    if (!options.ignore_size && bytes > detail::kSizeMask) {
      throw logic_error("replay: tensor " + std::to_string(id) + " has " + std::to_string(bytes) +
                        " bytes (at most 2^60 - 1 = " + std::to_string(detail::kSizeMask) + ")");
    }
  };

  std::unordered_map<std::uint64_t, std::uint32_t> dense;
  std::unordered_map<std::uint32_t, std::uint32_t> stream_index;
  std::vector<object_state> objs;
  std::vector<std::uint64_t> stream_compute;
  u128 live_bytes = 0;
  u128 peak_live = 0;

  auto obj_of = [&](std::uint64_t id) -> std::uint32_t {
    auto [it, fresh] = dense.try_emplace(id, static_cast<std::uint32_t>(objs.size()));
    if (fresh) {
      TIERPOOL_EXPECTS(objs.size() < detail::kNoNext, "replay: too many distinct ids (at most 2^32 - 1)");
      objs.emplace_back();
    }
    return it->second;
  };
  std::uint32_t last_stream = 0;
  std::uint32_t last_stream_index = 0;
  auto stream_of = [&](std::uint32_t s) -> std::uint32_t {
    if (s == last_stream && !stream_compute.empty()) { return last_stream_index; }  // the common case: one stream
    auto [it, fresh] = stream_index.try_emplace(s, static_cast<std::uint32_t>(stream_compute.size()));
    if (fresh) { stream_compute.push_back(0); }
    last_stream = s;
    last_stream_index = it->second;
    return it->second;
  };
  auto first_seen = [&](std::uint32_t obj, std::uint64_t size) {
    // Working set: every distinct id at the size it had when first seen.
    // (sizes are never 0, so size 0 means "never seen").
    if (objs[obj].size == 0) { working_set += size; }
  };
  auto begin_life = [&](std::uint32_t obj, std::uint64_t size, bool on_device) {
    object_state& o = objs[obj];
    first_seen(obj, size);
    o.live = true;
    o.size = size;
    o.born_on_device = on_device;
    o.first_access_pending = true;
    live_bytes += size;
    peak_live = std::max(peak_live, live_bytes);
  };
  auto end_life = [&](std::uint32_t obj) {
    object_state& o = objs[obj];
    d->cache.push_back({obj, detail::kNoNext, detail::kFreeFlag});
    if (options.pool) { d->ops.push_back({.kind = detail::pool_op_kind::free, .obj = obj}); }
    live_bytes -= o.size;
    o.live = false;
  };
  auto sized = [&](std::uint64_t b) { return options.ignore_size ? std::uint64_t{1} : b; };

  (void)stream_of(0);  // stream 0 always exists: cache traces use it
  d->cache.reserve(events.size() * options.loop);
  if (options.pool) { d->ops.reserve(events.size() * options.loop); }

  // Ids are hashed in the first pass only; later passes (--loop) reuse each event's index.
  std::vector<std::uint32_t> event_obj(options.loop > 1 ? events.size() : 0, detail::kNoNext);
  auto lookup = [&](std::uint32_t pass, std::size_t k, std::uint64_t id, bool create) -> std::uint32_t {
    if (pass > 0) { return event_obj[k]; }
    std::uint32_t obj = detail::kNoNext;
    if (create) {
      obj = obj_of(id);
    } else if (auto const it = dense.find(id); it != dense.end()) {
      obj = it->second;
    }
    if (!event_obj.empty()) { event_obj[k] = obj; }
    return obj;
  };

  for (std::uint32_t pass = 0; pass < options.loop; ++pass) {
    for (std::size_t k = 0; k < events.size(); ++k) {
      trace::event const& e = events[k];
      ++d->events;
      switch (e.kind) {
        case trace::event_kind::allocate: {
          if (e.bytes == 0) { throw logic_error("replay: allocate of tensor " + std::to_string(e.tensor) + " with 0 bytes"); }
          check_size(e.tensor, e.bytes);
          std::uint32_t const obj = lookup(pass, k, e.tensor, true);
          if (objs[obj].live) { end_life(obj); }  // allocated again while live: the old one ends
          bool const host = e.tier != trace::no_tier && e.tier != 0;
          begin_life(obj, sized(e.bytes), !host);
          if (options.pool) {
            d->ops.push_back({.kind = detail::pool_op_kind::allocate,
                              .obj = obj,
                              .tier = e.tier == trace::no_tier ? detail::kAnyTier : (host ? 1U : 0U),
                              .bytes = e.bytes});
          }
          break;
        }
        case trace::event_kind::free: {
          std::uint32_t const obj = lookup(pass, k, e.tensor, false);
          if (obj != detail::kNoNext && objs[obj].live) { end_life(obj); }
          break;
        }
        case trace::event_kind::access: {
          check_size(e.tensor, e.bytes);
          std::uint32_t const obj = lookup(pass, k, e.tensor, true);
          if (!objs[obj].live) {
            if (e.bytes == 0) {
              throw logic_error("replay: access of tensor " + std::to_string(e.tensor) +
                                " before any allocate, without a size (event " + std::to_string(d->events) + ")");
            }
            // A cache trace's object: its bytes start in host memory.
            begin_life(obj, sized(e.bytes), false);
            if (options.pool) {
              d->ops.push_back({.kind = detail::pool_op_kind::allocate, .obj = obj, .tier = 1U, .bytes = e.bytes});
            }
          }
          object_state& o = objs[obj];
          std::uint64_t const req = e.bytes != 0 ? sized(e.bytes) : o.size;
          TIERPOOL_EXPECTS(d->requests + 1 < detail::kNoNext, "replay: too many requests (at most 2^32 - 2)");
          ++d->requests;
          requested += req;
          bool const by_host = e.stream == trace::host_stream;
          std::uint32_t const s = by_host ? 0U : stream_of(e.stream);
          std::uint64_t w = req & detail::kSizeMask;
          if (e.mode != trace::access_kind::read) { w |= detail::kWriteFlag; }
          if (e.mode == trace::access_kind::write_discard) { w |= detail::kDiscardFlag; }
          if (o.first_access_pending && o.born_on_device) { w |= detail::kBornOnDeviceFlag; }
          d->cache.push_back({obj, detail::kNoNext, w});
          o.first_access_pending = false;
          if (options.pool) {
            d->ops.push_back({.kind = detail::pool_op_kind::access, .mode = e.mode,
                              .host = static_cast<std::uint8_t>(by_host ? 1 : 0), .obj = obj, .stream = s,
                              .bytes = o.size, .arg = detail::kNoNext});
          }
          break;
        }
        case trace::event_kind::prefetch: {
          std::uint32_t const obj = lookup(pass, k, e.tensor, false);
          if (options.pool && obj != detail::kNoNext && objs[obj].live) {
            d->ops.push_back({.kind = detail::pool_op_kind::prefetch,
                              .obj = obj,
                              .tier = (e.tier == trace::no_tier || e.tier == 0) ? 0U : 1U});
          }
          break;
        }
        case trace::event_kind::compute: {
          std::uint32_t const s = stream_of(e.stream);
          if (stream_compute[s] > std::numeric_limits<std::uint64_t>::max() - e.duration_ns) {
            throw logic_error("replay: the compute durations of stream " + std::to_string(e.stream) +
                              " sum past 2^64 - 1 ns");
          }
          stream_compute[s] += e.duration_ns;
          compute += e.duration_ns;
          ++d->compute_events;
          if (options.pool) {
            d->ops.push_back({.kind = detail::pool_op_kind::compute, .stream = s, .arg = e.duration_ns});
          }
          break;
        }
        case trace::event_kind::phase: break;
        case trace::event_kind::release: {
          std::uint32_t const obj = lookup(pass, k, e.tensor, false);
          ++d->release_events;
          if (options.pool && obj != detail::kNoNext) {
            bool const by_host = e.stream == trace::host_stream;
            d->ops.push_back({.kind = detail::pool_op_kind::release,
                              .host = static_cast<std::uint8_t>(by_host ? 1 : 0),
                              .obj = obj,
                              .stream = by_host ? 0U : stream_of(e.stream)});
          }
          break;
        }
      }
    }
  }
  auto const fits = [](u128 v, char const* what, char const* unit) {
    if (v > std::numeric_limits<std::uint64_t>::max()) {
      throw logic_error(std::string("replay: the trace's ") + what + " sum past 2^64 - 1 " + unit +
                        " (the figures would wrap)");
    }
    return static_cast<std::uint64_t>(v);
  };
  d->working_set_bytes = fits(working_set, "distinct objects' sizes (the working set)", "bytes");
  d->peak_live_bytes = fits(peak_live, "live sizes (the peak live bytes)", "bytes");
  d->requested_bytes = fits(requested, "requested sizes", "bytes");
  d->compute_ns = fits(compute, "compute durations", "ns");
  d->objects = objs.size();
  d->streams = static_cast<std::uint32_t>(stream_compute.size());
  d->max_stream_compute_ns = *std::max_element(stream_compute.begin(), stream_compute.end());

  // See Note [Next use in a backward pass].
  std::vector<std::uint32_t> next_pos(objs.size(), detail::kNoNext);
  for (std::size_t i = d->cache.size(); i-- > 0;) {
    detail::cache_req& r = d->cache[i];
    if ((r.word & detail::kFreeFlag) != 0) {
      next_pos[r.obj] = detail::kNoNext;
    } else {
      r.next = next_pos[r.obj];
      next_pos[r.obj] = static_cast<std::uint32_t>(i);
    }
  }
  if (!d->ops.empty()) {
    TIERPOOL_EXPECTS(d->ops.size() < detail::kNoNext, "replay: too many events (at most 2^32 - 2)");
    std::fill(next_pos.begin(), next_pos.end(), detail::kNoNext);
    for (std::size_t i = d->ops.size(); i-- > 0;) {
      detail::pool_op& op = d->ops[i];
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
  compiled_trace t;
  t.data_ = std::move(d);
  return t;
}

std::uint64_t compiled_trace::events() const noexcept { return data_->events; }
std::uint64_t compiled_trace::requests() const noexcept { return data_->requests; }
std::uint64_t compiled_trace::objects() const noexcept { return data_->objects; }
std::uint64_t compiled_trace::working_set_bytes() const noexcept { return data_->working_set_bytes; }
std::uint64_t compiled_trace::peak_live_bytes() const noexcept { return data_->peak_live_bytes; }
std::uint64_t compiled_trace::compute_ns() const noexcept { return data_->compute_ns; }
std::uint32_t compiled_trace::streams() const noexcept { return data_->streams; }
compile_options const& compiled_trace::options() const noexcept { return data_->options; }

std::uint64_t compiled_trace::resolve(capacity_spec const& spec, replay_mode mode) const noexcept
{
  return spec.resolve(mode == replay_mode::cache ? data_->working_set_bytes : data_->peak_live_bytes);
}

namespace detail {

// See docs/chapters/replay.md, "Lower bound". need = bytes of live objects whose next
// access reads them (they must be on the device then); dev_need = those of them whose
// current bytes exist only on the device (born there or written since). At any point at
// most `capacity` bytes are resident, so at least need - capacity bytes must still be
// copied in later, and dev_need - capacity bytes must have been written back earlier.
// Objects larger than the capacity are never admitted and are left out.
must_move compute_must_move(compiled_data const& d, std::uint64_t capacity)
{
  struct state {
    std::uint64_t counted{0};  // bytes this object contributes to need (0: none)
    bool seen{false};
    bool dev_content{false};
    bool in_dev_need{false};
  };
  std::vector<state> st(d.objects);
  std::uint64_t compulsory = 0;
  std::uint64_t copies = 0;
  std::uint64_t need = 0;
  std::uint64_t dev_need = 0;
  std::uint64_t max_need = 0;
  std::uint64_t max_dev_need = 0;
  for (cache_req const& r : d.cache) {
    state& s = st[r.obj];
    if ((r.word & kFreeFlag) != 0) {
      need -= s.counted;
      if (s.in_dev_need) { dev_need -= s.counted; }
      s = state{};
      continue;
    }
    std::uint64_t const size = r.word & kSizeMask;
    if (size > capacity) { continue; }
    if (!s.seen) {
      s.seen = true;
      s.dev_content = (r.word & kBornOnDeviceFlag) != 0;
      if (!s.dev_content && (r.word & kDiscardFlag) == 0) {
        compulsory += size;
        ++copies;
      }
    }
    need -= s.counted;
    if (s.in_dev_need) { dev_need -= s.counted; }
    s.counted = 0;
    s.in_dev_need = false;
    if ((r.word & kWriteFlag) != 0) { s.dev_content = true; }
    if (r.next != kNoNext && (d.cache[r.next].word & kDiscardFlag) == 0) {
      s.counted = size;
      need += size;
      if (s.dev_content) {
        s.in_dev_need = true;
        dev_need += size;
      }
    }
    max_need = std::max(max_need, need);
    max_dev_need = std::max(max_dev_need, dev_need);
  }
  must_move m;
  // Compulsory copies happen at first accesses; the capacity term counts copies of objects
  // already seen, after the point where need peaks: the two sets of copies are disjoint.
  m.h2d_bytes = compulsory + (max_need > capacity ? max_need - capacity : 0);
  m.h2d_copies = copies;
  m.d2h_bytes = max_dev_need > capacity ? max_dev_need - capacity : 0;
  return m;
}

}  // namespace detail

}  // namespace tierpool::replay

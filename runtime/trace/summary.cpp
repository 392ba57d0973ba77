// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// summary.cpp — owns trace::summarizer and summarize(): the figures `tierpool trace stat`
// prints (events per kind, requests, unique objects, working set, peak live bytes, the
// eviction hints of the allocates) and
// the well-formedness counters the generator tests assert to be zero (a discarded tensor
// read before a write_discard is one).
//
// Invariant after every add():  state_->live == SUM(bytes of live ids), exactly (128 bits)
//                               summary_.live_bytes_at_end == min(state_->live, 2^64 - 1)
//                               summary_.peak_live_bytes   >= live_bytes_at_end
// Every SUM saturates at 2^64 - 1 and sets summary_.saturated instead of wrapping.
#include <tierpool/trace.hpp>

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace tierpool::trace {

__extension__ typedef unsigned __int128 u128;  // exact live sums (GCC and clang)

struct summarizer::state {
  struct id_state {
    std::uint64_t bytes{0};  // size while live
    bool live{false};
    bool allocated{false};   // ever the subject of an allocate
    bool accessed{false};    // ever the subject of an access
    bool discarded{false};   // a discard since the last write_discard, allocate or free
  };
  std::unordered_map<std::uint64_t, id_state> ids;  // lookup only, never iterated
  u128 live{0};  // exact SUM of the sizes of live ids; summary_ shows it saturated
  u128 peak{0};
  std::unordered_map<std::uint32_t, u128> compute_by_stream;  // exact SUM of compute durations per stream
  u128* last_compute{nullptr};  // compute_by_stream's entry of the latest compute event's stream (nodes stay put)
  std::uint32_t last_compute_stream{0};
};

namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

// a += b, saturating at 2^64 - 1 (and saying so) instead of wrapping.
void add_saturated(std::uint64_t& a, std::uint64_t b, bool& saturated) noexcept
{
  if (a > kMax - b) {
    a = kMax;
    saturated = true;
  } else {
    a += b;
  }
}

std::uint64_t clamp(u128 v, bool& saturated) noexcept
{
  if (v > kMax) {
    saturated = true;
    return kMax;
  }
  return static_cast<std::uint64_t>(v);
}

}  // namespace

summarizer::summarizer() : state_(std::make_unique<state>()) {}
summarizer::~summarizer() = default;
summarizer::summarizer(summarizer&&) noexcept = default;
summarizer& summarizer::operator=(summarizer&&) noexcept = default;

void summarizer::add(event const& e)
{
  summary& s = summary_;
  ++s.events;
  ++s.events_by_kind[static_cast<std::size_t>(e.kind)];
  if (e.time_ns != 0) {
    s.first_time_ns = s.first_time_ns == 0 ? e.time_ns : std::min(s.first_time_ns, e.time_ns);
    s.last_time_ns = std::max(s.last_time_ns, e.time_ns);
  }
  state& sta = *state_;
  auto set_live = [&s, &sta](u128 live) {
    sta.live = live;
    sta.peak = std::max(sta.peak, live);
    s.live_bytes_at_end = clamp(live, s.saturated);
    s.peak_live_bytes = clamp(sta.peak, s.saturated);
  };
  auto make_live = [&](state::id_state& st, std::uint64_t bytes) {
    st.live = true;
    st.discarded = false;
    st.bytes = bytes;
    ++s.live_at_end;
    set_live(sta.live + bytes);
  };
  switch (e.kind) {
    case event_kind::allocate: {
      auto [it, fresh] = state_->ids.try_emplace(e.tensor);
      auto& st = it->second;
      if (fresh) { add_saturated(s.working_set_bytes, e.bytes, s.saturated); }
      if (!st.allocated) {
        st.allocated = true;
        ++s.tensors;
      }
      add_saturated(s.allocated_bytes, e.bytes, s.saturated);
      if ((e.hints & hint_recomputable) != 0U) {
        ++s.recomputable_tensors;
        add_saturated(s.recomputable_bytes, e.bytes, s.saturated);
        add_saturated(s.recompute_ns, e.duration_ns, s.saturated);
      }
      if ((e.hints & hint_lossy_ok) != 0U) {
        ++s.lossy_ok_tensors;
        add_saturated(s.lossy_ok_bytes, e.bytes, s.saturated);
      }
      if (st.live) {
        ++s.allocates_live;  // re-allocation of a live id: the new size replaces the old one
        sta.live -= st.bytes;
        --s.live_at_end;
      }
      make_live(st, e.bytes);
      break;
    }
    case event_kind::free: {
      auto it = state_->ids.find(e.tensor);
      if (it == state_->ids.end() || !it->second.live) {
        ++s.frees_not_live;
        break;
      }
      it->second.live = false;
      it->second.discarded = false;
      set_live(sta.live - it->second.bytes);
      --s.live_at_end;
      break;
    }
    case event_kind::access: {
      ++s.requests;
      switch (e.mode) {
        case access_kind::read: ++s.reads; break;
        case access_kind::read_write: ++s.read_writes; break;
        case access_kind::write_discard: ++s.write_discards; break;
      }
      auto [it, fresh] = state_->ids.try_emplace(e.tensor);
      auto& st = it->second;
      if (!st.accessed) {
        st.accessed = true;
        ++s.objects;
      }
      if (fresh && e.bytes != 0) { add_saturated(s.working_set_bytes, e.bytes, s.saturated); }
      if (!st.live) {
        if (e.bytes != 0) {
          make_live(st, e.bytes);  // a cache trace's object: admitted at its requested size
        } else {
          ++s.accesses_not_live;
        }
      }
      if (st.discarded) {  // a pool refuses the read; a write_discard gives it contents again
        if (e.mode != access_kind::write_discard) { ++s.reads_after_discard; }
        st.discarded = e.mode != access_kind::write_discard;
      }
      break;
    }
    case event_kind::prefetch: {
      auto it = state_->ids.find(e.tensor);
      if (it == state_->ids.end() || !it->second.live) { ++s.prefetches_not_live; }
      break;
    }
    case event_kind::compute: {
      add_saturated(s.compute_ns, e.duration_ns, s.saturated);
      state& st = *state_;
      if (st.last_compute == nullptr || st.last_compute_stream != e.stream) {  // a lookup only when the stream changes
        auto [it, fresh] = st.compute_by_stream.try_emplace(e.stream, 0);
        if (fresh) { ++s.compute_streams; }
        st.last_compute = &it->second;
        st.last_compute_stream = e.stream;
      }
      *st.last_compute += e.duration_ns;
      s.busiest_stream_compute_ns = std::max(s.busiest_stream_compute_ns, clamp(*st.last_compute, s.saturated));
      break;
    }
    case event_kind::phase: break;
    case event_kind::release: break;
    case event_kind::discard: {
      auto it = state_->ids.find(e.tensor);
      if (it == state_->ids.end() || !it->second.live) {
        ++s.discards_not_live;
        break;
      }
      it->second.discarded = true;
      break;
    }
  }
}

summary summarize(std::filesystem::path const& path, reader_options const& options)
{
  auto r = open_reader(path, options);
  summarizer acc;
  std::vector<event> batch(4096);
  for (;;) {
    std::size_t const n = r->next_batch(batch);
    for (std::size_t i = 0; i < n; ++i) { acc.add(batch[i]); }
    if (n < batch.size()) { break; }
  }
  return acc.result();
}

summary summarize(std::span<event const> events)
{
  summarizer acc;
  for (auto const& e : events) { acc.add(e); }
  return acc.result();
}

}  // namespace tierpool::trace

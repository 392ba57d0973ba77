// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// summary.cpp — owns trace::summarizer and summarize(): the figures `tierpool trace stat`
// prints (events per kind, requests, unique objects, working set, peak live bytes) and
// the well-formedness counters the generator tests assert to be zero.
//
// Invariant after every add():  summary_.live_bytes_at_end == SUM(bytes of live ids)
//                               summary_.peak_live_bytes   >= live_bytes_at_end
#include <tierpool/trace.hpp>

#include <algorithm>
#include <unordered_map>

namespace tierpool::trace {

struct summarizer::state {
  struct id_state {
    std::uint64_t bytes{0};  // size while live
    bool live{false};
    bool allocated{false};   // ever the subject of an allocate
    bool accessed{false};    // ever the subject of an access
  };
  std::unordered_map<std::uint64_t, id_state> ids;  // lookup only, never iterated
};

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
  auto make_live = [&s](state::id_state& st, std::uint64_t bytes) {
    st.live = true;
    st.bytes = bytes;
    ++s.live_at_end;
    s.live_bytes_at_end += bytes;
    s.peak_live_bytes = std::max(s.peak_live_bytes, s.live_bytes_at_end);
  };
  switch (e.kind) {
    case event_kind::allocate: {
      auto [it, fresh] = state_->ids.try_emplace(e.tensor);
      auto& st = it->second;
      if (fresh) { s.working_set_bytes += e.bytes; }
      if (!st.allocated) {
        st.allocated = true;
        ++s.tensors;
      }
      s.allocated_bytes += e.bytes;
      if (st.live) {
        ++s.allocates_live;  // re-allocation of a live id: the new size replaces the old one
        s.live_bytes_at_end -= st.bytes;
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
      s.live_bytes_at_end -= it->second.bytes;
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
      if (fresh && e.bytes != 0) { s.working_set_bytes += e.bytes; }
      if (!st.live) {
        if (e.bytes != 0) {
          make_live(st, e.bytes);  // a cache trace's object: admitted at its requested size
        } else {
          ++s.accesses_not_live;
        }
      }
      break;
    }
    case event_kind::prefetch: {
      auto it = state_->ids.find(e.tensor);
      if (it == state_->ids.end() || !it->second.live) { ++s.prefetches_not_live; }
      break;
    }
    case event_kind::compute: s.compute_ns += e.duration_ns; break;
    case event_kind::phase: break;
    case event_kind::release: break;
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

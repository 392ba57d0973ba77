// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// replay_report.cpp — owns the text forms of replay results: format_table() (people),
// to_json() and to_csv() (scripts). One field list (kFields) drives JSON and CSV so that
// both always carry the same keys in the same order.
#include <tierpool/detail/parse.hpp>
#include <tierpool/replay.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace tierpool::replay {

namespace {

void append_double(std::string& out, double v)
{
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  std::array<char, 64> buf{};
  auto const r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  out.append(buf.data(), r.ptr);
}

void append_u64(std::string& out, std::uint64_t v)
{
  std::array<char, 24> buf{};
  auto const r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  out.append(buf.data(), r.ptr);
}

void append_json_string(std::string& out, std::string_view s)
{
  out += '"';
  for (char c : s) {
    auto const u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20U) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(u));
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

// CSV: quote a field when it holds a separator, a quote or a line break.
void append_csv_string(std::string& out, std::string_view s)
{
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) {
    out += s;
    return;
  }
  out += '"';
  for (char c : s) {
    if (c == '"') { out += '"'; }
    out += c;
  }
  out += '"';
}

enum class kind : std::uint8_t { text, count, real, optional_real };

// Seconds a run spent in activity state `mask` (sim_activity::ns), NaN without a timeline.
double activity_seconds(replay_result const& r, std::size_t mask)
{
  return r.activity ? static_cast<double>(r.activity->ns[mask]) * 1e-9 : std::nan("");
}

struct field {
  char const* key;
  kind k;
  std::string (*text)(replay_result const&);
  std::uint64_t (*count)(replay_result const&);
  double (*real)(replay_result const&);
};

#define TP_TEXT(key, expr) field{key, kind::text, [](replay_result const& r) { return std::string(expr); }, nullptr, nullptr}
#define TP_COUNT(key, expr) field{key, kind::count, nullptr, [](replay_result const& r) -> std::uint64_t { return (expr); }, nullptr}
#define TP_REAL(key, expr) field{key, kind::real, nullptr, nullptr, [](replay_result const& r) -> double { return (expr); }}

field const kFields[] = {
  TP_TEXT("policy", r.policy),
  TP_TEXT("mode", to_string(r.mode)),
  TP_TEXT("prefetch", r.prefetch),
  TP_TEXT("capacity", r.capacity_label),
  TP_COUNT("capacity_bytes", r.capacity_bytes),
  TP_TEXT("capacity_unit", r.ignore_size ? "objects" : "bytes"),
  TP_COUNT("events", r.events),
  TP_COUNT("requests", r.requests),
  TP_COUNT("hits", r.hits),
  TP_COUNT("misses", r.misses),
  TP_COUNT("unserved", r.unserved),
  TP_REAL("hit_ratio", r.hit_ratio()),
  TP_REAL("miss_ratio", r.miss_ratio()),
  TP_REAL("byte_miss_ratio", r.byte_miss_ratio()),
  TP_COUNT("bytes_requested", r.bytes_requested),
  TP_COUNT("bytes_missed", r.bytes_missed),
  TP_COUNT("bytes_h2d", r.bytes_h2d),
  TP_COUNT("bytes_d2h", r.bytes_d2h),
  TP_COUNT("copies_h2d", r.copies_h2d),
  TP_COUNT("copies_d2h", r.copies_d2h),
  TP_COUNT("evictions", r.evictions),
  TP_COUNT("prefetches", r.prefetches),
  TP_COUNT("prefetches_late", r.prefetches_late),
  TP_REAL("prefetch_lateness_seconds", r.prefetch_lateness_seconds),
  TP_COUNT("prefetches_on_time", r.prefetches_on_time),
  TP_REAL("prefetch_lead_seconds", r.prefetch_lead_seconds),
  TP_COUNT("prefetches_wasted", r.prefetches_wasted),
  TP_COUNT("prefetch_wasted_bytes", r.prefetch_wasted_bytes),
  TP_COUNT("planner_relearns", r.planner_relearns),
  TP_COUNT("planner_periods_prefetching", r.planner_periods_prefetching),
  TP_COUNT("planner_periods_without", r.planner_periods_without),
  TP_COUNT("early_write_backs", r.early_write_backs),
  TP_COUNT("early_write_backs_wasted", r.early_write_backs_wasted),
  TP_COUNT("early_write_back_wasted_bytes", r.early_write_back_wasted_bytes),
  TP_COUNT("evicted_recompute", r.evicted_recompute),
  TP_COUNT("rebuilds", r.rebuilds),
  TP_COUNT("fragmented_evictions", r.fragmented_evictions),
  TP_COUNT("compactions", r.compactions),
  TP_COUNT("compacted_bytes", r.compacted_bytes),
  TP_COUNT("must_move_h2d", r.must_move_h2d),
  TP_COUNT("must_move_d2h", r.must_move_d2h),
  TP_REAL("compute_seconds", r.compute_seconds),
  TP_REAL("stall_seconds", r.stall_seconds),
  TP_REAL("makespan_seconds", r.makespan_seconds),
  TP_REAL("ideal_seconds", r.ideal_seconds),
  TP_REAL("makespan_vs_ideal", r.makespan_vs_ideal()),
  TP_REAL("phase_floor_seconds", r.phase_floor_seconds),
  field{"moved_vs_belady", kind::optional_real, nullptr, nullptr,
        [](replay_result const& r) -> double { return r.moved_vs_belady.value_or(std::nan("")); }},
  // With a recorded activity (run_options::record_activity): where the device time went.
  field{"idle_seconds", kind::optional_real, nullptr, nullptr,
        [](replay_result const& r) -> double { return activity_seconds(r, 0); }},
  field{"compute_only_seconds", kind::optional_real, nullptr, nullptr,
        [](replay_result const& r) -> double { return activity_seconds(r, 1); }},
  field{"overlapped_seconds", kind::optional_real, nullptr, nullptr,
        [](replay_result const& r) -> double { return activity_seconds(r, 3) + activity_seconds(r, 5) + activity_seconds(r, 7); }},
  field{"exposed_h2d_seconds", kind::optional_real, nullptr, nullptr,
        [](replay_result const& r) -> double { return activity_seconds(r, 2); }},
  field{"exposed_d2h_seconds", kind::optional_real, nullptr, nullptr,
        [](replay_result const& r) -> double { return activity_seconds(r, 4); }},
  field{"exposed_both_seconds", kind::optional_real, nullptr, nullptr,
        [](replay_result const& r) -> double { return activity_seconds(r, 6); }},
  TP_REAL("wall_seconds", r.wall_seconds),
  TP_REAL("requests_per_second", r.requests_per_second),
  TP_REAL("events_per_second", r.events_per_second),
};

#undef TP_TEXT
#undef TP_COUNT
#undef TP_REAL

std::string fixed(double v, int decimals)
{
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Seconds with 4 significant digits, in the unit that keeps them readable.
std::string seconds(double s)
{
  char buf[64];
  if (s == 0.0) { return "0"; }
  if (s < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.4g us", s * 1e6);
  } else if (s < 1.0) {
    std::snprintf(buf, sizeof buf, "%.4g ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g s", s);
  }
  return buf;
}

std::string amount(std::uint64_t v, bool objects)
{
  return objects ? std::to_string(v) : tierpool::detail::format_byte_size(v);
}

std::string rate(double per_s)
{
  char buf[64];
  if (per_s >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M", per_s * 1e-6);
  } else if (per_s >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f k", per_s * 1e-3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", per_s);
  }
  return buf;
}

}  // namespace

// The rows under their header, each column as wide as its widest cell: the first `left`
// columns left-aligned (names), the others right-aligned (figures); a column for which
// skip(c) is true is left out.
template <std::size_t N, class Skip>
std::string aligned_table(std::array<char const*, N> const& head, std::vector<std::array<std::string, N>> const& rows,
                          std::size_t left, Skip skip)
{
  std::array<std::size_t, N> width{};
  for (std::size_t c = 0; c < N; ++c) {
    width[c] = std::string_view(head[c]).size();
    for (auto const& row : rows) { width[c] = std::max(width[c], row[c].size()); }
  }
  std::string out;
  auto emit = [&](auto const& cells) {
    for (std::size_t c = 0; c < N; ++c) {
      if (skip(c)) { continue; }
      std::string_view const cell = cells[c];
      std::size_t const pad = width[c] - cell.size();
      if (c != 0) { out += "  "; }
      if (c >= left) { out.append(pad, ' '); }
      out += cell;
      if (c < left && c + 1 != N) { out.append(pad, ' '); }
    }
    out += '\n';
  };
  std::array<std::string_view, N> hv{};
  for (std::size_t c = 0; c < N; ++c) { hv[c] = head[c]; }
  emit(hv);
  for (auto const& row : rows) { emit(row); }
  return out;
}

std::string format_table(std::span<replay_result const> results)
{
  // A mode column only when the rows are of more than one mode (`--mode pool,uvm`).
  bool const show_mode = std::any_of(results.begin(), results.end(),
                                     [&](replay_result const& r) { return r.mode != results.front().mode; });
  // A prefetch column only when the rows are of more than one predictor (`--prefetch none,plan`).
  bool const show_prefetch = std::any_of(results.begin(), results.end(),
                                         [&](replay_result const& r) { return r.prefetch != results.front().prefetch; });
  // A phase floor column only when some row has one (a trace with phase markers).
  bool const show_floor = std::any_of(results.begin(), results.end(),
                                      [](replay_result const& r) { return r.phase_floor_seconds > 0.0; });
  static constexpr std::array<char const*, 18> head = {"policy",    "mode", "prefetch", "capacity", "requests", "hit",
                                                       "miss",      "unserved", "byte miss", "h2d",
                                                       "d2h",       "stall",    "makespan", "ideal",      "x ideal",
                                                       "phase floor", "vs belady", "req/s"};
  std::vector<std::array<std::string, head.size()>> rows;
  rows.reserve(results.size());
  for (replay_result const& r : results) {
    std::string cap = r.capacity_label;
    std::string const resolved = amount(r.capacity_bytes, r.ignore_size);
    if (r.ignore_size) {
      cap += " (" + resolved + " objects)";
    } else if (resolved != cap) {
      cap += " (" + resolved + ")";
    }
    rows.push_back({r.policy, std::string(to_string(r.mode)), r.prefetch, cap, std::to_string(r.requests), fixed(r.hit_ratio(), 4), fixed(r.miss_ratio(), 4),
                    std::to_string(r.unserved), fixed(r.byte_miss_ratio(), 4), amount(r.bytes_h2d, r.ignore_size),
                    amount(r.bytes_d2h, r.ignore_size), seconds(r.stall_seconds), seconds(r.makespan_seconds),
                    seconds(r.ideal_seconds), fixed(r.makespan_vs_ideal(), 2),
                    r.phase_floor_seconds > 0.0 ? seconds(r.phase_floor_seconds) : "-",
                    r.moved_vs_belady ? fixed(*r.moved_vs_belady, 3) : "-", rate(r.requests_per_second)});
  }
  return aligned_table(head, rows, 4, [&](std::size_t c) {
    return (c == 1 && !show_mode) || (c == 2 && !show_prefetch) || (c == 15 && !show_floor);
  });
}

std::string to_json(std::span<replay_result const> results)
{
  std::string out = "[";
  bool first_row = true;
  for (replay_result const& r : results) {
    out += first_row ? "\n  {" : ",\n  {";
    first_row = false;
    bool first = true;
    for (field const& f : kFields) {
      if (!first) { out += ','; }
      first = false;
      append_json_string(out, f.key);
      out += ':';
      switch (f.k) {
        case kind::text: append_json_string(out, f.text(r)); break;
        case kind::count: append_u64(out, f.count(r)); break;
        case kind::real:
        case kind::optional_real: append_double(out, f.real(r)); break;
      }
    }
    if (!r.phase_activities.empty()) {  // JSON only (a CSV row is flat)
      out += ",\"phases\":[";
      for (std::size_t k = 0; k < r.phase_activities.size(); ++k) {
        sim_activity const& a = r.phase_activities[k].activity;
        auto sec = [](tick ns) { return static_cast<double>(ns) * 1e-9; };
        out += k == 0 ? "{\"name\":" : ",{\"name\":";
        append_json_string(out, r.phase_activities[k].name);
        out += ",\"idle_seconds\":";
        append_double(out, sec(a.ns[0]));
        out += ",\"compute_only_seconds\":";
        append_double(out, sec(a.ns[1]));
        out += ",\"overlapped_seconds\":";
        append_double(out, sec(a.overlapped_ns()));
        out += ",\"exposed_h2d_seconds\":";
        append_double(out, sec(a.ns[2]));
        out += ",\"exposed_d2h_seconds\":";
        append_double(out, sec(a.ns[4]));
        out += ",\"exposed_both_seconds\":";
        append_double(out, sec(a.ns[6]));
        out += '}';
      }
      out += ']';
    }
    if (!r.iteration_seconds.empty()) {  // JSON only, as the phases
      out += ",\"iteration_seconds\":[";
      for (std::size_t k = 0; k < r.iteration_seconds.size(); ++k) {
        if (k != 0) { out += ','; }
        append_double(out, r.iteration_seconds[k]);
      }
      out += "],\"steady_seconds\":";
      append_double(out, r.steady_seconds());
    }
    out += '}';
  }
  out += results.empty() ? "]\n" : "\n]\n";
  return out;
}

std::string to_chrome_trace(std::span<replay_result const> results)
{
  // Trace-event format: "X" (complete) events with microsecond ts/dur, "M" metadata events
  // naming processes and threads. Each lane holds spans that do not overlap (a stream runs
  // one kernel at a time, a link carries one copy at a time), as the viewers expect.
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  bool first = true;
  auto begin_event = [&] {
    out += first ? "\n" : ",\n";
    first = false;
  };
  auto us = [](tick ns) { return static_cast<double>(ns) * 1e-3; };
  constexpr std::uint64_t kLinkLane = 1000;  // lanes kLinkLane + link; trace streams 1..n
  std::uint64_t pid = 0;
  for (replay_result const& r : results) {
    if (!r.timeline) { continue; }
    ++pid;
    begin_event();
    out += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":";
    append_u64(out, pid);
    out += ",\"args\":{\"name\":";
    append_json_string(out, r.policy + " \u00b7 " + r.prefetch + " \u00b7 " + r.capacity_label);
    out += "}}";
    // Lanes: trace stream i is tid i + 1; a kernel on another stream gets a lane of its own.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> lane_of;  // stream handle value -> tid
    for (std::size_t i = 0; i < r.timeline_streams.size(); ++i) { lane_of.emplace_back(r.timeline_streams[i], i + 1); }
    auto lane = [&](std::uint64_t stream) {
      for (auto const& [s, tid] : lane_of) {
        if (s == stream) { return tid; }
      }
      lane_of.emplace_back(stream, lane_of.size() + 1);
      return lane_of.back().second;
    };
    bool link_used[sim_link_count] = {};
    for (sim_span const& sp : *r.timeline) {
      begin_event();
      out += "{\"ph\":\"X\",\"pid\":";
      append_u64(out, pid);
      out += ",\"tid\":";
      if (sp.kind == sim_span_kind::compute) {
        append_u64(out, lane(sp.stream));
        out += ",\"name\":\"kernel\"";
      } else {
        auto const l = static_cast<std::size_t>(sp.link);
        link_used[l] = true;
        append_u64(out, kLinkLane + l);
        out += ",\"name\":";
        append_json_string(out, std::string(to_string(sp.link)) + " " + tierpool::detail::format_byte_size(sp.bytes));
      }
      out += ",\"ts\":";
      append_double(out, us(sp.start));
      out += ",\"dur\":";
      append_double(out, us(sp.end - sp.start));
      if (sp.kind == sim_span_kind::copy) {
        out += ",\"args\":{\"bytes\":";
        append_u64(out, sp.bytes);
        out += '}';
      }
      out += '}';
    }
    for (replay_result::phase_time const& ph : r.phases) {  // a marker across the process's lanes
      begin_event();
      out += "{\"ph\":\"i\",\"s\":\"p\",\"pid\":";
      append_u64(out, pid);
      out += ",\"tid\":1,\"name\":";
      append_json_string(out, ph.name);
      out += ",\"ts\":";
      append_double(out, us(ph.at));
      out += '}';
    }
    auto thread_name = [&](std::uint64_t tid, std::string const& name) {
      begin_event();
      out += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":";
      append_u64(out, pid);
      out += ",\"tid\":";
      append_u64(out, tid);
      out += ",\"args\":{\"name\":";
      append_json_string(out, name);
      out += "}}";
    };
    for (auto const& [s, tid] : lane_of) {
      thread_name(tid, tid <= r.timeline_streams.size() ? "stream " + std::to_string(tid - 1) : "other stream");
    }
    for (std::size_t l = 0; l < sim_link_count; ++l) {
      if (link_used[l]) { thread_name(kLinkLane + l, std::string(to_string(static_cast<sim_link>(l))) + " link"); }
    }
  }
  out += "\n]}\n";
  return out;
}

std::string format_activity(std::span<replay_result const> results)
{
  static constexpr std::array<char const*, 9> head = {"policy", "prefetch", "capacity", "kernels only",
                                                      "kernels + copies", "h2d only", "d2h only", "h2d + d2h",
                                                      "idle"};
  std::vector<std::array<std::string, head.size()>> rows;
  for (replay_result const& r : results) {
    if (!r.activity) { continue; }
    sim_activity const& a = *r.activity;
    double const total = static_cast<double>(std::max<tick>(1, a.total_ns()));
    auto cell = [&](tick ns) {
      return seconds(static_cast<double>(ns) * 1e-9) + " (" + fixed(100.0 * static_cast<double>(ns) / total, 0) + " %)";
    };
    rows.push_back({r.policy, r.prefetch, r.capacity_label, cell(a.ns[1]), cell(a.overlapped_ns()), cell(a.ns[2]),
                    cell(a.ns[4]), cell(a.ns[6]), cell(a.ns[0])});
    for (auto const& [name, w] : r.phase_activities) {
      rows.push_back({"  phase " + name, "", "", cell(w.ns[1]), cell(w.overlapped_ns()), cell(w.ns[2]), cell(w.ns[4]),
                      cell(w.ns[6]), cell(w.ns[0])});
    }
  }
  if (rows.empty()) { return {}; }
  std::string out = aligned_table(head, rows, 3, [](std::size_t) { return false; });
  // Device time per iteration (replay_result::iteration_seconds), and from the second on.
  bool any = false;
  for (replay_result const& r : results) {
    if (r.iteration_seconds.empty()) { continue; }
    if (!any) { out += "device time per iteration (from the trace's first recurring phase marker):\n"; }
    any = true;
    out += r.policy + " " + r.prefetch + " " + r.capacity_label + ":";
    for (double const t : r.iteration_seconds) { out += " " + seconds(t); }
    if (r.iteration_seconds.size() > 1) { out += "; from the second: " + seconds(r.steady_seconds()); }
    out += '\n';
  }
  return out;
}

std::string to_csv(std::span<replay_result const> results)
{
  std::string out;
  bool first = true;
  for (field const& f : kFields) {
    if (!first) { out += ','; }
    first = false;
    out += f.key;
  }
  out += '\n';
  for (replay_result const& r : results) {
    first = true;
    for (field const& f : kFields) {
      if (!first) { out += ','; }
      first = false;
      switch (f.k) {
        case kind::text: append_csv_string(out, f.text(r)); break;
        case kind::count: append_u64(out, f.count(r)); break;
        case kind::real: append_double(out, f.real(r)); break;
        case kind::optional_real: {
          double const v = f.real(r);
          if (std::isfinite(v)) { append_double(out, v); }  // empty cell when absent
          break;
        }
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace tierpool::replay

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// fuzz_harness.hpp — the property every trace reader must have, shared by the libFuzzer
// targets (fuzz/fuzz_*.cpp) and the regression test that replays committed inputs
// (tests/trace/trace_regression_tests.cpp):
//
//   1. Any input either reads to a clean end or throws tierpool::trace_error; nothing
//      else escapes and nothing crashes (ASan / UBSan watch the fuzz builds).
//   2. Whatever reads cleanly survives a trip through the text encoding unchanged.
#pragma once

#include <tierpool/trace.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tierpool::fuzz {

/// Events read per input at most: keeps one input's run time bounded.
inline constexpr std::size_t kMaxEvents = 1U << 20U;
/// Longest name re-encoded in the round trip (escaping may grow a name fourfold).
inline constexpr std::size_t kMaxRoundTripName = 1U << 20U;

/// csv options for a fuzz input: its first byte picks them, the rest is the file.
inline trace::csv_options csv_options_from(std::string_view& data)
{
  trace::csv_options o;
  if (data.empty()) { return o; }
  auto const b = static_cast<unsigned char>(data.front());
  data.remove_prefix(1);
  static constexpr char delimiters[] = {',', ';', '\t', '|'};
  o.delimiter = delimiters[b & 3U];
  o.header = (b & 4U) != 0U;
  o.op_column = (b & 8U) != 0U ? 3 : -1;
  o.time_column = (b & 16U) != 0U ? -1 : 0;
  o.size_column = (b & 32U) != 0U ? -1 : 2;
  o.time_unit_ns = (b & 64U) != 0U ? 1 : 1'000'000'000;
  return o;
}

/**
 * Check the reader properties on one input.
 * @throws std::logic_error when a property fails (a bug: the fuzzer reports it as a crash)
 */
inline void check_input(trace::format f, std::string_view data)
{
  trace::reader_options o;
  o.fmt = f;
  if (f == trace::format::csv) { o.csv = csv_options_from(data); }
  std::vector<trace::event> events;
  try {
    auto r = trace::open_memory_reader(data, o, "fuzz");
    trace::event e;
    while (events.size() < kMaxEvents && r->next(e)) { events.push_back(e); }
  } catch (trace_error const&) {
    return;  // malformed input, reported as it must be
  }
  (void)trace::summarize(events);

  std::string text = "# tierpool-trace v1\n";
  for (auto const& e : events) {
    if (e.name.size() > kMaxRoundTripName) { return; }
    text += trace::format_text(e);
    text += '\n';
  }
  std::vector<trace::event> back;
  try {
    auto r = trace::open_memory_reader(text, {}, "round trip");
    trace::event e;
    while (r->next(e)) { back.push_back(e); }
  } catch (trace_error const& err) {
    throw std::logic_error(std::string("text round trip does not parse: ") + err.what());
  }
  if (back != events) { throw std::logic_error("text round trip changed the events"); }
}

}  // namespace tierpool::fuzz

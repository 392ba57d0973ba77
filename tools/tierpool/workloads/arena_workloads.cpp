// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// arena_workloads.cpp — the arena workloads of docs/chapters/benchmarks.md: trace generation
// (rand50/85, dnn-static/dyn/tight), the alloc-trace text format (write and parse), and
// the replay driver that measures an arena on a trace. Entry points:
// generate_arena_workload, parse_alloc_trace, measure_arena.
#include "workloads/arena_workloads.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <system_error>
#include <unordered_map>
#include <utility>

namespace tierpool::workloads {

namespace {

constexpr std::uint64_t kKiB = std::uint64_t{1} << 10U;
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20U;
constexpr std::uint64_t kGiB = std::uint64_t{1} << 30U;
constexpr std::uint64_t kArenaBytes = 16 * kGiB;    // rand* and dnn-static/dyn arena
constexpr std::size_t kRandOps = 1'000'000;         // rand*: operations, initial fill included
constexpr unsigned kDnnIterations = 1'900;          // dnn-*: iterations (~988k operations)
constexpr std::uint64_t kDnnModelSeed = 12'345;     // the DNN "model" is always the same

constexpr std::uint64_t ceil_to(std::uint64_t v, std::uint64_t unit) noexcept { return (v + unit - 1) / unit * unit; }

// Portable conversions of the generator's output (std::*_distribution differ between
// standard libraries; these do not).
double uniform01(std::mt19937_64& rng) noexcept
{
  return static_cast<double>(rng() >> 11U) * 0x1.0p-53;
}

std::size_t uniform_index(std::mt19937_64& rng, std::size_t n) noexcept
{
  auto const i = static_cast<std::size_t>(uniform01(rng) * static_cast<double>(n));
  return std::min(i, n - 1);
}

// Records operations while tracking slots and live bytes as if every allocation succeeds.
class trace_builder {
 public:
  explicit trace_builder(alloc_trace& t) : t_(t) {}

  void alloc(std::uint32_t slot, std::uint64_t bytes)
  {
    if (slot >= bytes_.size()) { bytes_.resize(slot + std::size_t{1}, 0); }
    bytes_[slot] = bytes;
    live_ += bytes;
    t_.peak_live = std::max(t_.peak_live, live_);
    t_.slot_count = std::max(t_.slot_count, slot + 1);
    t_.ops.push_back(alloc_op{bytes, slot, true});
  }
  void free(std::uint32_t slot)
  {
    live_ -= bytes_[slot];
    bytes_[slot] = 0;
    t_.ops.push_back(alloc_op{0, slot, false});
  }
  [[nodiscard]] std::uint64_t live() const noexcept { return live_; }

 private:
  alloc_trace& t_;
  std::vector<std::uint64_t> bytes_;
  std::uint64_t live_{0};
};

// rand50 / rand85: log-uniform sizes 256 B .. 64 MiB; allocate while the next size fits
// under fraction × arena, otherwise free a uniformly chosen live allocation.
alloc_trace generate_rand(unsigned percent, std::uint64_t seed, std::size_t ops)
{
  alloc_trace t;
  t.capacity = kArenaBytes;
  t.alignment = 256;
  t.ops.reserve(ops);
  trace_builder b(t);
  std::mt19937_64 rng(seed);
  double const lo = std::log(256.0);
  double const hi = std::log(static_cast<double>(64 * kMiB));
  auto draw = [&] { return ceil_to(static_cast<std::uint64_t>(std::ceil(std::exp(lo + (hi - lo) * uniform01(rng)))), 256); };
  std::uint64_t const limit = kArenaBytes * percent / 100;  // live + next <= limit (integers)
  std::vector<std::uint32_t> live;       // live slots, any order
  std::vector<std::uint32_t> spare;      // freed slot numbers, reused LIFO
  std::uint32_t next_slot = 0;
  std::uint64_t next = draw();
  while (t.ops.size() < ops) {
    if (b.live() + next <= limit) {
      std::uint32_t slot = next_slot;
      if (!spare.empty()) {
        slot = spare.back();
        spare.pop_back();
      } else {
        ++next_slot;
      }
      b.alloc(slot, next);
      live.push_back(slot);
      next = draw();
    } else {
      std::size_t const i = uniform_index(rng, live.size());
      std::uint32_t const slot = live[i];
      live[i] = live.back();
      live.pop_back();
      b.free(slot);
      spare.push_back(slot);
    }
  }
  return t;
}

// The DNN shape distribution of the arena workloads (docs/chapters/benchmarks.md).
constexpr std::array<std::uint64_t, 13> kDnnShapes{
  1 * kKiB, 4 * kKiB, 16 * kKiB, 64 * kKiB, 256 * kKiB, 1 * kMiB, 4 * kMiB,
  8 * kMiB, 16 * kMiB, 32 * kMiB, 64 * kMiB, 128 * kMiB, 256 * kMiB};
constexpr std::array<unsigned, 13> kDnnWeights{8, 8, 6, 6, 6, 6, 5, 5, 5, 4, 3, 2, 1};

std::uint64_t draw_shape(std::mt19937_64& rng)
{
  unsigned total = 0;
  for (unsigned w : kDnnWeights) { total += w; }
  auto r = static_cast<unsigned>(uniform_index(rng, total));
  for (std::size_t i = 0; i < kDnnShapes.size(); ++i) {
    if (r < kDnnWeights[i]) { return kDnnShapes[i]; }
    r -= kDnnWeights[i];
  }
  return kDnnShapes.back();
}

// dnn-static / dnn-dyn. The model (seed 12345) draws, in order: 64 weight shapes, 200
// activation shapes, the 60 workspace layers (first 60 of a Fisher-Yates shuffle of
// 0..199), and their workspace shapes. The run (seed) draws, per iteration, the scale
// (dnn-dyn only) and, every 50 iterations, 4 distinct weights (partial Fisher-Yates)
// and their new shapes. Slots: weights 0..63, activations 64..263, workspace 264.
alloc_trace generate_dnn(bool dynamic, std::uint64_t seed)
{
  constexpr std::uint32_t weights = 64;
  constexpr std::uint32_t layers = 200;
  constexpr std::uint32_t workspace_layers = layers * 30 / 100;
  constexpr std::uint32_t act_slot = weights;
  constexpr std::uint32_t ws_slot = weights + layers;

  std::mt19937_64 model(kDnnModelSeed);
  std::vector<std::uint64_t> weight_bytes(weights);
  for (auto& w : weight_bytes) { w = draw_shape(model); }
  std::vector<std::uint64_t> act(layers);
  for (auto& a : act) { a = draw_shape(model); }
  std::vector<std::uint32_t> order(layers);
  for (std::uint32_t i = 0; i < layers; ++i) { order[i] = i; }
  for (std::uint32_t i = 0; i < workspace_layers; ++i) {
    std::size_t const j = i + uniform_index(model, layers - i);
    std::swap(order[i], order[j]);
  }
  std::vector<std::uint64_t> ws(layers, 0);  // 0: no workspace
  for (std::uint32_t i = 0; i < workspace_layers; ++i) { ws[order[i]] = draw_shape(model); }

  alloc_trace t;
  t.capacity = kArenaBytes;
  t.alignment = 256;
  t.ops.reserve(weights + kDnnIterations * (2 * layers + 2 * workspace_layers) + 400);
  trace_builder b(t);
  std::mt19937_64 rng(seed);
  for (std::uint32_t w = 0; w < weights; ++w) { b.alloc(w, weight_bytes[w]); }
  std::vector<std::uint32_t> widx(weights);
  for (unsigned it = 0; it < kDnnIterations; ++it) {
    std::uint64_t quarters = 4;  // scale s = quarters / 4
    if (dynamic) { quarters = 1 + uniform_index(rng, 4); }
    auto scaled = [&](std::uint64_t bytes) { return ceil_to((bytes * quarters + 3) / 4, 256); };
    for (std::uint32_t i = 0; i < layers; ++i) {
      if (ws[i] != 0) { b.alloc(ws_slot, scaled(ws[i])); }
      b.alloc(act_slot + i, scaled(act[i]));
      if (ws[i] != 0) { b.free(ws_slot); }
    }
    for (std::uint32_t i = layers; i-- > 0;) { b.free(act_slot + i); }
    if ((it + 1) % 50 == 0) {
      for (std::uint32_t i = 0; i < weights; ++i) { widx[i] = i; }
      for (std::uint32_t i = 0; i < 4; ++i) {
        std::size_t const j = i + uniform_index(rng, weights - i);
        std::swap(widx[i], widx[j]);
      }
      for (std::uint32_t i = 0; i < 4; ++i) { b.free(widx[i]); }
      for (std::uint32_t i = 0; i < 4; ++i) { b.alloc(widx[i], draw_shape(rng)); }
    }
  }
  return t;
}

}  // namespace

std::string_view to_string(arena_workload w) noexcept
{
  switch (w) {
    case arena_workload::rand50: return "rand50";
    case arena_workload::rand85: return "rand85";
    case arena_workload::dnn_static: return "dnn-static";
    case arena_workload::dnn_dyn: return "dnn-dyn";
    case arena_workload::dnn_tight: return "dnn-tight";
  }
  return "unknown";
}

std::optional<arena_workload> parse_arena_workload(std::string_view name) noexcept
{
  for (auto w : {arena_workload::rand50, arena_workload::rand85, arena_workload::dnn_static,
                 arena_workload::dnn_dyn, arena_workload::dnn_tight}) {
    if (to_string(w) == name) { return w; }
  }
  return std::nullopt;
}

alloc_trace generate_arena_workload(arena_workload w, std::uint64_t seed, std::size_t max_ops)
{
  alloc_trace t;
  switch (w) {
    case arena_workload::rand50: t = generate_rand(50, seed, max_ops != 0 ? max_ops : kRandOps); break;
    case arena_workload::rand85: t = generate_rand(85, seed, max_ops != 0 ? max_ops : kRandOps); break;
    case arena_workload::dnn_static: t = generate_dnn(false, seed); break;
    case arena_workload::dnn_dyn: t = generate_dnn(true, seed); break;
    case arena_workload::dnn_tight:
      t = generate_dnn(true, seed);
      // ceil_1MiB(1.02 × peak_live), in integers: ceil(peak × 102 / 100), then to MiB.
      t.capacity = ceil_to((t.peak_live * 102 + 99) / 100, kMiB);
      break;
  }
  if (max_ops != 0 && t.ops.size() > max_ops) {
    t.ops.resize(max_ops);
    // Recompute slot_count and peak_live for the shortened trace (capacity stays).
    alloc_trace s;
    s.capacity = t.capacity;
    s.alignment = t.alignment;
    s.ops.reserve(max_ops);
    trace_builder b(s);
    for (auto const& op : t.ops) {
      if (op.is_alloc) { b.alloc(op.slot, op.bytes); } else { b.free(op.slot); }
    }
    return s;
  }
  return t;
}

// ---- trace text format ---------------------------------------------------------------

void write_alloc_trace(std::string const& path, alloc_trace const& t)
{
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) { throw std::runtime_error("cannot open '" + path + "' for writing"); }
  std::string buf;
  buf.reserve(1U << 20U);
  buf += "# tierpool-alloc-trace v1\ncapacity " + std::to_string(t.capacity) + "\nalignment " +
         std::to_string(t.alignment) + "\n";
  char num[24];
  auto put = [&](std::uint64_t v) {
    auto const r = std::to_chars(num, num + sizeof num, v);
    buf.append(num, r.ptr);
  };
  for (auto const& op : t.ops) {
    buf += op.is_alloc ? "a " : "f ";
    put(t.slot_names.empty() ? op.slot : t.slot_names[op.slot]);
    if (op.is_alloc) {
      buf += ' ';
      put(op.bytes);
    }
    buf += '\n';
    if (buf.size() > (1U << 20U) - 64) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  out.flush();
  if (!out) { throw std::runtime_error("error writing '" + path + "'"); }
}

namespace {

std::string_view trim(std::string_view s) noexcept
{
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) { s.remove_prefix(1); }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) { s.remove_suffix(1); }
  return s;
}

// Splits a line into at most 4 whitespace-separated fields; returns the count (4 = too many).
std::size_t split(std::string_view s, std::array<std::string_view, 4>& f) noexcept
{
  std::size_t n = 0;
  while (!s.empty()) {
    std::size_t const start = s.find_first_not_of(" \t");
    if (start == std::string_view::npos) { break; }
    s.remove_prefix(start);
    std::size_t const end = std::min(s.find_first_of(" \t"), s.size());
    if (n == f.size()) { return n; }
    f[n++] = s.substr(0, end);
    s.remove_prefix(end);
  }
  return n;
}

}  // namespace

alloc_trace parse_alloc_trace(std::string_view text, std::string_view name)
{
  std::size_t line_no = 0;
  auto fail = [&](std::string const& what) -> void {
    throw trace_format_error("alloc trace '" + std::string(name) + "' line " + std::to_string(line_no) + ": " + what,
                             line_no);
  };
  auto number = [&](std::string_view field, char const* what) -> std::uint64_t {
    std::uint64_t v = 0;
    auto const r = std::from_chars(field.data(), field.data() + field.size(), v);
    if (r.ec != std::errc{} || r.ptr != field.data() + field.size()) {
      fail("expected " + std::string(what) + " (an unsigned integer), got '" + std::string(field) + "'");
    }
    return v;
  };

  alloc_trace t;
  t.alignment = 0;
  // Live state per slot number: a flat vector for numbers up to a bound that grows with the
  // input (a 73-byte trace naming slot 67108863 took 2.1 GB), a hash map beyond it.
  std::vector<std::uint8_t> live;
  std::unordered_map<std::uint32_t, std::uint8_t> live_sparse;
  std::uint64_t allocs = 0;
  std::uint64_t live_bytes = 0;
  std::uint32_t max_slot = 0;
  bool have_capacity = false;
  bool have_alignment = false;
  std::array<std::string_view, 4> f;
  while (!text.empty()) {
    std::size_t const eol = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(std::min(eol + 1, text.size()));
    ++line_no;
    if (line_no == 1) {
      if (trim(line) != "# tierpool-alloc-trace v1") { fail("expected the header '# tierpool-alloc-trace v1'"); }
      continue;
    }
    line = trim(line.substr(0, std::min(line.find('#'), line.size())));
    if (line.empty()) { continue; }
    std::size_t const n = split(line, f);
    if (f[0] == "a" || f[0] == "f") {
      if (!have_capacity || !have_alignment) { fail("operation before 'capacity' and 'alignment'"); }
      bool const is_alloc = f[0] == "a";
      if (n != (is_alloc ? 3U : 2U)) {
        fail(is_alloc ? "expected 'a SLOT BYTES'" : "expected 'f SLOT'");
      }
      std::uint64_t const slot = number(f[1], "a slot");
      if (slot > std::numeric_limits<std::uint32_t>::max()) {
        fail("slot " + std::to_string(slot) + " is too large (limit 2^32 - 1)");
      }
      auto const s = static_cast<std::uint32_t>(slot);
      std::uint8_t* state = nullptr;
      if (s < live.size()) {
        state = &live[s];
      } else if (s <= 2 * t.ops.size() + 1024) {
        live.resize(s + std::size_t{1}, 0);
        state = &live[s];
      } else {
        state = &live_sparse[s];
      }
      if (is_alloc) {
        std::uint64_t const bytes = number(f[2], "a byte count");
        if (bytes == 0) { fail("allocation of 0 bytes"); }
        if (*state != 0) { fail("slot " + std::to_string(s) + " is allocated while still live"); }
        if (bytes > std::numeric_limits<std::uint64_t>::max() - live_bytes) {
          fail("the live bytes pass 2^64 - 1");
        }
        *state = 1;
        live_bytes += bytes;
        ++allocs;
        max_slot = std::max(max_slot, s);
        t.ops.push_back(alloc_op{bytes, s, true});
      } else {
        if (*state == 0) { fail("slot " + std::to_string(s) + " is freed but not live"); }
        *state = 0;
        t.ops.push_back(alloc_op{0, s, false});
      }
    } else if (f[0] == "capacity" || f[0] == "alignment") {
      if (n != 2) { fail("expected '" + std::string(f[0]) + " N'"); }
      if (!t.ops.empty()) { fail("'" + std::string(f[0]) + "' after the first operation"); }
      std::uint64_t const v = number(f[1], "a byte count");
      if (f[0] == "capacity") {
        if (v == 0) { fail("capacity must be > 0"); }
        t.capacity = v;
        have_capacity = true;
      } else {
        if (v == 0 || (v & (v - 1)) != 0) { fail("alignment must be a power of two"); }
        t.alignment = v;
        have_alignment = true;
      }
    } else {
      fail("unknown directive '" + std::string(f[0]) + "' (expected a, f, capacity or alignment)");
    }
  }
  if (line_no == 0) { fail("empty file (expected the header '# tierpool-alloc-trace v1')"); }
  if (!have_capacity || !have_alignment) {
    line_no = 0;
    fail("missing 'capacity' or 'alignment'");
  }
  if (!t.ops.empty() && max_slot >= 2 * allocs) {
    // Sparse numbers: renumber in increasing order (every freed slot was allocated first).
    std::vector<std::uint32_t> names;
    names.reserve(allocs);
    for (alloc_op const& op : t.ops) {
      if (op.is_alloc) { names.push_back(op.slot); }
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    for (alloc_op& op : t.ops) {
      op.slot = static_cast<std::uint32_t>(std::lower_bound(names.begin(), names.end(), op.slot) - names.begin());
    }
    t.slot_names = std::move(names);
  }
  // Slot count and peak live bytes of the (renumbered) operations.
  std::vector<alloc_op> ops = std::move(t.ops);
  t.ops.clear();
  t.ops.reserve(ops.size());
  trace_builder b(t);
  for (alloc_op const& op : ops) {
    if (op.is_alloc) { b.alloc(op.slot, op.bytes); } else { b.free(op.slot); }
  }
  return t;
}

alloc_trace read_alloc_trace(std::string const& path)
{
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    // A directory opens, and seeking to its "end" gave a size of 2^63 - 1: std::bad_alloc.
    throw std::runtime_error("cannot read alloc trace '" + path + "': it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) { throw std::runtime_error("cannot open alloc trace '" + path + "'"); }
  // Read to the end in blocks (no seek: a pipe has no size), so memory follows the content.
  std::string text;
  std::array<char, 1U << 16U> block{};
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    text.append(block.data(), static_cast<std::size_t>(in.gcount()));
    if (in.eof()) { break; }
  }
  if (in.bad()) { throw std::runtime_error("error reading alloc trace '" + path + "'"); }
  return parse_alloc_trace(text, path);
}

// ---- replay --------------------------------------------------------------------------

namespace {

using clock_type = std::chrono::steady_clock;

// One replay. Slots hold the allocation, or size 0 when empty (never a live size).
struct replayer {
  alloc_trace const& t;
  arena a;
  std::vector<arena::allocation> slots;

  replayer(alloc_trace const& tr, arena_options const& o)
    : t(tr), a(tr.capacity, o), slots(tr.slot_count)
  {
  }

  // The timed loop: nothing but the operations.
  std::uint64_t run_plain()
  {
    std::uint64_t failures = 0;
    std::uint64_t const align = t.alignment;
    arena::allocation* const s = slots.data();
    for (alloc_op const& op : t.ops) {
      if (op.is_alloc) {
        if (auto r = a.allocate(op.bytes, align)) {
          s[op.slot] = *r;
        } else {
          ++failures;
        }
      } else if (s[op.slot].size != 0) {
        a.deallocate(s[op.slot]);
        s[op.slot].size = 0;
      }
    }
    return failures;
  }
};

}  // namespace

replay_outcome replay_arena(alloc_trace const& t, measure_options const& opts)
{
  replayer r(t, opts.arena);
  replay_outcome o;
  std::uint64_t live = 0;
  double frag_sum = 0.0;
  std::uint64_t i = 0;
  for (alloc_op const& op : t.ops) {
    if (op.is_alloc) {
      ++o.allocations;
      if (auto x = r.a.allocate(op.bytes, t.alignment)) {
        r.slots[op.slot] = *x;
        live += x->size;
        o.peak_live = std::max(o.peak_live, live);
        o.highest_offset = std::max(o.highest_offset, x->offset + x->size);
      } else {
        ++o.failures;
      }
    } else if (r.slots[op.slot].size != 0) {
      live -= r.slots[op.slot].size;
      r.a.deallocate(r.slots[op.slot]);
      r.slots[op.slot].size = 0;
    }
    if (opts.frag_interval != 0 && ++i % opts.frag_interval == 0) {
      double const f = r.a.external_fragmentation();
      frag_sum += f;
      o.frag_max = std::max(o.frag_max, f);
      ++o.frag_samples;
    }
  }
  o.operations = t.ops.size();
  o.frag_mean = o.frag_samples != 0 ? frag_sum / static_cast<double>(o.frag_samples) : 0.0;
  o.valid_at_end = r.a.validate();
  return o;
}

arena_figures measure_arena(alloc_trace const& t, measure_options const& opts)
{
  arena_figures fig;
  fig.outcome = replay_arena(t, opts);
  double const pairs = std::max(1.0, static_cast<double>(t.ops.size()) / 2.0);
  unsigned const runs = std::max(1U, opts.runs);
  for (unsigned run = 0; run < runs; ++run) {
    replayer r(t, opts.arena);  // construction (and the slot table) outside the timed region
    auto const start = clock_type::now();
    std::uint64_t const failures = r.run_plain();
    auto const stop = clock_type::now();
    fig.failures_consistent = fig.failures_consistent && failures == fig.outcome.failures;
    fig.ns_per_pair_runs.push_back(static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start).count()) / pairs);
  }
  std::vector<double> sorted = fig.ns_per_pair_runs;
  std::sort(sorted.begin(), sorted.end());
  std::size_t const n = sorted.size();
  fig.ns_per_pair_median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
  fig.ns_per_pair_min = sorted.front();
  fig.ns_per_pair_max = sorted.back();

  if (opts.per_op_timing && !t.ops.empty()) {
    replayer r(t, opts.arena);
    std::vector<std::uint32_t> ns(t.ops.size());
    std::size_t k = 0;
    for (alloc_op const& op : t.ops) {
      auto const start = clock_type::now();
      if (op.is_alloc) {
        if (auto x = r.a.allocate(op.bytes, t.alignment)) { r.slots[op.slot] = *x; }
      } else if (r.slots[op.slot].size != 0) {
        r.a.deallocate(r.slots[op.slot]);
        r.slots[op.slot].size = 0;
      }
      auto const stop = clock_type::now();
      auto const d = std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start).count();
      ns[k++] = static_cast<std::uint32_t>(std::min<std::int64_t>(d, 0xFFFF'FFFF));
    }
    auto pct = [&](double p) {
      auto const idx = static_cast<std::size_t>(std::ceil(p * static_cast<double>(ns.size()))) - 1;
      auto const it = ns.begin() + static_cast<std::ptrdiff_t>(std::min(idx, ns.size() - 1));
      std::nth_element(ns.begin(), it, ns.end());
      return static_cast<double>(*it);
    };
    fig.p50_ns = pct(0.50);
    fig.p99_ns = pct(0.99);
    fig.p999_ns = pct(0.999);
    fig.op_max_ns = static_cast<double>(*std::max_element(ns.begin(), ns.end()));
  }
  return fig;
}

}  // namespace tierpool::workloads

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_gen_tests.cpp — the generators of the tiering workloads (docs/chapters/benchmarks.md): determinism per seed, well-
// formedness (every use of a live tensor, frees match allocates, nothing left), and the
// exact shapes: tensor sizes, access order, compute durations.
#include "trace_test_util.hpp"

#include <tierpool/trace_gen.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

namespace {

using namespace trace_test;
using ::testing::HasSubstr;
using tt::access_kind;
using tt::event;
using tt::event_kind;

// Small parameters so every workload generates quickly.
tt::generator_params small(std::string_view workload)
{
  if (workload == "mlp-train") { return {{"layers", "3"}, {"width", "64"}, {"batch", "8"}, {"iterations", "2"}}; }
  if (workload == "transformer-train") {
    return {{"blocks", "2"}, {"hidden", "64"}, {"seq", "32"}, {"batch", "2"}, {"iterations", "2"}};
  }
  if (workload == "llm-infer-stream") {
    return {{"layers", "2"}, {"hidden", "64"}, {"prompt", "16"}, {"steps", "20"}, {"kv_block_tokens", "16"}};
  }
  if (workload == "kv-paging") {
    return {{"requests", "12"}, {"max_batch", "4"}, {"prompt_max", "64"}, {"output_max", "40"}, {"weight_bytes", "1MiB"}};
  }
  return {{"tensors", "50"}, {"accesses", "2000"}};
}

// Strict well-formedness: allocate of a fresh id, accesses / prefetches / frees of live ids only.
void expect_well_formed(std::vector<event> const& events, std::string_view name)
{
  std::unordered_map<std::uint64_t, bool> live;  // id -> live
  for (std::size_t i = 0; i < events.size(); ++i) {
    auto const& e = events[i];
    switch (e.kind) {
      case event_kind::allocate:
        ASSERT_FALSE(live.contains(e.tensor)) << name << ": id " << e.tensor << " allocated twice at event " << i;
        ASSERT_GT(e.bytes, 0U) << name;
        live[e.tensor] = true;
        break;
      case event_kind::free:
        ASSERT_TRUE(live.contains(e.tensor) && live[e.tensor]) << name << ": free of a dead id at event " << i;
        live[e.tensor] = false;
        break;
      case event_kind::access:
      case event_kind::prefetch:
      case event_kind::discard:
        ASSERT_TRUE(live.contains(e.tensor) && live[e.tensor]) << name << ": use of a dead id at event " << i;
        ASSERT_EQ(e.bytes, 0U);
        break;
      case event_kind::compute: ASSERT_GT(e.duration_ns, 0U); break;
      case event_kind::phase: ASSERT_FALSE(e.name.empty()); break;
      case event_kind::release: FAIL() << name << ": generators write no release events"; break;
    }
  }
  for (auto const& [id, is_live] : live) { EXPECT_FALSE(is_live) << name << ": id " << id << " never freed"; }
  auto const s = tt::summarize(events);
  EXPECT_EQ(s.accesses_not_live + s.frees_not_live + s.allocates_live + s.prefetches_not_live, 0U) << name;
  EXPECT_EQ(s.live_at_end, 0U) << name;
}

TEST(TraceGen, EveryWorkloadIsDeterministicAndWellFormed)
{
  ASSERT_EQ(tt::workloads().size(), 5U);
  for (auto const& w : tt::workloads()) {
    auto const a = tt::generate(w.name, small(w.name), 7);
    auto const b = tt::generate(w.name, small(w.name), 7);
    auto const c = tt::generate(w.name, small(w.name), 8);
    EXPECT_EQ(a, b) << w.name;
    if (w.random) {
      EXPECT_NE(a, c) << w.name;
    } else {
      EXPECT_EQ(a, c) << w.name;
    }
    expect_well_formed(a, w.name);
    // Defaults too (these are the full-size traces: a few MB to a few GB of working set).
    auto const d = tt::generate(w.name, {}, 1);
    expect_well_formed(d, w.name);
    auto const s = tt::summarize(d);
    EXPECT_GE(s.peak_live_bytes, std::uint64_t{1} << 20U) << w.name;
    EXPECT_LE(s.peak_live_bytes, std::uint64_t{8} << 30U) << w.name;
  }
}

TEST(TraceGen, StreamingAndVectorFormsAgreeAndSurviveAFile)
{
  std::vector<event> streamed;
  tt::generate("kv-paging", small("kv-paging"), 3, [&](event const& e) { streamed.push_back(e); });
  EXPECT_EQ(streamed, tt::generate("kv-paging", small("kv-paging"), 3));
  auto const path = scratch("kv.tpb");
  {
    tt::writer w(path, tt::format::binary);
    for (auto const& e : streamed) { w.write(e); }
  }
  EXPECT_EQ(tt::read_all(path), streamed);
}

// The accesses of one phase, as (keyword, tensor name) pairs.
std::vector<std::string> trace_lines(std::vector<event> const& events, std::size_t from, std::size_t count)
{
  std::map<std::uint64_t, std::string> names;
  std::vector<std::string> out;
  for (std::size_t i = 0; i < events.size() && out.size() < from + count; ++i) {
    auto const& e = events[i];
    if (e.kind == event_kind::allocate) { names[e.tensor] = e.name; }
    std::string line = tt::format_text(e);
    if (e.kind == event_kind::access || e.kind == event_kind::free) { line += " (" + names[e.tensor] + ")"; }
    if (e.kind == event_kind::allocate) { line = "alloc " + e.name + " " + std::to_string(e.bytes); }
    out.push_back(line);
  }
  return std::vector<std::string>(out.begin() + static_cast<std::ptrdiff_t>(from), out.end());
}

std::size_t index_of_phase(std::vector<event> const& events, std::string_view label, std::size_t start = 0)
{
  for (std::size_t i = start; i < events.size(); ++i) {
    if (events[i].kind == event_kind::phase && events[i].name == label) { return i; }
  }
  return events.size();
}

TEST(TraceGen, MlpTrainHasTheBenchmarkShape)
{
  // L = 3, W = 64, B = 8, fp32: weights 64*64*4 = 16384 B, activations 8*64*4 = 2048 B.
  // Forward compute 2*B*W^2 = 65536 flop at 20 TFLOP/s = 3.28 ns -> 3; backward 6.55 -> 7;
  // Adam 12*W^2 = 49152 flop -> 2.46 -> 2.
  auto const events = tt::generate("mlp-train", small("mlp-train"), 1);
  auto const s = tt::summarize(events);
  EXPECT_EQ(s.tensors, 12U + 2U * 4U);  // w, g, m, v per layer; a0..a3 per iteration
  EXPECT_EQ(s.requests, 3U * 3U + 2U * (1U + 10U * 3U));
  EXPECT_EQ(s.peak_live_bytes, 12U * 16384U + 4U * 2048U);
  EXPECT_EQ(s.compute_ns, 2U * (3U * 3U + 3U * 7U + 3U * 2U));

  std::size_t const fwd = index_of_phase(events, "forward");
  EXPECT_EQ(events[fwd - 1].name, "iter 0");
  EXPECT_THAT(trace_lines(events, fwd, 19),
              ::testing::ElementsAre("phase forward", "alloc a0 2048", "wd 13 (a0)",                        //
                                     "alloc a1 2048", "read 1 (w1)", "read 13 (a0)", "wd 14 (a1)", "compute 3",  //
                                     "alloc a2 2048", "read 5 (w2)", "read 14 (a1)", "wd 15 (a2)", "compute 3",  //
                                     "alloc a3 2048", "read 9 (w3)", "read 15 (a2)", "wd 16 (a3)", "compute 3",
                                     "phase backward"));
  std::size_t const bwd = index_of_phase(events, "backward");
  EXPECT_THAT(trace_lines(events, bwd, 17),
              ::testing::ElementsAre("phase backward", "free 16 (a3)",                                        //
                                     "read 15 (a2)", "read 9 (w3)", "wd 10 (g3)", "compute 7", "free 15 (a2)",  //
                                     "read 14 (a1)", "read 5 (w2)", "wd 6 (g2)", "compute 7", "free 14 (a1)",   //
                                     "read 13 (a0)", "read 1 (w1)", "wd 2 (g1)", "compute 7", "free 13 (a0)"));
  std::size_t const opt = index_of_phase(events, "optimizer");
  EXPECT_THAT(trace_lines(events, opt, 6), ::testing::ElementsAre("phase optimizer", "read 2 (g1)", "rw 3 (m1)",
                                                                  "rw 4 (v1)", "rw 1 (w1)", "compute 2"));
  EXPECT_LT(index_of_phase(events, "iter 1"), events.size());
}

// The eviction hints of an allocate per tensor name (the last allocate of each name).
struct alloc_hints {
  std::uint8_t hints;
  std::uint64_t recompute_ns;
};
std::map<std::string, alloc_hints> hints_by_name(std::vector<event> const& events)
{
  std::map<std::string, alloc_hints> out;
  for (auto const& e : events) {
    if (e.kind == event_kind::allocate) { out[e.name] = {e.hints, e.duration_ns}; }
  }
  return out;
}

constexpr std::uint8_t kActivation = tt::hint_recomputable | tt::hint_lossy_ok;

// Activations kept for backward are recomputable at their forward op's compute time and
// lossy-ok; everything else has no hint; hints=0 turns them off.
TEST(TraceGen, MlpTrainMarksTheActivationsKeptForBackward)
{
  auto const events = tt::generate("mlp-train", small("mlp-train"), 1);
  auto const h = hints_by_name(events);
  // forward compute 2BW^2 at 20 TFLOP/s = 3 ns (MlpTrainHasTheBenchmarkShape)
  for (char const* name : {"a1", "a2"}) {
    EXPECT_EQ(h.at(name).hints, kActivation) << name;
    EXPECT_EQ(h.at(name).recompute_ns, 3U) << name;
  }
  for (char const* name : {"a0", "a3", "w1", "g1", "m1", "v1", "w3", "g3", "m3", "v3"}) {
    EXPECT_EQ(h.at(name).hints, 0U) << name;
    EXPECT_EQ(h.at(name).recompute_ns, 0U) << name;
  }
  auto const s = tt::summarize(events);
  EXPECT_EQ(s.recomputable_tensors, 2U * 2U);  // a1, a2 per iteration
  EXPECT_EQ(s.recomputable_bytes, 4U * 2048U);
  EXPECT_EQ(s.recompute_ns, 4U * 3U);
  EXPECT_EQ(s.lossy_ok_tensors, 4U);
  EXPECT_EQ(s.lossy_ok_bytes, 4U * 2048U);
  // The recompute cost is the forward compute event's duration (the figure the generator charges).
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind != event_kind::allocate || events[i].hints == 0) { continue; }
    std::size_t j = i;
    while (events[j].kind != event_kind::compute) { ++j; }
    EXPECT_EQ(events[j].duration_ns, events[i].duration_ns) << events[i].name;
  }

  auto p = small("mlp-train");
  p.emplace_back("hints", "0");
  auto const plain = tt::generate("mlp-train", p, 1);
  for (auto const& e : plain) {
    EXPECT_EQ(e.hints, 0U) << e.name;
    if (e.kind == event_kind::allocate) { EXPECT_EQ(e.duration_ns, 0U) << e.name; }
  }
  ASSERT_EQ(plain.size(), events.size());  // the same trace otherwise
  for (std::size_t i = 0; i < events.size(); ++i) {
    event e = events[i];
    if (e.kind == event_kind::allocate) {
      e.hints = 0;
      e.duration_ns = 0;
    }
    EXPECT_EQ(e, plain[i]) << i;
  }
  p.back().second = "2";
  EXPECT_THROW((void)tt::generate("mlp-train", p, 1), tierpool::logic_error);
}

TEST(TraceGen, TransformerTrainMarksTheStoredActivations)
{
  auto const events = tt::generate("transformer-train", small("transformer-train"), 1);
  auto const h = hints_by_name(events);
  // forward: 24 b s h^2 + 4 b s^2 h = 24*64*64^2 + 4*64*32*64 = 6815744 flop at 100 TFLOP/s = 68 ns
  for (char const* name : {"block1.act", "block2.act"}) {
    EXPECT_EQ(h.at(name).hints, kActivation) << name;
    EXPECT_EQ(h.at(name).recompute_ns, 68U) << name;
  }
  for (char const* name : {"x0", "dx", "block1.w", "block1.g", "block1.m", "block1.v"}) {
    EXPECT_EQ(h.at(name).hints, 0U) << name;
    EXPECT_EQ(h.at(name).recompute_ns, 0U) << name;
  }
  auto const s = tt::summarize(events);
  EXPECT_EQ(s.recomputable_tensors, 2U * 2U);
  EXPECT_EQ(s.recomputable_bytes, 4U * 139264U);
  EXPECT_EQ(s.recompute_ns, 4U * 68U);
  auto p = small("transformer-train");
  p.emplace_back("hints", "0");
  EXPECT_EQ(tt::summarize(tt::generate("transformer-train", p, 1)).recomputable_tensors, 0U);
}

// streams=2 (Note [Gradients reduced on a second stream], trace_gen_dnn.cpp): the same trace
// as streams=1 but that each backward kernel is followed by its gradient's all-reduce on
// stream 1 (rw g, compute 2 x bytes / comm_gbps), and the optimizer's access to the gradient
// is rw. Built here from the one-stream trace by that rule, event for event.
TEST(TraceGen, TrainingGeneratorsCanReduceGradientsOnASecondStream)
{
  for (char const* w : {"mlp-train", "transformer-train"}) {
    SCOPED_TRACE(w);
    auto const plain = tt::generate(w, small(w), 1);
    auto p = small(w);
    p.emplace_back("streams", "2");
    p.emplace_back("comm_gbps", "2");
    auto const two = tt::generate(w, p, 1);
    std::map<std::uint64_t, std::uint64_t> grad_bytes;  // gradient tensors: names "g<l>" / "block<l>.g"
    std::string phase;
    std::uint64_t last_grad = 0;  // the gradient the latest backward kernel wrote
    std::vector<event> expected;
    for (event const& e : plain) {
      event x = e;
      if (e.kind == event_kind::phase) { phase = e.name; }
      if (e.kind == event_kind::allocate && (e.name.starts_with('g') || e.name.ends_with(".g"))) { grad_bytes[e.tensor] = e.bytes; }
      bool const grad = e.kind == event_kind::access && grad_bytes.contains(e.tensor);
      if (grad && phase == "backward") { last_grad = e.tensor; }
      if (grad && phase == "optimizer") {
        ASSERT_EQ(e.mode, access_kind::read);
        x.mode = access_kind::read_write;
      }
      expected.push_back(x);
      if (e.kind == event_kind::compute && phase == "backward") {
        ASSERT_NE(last_grad, 0U);
        event r{};
        r.kind = event_kind::access;
        r.tensor = last_grad;
        r.mode = access_kind::read_write;
        r.stream = 1;
        r.tier = tt::no_tier;
        expected.push_back(r);
        event c{};
        c.kind = event_kind::compute;
        c.duration_ns = grad_bytes.at(last_grad);  // 2 x bytes at 2 GB/s
        c.stream = 1;
        c.tier = tt::no_tier;
        expected.push_back(c);
        last_grad = 0;
      }
    }
    ASSERT_EQ(two.size(), expected.size());
    for (std::size_t i = 0; i < two.size(); ++i) { EXPECT_EQ(two[i], expected[i]) << i; }
    auto const s = tt::summarize(two);
    EXPECT_EQ(s.accesses_not_live + s.frees_not_live + s.allocates_live, 0U);
    auto bad = small(w);
    bad.emplace_back("streams", "3");
    EXPECT_THROW((void)tt::generate(w, bad, 1), tierpool::logic_error);
    bad.back() = {"comm_gbps", "0"};
    EXPECT_THROW((void)tt::generate(w, bad, 1), tierpool::logic_error);
  }
  // An all-reduce past 2^64 ns saturates (a 1 PiB gradient at 10^-6 GB/s), as compute
  // durations do; the conversion overflowed to 0 before.
  auto const huge = tt::generate("mlp-train", {{"layers", "1"}, {"width", "16777216"}, {"batch", "1"}, {"iterations", "1"},
                                               {"streams", "2"}, {"comm_gbps", "0.000001"}}, 1);
  auto const it = std::find_if(huge.begin(), huge.end(),
                               [](event const& e) { return e.kind == event_kind::compute && e.stream == 1; });
  ASSERT_NE(it, huge.end());
  EXPECT_EQ(it->duration_ns, std::numeric_limits<std::uint64_t>::max());
}

// Inference and serving: no hints (KV blocks are lossless-only by default, hints 0).
TEST(TraceGen, InferenceAndServingCarryNoHints)
{
  for (char const* w : {"llm-infer-stream", "kv-paging", "random-reuse"}) {
    for (auto const& e : tt::generate(w, small(w), 1)) {
      EXPECT_EQ(e.hints, 0U) << w;
      if (e.kind == event_kind::allocate) { EXPECT_EQ(e.duration_ns, 0U) << w; }
    }
  }
}

TEST(TraceGen, TransformerTrainSizes)
{
  // h = 64: 12 h^2 = 49152 parameters; bf16 weights 98304 B, fp32 moments 196608 B;
  // stored activations 34 s b h = 34 * 32 * 2 * 64 = 139264 B; x0 / dx = s b h * 2 = 8192 B.
  auto const events = tt::generate("transformer-train", small("transformer-train"), 1);
  std::map<std::string, std::uint64_t> sizes;
  for (auto const& e : events) {
    if (e.kind == event_kind::allocate) { sizes[e.name] = e.bytes; }
  }
  EXPECT_EQ(sizes["block1.w"], 98304U);
  EXPECT_EQ(sizes["block2.g"], 98304U);
  EXPECT_EQ(sizes["block1.m"], 196608U);
  EXPECT_EQ(sizes["block2.v"], 196608U);
  EXPECT_EQ(sizes["block1.act"], 139264U);
  EXPECT_EQ(sizes["x0"], 8192U);
  EXPECT_EQ(sizes["dx"], 8192U);
}

TEST(TraceGen, LlmInferStreamReadsEveryLayerOncePerStep)
{
  auto const events = tt::generate("llm-infer-stream", small("llm-infer-stream"), 1);
  std::map<std::uint64_t, std::string> names;
  std::vector<std::string> weight_reads_step3;
  std::size_t kv_blocks = 0;
  bool in_step3 = false;
  for (auto const& e : events) {
    if (e.kind == event_kind::allocate) {
      names[e.tensor] = e.name;
      if (e.name.find(".kv") != std::string::npos) {
        ++kv_blocks;
        EXPECT_EQ(e.bytes, 2U * 64U * 2U * 16U);  // K and V, h, fp16, 16 tokens
      }
    }
    if (e.kind == event_kind::phase) { in_step3 = e.name == "step 3"; }
    if (in_step3 && e.kind == event_kind::access && names[e.tensor].ends_with(".w")) {
      weight_reads_step3.push_back(names[e.tensor]);
    }
  }
  EXPECT_THAT(weight_reads_step3, ::testing::ElementsAre("layer0.w", "layer1.w"));
  // 16 prompt tokens + 20 generated = 36 tokens = 3 blocks of 16 per layer.
  EXPECT_EQ(kv_blocks, 2U * 3U);
}

TEST(TraceGen, KvPagingServesEveryRequest)
{
  auto const events = tt::generate("kv-paging", small("kv-paging"), 5);
  std::set<std::string> requests;
  std::size_t weight_reads = 0;
  std::size_t steps = 0;
  std::uint64_t weights_id = 0;
  for (auto const& e : events) {
    if (e.kind == event_kind::allocate) {
      if (e.name == "weights") {
        weights_id = e.tensor;
        EXPECT_EQ(e.bytes, 1U << 20U);
      } else {
        EXPECT_EQ(e.bytes, 16U * 128U * 1024U) << e.name;  // block_tokens x token_bytes
        requests.insert(e.name.substr(0, e.name.find('.')));
      }
    }
    if (e.kind == event_kind::access && e.tensor == weights_id && e.mode == access_kind::read) { ++weight_reads; }
    if (e.kind == event_kind::phase && e.name.starts_with("step ")) { ++steps; }
  }
  EXPECT_EQ(requests.size(), 12U);
  EXPECT_EQ(weight_reads, steps);  // the weights are read once per decoding step
  EXPECT_GE(steps, 16U);           // at least the shortest output (output_min)
}

// block_pool=1: finished sequences' blocks are reused, oldest first, instead of freed;
// discarded before (discard_blocks=1, the default) or not. Reused blocks are rewritten in
// full (wd), so no read ever follows a discard; the default is the trace without a pool.
TEST(TraceGen, KvPagingBlockPoolReusesAndDiscardsFinishedBlocks)
{
  auto with = [](tt::generator_params const& extra) {
    tt::generator_params params = small("kv-paging");
    params.insert(params.end(), extra.begin(), extra.end());
    return tt::generate("kv-paging", params, 5);
  };
  auto const plain = with({});
  EXPECT_EQ(plain, with({{"block_pool", "0"}}));
  auto const pooled = with({{"block_pool", "1"}});
  auto const kept = with({{"block_pool", "1"}, {"discard_blocks", "0"}});
  ASSERT_NO_FATAL_FAILURE(expect_well_formed(pooled, "block_pool=1"));
  ASSERT_NO_FATAL_FAILURE(expect_well_formed(kept, "block_pool=1 discard_blocks=0"));
  tt::summary const a = tt::summarize(plain);
  tt::summary const b = tt::summarize(pooled);
  tt::summary const c = tt::summarize(kept);
  auto const kinds = [](tt::summary const& s, event_kind k) { return s.events_by_kind[static_cast<std::size_t>(k)]; };
  EXPECT_LT(b.tensors, a.tensors) << "blocks are reused";
  EXPECT_EQ(b.requests, a.requests) << "the same accesses, on fewer tensors";
  EXPECT_EQ(kinds(b, event_kind::free), b.tensors) << "every block freed once, at the teardown";
  EXPECT_GT(kinds(b, event_kind::discard), 0U);
  EXPECT_EQ(b.reads_after_discard + b.discards_not_live, 0U);
  EXPECT_EQ(kinds(c, event_kind::discard), 0U);
  EXPECT_EQ(c.tensors, b.tensors);
  EXPECT_LE(b.peak_live_bytes, a.peak_live_bytes);
  EXPECT_THAT([] { (void)tt::generate("kv-paging", {{"block_pool", "2"}}, 1); },
              testing::ThrowsMessage<tierpool::logic_error>(testing::HasSubstr("block_pool")));
}

// preset=serving (issue 19): about 90,000 KV blocks live at the peak, 256 KiB each (16
// tokens of 16 KiB). Streamed: the trace has 19 M events.
TEST(TraceGen, KvPagingServingPresetHoldsAbout90kLiveBlocks)
{
  std::uint64_t live = 0;
  std::uint64_t peak = 0;
  std::uint64_t blocks = 0;
  tt::generate("kv-paging", {{"preset", "serving"}}, 1, [&](event const& e) {
    if (e.kind == event_kind::allocate) {
      EXPECT_EQ(e.bytes, 256U * 1024U);
      ++blocks;
      peak = std::max(peak, ++live);
    } else if (e.kind == event_kind::free) {
      --live;
    }
  });
  EXPECT_GE(peak, 80'000U);
  EXPECT_LE(peak, 120'000U);
  EXPECT_EQ(live, 0U);
  EXPECT_GT(blocks, peak);
}

// Explicit keys win over the preset's; unknown presets and presets of workloads that have
// none are named.
TEST(TraceGen, PresetsAreDefaultsThatKeysOverride)
{
  auto const small_serving =
    tt::generate("kv-paging", {{"preset", "serving"}, {"requests", "20"}, {"max_batch", "4"}}, 2);
  std::uint64_t allocs = 0;
  for (auto const& e : small_serving) {
    if (e.kind == event_kind::allocate) {
      ++allocs;
      EXPECT_EQ(e.bytes, 16U * 16U * 1024U);  // token_bytes=16KiB from the preset
    }
  }
  EXPECT_GT(allocs, 20U);
  auto message = [](std::string_view w, tt::generator_params const& p) -> std::string {
    try {
      (void)tt::generate(w, p, 1);
    } catch (tierpool::logic_error const& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message("kv-paging", {{"preset", "huge"}}), "workload 'kv-paging': unknown preset 'huge' (valid: serving)");
  EXPECT_EQ(message("mlp-train", {{"preset", "serving"}}), "workload 'mlp-train': unknown preset 'serving' (it has none)");
}

TEST(TraceGen, RandomReuseFollowsItsParameters)
{
  tt::generator_params const p{{"tensors", "40"}, {"accesses", "4000"}, {"min_bytes", "5000"}, {"max_bytes", "9000"},
                               {"skew", "1.2"}, {"write_ratio", "0.25"}, {"compute_ns", "10"}};
  auto const events = tt::generate("random-reuse", p, 11);
  std::map<std::uint64_t, std::size_t> hits;
  std::size_t writes = 0;
  std::size_t run_accesses = 0;
  bool running = false;
  for (auto const& e : events) {
    if (e.kind == event_kind::allocate) {
      EXPECT_TRUE(e.bytes == 8192U || e.bytes == 12288U) << e.bytes;  // 5000..9000 rounded up to 4 KiB
    }
    if (e.kind == event_kind::phase) { running = e.name == "run"; }
    if (running && e.kind == event_kind::access) {
      ++run_accesses;
      ++hits[e.tensor];
      writes += e.mode == access_kind::read_write ? 1U : 0U;
    }
  }
  EXPECT_EQ(run_accesses, 4000U);
  EXPECT_EQ(tt::summarize(events).compute_ns, 4000U * 10U);
  EXPECT_GT(writes, 800U);
  EXPECT_LT(writes, 1200U);
  std::size_t top = 0;
  for (auto const& [id, n] : hits) { top = std::max(top, n); }
  EXPECT_GT(top, 4000U / 8U);  // Zipf(1.2) over 40: the first rank takes about 28 %
}

TEST(TraceGen, BadInputsAreNamed)
{
  auto message = [](std::string_view w, tt::generator_params const& p) -> std::string {
    try {
      (void)tt::generate(w, p, 1);
    } catch (tierpool::logic_error const& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message("cnn-train", {}),
            "unknown workload 'cnn-train' (valid: mlp-train, transformer-train, llm-infer-stream, kv-paging, random-reuse)");
  EXPECT_EQ(message("mlp-train", {{"depth", "3"}}),
            "unknown parameter 'depth' for workload mlp-train (valid: layers, width, batch, iterations, dtype_bytes, tflops, hints, streams, comm_gbps)");
  EXPECT_EQ(message("mlp-train", {{"layers", "0"}}),
            "bad value '0' for mlp-train parameter 'layers' (expected an integer in 1..1048576)");
  EXPECT_EQ(message("mlp-train", {{"layers", "2"}, {"layers", "3"}}), "parameter 'layers' given twice");
  EXPECT_THAT(message("kv-paging", {{"token_bytes", "lots"}}),
              HasSubstr("bad value 'lots' for kv-paging parameter 'token_bytes' (expected a byte size"));
  EXPECT_THAT(message("random-reuse", {{"skew", "x"}}), HasSubstr("bad value 'x' for random-reuse parameter 'skew'"));
  std::vector<std::string> const items{"layers=2", "width"};
  EXPECT_THROW((void)tt::parse_generator_params(items), tierpool::logic_error);
}

}  // namespace

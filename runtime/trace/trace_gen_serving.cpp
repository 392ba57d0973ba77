// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// trace_gen_serving.cpp — the random generators of the tiering workloads (docs/chapters/benchmarks.md): kv-paging (a
// serving trace of requests arriving and finishing, with paged KV blocks) and
// random-reuse (Zipf accesses over a working set). Both depend on the seed; see
// detail::random_source for why the output does not depend on the standard library.
#include "trace/detail/generator.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <string>
#include <vector>

namespace tierpool::trace::detail {
namespace {

constexpr std::uint64_t kMaxTokens = std::uint64_t{1} << 24U;
constexpr std::uint64_t kMaxRequests = std::uint64_t{1} << 24U;
constexpr std::uint64_t kSizeGranule = 4096;  // random-reuse sizes are whole 4 KiB pages

struct sequence {
  std::uint64_t request{0};
  std::uint64_t prompt{0};
  std::uint64_t output{0};
  std::uint64_t generated{0};
  std::vector<std::uint64_t> blocks;
};

}  // namespace

// Note [kv-paging shape]
// Discrete decoding steps. At each step: Poisson(arrival) new requests join the queue
// (until `requests` have arrived), each with prompt and output lengths uniform in their
// ranges; queued requests are admitted while fewer than max_batch decode (prefill: alloc
// and wd ceil(prompt / block_tokens) blocks, compute prefill_token_ns x prompt); the
// weights (if any) are read; every active sequence reads its full blocks and appends one
// token to its last block (alloc + wd when the token starts a new block, else rw); one
// compute of token_ns x active; sequences that produced their output free their blocks.
// Steps with nothing to do are skipped, not emitted. With block_pool=1 a finished
// sequence's blocks go to a free list instead (discarded first with discard_blocks=1, as a
// serving engine over tierpool would call pool::discard), new blocks come from it while it
// has any, oldest first (a wd of the reused tensor, no alloc), and the teardown frees the
// list.
void generate_kv_paging(param_reader const& p, std::uint64_t seed, emitter& out)
{
  std::uint64_t const requests = p.count("requests", 1, kMaxRequests);
  double const arrival = p.real("arrival", 1e-6, 30.0);
  std::uint64_t const max_batch = p.count("max_batch", 1, 1U << 20U);
  std::uint64_t const prompt_min = p.count("prompt_min", 1, kMaxTokens);
  std::uint64_t const prompt_max = p.count("prompt_max", prompt_min, kMaxTokens);
  std::uint64_t const output_min = p.count("output_min", 1, kMaxTokens);
  std::uint64_t const output_max = p.count("output_max", output_min, kMaxTokens);
  std::uint64_t const block_tokens = p.count("block_tokens", 1, kMaxTokens);
  std::uint64_t const token_bytes = p.bytes("token_bytes", 1, std::uint64_t{1} << 40U);
  std::uint64_t const weight_bytes = p.bytes("weight_bytes", 0, std::uint64_t{1} << 50U);
  std::uint64_t const token_ns = p.count("token_ns", 0, std::uint64_t{1} << 40U);
  std::uint64_t const prefill_token_ns = p.count("prefill_token_ns", 0, std::uint64_t{1} << 40U);
  std::uint64_t const block_bytes = checked_mul(token_bytes, block_tokens, "KV block bytes");
  bool const block_pool = p.count("block_pool", 0, 1) == 1;
  bool const discard_blocks = p.count("discard_blocks", 0, 1) == 1;
  // block_pool: blocks of finished sequences, reused oldest first (as vLLM's free block queue)
  std::deque<std::uint64_t> free_blocks;

  random_source rng(seed);
  std::deque<sequence> waiting;
  std::vector<sequence> active;
  std::uint64_t arrived = 0;
  std::uint64_t step = 0;
  std::uint64_t weights = 0;
  out.phase("load");
  if (weight_bytes > 0) {
    weights = out.alloc(weight_bytes, "weights");
    out.wd(weights);
  }
  auto block_name = [](sequence const& s) {
    return "req" + std::to_string(s.request) + ".kv" + std::to_string(s.blocks.size());
  };
  auto new_block = [&](sequence& s) {  // a block for s's next tokens, written in full (wd)
    std::uint64_t id = 0;
    if (!free_blocks.empty()) {
      id = free_blocks.front();
      free_blocks.pop_front();
    } else {
      id = out.alloc(block_bytes, block_name(s));
    }
    s.blocks.push_back(id);
    out.wd(id);
  };

  while (arrived < requests || !waiting.empty() || !active.empty()) {
    std::uint64_t const now = step++;
    if (arrived < requests) {
      std::uint64_t const k = std::min(rng.poisson(arrival), requests - arrived);
      for (std::uint64_t i = 0; i < k; ++i) {
        sequence s;
        s.request = arrived++;
        s.prompt = rng.between(prompt_min, prompt_max);
        s.output = rng.between(output_min, output_max);
        waiting.push_back(std::move(s));
      }
    }
    if (waiting.empty() && active.empty()) { continue; }  // idle step: nothing to emit
    out.phase("step " + std::to_string(now));
    while (!waiting.empty() && active.size() < max_batch) {
      sequence s = std::move(waiting.front());
      waiting.pop_front();
      std::uint64_t const n = (s.prompt + block_tokens - 1) / block_tokens;
      for (std::uint64_t b = 0; b < n; ++b) { new_block(s); }
      out.compute(std::max<std::uint64_t>(1, checked_mul(prefill_token_ns, s.prompt, "prefill time")));
      active.push_back(std::move(s));
    }
    if (weights != 0) { out.read(weights); }
    for (auto& s : active) {
      std::uint64_t const position = s.prompt + s.generated;  // 0-based index of the new token
      bool const starts_block = position % block_tokens == 0;
      std::size_t const full = starts_block ? s.blocks.size() : s.blocks.size() - 1;
      for (std::size_t b = 0; b < full; ++b) { out.read(s.blocks[b]); }
      if (starts_block) {
        new_block(s);
      } else {
        out.rw(s.blocks.back());
      }
      ++s.generated;
    }
    out.compute(std::max<std::uint64_t>(1, checked_mul(token_ns, active.size(), "step time")));
    auto const done = std::stable_partition(active.begin(), active.end(),
                                            [](sequence const& s) { return s.generated < s.output; });
    for (auto it = done; it != active.end(); ++it) {
      for (auto id : it->blocks) {
        if (!block_pool) {
          out.free(id);
          continue;
        }
        if (discard_blocks) { out.discard(id); }
        free_blocks.push_back(id);
      }
    }
    active.erase(done, active.end());
  }
  out.phase("teardown");
  for (auto id : free_blocks) { out.free(id); }
  if (weights != 0) { out.free(weights); }
}

// Note [random-reuse shape]
// Setup: `tensors` tensors, sizes uniform in [min_bytes, max_bytes] rounded up to 4 KiB,
// each allocated and written (wd). Run: `accesses` draws from Zipf(skew) over a random
// ranking of the tensors (rank r has weight 1 / (r + 1)^skew); each is rw with
// probability write_ratio, else read, followed by a compute of compute_ns when > 0.
// Teardown frees everything.
void generate_random_reuse(param_reader const& p, std::uint64_t seed, emitter& out)
{
  std::uint64_t const tensors = p.count("tensors", 1, std::uint64_t{1} << 24U);
  std::uint64_t const min_bytes = p.bytes("min_bytes", 1, std::uint64_t{1} << 40U);
  std::uint64_t const max_bytes = p.bytes("max_bytes", min_bytes, std::uint64_t{1} << 40U);
  std::uint64_t const accesses = p.count("accesses", 0, std::uint64_t{1} << 34U);
  double const skew = p.real("skew", 0.0, 10.0);
  double const write_ratio = p.real("write_ratio", 0.0, 1.0);
  std::uint64_t const compute_ns = p.count("compute_ns", 0, std::uint64_t{1} << 40U);

  random_source rng(seed);
  out.phase("setup");
  std::vector<std::uint64_t> ids(tensors);
  for (std::uint64_t i = 0; i < tensors; ++i) {
    std::uint64_t bytes = rng.between(min_bytes, max_bytes);
    bytes = (bytes + kSizeGranule - 1) / kSizeGranule * kSizeGranule;
    ids[i] = out.alloc(bytes, "t" + std::to_string(i));
    out.wd(ids[i]);
  }
  // rank -> tensor: a Fisher-Yates shuffle, so popularity is independent of allocation order.
  std::vector<std::uint64_t> by_rank = ids;
  for (std::uint64_t i = tensors - 1; i > 0; --i) { std::swap(by_rank[i], by_rank[rng.between(0, i)]); }
  std::vector<double> cdf(tensors);
  double total = 0.0;
  for (std::uint64_t r = 0; r < tensors; ++r) {
    total += 1.0 / std::pow(static_cast<double>(r + 1), skew);
    cdf[r] = total;
  }

  out.phase("run");
  for (std::uint64_t i = 0; i < accesses; ++i) {
    double const u = rng.uniform() * total;
    auto const it = std::upper_bound(cdf.begin(), cdf.end(), u);
    auto const rank = std::min<std::size_t>(static_cast<std::size_t>(it - cdf.begin()), cdf.size() - 1);
    bool const write = rng.chance(write_ratio);
    out.access(by_rank[rank], write ? access_kind::read_write : access_kind::read);
    if (compute_ns > 0) { out.compute(compute_ns); }
  }
  out.phase("teardown");
  for (auto id : ids) { out.free(id); }
}

}  // namespace tierpool::trace::detail

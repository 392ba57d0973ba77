// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// generator.hpp — shared pieces of the trace generators (include/tierpool/trace_gen.hpp):
// parameter lookup with range checks, an event emitter that numbers tensors, and a
// portable random source. Not API.
#pragma once

#include <tierpool/trace_gen.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace tierpool::trace::detail {

/// Typed, range-checked access to a workload's parameters (given value or default).
class param_reader {
 public:
  /// @throws logic_error for an unknown or repeated key
  param_reader(workload_info const& info, generator_params const& params);

  /// An unsigned integer in [min, max]. @throws logic_error naming the key and the range
  [[nodiscard]] std::uint64_t count(std::string_view key, std::uint64_t min, std::uint64_t max) const;
  /// A byte size with optional unit, in [min, max]. @throws logic_error
  [[nodiscard]] std::uint64_t bytes(std::string_view key, std::uint64_t min, std::uint64_t max) const;
  /// A decimal number in [min, max]. @throws logic_error
  [[nodiscard]] double real(std::string_view key, double min, double max) const;

 private:
  [[nodiscard]] std::string_view value(std::string_view key) const;
  [[noreturn]] void bad(std::string_view key, std::string_view value, std::string const& expected) const;

  workload_info const& info_;
  generator_params const& params_;
};

/// Emits events to a sink; tensor ids are 1, 2, 3, ... in allocation order.
class emitter {
 public:
  explicit emitter(event_sink const& sink) : sink_(sink) {}

  /// `hints`: event::hints; `recompute_ns`: event::duration_ns (the recompute cost).
  std::uint64_t alloc(std::uint64_t bytes, std::string_view name, std::uint8_t hints = 0,
                      std::uint64_t recompute_ns = 0)
  {
    start(event_kind::allocate);
    e_.tensor = next_id_++;
    e_.bytes = bytes;
    e_.name.assign(name);
    e_.hints = hints;
    e_.duration_ns = recompute_ns;
    sink_(e_);
    return e_.tensor;
  }
  void free(std::uint64_t id)
  {
    start(event_kind::free);
    e_.tensor = id;
    sink_(e_);
  }
  void access(std::uint64_t id, access_kind mode, std::uint32_t stream = 0)
  {
    start(event_kind::access);
    e_.tensor = id;
    e_.mode = mode;
    e_.stream = stream;
    sink_(e_);
  }
  void discard(std::uint64_t id)
  {
    start(event_kind::discard);
    e_.tensor = id;
    sink_(e_);
  }
  void read(std::uint64_t id) { access(id, access_kind::read); }
  void rw(std::uint64_t id, std::uint32_t stream = 0) { access(id, access_kind::read_write, stream); }
  void wd(std::uint64_t id) { access(id, access_kind::write_discard); }
  void compute(std::uint64_t ns, std::uint32_t stream = 0)
  {
    start(event_kind::compute);
    e_.duration_ns = ns;
    e_.stream = stream;
    sink_(e_);
  }
  void phase(std::string_view label)
  {
    start(event_kind::phase);
    e_.name.assign(label);
    sink_(e_);
  }

 private:
  void start(event_kind k) noexcept
  {
    e_.kind = k;
    e_.mode = access_kind::read;
    e_.stream = 0;
    e_.tier = no_tier;
    e_.tensor = 0;
    e_.bytes = 0;
    e_.time_ns = 0;
    e_.duration_ns = 0;
    e_.hints = 0;
    e_.name.clear();
  }

  event_sink const& sink_;
  event e_{};
  std::uint64_t next_id_{1};
};

/// Portable random numbers: only the raw mt19937_64 stream, transformed by hand.
class random_source {
 public:
  explicit random_source(std::uint64_t seed) : g_(seed) {}
  /// Uniform in [0, 1): (x >> 11) * 2^-53.
  double uniform() { return static_cast<double>(g_() >> 11U) * 0x1.0p-53; }
  /// Uniform integer in [lo, hi].
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi)
  {
    auto const span = static_cast<double>(hi - lo) + 1.0;
    auto const k = static_cast<std::uint64_t>(uniform() * span);
    return lo + (k > hi - lo ? hi - lo : k);
  }
  /// True with probability p.
  bool chance(double p) { return uniform() < p; }
  /// Poisson-distributed count with mean `mean` (inversion; mean <= 30 keeps it exact enough).
  std::uint64_t poisson(double mean);

 private:
  std::mt19937_64 g_;
};

/// Compute time of `flops` at `tflops` TFLOP/s, in ns, at least 1.
[[nodiscard]] std::uint64_t flops_to_ns(double flops, double tflops) noexcept;
/// a * b, or a logic_error naming `what` if it overflows 64 bits.
[[nodiscard]] std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, char const* what);

// The workloads (the parameter tables are in trace_gen.cpp).
void generate_mlp_train(param_reader const& p, emitter& out);
void generate_transformer_train(param_reader const& p, emitter& out);
void generate_llm_infer_stream(param_reader const& p, emitter& out);
void generate_kv_paging(param_reader const& p, std::uint64_t seed, emitter& out);
void generate_random_reuse(param_reader const& p, std::uint64_t seed, emitter& out);

}  // namespace tierpool::trace::detail

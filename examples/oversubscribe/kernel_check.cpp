// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// kernel_check — `oversubscribe --check-kernels`: each compute_backend operation against
// host_kernels on random inputs, plus a second device run that must give the same bits
// (entry: check_kernels).
#include "kernel_check.hpp"

#include "host_kernels.hpp"
#include "splitmix64.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace oversubscribe {
namespace {

using tierpool::access_mode;
using buffers = std::vector<std::vector<float>>;
using pointers = std::vector<float*>;

/// One operation on fixed inputs: `device` enqueues it through the compute backend under
/// test, `host` computes it with host_kernels; both get pointers to copies of `inputs`
/// (in place: the buffers listed in `outputs` hold the results).
struct check_case {
  std::string name;
  buffers inputs;
  std::vector<std::size_t> outputs;
  std::function<void(compute_backend&, tierpool::stream_handle, pointers const&)> device;
  std::function<void(pointers const&)> host;
  double abs_tol{0.0};  // |device - host| <= abs_tol + rel_tol * |host|
  double rel_tol{1e-6};
};

/// Frees a stream of the pool when the check ends, however it ends.
class stream_guard {
 public:
  explicit stream_guard(tierpool::pool& pool) : pool_(pool), stream_(pool.create_stream()) {}
  stream_guard(stream_guard const&) = delete;
  stream_guard& operator=(stream_guard const&) = delete;
  ~stream_guard()
  {
    try {
      pool_.synchronize(stream_);
      pool_.destroy_stream(stream_);
    } catch (...) {
      // Nothing better to do in a destructor; the pool reports the stream when it closes.
    }
  }
  [[nodiscard]] tierpool::stream_handle get() const noexcept { return stream_; }

 private:
  tierpool::pool& pool_;
  tierpool::stream_handle stream_;
};

std::vector<float> random_floats(splitmix64& rng, std::size_t n, float lo, float hi)
{
  std::vector<float> v(n);
  for (float& x : v) { x = rng.uniform(lo, hi); }
  return v;
}

/// `n` labels in [0, classes), stored as the bits of floats (the tensors carry bytes).
std::vector<float> random_labels(splitmix64& rng, std::size_t n, std::size_t classes)
{
  std::vector<float> v(n);
  for (float& x : v) { x = std::bit_cast<float>(static_cast<std::int32_t>(rng.next() % classes)); }
  return v;
}

std::int32_t const* as_labels(float* p) noexcept { return reinterpret_cast<std::int32_t const*>(p); }

float max_abs(std::vector<float> const& v)
{
  float m = 0.0F;
  for (float const x : v) { m = std::max(m, std::fabs(x)); }
  return m;
}

/// Uploads `in` into fresh tensors of `pool`, runs `launch` on device leases of them on
/// `stream`, and returns every buffer's bytes afterwards, read back through the pool.
buffers run_on_pool(tierpool::pool& pool, tierpool::stream_handle stream, buffers const& in,
                    std::function<void(pointers const&)> const& launch)
{
  std::vector<tierpool::tensor> tensors;
  tensors.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    tensors.push_back(pool.allocate(std::max<std::size_t>(in[i].size(), 1) * sizeof(float),
                                    {.name = "check" + std::to_string(i)}));
    auto h = pool.acquire_host(tensors.back(), access_mode::write_discard);
    if (!in[i].empty()) { std::memcpy(h.data(), in[i].data(), in[i].size() * sizeof(float)); }
  }
  {
    std::vector<tierpool::lease> leases;
    pointers ptrs;
    for (tierpool::tensor const& t : tensors) {
      leases.push_back(pool.acquire(t, access_mode::read_write, stream));
      ptrs.push_back(leases.back().as<float>());
    }
    launch(ptrs);
  }  // the leases end; the pool moves nothing before the queued work has run
  pool.synchronize(stream);
  buffers out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    auto h = pool.acquire_host(tensors[i], access_mode::read);
    out.emplace_back(h.as<float>(), h.as<float>() + in[i].size());
  }
  return out;
}

std::vector<check_case> make_cases()
{
  std::vector<check_case> cases;
  splitmix64 rng{20260101};

  // gemm: every transpose combination, with and without accumulation, at sizes that are
  // not multiples of a tile; then the demo's three products at width 512, batch 64; then
  // an empty sum (k = 0).
  struct gemm_shape {
    std::size_t m, n, k;
  };
  auto add_gemm = [&](transpose ta, transpose tb, gemm_shape s, bool accumulate) {
    auto a = random_floats(rng, s.m * s.k, -1.0F, 1.0F);
    auto b = random_floats(rng, s.k * s.n, -1.0F, 1.0F);
    auto c = random_floats(rng, s.m * s.n, -1.0F, 1.0F);
    // Summation-order slack only: the kernels are expected to match exactly.
    double const tol = 0x1.0p-20 * static_cast<double>(s.k) * max_abs(a) * max_abs(b);
    std::string const name = std::string("gemm ") + (ta == transpose::yes ? "t" : "n") +
                             (tb == transpose::yes ? "t" : "n") + (accumulate ? "+= " : " ") + std::to_string(s.m) +
                             "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    cases.push_back({.name = name,
                     .inputs = {std::move(a), std::move(b), std::move(c)},
                     .outputs = {2},
                     .device =
                       [=](compute_backend& cb, tierpool::stream_handle st, pointers const& p) {
                         cb.gemm(st, ta, tb, s.m, s.n, s.k, p[0], p[1], p[2], accumulate);
                       },
                     .host =
                       [=](pointers const& p) {
                         std::vector<float> scratch;
                         host_kernels::gemm(ta, tb, s.m, s.n, s.k, p[0], p[1], p[2], accumulate, scratch);
                       },
                     .abs_tol = tol,
                     .rel_tol = 0.0});
  };
  for (transpose const ta : {transpose::no, transpose::yes}) {
    for (transpose const tb : {transpose::no, transpose::yes}) {
      for (bool const acc : {false, true}) { add_gemm(ta, tb, {37, 53, 29}, acc); }
    }
  }
  add_gemm(transpose::no, transpose::yes, {64, 512, 512}, false);  // forward: x · W^T
  add_gemm(transpose::yes, transpose::no, {512, 512, 64}, false);  // backward: dz^T · x
  add_gemm(transpose::no, transpose::no, {64, 512, 512}, false);   // backward: dz · W
  add_gemm(transpose::no, transpose::yes, {1, 1, 1}, true);
  add_gemm(transpose::yes, transpose::no, {5, 70, 0}, true);
  add_gemm(transpose::no, transpose::no, {5, 70, 0}, false);

  {
    std::size_t const rows = 45;
    std::size_t const cols = 77;
    cases.push_back({.name = "bias_add 45x77",
                     .inputs = {random_floats(rng, rows * cols, -1.0F, 1.0F), random_floats(rng, cols, -1.0F, 1.0F)},
                     .outputs = {0},
                     .device = [=](compute_backend& cb, tierpool::stream_handle st,
                                   pointers const& p) { cb.bias_add(st, p[0], p[1], rows, cols); },
                     .host = [=](pointers const& p) { host_kernels::bias_add(p[0], p[1], rows, cols); }});
  }
  for (auto const& [rows, cols] : {std::pair<std::size_t, std::size_t>{45, 77}, {64, 513}}) {
    cases.push_back({.name = "bias_grad " + std::to_string(rows) + "x" + std::to_string(cols),
                     .inputs = {random_floats(rng, rows * cols, -1.0F, 1.0F), std::vector<float>(cols, 7.0F)},
                     .outputs = {1},
                     .device = [=](compute_backend& cb, tierpool::stream_handle st,
                                   pointers const& p) { cb.bias_grad(st, p[0], p[1], rows, cols); },
                     .host = [=](pointers const& p) { host_kernels::bias_grad(p[0], p[1], rows, cols); },
                     .abs_tol = 0x1.0p-20 * static_cast<double>(rows)});
  }
  {
    std::size_t const n = 1000;
    auto y = random_floats(rng, n, -1.0F, 1.0F);
    y[3] = 0.0F;
    y[4] = -0.0F;
    auto dy = random_floats(rng, n, -1.0F, 1.0F);
    cases.push_back({.name = "relu_fwd 1000",
                     .inputs = {y},
                     .outputs = {0},
                     .device = [=](compute_backend& cb, tierpool::stream_handle st,
                                   pointers const& p) { cb.relu_fwd(st, p[0], n); },
                     .host = [=](pointers const& p) { host_kernels::relu_fwd(p[0], n); }});
    cases.push_back({.name = "relu_bwd 1000",
                     .inputs = {dy, y},
                     .outputs = {0},
                     .device = [=](compute_backend& cb, tierpool::stream_handle st,
                                   pointers const& p) { cb.relu_bwd(st, p[0], p[1], n); },
                     .host = [=](pointers const& p) { host_kernels::relu_bwd(p[0], p[1], n); }});
  }
  for (auto const& [rows, classes] : {std::pair<std::size_t, std::size_t>{13, 10}, {3, 1000}, {64, 10}}) {
    cases.push_back({.name = "softmax_xent_grad " + std::to_string(rows) + "x" + std::to_string(classes),
                     .inputs = {random_floats(rng, rows * classes, -8.0F, 8.0F), random_labels(rng, rows, classes),
                                std::vector<float>(rows * classes, 7.0F)},
                     .outputs = {2},
                     .device =
                       [=](compute_backend& cb, tierpool::stream_handle st, pointers const& p) {
                         cb.softmax_xent_grad(st, p[0], as_labels(p[1]), p[2], rows, classes);
                       },
                     .host =
                       [=](pointers const& p) {
                         host_kernels::softmax_xent_grad(p[0], as_labels(p[1]), p[2], rows, classes);
                       },
                     .abs_tol = 1e-9,
                     .rel_tol = 1e-6});  // exp in double may differ by an ulp from the C library's
  }
  for (int const step : {1, 7}) {
    std::size_t const n = 5000;
    adam_params p;
    p.lr = 1e-3F;
    auto const t = static_cast<double>(step);
    p.bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta1), t));
    p.bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta2), t));
    cases.push_back({.name = "adam_step " + std::to_string(n) + " t=" + std::to_string(step),
                     .inputs = {random_floats(rng, n, -1.0F, 1.0F), random_floats(rng, n, -0.1F, 0.1F),
                                random_floats(rng, n, 0.0F, 0.01F), random_floats(rng, n, -1.0F, 1.0F)},
                     .outputs = {0, 1, 2},
                     .device = [=](compute_backend& cb, tierpool::stream_handle st,
                                   pointers const& q) { cb.adam_step(st, q[0], q[1], q[2], q[3], n, p); },
                     .host = [=](pointers const& q) { host_kernels::adam_step(q[0], q[1], q[2], q[3], n, p); }});
  }
  return cases;
}

}  // namespace

kernel_check_result check_kernels(tierpool::pool& pool, compute_backend& compute, std::FILE* out)
{
  kernel_check_result result;
  stream_guard const stream{pool};
  for (check_case const& c : make_cases()) {
    auto launch = [&](pointers const& p) { c.device(compute, stream.get(), p); };
    buffers const first = run_on_pool(pool, stream.get(), c.inputs, launch);
    buffers const second = run_on_pool(pool, stream.get(), c.inputs, launch);
    buffers host = c.inputs;
    pointers host_ptrs;
    for (auto& b : host) { host_ptrs.push_back(b.data()); }
    c.host(host_ptrs);

    double max_err = 0.0;
    double max_excess = 0.0;  // largest error beyond its tolerance (0 when within)
    std::size_t values = 0;
    std::size_t same_as_host = 0;
    bool reproducible = true;
    for (std::size_t const o : c.outputs) {
      for (std::size_t i = 0; i < host[o].size(); ++i) {
        float const d = first[o][i];
        float const h = host[o][i];
        ++values;
        if (std::bit_cast<std::uint32_t>(d) == std::bit_cast<std::uint32_t>(h)) { ++same_as_host; }
        if (std::bit_cast<std::uint32_t>(d) != std::bit_cast<std::uint32_t>(second[o][i])) { reproducible = false; }
        double const err = std::fabs(static_cast<double>(d) - static_cast<double>(h));
        double const tol = c.abs_tol + c.rel_tol * std::fabs(static_cast<double>(h));
        double const excess = std::isnan(err) ? HUGE_VAL : err - tol;
        max_err = std::isnan(err) ? HUGE_VAL : std::max(max_err, err);
        max_excess = std::max(max_excess, excess);
      }
    }
    bool const ok = max_excess <= 0.0 && reproducible;
    ++result.cases;
    if (!ok) { ++result.failed; }
    if (same_as_host == values) { ++result.bit_identical; }
    std::fprintf(out,
                 "%-26s max |err| %-9.3g tol %-7.2g + %-7.2g * |host|  host bits %6zu/%-6zu  reproducible %-3s  %s\n",
                 c.name.c_str(), max_err, c.abs_tol, c.rel_tol, same_as_host, values, reproducible ? "yes" : "NO",
                 ok ? "ok" : "FAILED");
    std::fflush(out);
  }
  return result;
}

}  // namespace oversubscribe

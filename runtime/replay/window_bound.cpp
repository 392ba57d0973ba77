// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// window_bound.cpp — owns the phase floor of pool mode (detail::window_bound_seconds): a
// floor on the makespan of any schedule, from the trace's phase markers, that counts what
// the ideal time cannot: write-backs can only start once their data is written, and copy-ins
// only once there is room for them (docs/chapters/replay.md, "The phase floor").
//
// Note [A floor from the phases]
// ------------------------------
// Rationale: the ideal time is max(compute, h2d floor, d2h floor), as if each link could be
// busy for the whole run. In a training step it cannot: the activations' and the optimizer
// state's write-backs can only happen between the optimizer writing the state and the end
// of the forward pass, and their copy-ins between the end of the forward pass and the
// optimizer's reads. On transformer-train at 50 % this bounds any schedule to 1.4x the
// ideal time, which the ideal time does not show.
// Approach: cut the trace at its phase markers (and its ends): boundaries B_0 < ... < B_m,
// op positions. T_k is when the device finishes the last kernel given before B_k (one
// stream with kernels: they run in order). Residency at T_k is at most C, the capacity
// (a copy in flight holds its room). For boundaries a <= p <= b:
//  - d2h(a, p): the bytes of tensors whose value at B_p was last written on the device in
//    [B_a, B_p) and is read after B_p. Each such byte is on the device at T_p or was written
//    back after its write, that is in (T_a, T_p]; at most C are on the device, so at least
//    d2h(a, p) - C bytes cross the d2h link in (T_a, T_p].
//  - h2d(p, b): the bytes of tensors whose first device access at or after B_p is a read,
//    by a kernel given before B_b, and which is not the tensor's first access (that one may
//    be a birth on the device, as the ideal time allows). Each such byte is on the device at
//    T_p or is copied in within (T_p, T_b]: at least h2d(p, b) - C bytes.
//  - the kernels between B_a and B_b run one after another within (T_a, T_b].
// So T_b - T_a >= LB(a, b) = max(compute(a, b), max_p (d2h(a, p) - C) / bw,
// max_p (h2d(p, b) - C) / bw), and the makespan is at least the best sum of LB over a chain
// of consecutive windows (a dynamic program over the boundaries). Copy latencies are left
// out, so the floor stays one.
// Limitations: only traces with phase markers, one stream with kernels, at most
// kMaxBoundaries boundaries and a bounded amount of work; otherwise 0 (no floor). A window's
// two sets share the C bytes resident at T_p, but each is bounded alone (their union could
// give more).
#include "replay/detail/compiled_data.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tierpool::replay::detail {

namespace {

constexpr std::size_t kMaxBoundaries = 258;          // markers + the two ends
constexpr std::uint64_t kMaxWork = 200'000'000;      // boundaries x ops

// What an event does to a tensor's value: a device read, read-write or write-discard, the
// same by the host (acquire_host), or a free.
enum class ev_kind : std::uint8_t { read, rw, wd, host_read, host_rw, host_wd, free };

bool reads(ev_kind k) noexcept
{
  return k == ev_kind::read || k == ev_kind::rw || k == ev_kind::host_read || k == ev_kind::host_rw;
}

struct ev {
  std::uint32_t at;  // op position
  ev_kind kind;
};

}  // namespace

double window_bound_seconds(compiled_data const& d, std::uint64_t capacity, double bytes_per_s,
                            std::vector<std::uint8_t> const& leave_out)
{
  if (d.ops.empty() || d.phase_marks.empty() || !(bytes_per_s > 0.0)) { return 0.0; }
  auto const n = static_cast<std::uint32_t>(d.ops.size());
  std::vector<std::uint32_t> cut = {0, n};
  for (compiled_data::phase_mark const& m : d.phase_marks) { cut.push_back(m.op); }
  std::sort(cut.begin(), cut.end());
  cut.erase(std::unique(cut.begin(), cut.end()), cut.end());
  std::size_t const m = cut.size();
  if (m < 3 || m > kMaxBoundaries || static_cast<std::uint64_t>(m) * n > kMaxWork) { return 0.0; }

  // One pass: kernels (one stream with kernels, else no floor), each tensor's accesses and
  // frees in order, its size.
  std::vector<std::uint32_t> kernels;      // op positions of compute ops
  std::vector<double> compute_before(m);   // seconds of kernels given before cut[k]
  std::vector<std::vector<ev>> evs(d.objects);
  std::vector<std::uint64_t> size(d.objects, 0);
  std::uint32_t kernel_stream = 0;
  bool any_kernel = false;
  double ran = 0.0;
  std::size_t k = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    while (k < m && cut[k] == i) { compute_before[k++] = ran; }
    pool_op const& op = d.ops[i];
    switch (op.kind) {
      case pool_op_kind::compute:
        if (any_kernel && op.stream != kernel_stream) { return 0.0; }
        any_kernel = true;
        kernel_stream = op.stream;
        kernels.push_back(i);
        ran += static_cast<double>(op.arg) * 1e-9;
        break;
      case pool_op_kind::access: {
        if (op.obj >= evs.size() || (!leave_out.empty() && leave_out[op.obj] != 0)) { break; }  // Note [Floors with recompute]
        size[op.obj] = std::max(size[op.obj], op.bytes);
        bool const host = op.host != 0;
        ev_kind kd = host ? ev_kind::host_read : ev_kind::read;
        if (op.mode == trace::access_kind::write_discard) {
          kd = host ? ev_kind::host_wd : ev_kind::wd;
        } else if (op.mode == trace::access_kind::read_write) {
          kd = host ? ev_kind::host_rw : ev_kind::rw;
        }
        evs[op.obj].push_back({i, kd});
        break;
      }
      case pool_op_kind::free:
        if (op.obj < evs.size() && (leave_out.empty() || leave_out[op.obj] == 0)) { evs[op.obj].push_back({i, ev_kind::free}); }
        break;
      default: break;
    }
  }
  while (k < m) { compute_before[k++] = ran; }
  if (!any_kernel) { return 0.0; }
  // The boundary index before which the kernel of an access at position i is given: the
  // first cut after the first kernel at or after i (m when none: never counted).
  auto kernel_cut = [&](std::uint32_t i) -> std::size_t {
    auto const kt = std::lower_bound(kernels.begin(), kernels.end(), i);
    if (kt == kernels.end()) { return m; }
    return static_cast<std::size_t>(std::upper_bound(cut.begin(), cut.end(), *kt) - cut.begin());
  };

  // need_d2h[p][a]: bytes of values live at cut p last written on the device in [cut a, cut p).
  // need_h2d[p][b]: bytes whose first device access at or after cut p is a read whose kernel
  // comes before cut b (not a tensor's first access).
  std::vector<std::vector<double>> need_d2h(m, std::vector<double>(m, 0.0));
  std::vector<std::vector<double>> need_h2d(m, std::vector<double>(m, 0.0));
  for (std::size_t obj = 0; obj < evs.size(); ++obj) {
    std::vector<ev> const& e = evs[obj];
    if (e.empty()) { continue; }
    auto const bytes = static_cast<double>(size[obj]);
    std::size_t pos = 0;  // first event at or after cut[p]
    for (std::size_t p = 1; p + 1 < m; ++p) {
      while (pos < e.size() && e[pos].at < cut[p]) { ++pos; }
      // d2h: the value at cut p, if read later and last written on the device by a kernel
      // given before cut p (a write whose kernel comes after it does not exist yet at T_p).
      if (pos < e.size() && reads(e[pos].kind)) {
        for (std::size_t j = pos; j-- > 0;) {
          ev_kind const kd = e[j].kind;
          if (kd == ev_kind::free || kd == ev_kind::host_rw || kd == ev_kind::host_wd) { break; }  // a host value
          if (kd == ev_kind::rw || kd == ev_kind::wd) {
            if (kernel_cut(e[j].at) > p) { break; }
            auto const a = static_cast<std::size_t>(std::upper_bound(cut.begin(), cut.end(), e[j].at) - cut.begin()) - 1;
            need_d2h[p][a] += bytes;  // for windows starting at or before cut a (summed below)
            break;
          }
        }
      }
      // h2d: the first device access at or after cut p.
      for (std::size_t j = pos; j < e.size(); ++j) {
        ev_kind const kd = e[j].kind;
        if (kd == ev_kind::free || kd == ev_kind::wd) { break; }
        if (kd == ev_kind::read || kd == ev_kind::rw) {
          if (j != 0) {
            std::size_t const b = kernel_cut(e[j].at);
            if (b < m) { need_h2d[p][b] += bytes; }  // for windows ending at or after cut b (summed below)
          }
          break;
        }
      }
    }
  }

  // Each byte was counted once, at the latest window start (d2h) or the earliest window end
  // (h2d) it belongs to: sum over the windows that contain it.
  for (std::size_t p = 0; p < m; ++p) {
    for (std::size_t x = m - 1; x-- > 0;) { need_d2h[p][x] += need_d2h[p][x + 1]; }
    for (std::size_t y = 1; y < m; ++y) { need_h2d[p][y] += need_h2d[p][y - 1]; }
  }

  // LB(a, b) and the chain: best[b] = max over a < b of best[a] + LB(a, b).
  auto const cap = static_cast<double>(capacity);
  auto over = [&](double need) { return need > cap ? (need - cap) / bytes_per_s : 0.0; };
  std::vector<double> best(m, 0.0);
  for (std::size_t b = 1; b < m; ++b) {
    double h2d_from_p = 0.0;  // max over p in [a, b] of over(need_h2d[p][b]), a going down
    for (std::size_t a = b; a-- > 0;) {
      h2d_from_p = std::max(h2d_from_p, over(need_h2d[a + 1][b]));
      if (a != 0) { h2d_from_p = std::max(h2d_from_p, over(need_h2d[a][b])); }
      double d2h_to_p = 0.0;
      for (std::size_t p = a + 1; p <= b; ++p) { d2h_to_p = std::max(d2h_to_p, over(need_d2h[p][a])); }
      double const lb = std::max({compute_before[b] - compute_before[a], h2d_from_p, d2h_to_p});
      best[b] = std::max(best[b], best[a] + lb);
    }
  }
  return best[m - 1];
}

}  // namespace tierpool::replay::detail

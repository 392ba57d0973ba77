// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// cuda_kernels — the demo's MLP math as CUDA kernels, one per compute_backend operation,
// and their launchers (entry points: the functions of cuda_kernels.hpp).
//
// Determinism: every output element is written by exactly one thread, which computes it
// in one fixed order (a GEMM element sums p = 0..k-1 in order, a bias gradient sums rows in
// order, a softmax row's max and sum are taken by one thread in class order). There are no
// atomics and no reductions across threads, and the launch geometry depends only on the
// sizes, so two runs on the same bytes give the same bits. Every floating-point operation
// is an explicit round-to-nearest intrinsic (__fadd_rn, __fmul_rn, ...), which the compiler
// never fuses into an FMA; the file is also built with --fmad=false. The order of the
// operations is host_kernels.cpp's, so the results match the host's wherever the host does
// not contract either (exp in double may differ from the C library's by an ulp).
//
// C++17 (nvcc); includes only cuda_kernels.hpp of the demo.
#include "cuda_kernels.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace oversubscribe::cuda_kernels {
namespace {

constexpr unsigned kTile = 16;            // GEMM: a kTile×kTile block computes a kTile×kTile tile of c
constexpr unsigned kThreads = 256;        // threads per block of the element-wise kernels
constexpr unsigned kSoftmaxThreads = 128; // threads per block (one row) of the softmax gradient
constexpr std::size_t kMaxGrid = 65535;   // blocks per grid dimension; kernels loop over the rest

// ---- kernels ---------------------------------------------------------------------------

// c[i][j] = (accumulate ? c[i][j] : 0) + sum_{p=0..k-1} op(a)[i][p] * op(b)[p][j], summed in
// order of p. Each block loops over the tiles of c assigned to it (blockIdx, then strides of
// gridDim); all its threads run the same iterations, so the barriers are uniform.
__global__ void gemm_kernel(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k,
                            float const* __restrict__ a, float const* __restrict__ b, float* __restrict__ c,
                            bool accumulate)
{
  // a_tile[r][q] = op(a)[row0 + r][p0 + q]; b_tile[q][s] = op(b)[p0 + q][col0 + s]. The +1
  // column keeps the transposed stores below free of bank conflicts.
  __shared__ float a_tile[kTile][kTile + 1];
  __shared__ float b_tile[kTile][kTile + 1];
  unsigned const tx = threadIdx.x;
  unsigned const ty = threadIdx.y;
  std::size_t const tiles_m = (m + kTile - 1) / kTile;
  std::size_t const tiles_n = (n + kTile - 1) / kTile;

  for (std::size_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
    for (std::size_t tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) {
      std::size_t const row0 = tm * kTile;
      std::size_t const col0 = tn * kTile;
      std::size_t const i = row0 + ty;
      std::size_t const j = col0 + tx;
      bool const inside = i < m && j < n;
      float acc = accumulate && inside ? c[i * n + j] : 0.0F;

      for (std::size_t p0 = 0; p0 < k; p0 += kTile) {
        // Loads: consecutive threads (tx) read consecutive addresses in every layout.
        if (!ta) {  // a stored m×k
          std::size_t const r = row0 + ty;
          std::size_t const q = p0 + tx;
          a_tile[ty][tx] = r < m && q < k ? a[r * k + q] : 0.0F;
        } else {    // a stored k×m
          std::size_t const r = row0 + tx;
          std::size_t const q = p0 + ty;
          a_tile[tx][ty] = r < m && q < k ? a[q * m + r] : 0.0F;
        }
        if (!tb) {  // b stored k×n
          std::size_t const q = p0 + ty;
          std::size_t const s = col0 + tx;
          b_tile[ty][tx] = q < k && s < n ? b[q * n + s] : 0.0F;
        } else {    // b stored n×k
          std::size_t const q = p0 + tx;
          std::size_t const s = col0 + ty;
          b_tile[tx][ty] = q < k && s < n ? b[s * k + q] : 0.0F;
        }
        __syncthreads();
        // Only the real p of this tile: adding a padding product (+0) could turn -0 into +0.
        std::size_t const rest = k - p0;
        unsigned const steps = rest < kTile ? static_cast<unsigned>(rest) : kTile;
        for (unsigned q = 0; q < steps; ++q) { acc = __fadd_rn(acc, __fmul_rn(a_tile[ty][q], b_tile[q][tx])); }
        __syncthreads();
      }
      if (inside) { c[i * n + j] = acc; }
    }
  }
}

// Grid-stride loop over [0, n): each index is visited by exactly one thread.
#define OVERSUBSCRIBE_FOR_EACH_INDEX(idx, n)                                                  \
  for (std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < (n); \
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x)

__global__ void bias_add_kernel(float* __restrict__ y, float const* __restrict__ bias, std::size_t rows,
                                std::size_t cols)
{
  std::size_t const total = rows * cols;
  OVERSUBSCRIBE_FOR_EACH_INDEX(idx, total) { y[idx] = __fadd_rn(y[idx], bias[idx % cols]); }
}

// One thread per column, rows summed in order from +0 (as host_kernels::bias_grad).
__global__ void bias_grad_kernel(float const* __restrict__ dy, float* __restrict__ dbias, std::size_t rows,
                                 std::size_t cols)
{
  OVERSUBSCRIBE_FOR_EACH_INDEX(j, cols)
  {
    float sum = 0.0F;
    for (std::size_t r = 0; r < rows; ++r) { sum = __fadd_rn(sum, dy[r * cols + j]); }
    dbias[j] = sum;
  }
}

__global__ void relu_fwd_kernel(float* y, std::size_t n)
{
  OVERSUBSCRIBE_FOR_EACH_INDEX(i, n)
  {
    float const v = y[i];
    y[i] = v > 0.0F ? v : 0.0F;
  }
}

__global__ void relu_bwd_kernel(float* __restrict__ dy, float const* __restrict__ y, std::size_t n)
{
  OVERSUBSCRIBE_FOR_EACH_INDEX(i, n) { dy[i] = y[i] > 0.0F ? dy[i] : 0.0F; }
}

// One block per row (blocks loop over rows). Thread 0 takes the row's maximum (the first
// largest value, as std::max_element) and the sum of exp(x - max) in class order, in double;
// then the block writes the row's gradient, one class per thread.
__global__ void softmax_xent_grad_kernel(float const* __restrict__ logits, std::int32_t const* __restrict__ labels,
                                         float* __restrict__ dlogits, std::size_t rows, std::size_t classes,
                                         double inv_rows)
{
  __shared__ double row_max;
  __shared__ double row_sum;
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float const* x = logits + r * classes;
    float* d = dlogits + r * classes;
    if (threadIdx.x == 0) {
      float mx = x[0];
      for (std::size_t j = 1; j < classes; ++j) {
        if (mx < x[j]) { mx = x[j]; }
      }
      double const mxd = static_cast<double>(mx);
      double sum = 0.0;
      for (std::size_t j = 0; j < classes; ++j) {
        sum = __dadd_rn(sum, exp(__dsub_rn(static_cast<double>(x[j]), mxd)));
      }
      row_max = mxd;
      row_sum = sum;
    }
    __syncthreads();
    double const mx = row_max;
    double const sum = row_sum;
    auto const label = static_cast<std::size_t>(labels[r]);
    for (std::size_t j = threadIdx.x; j < classes; j += blockDim.x) {
      double const p = __ddiv_rn(exp(__dsub_rn(static_cast<double>(x[j]), mx)), sum);
      d[j] = __double2float_rn(__dmul_rn(__dsub_rn(p, j == label ? 1.0 : 0.0), inv_rows));
    }
    __syncthreads();  // row_max and row_sum are rewritten for the next row
  }
}

// host_kernels::adam_step, operation for operation.
__global__ void adam_step_kernel(float* __restrict__ w, float* __restrict__ m, float* __restrict__ v,
                                 float const* __restrict__ g, std::size_t n, adam_constants p, float one_minus_b1,
                                 float one_minus_b2)
{
  OVERSUBSCRIBE_FOR_EACH_INDEX(i, n)
  {
    float const gi = g[i];
    float const mi = __fadd_rn(__fmul_rn(p.beta1, m[i]), __fmul_rn(one_minus_b1, gi));
    float const vi = __fadd_rn(__fmul_rn(p.beta2, v[i]), __fmul_rn(__fmul_rn(one_minus_b2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    float const m_hat = __fdiv_rn(mi, p.bias_correction1);
    float const v_hat = __fdiv_rn(vi, p.bias_correction2);
    w[i] = __fsub_rn(w[i], __fdiv_rn(__fmul_rn(p.lr, m_hat), __fadd_rn(__fsqrt_rn(v_hat), p.eps)));
  }
}

#undef OVERSUBSCRIBE_FOR_EACH_INDEX

// ---- launch helpers ----------------------------------------------------------------------

unsigned grid_dim(std::size_t blocks) noexcept
{
  return static_cast<unsigned>(blocks < kMaxGrid ? blocks : kMaxGrid);
}

unsigned blocks_for(std::size_t n, unsigned threads) noexcept { return grid_dim((n + threads - 1) / threads); }

// Makes `ctx.device` current and clears an error an earlier, unrelated runtime call left
// behind, so that the launch's cudaGetLastError() speaks of the launch only (errors that
// poison the context are sticky and still come back).
cudaError_t prepare(launch_context ctx) noexcept
{
  if (ctx.stream == nullptr) { return cudaErrorInvalidResourceHandle; }
  int current = -1;
  cudaError_t e = cudaGetDevice(&current);
  if (e == cudaSuccess && current != ctx.device) { e = cudaSetDevice(ctx.device); }
  if (e != cudaSuccess) { return e; }
  (void)cudaGetLastError();
  return cudaSuccess;
}

cudaStream_t stream_of(launch_context ctx) noexcept { return static_cast<cudaStream_t>(ctx.stream); }

}  // namespace

int probe(int device, int* major, int* minor) noexcept
{
  cudaError_t e = cudaSetDevice(device);
  int ma = 0;
  int mi = 0;
  if (e == cudaSuccess) { e = cudaDeviceGetAttribute(&ma, cudaDevAttrComputeCapabilityMajor, device); }
  if (e == cudaSuccess) { e = cudaDeviceGetAttribute(&mi, cudaDevAttrComputeCapabilityMinor, device); }
  if (e == cudaSuccess) {
    if (major != nullptr) { *major = ma; }
    if (minor != nullptr) { *minor = mi; }
    // Loads the module for this device: cudaErrorNoKernelImageForDevice when the build has
    // neither SASS for its architecture nor PTX it can compile.
    cudaFuncAttributes attr{};
    e = cudaFuncGetAttributes(&attr, gemm_kernel);
    if (e == cudaSuccess) { e = cudaFuncGetAttributes(&attr, adam_step_kernel); }
  }
  return static_cast<int>(e);
}

int gemm(launch_context ctx, bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, float const* a,
         float const* b, float* c, bool accumulate) noexcept
{
  if (m == 0 || n == 0) { return 0; }
  if (cudaError_t const e = prepare(ctx); e != cudaSuccess) { return static_cast<int>(e); }
  dim3 const block(kTile, kTile);
  dim3 const grid(grid_dim((n + kTile - 1) / kTile), grid_dim((m + kTile - 1) / kTile));
  gemm_kernel<<<grid, block, 0, stream_of(ctx)>>>(ta, tb, m, n, k, a, b, c, accumulate);
  return static_cast<int>(cudaGetLastError());
}

int bias_add(launch_context ctx, float* y, float const* bias, std::size_t rows, std::size_t cols) noexcept
{
  if (rows == 0 || cols == 0) { return 0; }
  if (cudaError_t const e = prepare(ctx); e != cudaSuccess) { return static_cast<int>(e); }
  bias_add_kernel<<<blocks_for(rows * cols, kThreads), kThreads, 0, stream_of(ctx)>>>(y, bias, rows, cols);
  return static_cast<int>(cudaGetLastError());
}

int bias_grad(launch_context ctx, float const* dy, float* dbias, std::size_t rows, std::size_t cols) noexcept
{
  if (cols == 0) { return 0; }
  if (cudaError_t const e = prepare(ctx); e != cudaSuccess) { return static_cast<int>(e); }
  bias_grad_kernel<<<blocks_for(cols, kThreads), kThreads, 0, stream_of(ctx)>>>(dy, dbias, rows, cols);
  return static_cast<int>(cudaGetLastError());
}

int relu_fwd(launch_context ctx, float* y, std::size_t n) noexcept
{
  if (n == 0) { return 0; }
  if (cudaError_t const e = prepare(ctx); e != cudaSuccess) { return static_cast<int>(e); }
  relu_fwd_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream_of(ctx)>>>(y, n);
  return static_cast<int>(cudaGetLastError());
}

int relu_bwd(launch_context ctx, float* dy, float const* y, std::size_t n) noexcept
{
  if (n == 0) { return 0; }
  if (cudaError_t const e = prepare(ctx); e != cudaSuccess) { return static_cast<int>(e); }
  relu_bwd_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream_of(ctx)>>>(dy, y, n);
  return static_cast<int>(cudaGetLastError());
}

int softmax_xent_grad(launch_context ctx, float const* logits, std::int32_t const* labels, float* dlogits,
                      std::size_t rows, std::size_t classes) noexcept
{
  if (rows == 0 || classes == 0) { return 0; }
  if (cudaError_t const e = prepare(ctx); e != cudaSuccess) { return static_cast<int>(e); }
  double const inv_rows = 1.0 / static_cast<double>(rows);  // as host_kernels::softmax_xent_grad
  softmax_xent_grad_kernel<<<grid_dim(rows), kSoftmaxThreads, 0, stream_of(ctx)>>>(logits, labels, dlogits, rows,
                                                                                     classes, inv_rows);
  return static_cast<int>(cudaGetLastError());
}

int adam_step(launch_context ctx, float* w, float* m, float* v, float const* g, std::size_t n,
              adam_constants const& p) noexcept
{
  if (n == 0) { return 0; }
  if (cudaError_t const e = prepare(ctx); e != cudaSuccess) { return static_cast<int>(e); }
  float const one_minus_b1 = 1.0F - p.beta1;  // as host_kernels::adam_step (fp32, round to nearest)
  float const one_minus_b2 = 1.0F - p.beta2;
  adam_step_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream_of(ctx)>>>(w, m, v, g, n, p, one_minus_b1,
                                                                             one_minus_b2);
  return static_cast<int>(cudaGetLastError());
}

char const* error_name(int code) noexcept { return cudaGetErrorName(static_cast<cudaError_t>(code)); }

char const* error_text(int code) noexcept { return cudaGetErrorString(static_cast<cudaError_t>(code)); }

}  // namespace oversubscribe::cuda_kernels

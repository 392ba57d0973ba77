// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// cuda_compute_backend — the compute_backend of the CUDA backend: each operation launches
// one of cuda_kernels.cu's kernels on the cudaStream_t behind the pool's stream handle, on
// the backend's device (entry: make_cuda_compute_backend). Built only with
// OVERSUBSCRIBE_HAS_CUDA_KERNELS; plain C++ (the kernels' launchers hide every CUDA type).
#include "compute_backend.hpp"
#include "cuda_kernels.hpp"

#include <memory>
#include <stdexcept>
#include <string>

namespace oversubscribe {
namespace {

namespace ck = cuda_kernels;

/// Launches the kernels on the device of the backend it was made for.
class cuda_compute_backend final : public compute_backend {
 public:
  cuda_compute_backend(int device, kernel_roofline roofline) noexcept : compute_backend(roofline), device_(device) {}

  [[nodiscard]] std::string_view name() const noexcept override { return "cuda"; }

  // The roofline time (`double`) is the model's; the GPU's kernels take their own.
 protected:
  void do_gemm(tierpool::stream_handle stream, double /*seconds*/, transpose ta, transpose tb, std::size_t m, std::size_t n, std::size_t k,
            float const* a, float const* b, float* c, bool accumulate) override
  {
    check("gemm", ck::gemm(context(stream, "gemm"), ta == transpose::yes, tb == transpose::yes, m, n, k, a, b, c,
                           accumulate));
  }
  void do_bias_add(tierpool::stream_handle stream, double /*seconds*/, float* y, float const* bias, std::size_t rows,
                std::size_t cols) override
  {
    check("bias_add", ck::bias_add(context(stream, "bias_add"), y, bias, rows, cols));
  }
  void do_bias_grad(tierpool::stream_handle stream, double /*seconds*/, float const* dy, float* dbias, std::size_t rows,
                 std::size_t cols) override
  {
    check("bias_grad", ck::bias_grad(context(stream, "bias_grad"), dy, dbias, rows, cols));
  }
  void do_relu_fwd(tierpool::stream_handle stream, double /*seconds*/, float* y, std::size_t n) override
  {
    check("relu_fwd", ck::relu_fwd(context(stream, "relu_fwd"), y, n));
  }
  void do_relu_bwd(tierpool::stream_handle stream, double /*seconds*/, float* dy, float const* y, std::size_t n) override
  {
    check("relu_bwd", ck::relu_bwd(context(stream, "relu_bwd"), dy, y, n));
  }
  void do_softmax_xent_grad(tierpool::stream_handle stream, double /*seconds*/, float const* logits, std::int32_t const* labels,
                         float* dlogits, std::size_t rows, std::size_t classes) override
  {
    check("softmax_xent_grad",
          ck::softmax_xent_grad(context(stream, "softmax_xent_grad"), logits, labels, dlogits, rows, classes));
  }
  void do_adam_step(tierpool::stream_handle stream, double /*seconds*/, float* w, float* m, float* v, float const* g, std::size_t n,
                 adam_params const& p) override
  {
    ck::adam_constants const c{.lr = p.lr,
                               .beta1 = p.beta1,
                               .beta2 = p.beta2,
                               .eps = p.eps,
                               .bias_correction1 = p.bias_correction1,
                               .bias_correction2 = p.bias_correction2};
    check("adam_step", ck::adam_step(context(stream, "adam_step"), w, m, v, g, n, c));
  }

 private:
  // The CUDA backend's handle of a stream it created is the cudaStream_t itself; its
  // default stream (handle 0) is a private non-blocking stream with no handle to reach.
  [[nodiscard]] ck::launch_context context(tierpool::stream_handle stream, char const* what) const
  {
    if (stream.is_default()) {
      throw std::runtime_error(std::string("CUDA kernel ") + what +
                               ": the pool's default stream has no cudaStream_t to launch on; use a stream "
                               "from pool::create_stream()");
    }
    return {.stream = reinterpret_cast<void*>(stream.value), .device = device_};
  }

  void check(char const* what, int code) const
  {
    if (code != 0) {
      throw std::runtime_error(std::string("CUDA kernel ") + what + " could not be launched on device " +
                               std::to_string(device_) + ": " + ck::error_name(code) + " (" + ck::error_text(code) +
                               ")");
    }
  }

  int device_;
};

}  // namespace

std::unique_ptr<compute_backend> make_cuda_compute_backend(tierpool::backend& be, std::string* why,
                                                          kernel_roofline roofline)
{
  int const device = be.caps().device_ordinal;
  int major = 0;
  int minor = 0;
  if (int const e = cuda_kernels::probe(device, &major, &minor); e != 0) {
    if (why != nullptr) {
      *why = "the demo's CUDA kernels cannot run on CUDA device " + std::to_string(device) +
             (major != 0 ? " (sm_" + std::to_string(major) + std::to_string(minor) + ")" : std::string{}) + ": " +
             ck::error_name(e) + " (" + ck::error_text(e) +
             "); rebuild with its architecture in OVERSUBSCRIBE_CUDA_ARCHITECTURES";
    }
    return nullptr;
  }
  return std::make_unique<cuda_compute_backend>(device, roofline);
}

}  // namespace oversubscribe

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// mlp_tensors.cpp — the demo's MLP trained on the host for its tensors (Note [Codec data
// comes from training], mlp_tensors.hpp), and .npy files in and out.
#include "workloads/mlp_tensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace tierpool::workloads {
namespace {

// splitmix64, the demo's generator (examples/oversubscribe/splitmix64.hpp).
struct splitmix {
  std::uint64_t state;
  std::uint64_t next() noexcept
  {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31U);
  }
  float uniform(float lo, float hi) noexcept
  {
    return lo + (hi - lo) * static_cast<float>(static_cast<double>(next() >> 11U) * 0x1.0p-53);
  }
};

// One layer: weights stored in x out (y = x . W + b, so every inner loop is an axpy over a
// contiguous row), then the bias; Adam's moments in the same layout.
struct layer {
  std::size_t in{0};
  std::size_t out{0};
  std::vector<float> w, g, m, v;  // (in + 1) * out each: W then bias
  std::vector<float> act;         // batch x out, after ReLU for hidden layers
  std::vector<float> grad_act;    // batch x out
};

void axpy(float a, float const* x, float* y, std::size_t n) noexcept
{
  for (std::size_t j = 0; j < n; ++j) { y[j] += a * x[j]; }
}

template <class T>
void append(std::vector<std::byte>& out, std::vector<T> const& v)
{
  auto const* p = reinterpret_cast<std::byte const*>(v.data());
  out.insert(out.end(), p, p + v.size() * sizeof(T));
}

double softmax_xent(std::vector<float> const& logits, std::vector<std::int32_t> const& labels, std::size_t batch,
                    std::size_t classes, std::vector<float>* grad)
{
  double loss = 0.0;
  for (std::size_t b = 0; b < batch; ++b) {
    float const* z = logits.data() + b * classes;
    float const mx = *std::max_element(z, z + classes);
    double sum = 0.0;
    for (std::size_t c = 0; c < classes; ++c) { sum += std::exp(static_cast<double>(z[c] - mx)); }
    auto const label = static_cast<std::size_t>(labels[b]);
    loss += std::log(sum) - static_cast<double>(z[label] - mx);
    if (grad != nullptr) {
      for (std::size_t c = 0; c < classes; ++c) {
        double const p = std::exp(static_cast<double>(z[c] - mx)) / sum;
        (*grad)[b * classes + c] = static_cast<float>((p - (c == label ? 1.0 : 0.0)) / static_cast<double>(batch));
      }
    }
  }
  return loss / static_cast<double>(batch);
}

}  // namespace

std::vector<named_tensor_data> train_mlp_tensors(mlp_tensor_options const& o)
{
  if (o.layers == 0 || o.width == 0 || o.batch == 0 || o.classes == 0 || o.steps == 0) {
    throw std::invalid_argument("mlp tensors: layers, width, batch, classes and steps must be positive");
  }
  splitmix rng{o.seed};
  std::size_t const B = o.batch;
  std::vector<float> input(B * o.width);
  for (auto& x : input) { x = rng.uniform(-1.0F, 1.0F); }
  std::vector<std::int32_t> labels(B);
  for (auto& y : labels) { y = static_cast<std::int32_t>(rng.next() % o.classes); }

  std::vector<layer> layers(o.layers);
  for (std::size_t l = 0; l < o.layers; ++l) {
    layer& L = layers[l];
    L.in = o.width;
    L.out = l + 1 == o.layers ? o.classes : o.width;
    std::size_t const n = (L.in + 1) * L.out;
    L.w.assign(n, 0.0F);  // bias 0
    auto const limit = static_cast<float>(std::sqrt(6.0 / static_cast<double>(L.in)));  // He-uniform (ReLU)
    for (std::size_t i = 0; i < L.in * L.out; ++i) { L.w[i] = rng.uniform(-limit, limit); }
    L.g.assign(n, 0.0F);
    L.m.assign(n, 0.0F);
    L.v.assign(n, 0.0F);
    L.act.assign(B * L.out, 0.0F);
    L.grad_act.assign(B * L.out, 0.0F);
  }

  double loss_first = 0.0;
  double loss_last = 0.0;
  std::vector<float> dx;
  for (unsigned step = 1; step <= o.steps; ++step) {
    // Forward: y = relu(x . W + b), no ReLU on the logits.
    for (std::size_t l = 0; l < o.layers; ++l) {
      layer& L = layers[l];
      std::vector<float> const& x = l == 0 ? input : layers[l - 1].act;
      float const* bias = L.w.data() + L.in * L.out;
      for (std::size_t b = 0; b < B; ++b) {
        float* y = L.act.data() + b * L.out;
        std::copy(bias, bias + L.out, y);
        for (std::size_t i = 0; i < L.in; ++i) { axpy(x[b * L.in + i], L.w.data() + i * L.out, y, L.out); }
        if (l + 1 != o.layers) {
          for (std::size_t j = 0; j < L.out; ++j) { y[j] = std::max(y[j], 0.0F); }
        }
      }
    }
    double const loss = softmax_xent(layers.back().act, labels, B, o.classes, &layers.back().grad_act);
    if (step == 1) { loss_first = loss; }
    loss_last = loss;
    // Backward: dz = dy * relu'(y); dW = x^T . dz; db = sum dz; dx = dz . W^T.
    for (std::size_t l = o.layers; l-- > 0;) {
      layer& L = layers[l];
      std::vector<float> const& x = l == 0 ? input : layers[l - 1].act;
      if (l + 1 != o.layers) {
        for (std::size_t k = 0; k < L.grad_act.size(); ++k) {
          if (L.act[k] <= 0.0F) { L.grad_act[k] = 0.0F; }
        }
      }
      std::fill(L.g.begin(), L.g.end(), 0.0F);
      float* db = L.g.data() + L.in * L.out;
      for (std::size_t b = 0; b < B; ++b) {
        float const* dz = L.grad_act.data() + b * L.out;
        for (std::size_t i = 0; i < L.in; ++i) { axpy(x[b * L.in + i], dz, L.g.data() + i * L.out, L.out); }
        axpy(1.0F, dz, db, L.out);
      }
      if (l > 0) {
        // dx[b][i] = sum_j dz[b][j] W[i][j]: through W transposed, so the loop is an axpy too.
        std::vector<float> wt(L.out * L.in);
        for (std::size_t i = 0; i < L.in; ++i) {
          for (std::size_t j = 0; j < L.out; ++j) { wt[j * L.in + i] = L.w[i * L.out + j]; }
        }
        dx.assign(B * L.in, 0.0F);
        for (std::size_t b = 0; b < B; ++b) {
          for (std::size_t j = 0; j < L.out; ++j) {
            axpy(L.grad_act[b * L.out + j], wt.data() + j * L.in, dx.data() + b * L.in, L.in);
          }
        }
        layers[l - 1].grad_act = dx;
      }
    }
    // Adam.
    float const beta1 = 0.9F;
    float const beta2 = 0.999F;
    float const eps = 1e-8F;
    auto const bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), step));
    auto const bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), step));
    for (layer& L : layers) {
      for (std::size_t k = 0; k < L.w.size(); ++k) {
        float const g = L.g[k];
        L.m[k] = beta1 * L.m[k] + (1.0F - beta1) * g;
        L.v[k] = beta2 * L.v[k] + (1.0F - beta2) * g * g;
        L.w[k] -= o.lr * (L.m[k] / bc1) / (std::sqrt(L.v[k] / bc2) + eps);
      }
    }
  }

  std::vector<named_tensor_data> out(4);
  out[0].name = "activations";
  out[1].name = "adam_m";
  out[2].name = "adam_v";
  out[3].name = "weights";
  for (std::size_t l = 0; l < o.layers; ++l) {
    if (l + 1 != o.layers) { append(out[0].bytes, layers[l].act); }  // hidden layers: after ReLU
    append(out[1].bytes, layers[l].m);
    append(out[2].bytes, layers[l].v);
    append(out[3].bytes, layers[l].w);
  }
  if (o.layers == 1) { append(out[0].bytes, layers[0].act); }  // no hidden layer: the logits
  for (auto& t : out) {
    t.loss_first = loss_first;
    t.loss_last = loss_last;
  }
  return out;
}

named_tensor_data read_tensor_file(std::string const& path)
{
  std::ifstream f(path, std::ios::binary);
  if (!f) { throw std::runtime_error("cannot open '" + path + "'"); }
  std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) { throw std::runtime_error("cannot read '" + path + "'"); }
  named_tensor_data t;
  auto const slash = path.find_last_of('/');
  t.name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::size_t offset = 0;
  static constexpr char kNpy[] = "\x93NUMPY";
  if (raw.size() >= 10 && std::memcmp(raw.data(), kNpy, 6) == 0) {
    // .npy: magic, major, minor, header length (2 bytes in v1, 4 in v2 and v3), the header dict.
    auto const major = static_cast<unsigned char>(raw[6]);
    std::size_t header_len = 0;
    std::size_t header_at = 0;
    if (major == 1) {
      header_len = static_cast<unsigned char>(raw[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(raw[9])) << 8U);
      header_at = 10;
    } else if ((major == 2 || major == 3) && raw.size() >= 12) {
      for (int i = 3; i >= 0; --i) { header_len = (header_len << 8U) | static_cast<unsigned char>(raw[8 + static_cast<std::size_t>(i)]); }
      header_at = 12;
    } else {
      throw std::runtime_error("'" + path + "': unsupported .npy version " + std::to_string(major));
    }
    if (header_at + header_len > raw.size()) { throw std::runtime_error("'" + path + "': truncated .npy header"); }
    std::string const header(raw.data() + header_at, header_len);
    if (header.find("'descr': '<f4'") == std::string::npos) {
      throw std::runtime_error("'" + path + "': only float32 (<f4) .npy files are read; header " + header);
    }
    offset = header_at + header_len;
  }
  auto const* p = reinterpret_cast<std::byte const*>(raw.data());
  t.bytes.assign(p + offset, p + raw.size());
  return t;
}

void write_npy_float32(std::string const& path, std::vector<float> const& values)
{
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(values.size()) + ",), }";
  // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
  while ((10 + header.size() + 1) % 64 != 0) { header += ' '; }
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) { throw std::runtime_error("cannot create '" + path + "'"); }
  f.write("\x93NUMPY\x01\x00", 8);
  char const len[2] = {static_cast<char>(header.size() & 0xFFU), static_cast<char>(header.size() >> 8U)};
  f.write(len, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(reinterpret_cast<char const*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
  if (!f) { throw std::runtime_error("cannot write '" + path + "'"); }
}

}  // namespace tierpool::workloads

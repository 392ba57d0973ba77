// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// codec_data_tests.cpp — the codecs on real training tensors (the demo's MLP trained by
// tools/tierpool/workloads/mlp_tensors.cpp, Note [Codec data comes from training]), and
// the .npy reader and writer `tierpool codec measure --input / --dump` use.
#include "workloads/mlp_tensors.hpp"

#include <tierpool/codec.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace wl = tierpool::workloads;
using tierpool::codec_kind;

std::vector<float> floats_of(std::vector<std::byte> const& b)
{
  std::vector<float> v(b.size() / sizeof(float));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(float));
  return v;
}

wl::mlp_tensor_options small()
{
  wl::mlp_tensor_options o;
  o.width = 64;
  o.batch = 48;
  o.steps = 12;
  return o;
}

TEST(CodecData, TrainingIsDeterministicAndLearns)
{
  auto const a = wl::train_mlp_tensors(small());
  auto const b = wl::train_mlp_tensors(small());
  ASSERT_EQ(a.size(), 4U);
  EXPECT_EQ(a[0].name, "activations");
  EXPECT_EQ(a[1].name, "adam_m");
  EXPECT_EQ(a[2].name, "adam_v");
  EXPECT_EQ(a[3].name, "weights");
  for (std::size_t i = 0; i < a.size(); ++i) { EXPECT_TRUE(a[i].bytes == b[i].bytes) << a[i].name; }
  EXPECT_LT(a[0].loss_last, a[0].loss_first);  // Adam made progress on the fixed batch
  auto const o = small();
  EXPECT_EQ(a[0].bytes.size(), (o.layers - 1) * o.batch * o.width * sizeof(float));
  std::size_t const params = (o.layers - 1) * (o.width + 1) * o.width + (o.width + 1) * o.classes;
  EXPECT_EQ(a[2].bytes.size(), params * sizeof(float));

  // What the codecs see: ReLU zeros, a non-negative second moment, finite everything.
  auto const act = floats_of(a[0].bytes);
  std::size_t zeros = 0;
  for (float v : act) {
    ASSERT_GE(v, 0.0F);
    zeros += v == 0.0F ? 1 : 0;
  }
  EXPECT_GT(zeros, act.size() / 5);
  EXPECT_LT(zeros, act.size() * 4 / 5);
  for (float v : floats_of(a[2].bytes)) { ASSERT_TRUE(v >= 0.0F && std::isfinite(v)); }
  EXPECT_THROW((void)wl::train_mlp_tensors(wl::mlp_tensor_options{.steps = 0}), std::invalid_argument);
}

TEST(CodecData, LosslessRoundTripsAndQ8BoundOnTrainingTensors)
{
  for (auto const& t : wl::train_mlp_tensors(small())) {
    SCOPED_TRACE(t.name);
    for (auto k : {codec_kind::lz4, codec_kind::zstd}) {
      std::vector<std::byte> f(tierpool::max_compressed_size(k, t.bytes.size()));
      f.resize(tierpool::compress(k, t.bytes, f));
      std::vector<std::byte> out(t.bytes.size());
      tierpool::decompress(k, f, out);
      EXPECT_TRUE(out == t.bytes);
    }
    tierpool::codec_error_report r;
    std::vector<std::byte> f(tierpool::max_compressed_size(codec_kind::q8_block, t.bytes.size()));
    f.resize(tierpool::compress(codec_kind::q8_block, t.bytes, f, {}, &r));
    EXPECT_LE(r.max_abs_error, r.max_abs_value * (1.0 / 254.0 + 0x1.0p-22));
    EXPECT_LT(r.relative_rms_error, 0.05);
  }
  // Activations after ReLU compress losslessly: about half their values are exact zeros.
  auto const t = wl::train_mlp_tensors(small());
  std::vector<std::byte> f(tierpool::max_compressed_size(codec_kind::zstd, t[0].bytes.size()));
  EXPECT_LT(tierpool::compress(codec_kind::zstd, t[0].bytes, f) * 10, t[0].bytes.size() * 9);
}

TEST(CodecData, NpyWriteReadAndRawFiles)
{
  std::string const dir = ::testing::TempDir();
  std::vector<float> const v = {1.5F, -2.0F, 0.0F, 3.25F, 1e-30F};
  std::string const npy = dir + "codec_data_test.npy";
  wl::write_npy_float32(npy, v);
  auto const t = wl::read_tensor_file(npy);
  EXPECT_EQ(t.name, "codec_data_test.npy");
  EXPECT_EQ(floats_of(t.bytes), v);
  {
    std::ifstream f(npy, std::ios::binary);
    std::string head(10, '\0');
    f.read(head.data(), 10);
    EXPECT_EQ(head.substr(1, 5), "NUMPY");
    std::size_t const len = static_cast<unsigned char>(head[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(head[9])) << 8U);
    EXPECT_EQ((10 + len) % 64, 0U);  // data aligned as numpy writes it
  }
  std::string const raw = dir + "codec_data_test.bin";
  {
    std::ofstream f(raw, std::ios::binary);
    f.write("abcdefg", 7);
  }
  EXPECT_EQ(wl::read_tensor_file(raw).bytes.size(), 7U);
  std::string const f64 = dir + "codec_data_test_f64.npy";
  {
    std::ofstream f(f64, std::ios::binary);
    std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }";
    while ((10 + header.size() + 1) % 64 != 0) { header += ' '; }
    header += '\n';
    f.write("\x93NUMPY\x01\x00", 8);
    char const len[2] = {static_cast<char>(header.size()), 0};
    f.write(len, 2);
    f << header;
    double const d = 1.0;
    f.write(reinterpret_cast<char const*>(&d), 8);
  }
  EXPECT_THROW((void)wl::read_tensor_file(f64), std::runtime_error);
  EXPECT_THROW((void)wl::read_tensor_file(dir + "no_such_file.npy"), std::runtime_error);
  std::remove(npy.c_str());
  std::remove(raw.c_str());
  std::remove(f64.c_str());
}

}  // namespace

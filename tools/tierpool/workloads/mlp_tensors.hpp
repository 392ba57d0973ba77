// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file mlp_tensors.hpp
 * @brief Real training tensors for measuring codecs (`tierpool codec measure --source demo`):
 *        the oversubscription demo's model (examples/oversubscribe: an MLP with ReLU,
 *        softmax cross-entropy and Adam, He-uniform weights, one fixed random batch) trained
 *        on the host for a few steps, and its tensors read out by kind. Also the readers of
 *        tensors saved elsewhere (numpy .npy, raw float32).
 *
 * Note [Codec data comes from training]
 * The codec figures decide evictions, so they are measured on tensors a training run made,
 * not on values drawn from a distribution: after a few Adam steps the hidden activations are
 * ReLU outputs (about half exact zeros, the rest a spread of magnitudes), the first moment is
 * small and signed, the second moment small, positive and smooth, and the weights near-random
 * mantissas. Training here is deterministic (fixed summation order, one thread), so the same
 * options give the same bytes on every machine.
 *
 * Thread safety: free functions without shared state.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tierpool::workloads {

/// @brief The model and its training (the demo's recipe, smaller by default).
struct mlp_tensor_options {
  std::size_t layers{4};    ///< linear layers (ReLU after all but the last)
  std::size_t width{512};   ///< input and hidden width
  std::size_t batch{512};   ///< samples in the fixed batch
  std::size_t classes{10};  ///< outputs of the last layer
  unsigned steps{10};       ///< Adam steps before the tensors are read
  std::uint64_t seed{1};    ///< inputs, labels, initial weights
  float lr{1e-3F};          ///< Adam learning rate
};

/// @brief One kind of tensor, every layer's concatenated (float32 bytes).
struct named_tensor_data {
  std::string name;              ///< "activations", "adam_m", "adam_v", "weights", or a file's name
  std::vector<std::byte> bytes;  ///< the values
  double loss_first{0.0};        ///< demo source: the loss of the first step
  double loss_last{0.0};         ///< demo source: the loss of the last step
};

/**
 * @brief Train the MLP and return its tensors: hidden activations (after ReLU), Adam's first
 *        and second moments, and the weights (biases included), each every layer's in order.
 * @throws std::invalid_argument for a zero size or step count.
 */
[[nodiscard]] std::vector<named_tensor_data> train_mlp_tensors(mlp_tensor_options const& options);

/**
 * @brief A tensor saved to a file: a numpy .npy file of float32 (`<f4`, C order; its values),
 *        or any other file as raw bytes (float32 when the codec needs floats).
 * @throws std::runtime_error if the file cannot be read or is a .npy of another dtype.
 */
[[nodiscard]] named_tensor_data read_tensor_file(std::string const& path);

/// @brief Write `values` as a 1-D float32 .npy file. @throws std::runtime_error on an I/O error.
void write_npy_float32(std::string const& path, std::vector<float> const& values);

}  // namespace tierpool::workloads

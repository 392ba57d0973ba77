// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file mlp.hpp
 * @brief A small MLP trained with Adam whose every tensor (weights, activations,
 *        gradients, optimizer state) lives in a tierpool pool.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <tierpool/pool.hpp>

#include "compute_backend.hpp"

namespace oversubscribe {

/// @brief Which model the trainer builds.
enum class model_kind : std::uint8_t {
  mlp,          ///< linear layers with ReLU
  transformer,  ///< transformer-shaped blocks (transformer.cpp, Note [A transformer-shaped loop])
};

/// @brief Shape and training settings of the model.
struct mlp_config {
  model_kind model{model_kind::mlp};  ///< the model
  std::size_t layers{16};    ///< linear layers (ReLU after all but the last); blocks of the transformer
  std::size_t width{512};    ///< input and hidden width (the transformer's model width d)
  std::size_t batch{64};     ///< samples per step (one fixed synthetic batch); sequences of the transformer
  std::size_t seq{64};       ///< the transformer's tokens per sequence
  std::size_t classes{10};   ///< outputs of the last layer (softmax cross-entropy; per token in the transformer)
  std::uint64_t seed{1};     ///< initial weights, inputs and labels
  bool prefetch{true};       ///< prefetch the next operation's inputs while one computes
  float lr{1e-3F};           ///< Adam learning rate
};

/**
 * @brief Trains an MLP on one pool: each step runs forward, the loss gradient, backward
 *        and Adam as a sequence of operations on one compute stream, and returns the loss
 *        computed from the logits read back through the pool.
 *
 * Every operation acquires its tensors on the compute stream (read, read_write or
 * write_discard), enqueues its kernels, releases the leases, and prefetches the next
 * operation's inputs so that their copies overlap the computation. The host stays at most
 * two operations ahead of the stream, so a prefetch is issued while the work before it runs.
 *
 * Thread safety: one thread at a time. Ownership: not copyable; owns its tensors and its
 * stream; `pool` and `compute` must outlive it. Stream semantics: step() returns after the
 * stream has completed the step's work.
 *
 * @code
 * oversubscribe::mlp_trainer t{pool, *compute, cfg};
 * double const loss = t.step();
 * @endcode
 */
class mlp_trainer {
 public:
  /**
   * @brief Allocate and initialise every tensor (deterministically from `cfg.seed`).
   * @throws tierpool::out_of_memory if the pool cannot hold the working set.
   * @throws tierpool::backend_error if a copy or stream call fails.
   */
  mlp_trainer(tierpool::pool& pool, compute_backend& compute, mlp_config cfg);
  /// @brief Waits for the stream, frees the tensors and destroys the stream.
  ~mlp_trainer();
  mlp_trainer(mlp_trainer const&) = delete;
  mlp_trainer& operator=(mlp_trainer const&) = delete;

  /// @brief Bytes of all tensors of a model with this configuration.
  [[nodiscard]] static std::size_t working_set_bytes(mlp_config const& cfg);
  /// @brief Bytes the largest single operation leases at once (the least a device tier must hold).
  [[nodiscard]] static std::size_t largest_operation_bytes(mlp_config const& cfg);

  /**
   * @brief One training step.
   * @return The mean cross-entropy of this step's forward pass, computed on the host
   *         from the logits and labels read with pool::acquire_host.
   * @throws tierpool::out_of_memory if an operation's tensors cannot all be made resident.
   * @throws tierpool::backend_error if a copy fails; std::runtime_error if a kernel cannot be queued.
   */
  [[nodiscard]] double step();

  /// @brief FNV-1a digest of every parameter's bytes, read with pool::acquire_host.
  [[nodiscard]] std::uint64_t parameter_digest();

  /**
   * @brief Write every layer's tensors, read with pool::acquire_host, as 1-D float32 numpy
   *        files in `dir`: act<l>.npy (after ReLU; the last layer's are the logits),
   *        adam_m<l>.npy, adam_v<l>.npy and w<l>.npy (weights then bias). The codecs'
   *        real data: `tierpool codec measure --input` (docs/chapters/codecs.md).
   * @throws std::runtime_error if a file cannot be written.
   */
  void dump_tensors(std::string const& dir);

  /// @brief Operations per step (3 × layers + 1).
  [[nodiscard]] std::size_t operations_per_step() const noexcept { return ops_.size(); }

 private:
  struct use {
    tierpool::tensor const* tensor;
    tierpool::access_mode access;
  };
  struct operation {
    std::vector<use> uses;  // leased in this order; launch() gets the leases in the same order
    std::function<void(std::vector<tierpool::lease> const&)> launch;
  };
  // Where a phase of the step begins: the operation's index and the phase's name, noted in the
  // pool's recording (pool::note_phase) before that operation runs.
  struct phase_mark {
    std::size_t op;
    char const* name;
  };

  [[nodiscard]] std::size_t out_dim(std::size_t layer) const noexcept;
  // The transformer-shaped model (transformer.cpp).
  void build_transformer();
  [[nodiscard]] static std::size_t transformer_working_set(mlp_config const& cfg);
  [[nodiscard]] static std::size_t transformer_largest_operation(mlp_config const& cfg);
  [[nodiscard]] tierpool::tensor const& layer_input(std::size_t layer) const noexcept;
  [[nodiscard]] tierpool::tensor make_tensor(std::size_t bytes, std::string name);
  void initialise();
  void build_operations();
  /// Adam over parameter `param` (w_[param] and its moments, of `floats` floats) as an operation.
  void add_adam(std::size_t param, std::size_t floats);
  void run(std::size_t index);
  void mark_phase(char const* name) { phases_.push_back({ops_.size(), name}); }  // before the next operation built
  void mark_done();
  void wait_until_at_most(std::uint64_t outstanding);

  tierpool::pool& pool_;
  compute_backend& compute_;
  mlp_config cfg_;
  tierpool::stream_handle stream_{};
  std::uint64_t steps_{0};
  std::vector<phase_mark> phases_;  // forward, backward, optimizer: in operation order

  // One per layer; act_[l] is layer l's output (the logits for the last layer). The
  // transformer: one per parameter (w_...) and per activation (act_, grad_act_), the
  // logits last.
  std::vector<tierpool::tensor> w_, grad_w_, adam_m_, adam_v_, act_, grad_act_;
  tierpool::tensor input_, labels_;
  std::vector<operation> ops_;
  std::vector<tierpool::lease> leases_;
  std::vector<tierpool::acquire_item> items_;  // the transformer's operands for acquire_all (reused)

  // Completion of enqueued operations: an event recorded after each, in a ring longer than
  // the host ever runs ahead (Note [Throttling with events] in mlp.cpp).
  std::array<tierpool::event, 4> done_;
  std::uint64_t enqueued_{0};
  bool virtual_clock_{false};
};

}  // namespace oversubscribe

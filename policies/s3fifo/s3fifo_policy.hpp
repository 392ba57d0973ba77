// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file s3fifo_policy.hpp
 * @brief S3-FIFO eviction: `tierpool::s3fifo_policy`, registered as `"s3fifo"`.
 *        Include as `<tierpool/policies/s3fifo_policy.hpp>`.
 *
 * @ingroup policies
 *
 * S3-FIFO (Yang, Zhang, Qiu, Yue, Rashmi, "FIFO queues are all you need for cache
 * eviction", SOSP 2023) uses three FIFO queues: a small queue S (10% of the cache) that
 * new objects enter, a main queue M (the rest), and a ghost queue G of ids recently
 * evicted from S. Each object has a 2-bit frequency, incremented on a hit and capped at 3.
 * A miss whose id is in G enters M, any other miss enters S. Eviction (Algorithm 1):
 * when S holds at least 10% of the cache, S's tail is examined: with frequency > 1 it
 * moves to M's head (and the next tail is examined), otherwise it is evicted and its id
 * goes to G; else M's tail is examined: with frequency > 0 it is reinserted at M's head
 * with its frequency decremented, otherwise it is evicted. Most objects are seen once and
 * leave quickly from S ("quick demotion"). This version differs from the paper in four
 * ways. (1) **Bytes**: S, M and G are byte sums, and the 10% (`small_ratio`) and G's size
 * (`ghost_ratio`, M's share of the cache: 90%) are fractions of the bytes the policy
 * currently holds in S + M, since a policy is not told its tier's capacity; with
 * evictions, the tier is full, so this is the cache size. M is not evicted inline while S
 * is drained (the paper's "if M is full, evictM()"): as in the authors' libCacheSim code,
 * the next eviction chooses the queue again. (2) **Sized proposals**: evictions repeat
 * until the victims' bytes cover `bytes_needed`. (3) **Queue moves happen on erase**:
 * propose changes no state; it simulates the evictions on a scratch queue, and the moves
 * (S to M, M reinsertions) are applied when the engine erases the tensor S3-FIFO would
 * evict next (see Note [S3-FIFO moves on erase]). (4) **Pinned tensors leave their
 * queue** and return at the head of the same queue on `on_unpin`, keeping their frequency
 * (accesses while pinned count); the ratios count only unpinned tensors.
 *
 * Note [S3-FIFO moves on erase]
 * -----------------------------
 * Rationale: S3-FIFO moves objects while it evicts, but propose may not change state, and
 * the engine erases victims later, possibly with frees in between. Approach: propose
 * runs the eviction loop on a scratch queue (M's real list followed by the entries it
 * would append), reusing a buffer, so it allocates nothing in a steady state. on_erase(x)
 * first asks whether x is the next victim: from S it must be the first S tensor with
 * frequency <= 1 (tracked by a pointer that only moves forward); from M, the first M
 * tensor with the lowest frequency (a pointer tracks the first with frequency 0; the
 * per-frequency counts give the lowest). If it is, the moves that precede x are applied
 * (S tensors promoted; for M, every frequency lowered by x's and the tensors before x
 * reinserted at the head), x is evicted, and an S victim's id enters G, which is trimmed
 * to `ghost_ratio`. Otherwise (a free, an out-of-order victim) x is only unlinked. Erasing
 * the proposed victims in order yields exactly the paper's state.
 * Limitations: deciding that an M tensor is the victim walks M when no M tensor has
 * frequency 0 (then the erased tensor must also have the lowest frequency); the walk is
 * the work the eviction itself would do. A victim erased out of order moves nothing, and
 * freeing exactly the next victim applies its moves (the policy cannot tell the two
 * apart). The tests compare propose + in-order erases with a direct implementation of
 * Algorithm 1 on random traces.
 *
 * @see J. Yang, Y. Zhang, Z. Qiu, Y. Yue, K. V. Rashmi, "FIFO queues are all you need for cache eviction", SOSP 2023
 * @see libCacheSim `libCacheSim/cache/eviction/S3FIFO.c` (the authors' implementation)
 * @see policies/s3fifo/README.md
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include <tierpool/export.hpp>
#include <tierpool/policies/policy_base.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/types.hpp>

namespace tierpool {
namespace policies::detail {
/// @brief s3fifo_policy's slab node (outside the class: the CRTP base needs it complete).
struct s3fifo_node {
  enum class queue : std::uint8_t { small, main, ghost };
  tensor_id id{};
  std::size_t bytes{0};
  slab_slot prev{no_slot};  // towards the tail (oldest, evicted first)
  slab_slot next{no_slot};  // towards the head (newest); free-list link for free slots
  queue q{queue::small};    // the queue it belongs to (also while pinned)
  std::uint8_t freq{0};
  bool pinned{false};
  bool live{false};
};
}  // namespace policies::detail

/**
 * @brief S3-FIFO eviction (small, main and ghost FIFO queues) over the tensors of one tier.
 *
 * Complexity: on_access, on_pin, on_unpin O(1) amortized (one hash lookup; the scan
 * pointers only move forward), no allocation; on_erase O(1) amortized (the moves it
 * applies are paid by the accesses that raised the frequencies), plus the walk described
 * in the Note; on_insert O(1) amortized (one hash node, a ghost reuses its slot); propose
 * O(victims + tensors moved in the simulation), allocating only to grow its scratch.
 * Thread safety: externally synchronized (called under the tier's lock); propose writes a
 * scratch buffer, so even two const calls must not overlap.
 * Ownership: a value; copying copies the whole state.
 *
 * @code
 * tierpool::s3fifo_policy s3{{.small_ratio = 0.1}};
 * s3.on_insert({.id = tierpool::tensor_id{1}, .bytes = 100});
 * tierpool::eviction_proposal out;
 * s3.propose({.bytes_needed = 100}, out);   // out.victims == {tensor_id{1}}
 * @endcode
 */
class TIERPOOL_EXPORT s3fifo_policy : public policies::detail::slab_policy<s3fifo_policy, policies::detail::s3fifo_node> {
 public:
  /// @brief Configuration (registry parameters of the same names).
  struct config {
    /// S's share of the held bytes at or above which S is evicted from, in (0, 1).
    double small_ratio{0.1};
    /// G's size as a fraction of the held bytes (bytes of the remembered tensors), in
    /// [0, 16]; the paper sizes G like M, i.e. 1 - small_ratio.
    double ghost_ratio{0.9};
  };

  /// @brief Frequencies saturate here (the paper's 2-bit counter).
  static constexpr std::uint8_t max_frequency = 3;

  /// @brief An empty policy with the paper's parameters.
  s3fifo_policy() noexcept;
  /**
   * @brief An empty policy.
   * @param cfg Configuration.
   * @throws tierpool::logic_error if `small_ratio` is not in (0, 1) or `ghost_ratio` not
   *         in [0, 16]
   */
  explicit s3fifo_policy(config cfg);

  // Hooks (the contract, parameters, exceptions: tierpool::eviction_policy):
  // - on_insert: a tensor became resident with frequency 0: into M when its id is in G, else
  //   into S. A known resident id is updated and counts as an access.
  // - on_access: a hit: frequency + 1, capped at 3; adopts `v.bytes` and `v.pinned`. Unknown
  //   id: no-op.
  // - on_erase: forget a resident tensor; apply S3-FIFO's moves when it is the next victim
  //   (Note [S3-FIFO moves on erase]). Unknown or ghost id: no-op.
  // - propose: append the tensors S3-FIFO would evict, in order, until their bytes cover
  //   `req.bytes_needed` (nothing when it is 0), or all unpinned ones when they cannot.
  // - on_pin, on_unpin (an unpinned tensor returns at the head of its queue), size,
  //   evictable_count, pinned_count, contains (ghosts excluded), validate: slab_policy.
  void on_insert(tensor_view const& v) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;

  /// @brief Unpinned tensors in S.
  [[nodiscard]] std::size_t small_count() const noexcept { return small_.count; }
  /// @brief Unpinned tensors in M.
  [[nodiscard]] std::size_t main_count() const noexcept { return main_.count; }
  /// @brief Ghost ids in G.
  [[nodiscard]] std::size_t ghost_count() const noexcept { return ghost_.count; }
  /// @brief True when `id` is resident in M.
  [[nodiscard]] bool in_main(tensor_id id) const noexcept;
  /// @brief Frequency of a resident tensor (0 when unknown).
  [[nodiscard]] std::uint8_t frequency(tensor_id id) const noexcept;

 private:
  friend slab_policy;
  static constexpr std::string_view policy_name = "s3fifo";  // name()
  using queue = node::queue;
  using list = policies::detail::slab_list;

  void link_back(list& l, index_t i) noexcept;
  void unlink(list& l, index_t i) noexcept;
  [[nodiscard]] bool evict_from_small(list const& small, list const& main) const noexcept;
  [[nodiscard]] index_t first_cold(index_t from) const noexcept;   // first S tensor with freq <= 1
  [[nodiscard]] index_t first_zero(index_t from) const noexcept;   // first M tensor with freq 0
  [[nodiscard]] index_t first_with_freq(index_t from, std::uint8_t f) const noexcept;
  [[nodiscard]] std::uint8_t main_min_freq() const noexcept;
  [[nodiscard]] index_t next_victim(bool* promote_all) const noexcept;
  void enter(index_t i) noexcept;   // at the head of its queue
  void leave(index_t i) noexcept;   // out of its queue, nothing else moves
  void promote(index_t i) noexcept; // S tail -> M head, frequency kept
  void commit_evict(index_t i, bool promote_all) noexcept;
  void trim_ghosts() noexcept;

  void access(index_t i, tensor_view const& v) noexcept;  // on_access of a resident tensor
  void erase(index_t i) noexcept;                          // on_erase of a resident tensor

  // The order (Note [One base for the slab policies]).
  [[nodiscard]] static bool is_ghost_node(node const& n) noexcept { return n.q == queue::ghost; }
  void order_leave(index_t i) noexcept { leave(i); }
  void order_enter(index_t i) noexcept { enter(i); }
  void order_resize(index_t i, std::size_t from, std::size_t to) noexcept
  {
    (nodes_[i].q == queue::small ? small_ : main_).resize(from, to);
  }
  [[nodiscard]] std::size_t order_count() const noexcept { return small_.count + main_.count; }
  [[nodiscard]] bool order_ok(std::size_t& held) const noexcept;

  config cfg_;
  list small_;   // S, unpinned
  list main_;    // M, unpinned
  list ghost_;   // G: ids of tensors evicted from S
  index_t s_cold_{npos};  // first tensor of S (from the tail) with freq <= 1, npos if none
  index_t m_zero_{npos};  // first tensor of M (from the tail) with freq 0, npos if none
  std::array<std::size_t, max_frequency + 1> m_freq_count_{};  // M tensors per frequency
  // propose's simulated M tail: (slab position, simulated frequency) appended at M's head.
  mutable std::vector<std::pair<index_t, std::uint8_t>> scratch_;
};

namespace policies {
/// @brief Register `"s3fifo"` (register_builtin_policies() calls it). @throws tierpool::logic_error if taken
TIERPOOL_EXPORT void register_s3fifo(policy_registry& registry);
}  // namespace policies

}  // namespace tierpool

static_assert(tierpool::eviction_policy<tierpool::s3fifo_policy>, "s3fifo_policy must satisfy tierpool::eviction_policy");

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file plan_predictor.hpp
 * @brief `plan` and `oracle`: the forecasts behind the pool's transfer planner
 *        (runtime/migration/transfer_planner.cpp). `plan` learns the repeating schedule of
 *        an iteration; `oracle` reads the program's own schedule (pool_options::schedule:
 *        `tierpool replay` gives the trace's true future).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <tierpool/detail/flat_table.hpp>
#include <tierpool/export.hpp>
#include <tierpool/prefetch.hpp>

namespace tierpool {

/**
 * @brief The `plan` forecast: learns the schedule of a repeating computation and forecasts
 *        the accesses ahead and each tensor's next use.
 *
 * Algorithm (docs/chapters/policies.md, "The transfer planner"):
 * - **Names that survive an iteration.** A training step frees its activations and
 *   allocates new ones with new ids. Every tensor gets a *birth key* when it is allocated:
 *   a hash of the key of the access before its birth, how many tensors were born since that
 *   access, and its size. The next iteration's activation is born at the same point, so it
 *   gets the same key; a persistent tensor keeps its own. The first iteration's are born
 *   after other accesses (the initialisation), so a young tensor that matches its
 *   counterpart one period back in shape takes that one's key (Note [Aligning the first
 *   iterations], plan_predictor.cpp).
 * - **The period.** Each device access is a token (key, write or not, stream). A hash of the
 *   last 8 tokens (a young access counted by its shape) is looked up where it was last
 *   seen: the distance is a candidate period p. The forecast holds (state `planned`) once
 *   16 tokens in a row equal the token p earlier (or align with it); two mispredictions
 *   among the last 32 accesses drop it (state `fallback`, one more relearn) and detection
 *   starts over.
 * - **The forecast.** While planned, the accesses ahead are the ones one period back
 *   (upcoming()), mapped from keys to the live tensors of those keys; the next use of the
 *   tensor just accessed is the next position of its key (next_use_of_last()). A key whose
 *   tensor is reborn each period (an activation) has no use past the period's end: its
 *   forecast is no_next_use.
 *
 * Cost: O(1) hash lookups per access and allocation; upcoming() O(window). Memory: the
 * history ring (48 bytes per access remembered), maps over live tensors and over keys
 * seen (bounded by 4 x history).
 * Thread safety: externally synchronized (the pool's prediction lock).
 */
class TIERPOOL_EXPORT plan_predictor {
 public:
  /// @brief Where the forecast stands.
  enum class phase : std::uint8_t {
    learning,  ///< no period yet: the pool demand-fetches
    planned,   ///< a period holds: the planner prefetches from it
    fallback,  ///< the schedule changed: demand fetching while it relearns
  };
  /// @brief Parameters, with their defaults.
  struct config {
    std::uint64_t budget_bytes{0};  ///< prefetched and not yet used at most; 0: a quarter of the device tier
    std::uint32_t window{1024};     ///< accesses ahead the planner looks at, >= 1
    std::uint32_t history{1U << 16U};  ///< accesses remembered, >= 64; a longer period is never learned
    bool oracle{false};             ///< `oracle`: the program's schedule, not a learned one
    bool prefetch{true};            ///< issue planned prefetches
    bool write_back{true};          ///< write dirty tensors back early
    bool clean_ahead{false};        ///< also write back the dirty ones among the policy's next victims
    bool stream_reuse{true};        ///< a planned copy may reuse room vacated behind user work, in stream order
    /// A planned prefetch that has to evict asks the device tier's policy for this many times
    /// the room it needs and evicts, of those victims, the ones the forecast needs last
    /// (Note [Prefetch victims the forecast needs last], transfer_planner.cpp); 1: the
    /// policy's order alone. 1..64.
    std::uint32_t victim_sample{8};
    /// A prefetch evicts only what the demand schedule would evict anyway (Note [Conservative
    /// prefetches], pool_impl.cpp): no more bytes moved than without prefetching.
    bool conservative{false};
    /// The keep window (Note [The keep window], transfer_planner.cpp): evictions in the
    /// device tier pass over tensors the forecast needs before the horizon.
    bool keep{true};
    /// Copy-ins at the latest start (Note [Copy-ins at the latest start], pool_impl.cpp): a
    /// prefetch that has to evict waits for the step where the compute left before its use
    /// no longer covers the copies queued before it. Where the backend knows device times.
    bool timing{true};
    /// `plan` only: measure whether prefetching pays (Note [Measuring whether prefetching
    /// pays], pool_impl.cpp): after 4 planned periods with prefetches, a trial of 3 periods
    /// without; the faster mode stays, and the other is tried again after 16, 32, ...
    /// periods.
    bool probe{true};
  };

  /// @brief @throws tierpool::logic_error for a window of 0 or a history under 64
  explicit plan_predictor(config c);

  // ---- prefetch_predictor ----
  /// @brief Record a device access (the pool calls it after the lease is made). `out` stays
  ///        empty: the planner, not the pool's generic path, issues the prefetches.
  void on_access(access_view const& a, prefetch_plan& out);
  /// @brief Forget a freed tensor.
  void on_free(tensor_id id) noexcept;
  /// @brief "plan" or "oracle".
  [[nodiscard]] std::string_view name() const noexcept { return cfg_.oracle ? "oracle" : "plan"; }

  // ---- the planner's side ----
  /// @brief A tensor was allocated (gives it its birth key).
  void on_allocate(tensor_id id, std::size_t bytes);
  /// @brief The phase now.
  [[nodiscard]] phase state() const noexcept { return state_; }
  /// @brief Position of the latest access (the count of accesses before it).
  [[nodiscard]] std::uint64_t position() const noexcept { return pos_ == 0 ? 0 : pos_ - 1; }
  /// @brief The device compute (ns) before the access at `position` (its access_view::compute),
  ///        measured after the access was told: where device times are known only once the
  ///        work has run (Note [Device times measured with events], device_timer.cpp). A
  ///        position not remembered any more, or not recorded yet, is ignored.
  void set_compute(std::uint64_t position, tick ns) noexcept;
  /// @brief The period learned (0: none).
  [[nodiscard]] std::uint64_t period() const noexcept { return period_; }
  /// @brief The device compute (ns) of the last period's accesses (each access_view::compute
  ///        or set_compute), 0 without a period.
  [[nodiscard]] tick period_compute() const noexcept;
  /// @brief Planned: the forecast next use (a position) of the tensor of the latest access;
  ///        no_next_use when the forecast says never; empty when not planned.
  [[nodiscard]] std::optional<tick> next_use_of_last() const noexcept { return last_next_; }
  /// @brief Planned: the forecast next use (a position) of `id` after the access about to
  ///        be recorded, if the forecast has `id` there (what next_use_of_last() will say
  ///        once it is recorded); no_next_use when never; empty when not planned or when
  ///        the forecast has another tensor there. The pool gives it before the acquire,
  ///        so that the policies see it with the access (Note [The forecast before the
  ///        access], pool_impl.cpp).
  [[nodiscard]] std::optional<tick> next_use_if_next(tensor_id id) const noexcept;
  /// @brief Planned: the accesses after the latest one, in order, at most out.size() of
  ///        them and at most `window` ahead; a tensor not born yet has the id kUnbornTensor |
  ///        (its key's low bits), so that its room is counted. `skip`: leave out the first
  ///        `skip` of them (the pool reads the schedule in chunks). @return how many
  [[nodiscard]] std::size_t upcoming(std::span<planned_access> out, std::size_t skip = 0) const noexcept;
  /// @brief Times the forecast was dropped and relearned.
  [[nodiscard]] std::uint64_t relearns() const noexcept { return relearns_; }
  /// @brief Accesses the forecast predicted right / wrong while planned.
  [[nodiscard]] std::uint64_t predicted() const noexcept { return hits_; }
  /// @brief Accesses the forecast predicted wrong while planned.
  [[nodiscard]] std::uint64_t mispredicted() const noexcept { return misses_; }
  /// @brief Tensors that took the key of their counterpart one period back (Note [Aligning
  ///        the first iterations], plan_predictor.cpp).
  [[nodiscard]] std::uint64_t aligned() const noexcept { return aligned_; }
  /// @brief Keys it remembers the latest access of (bounded by 4 x history + 1).
  [[nodiscard]] std::size_t tracked_keys() const noexcept { return last_pos_.size(); }
  /// @brief The parameters it was made with.
  [[nodiscard]] config const& options() const noexcept { return cfg_; }

 private:
  struct entry {
    std::uint64_t token{0};      // hash of key and access
    std::uint64_t key{0};
    std::uint64_t access{0};     // hash of write or not and stream
    std::size_t bytes{0};
    std::uint32_t next_same{0};  // distance to the next access of the same key (0: none yet)
    bool discard{false};         // write_discard
    bool next_reborn{false};     // the next access of the key was of another tensor (a rebirth)
    bool young{false};           // within 8 accesses of its tensor's first (counts by shape in windows)
    std::uint32_t compute{0};    // access_view::compute, ns (saturated)
  };
  [[nodiscard]] entry const& at(std::uint64_t p) const noexcept { return ring_[p % ring_.size()]; }
  [[nodiscard]] entry& at(std::uint64_t p) noexcept { return ring_[p % ring_.size()]; }
  void forecast_last(std::uint64_t key, tensor_id id) noexcept;
  /// The forecast next use after an access of `key` at position i (planned, i >= period).
  [[nodiscard]] std::optional<tick> forecast_at(std::uint64_t key, std::uint64_t i) const noexcept;

  config cfg_;
  std::vector<entry> ring_;
  std::uint64_t pos_{0};  // accesses recorded
  struct tensor_info {
    std::uint64_t key{0};
    std::size_t bytes{0};
    std::uint64_t first_pos{0};  // position of its first access (~0: none yet)
    bool before_any{false};      // allocated before the first access (or before the planner saw it): never young
  };
  /// The tensor `raw` takes `key`, its counterpart's one period back (Note [Aligning the
  /// first iterations], plan_predictor.cpp).
  void align(std::uint64_t raw, tensor_info& t, std::uint64_t key);
  /// The forecast starts to hold before position i: align the live young tensors accessed
  /// in the period before it.
  void align_back(std::uint64_t i);
  std::unordered_map<std::uint64_t, tensor_info> key_of_;       // live tensor -> birth key, size
  /// Key -> value in one flat array (detail::flat_table): looked up once per access ahead
  /// on every planner step. A key of ~0 (the empty marker) is stored as ~0 - 1.
  class key_table {
   public:
    [[nodiscard]] std::uint64_t const* find(std::uint64_t k) const noexcept
    {
      cell const* c = table_.find(fix(k));
      return c == nullptr ? nullptr : &c->value;
    }
    [[nodiscard]] bool contains(std::uint64_t k) const noexcept { return find(k) != nullptr; }
    void set(std::uint64_t k, std::uint64_t v)
    {
      auto const [c, added] = table_.find_or_claim(fix(k));
      (void)added;
      c->key = fix(k);
      c->value = v;
    }
    /// Remove k if it maps to v.
    void erase_if(std::uint64_t k, std::uint64_t v) noexcept
    {
      cell const* c = table_.find(fix(k));
      if (c != nullptr && c->value == v) { (void)table_.erase(fix(k)); }
    }

   private:
    static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
    [[nodiscard]] static std::uint64_t fix(std::uint64_t k) noexcept { return k == kEmpty ? k - 1 : k; }
    struct cell {
      std::uint64_t key{kEmpty};
      std::uint64_t value{0};
    };
    struct traits {
      using cell = key_table::cell;
      static constexpr unsigned run_bits = 0;
      static constexpr std::size_t min_cells = 64;
      static bool empty(cell const& c) noexcept { return c.key == kEmpty; }
      static std::uint64_t key(cell const& c) noexcept { return c.key; }
      static void clear(cell& c) noexcept { c.key = kEmpty; }
    };
    detail::flat_table<traits> table_;
  };
  key_table live_of_;  // birth key -> newest live tensor of it
  std::unordered_map<std::uint64_t, std::uint64_t> last_pos_;   // key -> position of its latest access
  std::unordered_map<std::uint64_t, std::uint64_t> last_id_;    // key -> tensor of its latest access
  std::unordered_map<std::uint64_t, bool> reborn_;              // key -> its tensor changes between periods
  std::unordered_map<std::uint64_t, std::uint64_t> windows_;    // hash of 8 tokens -> where they ended
  std::unordered_map<std::uint64_t, std::uint64_t> alias_;      // birth key -> the key its tensor was aligned to
  std::uint64_t last_key_{0};
  std::uint64_t born_since_{0};
  std::uint64_t period_{0};
  std::uint64_t streak_{0};
  std::uint64_t exact_{0};    // exact matches since the candidate period was found
  std::uint64_t aligned_{0};  // tensors aligned with their counterpart one period back
  std::uint64_t recent_miss_mask_{0};  // bit i: the access i back was mispredicted (planned only)
  std::optional<tick> last_next_{};
  phase state_{phase::learning};
  std::uint64_t relearns_{0};
  std::uint64_t hits_{0};
  std::uint64_t misses_{0};
};

static_assert(prefetch_predictor<plan_predictor>);

/// @brief Lower-case name of a phase ("learning", "planned", "fallback").
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(plan_predictor::phase p) noexcept;

}  // namespace tierpool

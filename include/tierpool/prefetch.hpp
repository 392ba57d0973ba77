// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file prefetch.hpp
 * @brief Prefetch predictors: what a predictor sees (`access_view`), how it answers
 *        (`prefetch_plan`), the `prefetch_predictor` concept and the type-erased
 *        `any_prefetch_predictor` a pool holds. Predictors are registered and created by
 *        name like eviction policies (policy_registry::add_predictor / create_predictor).
 *
 * @defgroup prefetch Prefetch predictors
 * @{
 *
 * A pool with a predictor (pool_options::prefetch, `TIERPOOL_PREFETCH`) tells it about
 * every device acquire, after the lease is made; the predictor answers with the tensors
 * it expects next, nearest first, and the pool prefetches each into the device tier
 * (pool::prefetch: never blocking the host, dropped when no room can be made without
 * waiting). Predictions of tensors already resident, freed or unknown cost nothing.
 */
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include <tierpool/types.hpp>

namespace tierpool {

/// @brief One access, as a predictor sees it.
struct access_view {
  tensor_id id{};             ///< the tensor acquired
  std::size_t bytes{0};       ///< its size
  bool write{false};          ///< the lease may write it
  std::uint64_t sequence{0};  ///< number of this access among the pool's device acquires (0, 1, ...)
  std::uint64_t stream{0};    ///< the stream it was acquired on (stream_handle's value)
  bool discard{false};        ///< access_mode::write_discard: the old bytes are not read
  /// Device compute (ns) queued on its stream since that stream's access before, where the
  /// backend knows device times ahead (the sim's virtual clock); else 0.
  tick compute{0};
};

/// @brief `planned_access::id` of an access to a tensor not allocated yet: the bit is set
///        over a value that tells such tensors apart (the planner counts their room).
inline constexpr std::uint64_t kUnbornTensor = std::uint64_t{1} << 63U;

/// @brief One access of a forecast schedule (the transfer planner's input).
struct planned_access {
  tensor_id id{};        ///< the tensor (kUnbornTensor | n: one not allocated yet, to be given room)
  std::size_t bytes{0};  ///< its size
  tick when{0};          ///< its position, in the units the schedule counts in
  bool discard{false};   ///< write_discard: needs room, not its bytes (nothing to prefetch)
  /// The tensor's last access as far as the schedule knows (it is freed, or never used
  /// again, after it): the planner counts its room as coming back there.
  bool last{false};
  /// Device compute (ns) between the schedule's access before this one and this one, on
  /// this access's stream, when the schedule knows it (0: unknown): the planner's clock for
  /// issuing a copy-in as late as still completes before its use.
  tick compute{0};
};

/**
 * @brief A schedule the program knows: the accesses ahead of where it is now. The `oracle`
 *        planner (pool_options::prefetch = "oracle") prefetches from it; `tierpool replay`
 *        gives the trace's true future. Positions are the units of pool::set_next_use,
 *        which the program keeps giving: the planner reads victims' next uses from there.
 *
 * Thread safety: called under the pool's prediction lock, from the thread that made the
 * latest device acquire.
 */
class schedule_source {
 public:
  schedule_source() = default;
  schedule_source(schedule_source const&) = delete;
  schedule_source& operator=(schedule_source const&) = delete;
  virtual ~schedule_source() = default;
  /// @brief Fill `out` with the next accesses after the current position, nearest first, at
  ///        most out.size(). @return how many
  virtual std::size_t upcoming(std::span<planned_access> out) noexcept = 0;
};

/**
 * @brief A predictor's answer: tensors to prefetch, nearest use first.
 *
 * The caller owns it and reuses it across calls (the vector keeps its capacity), clears
 * it before each call, and reads it once the predictor returns.
 */
struct prefetch_plan {
  std::vector<tensor_id> tensors;  ///< nearest first, no duplicates
  std::size_t bytes{0};            ///< sum of their bytes as the predictor knows them

  /// @brief Append a tensor. @throws std::bad_alloc only when the vector must grow
  void add(tensor_id id, std::size_t n)
  {
    tensors.push_back(id);
    bytes = n > std::numeric_limits<std::size_t>::max() - bytes ? std::numeric_limits<std::size_t>::max() : bytes + n;
  }
  /// @brief Empty the plan, keeping the capacity.
  void clear() noexcept
  {
    tensors.clear();
    bytes = 0;
  }
};

/**
 * @brief A prefetch predictor: learns from accesses, predicts the next ones.
 *
 * - `on_access(a, out)`: the access `a` happened; append to `out` (passed empty) the
 *   tensors to prefetch now. May throw only std::bad_alloc. The pool tells every device
 *   acquire, and one that failed with out_of_memory too (the access the program asked
 *   for; Note [A failed acquire is still a step of the schedule], pool.cpp).
 * - `on_free(id)`: the tensor was freed (forget it). noexcept.
 * - `name()`: the registry name.
 *
 * Thread safety: externally synchronized (the pool calls it under its own lock).
 * Determinism: the same accesses give the same plans.
 */
template <class P>
concept prefetch_predictor = std::move_constructible<P> && std::copy_constructible<P> &&
                             requires(P& p, P const& cp, access_view const& a, prefetch_plan& out, tensor_id id) {
                               { p.on_access(a, out) } -> std::same_as<void>;
                               { p.on_free(id) } noexcept;
                               { cp.name() } noexcept -> std::convertible_to<std::string_view>;
                             };

/**
 * @brief Any prefetch predictor, type-erased, with value semantics (copying copies its
 *        state). A moved-from object is empty.
 *
 * Thread safety: externally synchronized, like the predictor it holds.
 */
class any_prefetch_predictor {
 public:
  /// @brief Take (a copy of) a predictor. @throws std::bad_alloc
  template <prefetch_predictor P>
    requires(!std::same_as<std::remove_cvref_t<P>, any_prefetch_predictor>)
  explicit any_prefetch_predictor(P p) : self_(new P(std::move(p))), vt_(&vtable_for<P>)
  {
  }
  /// @brief Copy the held predictor. @throws std::bad_alloc
  any_prefetch_predictor(any_prefetch_predictor const& o) : self_(o.vt_ ? o.vt_->clone(o.self_) : nullptr), vt_(o.vt_) {}
  /// @brief Take the other's predictor.
  any_prefetch_predictor(any_prefetch_predictor&& o) noexcept
    : self_(std::exchange(o.self_, nullptr)), vt_(std::exchange(o.vt_, nullptr))
  {
  }
  /// @brief Copy-and-swap. @throws std::bad_alloc
  any_prefetch_predictor& operator=(any_prefetch_predictor const& o)
  {
    if (this != &o) {
      any_prefetch_predictor t(o);
      swap(t);
    }
    return *this;
  }
  /// @brief Take the other's predictor.
  any_prefetch_predictor& operator=(any_prefetch_predictor&& o) noexcept
  {
    any_prefetch_predictor t(std::move(o));
    swap(t);
    return *this;
  }
  ~any_prefetch_predictor()
  {
    if (vt_ != nullptr) { vt_->destroy(self_); }
  }
  /// @brief Exchange the held predictors.
  void swap(any_prefetch_predictor& o) noexcept
  {
    std::swap(self_, o.self_);
    std::swap(vt_, o.vt_);
  }

  /// @brief Clear `out`, then let the predictor fill it. Precondition: has_value().
  void on_access(access_view const& a, prefetch_plan& out)
  {
    out.clear();
    vt_->on_access(self_, a, out);
  }
  /// @brief Forward on_free. Precondition: has_value().
  void on_free(tensor_id id) noexcept { vt_->on_free(self_, id); }
  /// @brief The held predictor's name. Precondition: has_value().
  [[nodiscard]] std::string_view name() const noexcept { return vt_->name(self_); }
  /// @brief False only for a moved-from object.
  [[nodiscard]] bool has_value() const noexcept { return vt_ != nullptr; }
  /// @brief The held predictor if it is a `P`, else nullptr.
  template <class P>
  [[nodiscard]] P* target() noexcept
  {
    return (vt_ != nullptr && vt_->type() == typeid(P)) ? static_cast<P*>(self_) : nullptr;
  }

 private:
  struct vtable {
    void* (*clone)(void const*);
    void (*destroy)(void*) noexcept;
    void (*on_access)(void*, access_view const&, prefetch_plan&);
    void (*on_free)(void*, tensor_id) noexcept;
    std::string_view (*name)(void const*) noexcept;
    std::type_info const& (*type)() noexcept;
  };
  template <class P>
  static constexpr vtable vtable_for{
    [](void const* s) -> void* { return new P(*static_cast<P const*>(s)); },
    [](void* s) noexcept { delete static_cast<P*>(s); },
    [](void* s, access_view const& a, prefetch_plan& out) { static_cast<P*>(s)->on_access(a, out); },
    [](void* s, tensor_id id) noexcept { static_cast<P*>(s)->on_free(id); },
    [](void const* s) noexcept -> std::string_view { return static_cast<P const*>(s)->name(); },
    []() noexcept -> std::type_info const& { return typeid(P); },
  };

  void* self_;
  vtable const* vt_;
};

static_assert(prefetch_predictor<any_prefetch_predictor>);

}  // namespace tierpool

/** @} */

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// mru_policy.cpp — a tierpool policy plug-in: "mru", most recently used first, built as a
// shared object (libtierpool_mru_policy.so) and loaded at run time, with no change to
// tierpool or to the program:
//
//   TIERPOOL_POLICY=./libtierpool_mru_policy.so:mru:spare=1 ./my_training_program
//   pool_options{.policy = "./libtierpool_mru_policy.so:mru"}
//   tierpool policies --plugin ./libtierpool_mru_policy.so
//
// Why MRU: a loop over more tensors than the tier holds (one training iteration that does
// not fit) makes LRU evict exactly the tensor needed next, so every access misses; MRU
// keeps the oldest ones and misses only what does not fit. See README.md.
#include <tierpool/policy.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string_view>
#include <utility>

namespace mru_example {

/**
 * @brief Evicts the most recently used unpinned tensor first.
 *
 * `spare` most recent tensors are proposed only when the others cannot cover a request
 * (the tensor just used is usually about to be used again by the same kernel sequence).
 * Complexity: O(log n) per event (ordered containers, deterministic); propose
 * O(log n + victims + spare). Thread safety: externally synchronized, as every policy.
 */
class mru_policy {
 public:
  struct config {
    std::uint64_t spare{1};  ///< most recent tensors proposed last
  };

  mru_policy() = default;
  explicit mru_policy(config cfg) : cfg_(cfg) {}

  void on_insert(tierpool::tensor_view const& v) noexcept { use(v); }
  void on_access(tierpool::tensor_view const& v) noexcept
  {
    if (tensors_.find(v.id) != tensors_.end()) { use(v); }
  }
  void on_erase(tierpool::tensor_id id) noexcept
  {
    auto const it = tensors_.find(id);
    if (it == tensors_.end()) { return; }
    order_.erase({it->second.seq, id});
    tensors_.erase(it);
  }
  void on_pin(tierpool::tensor_id id) noexcept { set_pinned(id, true); }
  void on_unpin(tierpool::tensor_id id) noexcept { set_pinned(id, false); }

  void propose(tierpool::eviction_request const& req, tierpool::eviction_proposal& out) const
  {
    if (req.bytes_needed == 0) { return; }
    // order_ is oldest first; walk it from the newest end, keeping `spare` for last.
    std::uint64_t skipped = 0;
    auto const spare_end = order_.rbegin();
    auto it = order_.rbegin();
    for (; it != order_.rend() && skipped < cfg_.spare; ++it) {
      if (!tensors_.at(it->second).pinned) { ++skipped; }
    }
    auto take = [&](auto first, auto last) {
      for (; first != last && out.bytes < req.bytes_needed; ++first) {
        state const& s = tensors_.at(first->second);
        if (!s.pinned) { out.add(first->second, s.bytes); }
      }
    };
    take(it, order_.rend());  // the others, newest first
    take(spare_end, it);      // then the spared ones, if still short
  }

  [[nodiscard]] std::string_view name() const noexcept { return "mru"; }

 private:
  struct state {
    std::uint64_t seq;
    std::size_t bytes;
    bool pinned;
  };

  void use(tierpool::tensor_view const& v) noexcept
  {
    on_erase(v.id);
    ++clock_;
    tensors_.emplace(v.id, state{clock_, v.bytes, v.pinned});  // hooks are noexcept: OOM terminates
    order_.emplace(clock_, v.id);
  }
  void set_pinned(tierpool::tensor_id id, bool pinned) noexcept
  {
    if (auto const it = tensors_.find(id); it != tensors_.end()) { it->second.pinned = pinned; }
  }

  config cfg_{};
  std::uint64_t clock_{0};
  std::map<tierpool::tensor_id, state> tensors_;               // ordered containers: deterministic
  std::set<std::pair<std::uint64_t, tierpool::tensor_id>> order_;  // (last use, id), oldest first
};
static_assert(tierpool::eviction_policy<mru_policy>);

}  // namespace mru_example

// The plug-in's entry points: tierpool_policy_abi_version() (checked by the loader) and
// tierpool_register_policies(), whose body follows.
TIERPOOL_POLICY_PLUGIN(registry)
{
  registry.add("mru", "Most recently used first (example plug-in): the right victim for loops larger than the tier",
               {{"spare", tierpool::parameter_type::unsigned_integer, "1",
                 "most recent tensors proposed only when the others cannot cover a request"}},
               [](tierpool::policy_params const& p) {
                 return tierpool::any_eviction_policy{mru_example::mru_policy{{.spare = p.get<std::uint64_t>("spare")}}};
               });
}

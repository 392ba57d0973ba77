// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// py_policy.hpp: eviction policies and prefetch predictors written in Python
// (tierpool.EvictionPolicy, tierpool.Predictor; docs/chapters/python_policies.md).
//
// A `py_policy` is a C++ tierpool::eviction_policy that holds a Python object and calls
// its hooks with the GIL held; a `py_predictor` does the same for a prefetch predictor.
// A `policy_host` is what a Pool or a replay call owns: a policy_registry (the built-ins,
// the policies registered with tierpool.register_policy, and the classes given directly)
// and a `policy_failures` log where a failing Python policy leaves its error for the next
// call on that pool to raise.
//
// Note [A Python policy that fails falls back to lru]
// ---------------------------------------------------
// Rationale: the hooks are noexcept and called under a tier's lock, deep inside an
// allocate or an acquire that must not fail because a user's policy did: a half-done
// eviction cannot be unwound from there. Yet the failure must not be silent.
// Approach: the adapter feeds a shadow tierpool::lru_policy from every hook, before
// calling Python, so the shadow always knows the tier's tensors, their pins and their
// order. When Python raises, or answers something the adapter refuses (not a list, an
// unknown, pinned or repeated id, a proposal that does not cover a coverable request),
// the adapter records the error in the pool's policy_failures, marks itself failed and
// from then on answers with the shadow only: the tier behaves as an `lru` tier would
// have from the start. The binding-level Pool checks policy_failures at the start of each
// method (one relaxed atomic load) and raises the recorded error once, as a
// tierpool.PolicyError whose __cause__ is the Python exception.
// Limitations: the call that triggered the failure completes (with lru's answer); the
// error surfaces on the next call on the pool. A replay raises after its grid is done.
//
// Note [Python policies and the GIL]
// ----------------------------------
// Every hook takes the GIL (gil_scoped_acquire; re-entrant on a thread that holds it)
// while the engine holds the tier's lock. A thread that holds the GIL and waits for that
// lock would deadlock with it, so every binding that may take a tier's lock releases the
// GIL first (allocate, acquire, free, release, stats...), and replay releases it for its
// whole grid (run_grid's worker threads take it per hook). A Python policy must not call
// its pool from a hook.
#pragma once

#include <nanobind/nanobind.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <string>
#include <unordered_map>
#include <vector>

#include <tierpool/policies/lru_policy.hpp>
#include <tierpool/policy.hpp>
#include <tierpool/prefetch.hpp>

namespace tierpool::python {

namespace nb = nanobind;

/**
 * @brief Something that holds Python objects for C++ (an adapter's policy object, a
 *        registry's factory, a recorded exception). See Note [Python objects at exit].
 *
 * Derived destructors call forget() first, with the GIL held.
 */
class py_holder {
 public:
  py_holder();
  py_holder(py_holder const&) = delete;
  py_holder& operator=(py_holder const&) = delete;
  virtual ~py_holder();
  /// Drop every Python reference (GIL held). Afterwards the holder acts as if empty.
  virtual void detach() noexcept = 0;

 protected:
  void forget() noexcept;  // leave the list of live holders (idempotent)

 private:
  friend void detach_all_python_objects() noexcept;
  bool listed_{true};
  bool detached_{false};
};

/**
 * @brief Make every live holder drop its Python references (GIL held). Called at
 *        interpreter exit (atexit in tierpool/_policy.py).
 *
 * Note [Python objects at exit]
 * -----------------------------
 * Rationale: a Pool made at module level whose policy class is defined in the same module
 * is a reference cycle the garbage collector cannot see (the module's dict -> the Pool
 * -> C++ -> the policy object -> its class -> its methods' globals -> the dict), so at
 * exit nothing frees it and nanobind reports leaked instances.
 * Approach: every C++ object that holds Python objects is a py_holder in one global
 * list; an atexit hook detaches them all while the interpreter still runs, which breaks
 * the cycles. A detached policy answers with its shadow lru; a detached predictor
 * predicts nothing.
 * Limitations: a pool still used by a thread that outlives atexit gets lru decisions.
 */
void detach_all_python_objects() noexcept;

/// One failure of a Python policy or predictor, waiting to be raised.
struct policy_failure {
  std::string message;  ///< names the policy, the tier, the hook and the bad value
  nb::object cause;     ///< the Python exception (None for a refused answer)
};

/**
 * @brief The failures of the Python policies of one pool (or one replay call).
 *
 * Thread safety: record() and pending() from any thread; raise_pending() and the
 * destructor with the GIL held (it owns Python objects).
 */
class policy_failures : public py_holder {
 public:
  policy_failures() = default;
  ~policy_failures() override;
  void detach() noexcept override;

  /// Record a failure on `tier` (caller holds the GIL: `cause` is a Python object).
  void record(std::uint32_t tier, bool predictor, std::string message, nb::object cause) noexcept;
  /// True when a failure waits to be raised (cheap: one relaxed load).
  [[nodiscard]] bool pending() const noexcept { return pending_.load(std::memory_order_relaxed); }
  /// Raise the oldest waiting failure as tierpool.PolicyError (throws nb::python_error),
  /// dropping the others (their counts stay). No-op when none waits. GIL held.
  void raise_pending();
  /// Fallbacks so far per tier (tier index -> count), and of predictors.
  [[nodiscard]] std::map<std::uint32_t, std::uint64_t> fallbacks() const;
  [[nodiscard]] std::uint64_t predictor_failures() const;

 private:
  mutable std::mutex mtx_;
  std::vector<policy_failure> waiting_;
  std::map<std::uint32_t, std::uint64_t> fallbacks_;
  std::uint64_t predictor_failures_{0};
  std::atomic<bool> pending_{false};
};

/// A reference to a Python object that is released with the GIL (shared by copies of a
/// registry's factories, which are copied and destroyed without it).
struct py_ref : py_holder {
  nb::object obj;
  explicit py_ref(nb::object o) : obj(std::move(o)) {}
  ~py_ref() override;
  void detach() noexcept override;
};

/**
 * @brief A tierpool::eviction_policy whose decisions a Python object makes (a subclass
 *        of tierpool.EvictionPolicy, or any object with its methods).
 *
 * Copying deep-copies the Python object (copy.deepcopy), so a copy has the same state
 * and is independent, as any_eviction_policy's value semantics ask. The adapter forwards
 * to Python only what changes something for a known tensor: an insert, an access, the
 * erase of a resident tensor, a pin or unpin transition; hooks the class does not
 * override are not called at all.
 *
 * Thread safety: externally synchronized (the tier's lock), like every policy; each hook
 * takes the GIL.
 */
class py_policy {
 public:
  /// Call `factory()` (GIL taken) and adapt what it returns. @throws tierpool::logic_error
  py_policy(std::shared_ptr<py_ref> factory, std::string name, std::shared_ptr<policy_failures> log);
  py_policy(py_policy const& other);
  py_policy(py_policy&& other) noexcept = default;
  py_policy& operator=(py_policy const&) = delete;
  py_policy& operator=(py_policy&&) = delete;
  ~py_policy();

  void on_insert(tensor_view const& v) noexcept;
  void on_access(tensor_view const& v) noexcept;
  void on_erase(tensor_id id) noexcept;
  void on_pin(tensor_id id) noexcept;
  void on_unpin(tensor_id id) noexcept;
  void propose(eviction_request const& req, eviction_proposal& out) const;
  [[nodiscard]] std::string_view name() const noexcept { return name_; }
  [[nodiscard]] bool validate() const noexcept { return shadow_.validate(); }

  /// True once the Python policy failed (the shadow lru answers).
  [[nodiscard]] bool failed() const noexcept { return failed_; }
  /// The Python object (GIL held by the caller).
  [[nodiscard]] nb::handle object() const noexcept;

 private:
  struct python_side;  // the object, its bound hooks, the reused view and request
  struct entry {
    std::size_t bytes;
    bool pinned;
    mutable std::uint32_t mark;  // propose's duplicate check
  };

  void track(tensor_view const& v, bool insert) noexcept;
  void set_pinned(entry& e, bool pinned) noexcept;
  void call_view(nb::object python_side::*method, tensor_view const& v, char const* hook) noexcept;
  void call_id(nb::object python_side::*method, tensor_id id, char const* hook) noexcept;
  void fail(char const* hook, std::string what, bool from_python) const noexcept;
  bool python_propose(eviction_request const& req, eviction_proposal& out) const;

  std::unique_ptr<python_side> py_;
  std::string name_;
  std::shared_ptr<policy_failures> log_;
  lru_policy shadow_;
  std::unordered_map<std::uint64_t, entry> known_;  // looked up only, never iterated
  unsigned __int128 evictable_bytes_{0};
  std::size_t evictable_count_{0};
  mutable std::uint32_t mark_{0};
  std::uint32_t tier_{0};
  mutable bool failed_{false};  // propose may fail (it is const for the engine)
};
static_assert(eviction_policy<py_policy>);

/**
 * @brief A tierpool::prefetch_predictor whose predictions a Python object makes (a
 *        subclass of tierpool.Predictor). A predictor that fails is disabled (predicts
 *        nothing) and its error is raised by the pool's next call.
 */
class py_predictor {
 public:
  py_predictor(std::shared_ptr<py_ref> factory, std::string name, std::shared_ptr<policy_failures> log);
  py_predictor(py_predictor const& other);
  py_predictor(py_predictor&& other) noexcept = default;
  py_predictor& operator=(py_predictor const&) = delete;
  py_predictor& operator=(py_predictor&&) = delete;
  ~py_predictor();

  void on_access(access_view const& a, prefetch_plan& out);
  void on_free(tensor_id id) noexcept;
  [[nodiscard]] std::string_view name() const noexcept { return name_; }

 private:
  struct python_side;
  void fail(char const* hook, std::string what, bool from_python) noexcept;
  void predict(access_view const& a, prefetch_plan& out);  // GIL held

  std::unique_ptr<python_side> py_;
  std::string name_;
  std::shared_ptr<policy_failures> log_;
  std::unordered_map<std::uint64_t, std::size_t> bytes_;  // sizes seen in accesses
  bool failed_{false};
};
static_assert(prefetch_predictor<py_predictor>);

/**
 * @brief What a Pool or a replay call owns for its policies: the registry handed to it as
 *        pool_options::registry / grid_options::registry, and the failure log.
 *
 * Made with the GIL held; resolve() too. Destroyed with the GIL held (owns Python refs
 * through the registry's factories: py_ref takes the GIL itself, so this is a courtesy).
 */
struct policy_host {
  policy_registry registry;
  std::shared_ptr<policy_failures> failures = std::make_shared<policy_failures>();
  std::set<std::string, std::less<>> python_policies;    ///< names registered from Python
  std::set<std::string, std::less<>> python_predictors;  ///< likewise

  /// A spec for the registry: a str as is; a class (or any callable) is registered under
  /// a name of its own (its `name`, else its lower-cased class name) and that name returned.
  std::string resolve(nb::handle spec, bool predictor);
  /// True when `spec` names a Python policy (or, with `predictor`, predictor) of this host.
  [[nodiscard]] bool is_python(std::string_view spec, bool predictor) const;
  /// Raise a waiting failure (GIL held). Cheap when there is none.
  void check() const
  {
    if (failures->pending()) { failures->raise_pending(); }
  }
};

/// A host with the built-ins and every policy registered with tierpool.register_policy.
[[nodiscard]] std::shared_ptr<policy_host> make_policy_host();

/// The registry make_policy_host() builds, for tierpool.policies() (GIL held).
[[nodiscard]] policy_registry registry_with_python_policies();

/// Bind TensorView, EvictionRequest, AccessView, PolicyDriver and the registration helpers.
void bind_python_policies(nb::module_& m);

}  // namespace tierpool::python

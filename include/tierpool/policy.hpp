// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file policy.hpp
 * @brief The eviction policy interface: what a policy sees (`tensor_view`), what it is
 *        asked (`eviction_request`), how it answers (`eviction_proposal`), the
 *        `eviction_policy` concept, the type-erased `any_eviction_policy`, and the
 *        `policy_registry` that builds policies from text such as `"lru:refresh_interval=1000"`.
 *
 * @defgroup policies Eviction policies
 * @{
 *
 * A policy orders the resident tensors of one tier and proposes victims; it owns no
 * memory and moves nothing. The migration engine validates each victim (not pinned, not
 * in flight), moves it, and asks again if it still lacks room. Because the policy only
 * proposes, pinning, in-flight copies and rollback stay in one place, and the same policy
 * runs unchanged in the simulator. See docs/chapters/writing_a_policy.md.
 *
 * Note [How a policy learns that a tensor is pinned]
 * --------------------------------------------------
 * Rationale: a policy must never propose a pinned tensor, and `propose` should cost
 * O(victims), not O(resident tensors), because it runs on every allocation that misses
 * in an oversubscribed steady state. A predicate `is_evictable(id)` passed to `propose`
 * would force the policy to walk past every pinned tensor on every call.
 * Approach: the engine tells the policy about pin *transitions*: `on_pin(id)` when a
 * tensor's pin count goes 0 -> 1 and `on_unpin(id)` when it returns to 0. In addition,
 * every hook that receives a `tensor_view` adopts its `pinned` flag (a tensor may be
 * inserted already pinned). Both calls are idempotent: pinning a pinned tensor is a no-op.
 * A policy can then keep pinned tensors out of its eviction order altogether (`lru_policy`
 * moves them to a side list), and `propose` never sees them.
 * Limitations: the engine must call the hooks on every transition; it still validates
 * each victim, so a policy that lags behind costs a skipped victim, never corruption.
 */
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include <tierpool/error.hpp>
#include <tierpool/export.hpp>
#include <tierpool/prefetch.hpp>
#include <tierpool/types.hpp>

namespace tierpool {

/**
 * @brief Version of the policy interface (the types and hooks in this header).
 *
 * A plug-in loader compares the value a shared object was built with against this one and
 * refuses a mismatch. Bump it whenever a hook, `tensor_view`, `eviction_request`,
 * `eviction_proposal` or `policy_registry` changes layout or meaning.
 */
inline constexpr std::uint32_t policy_abi_version = 2;  // 2: eviction_request::incoming

/// @brief `tensor_view::next_use` value meaning "the forecast says: never used again".
inline constexpr tick no_next_use = std::numeric_limits<tick>::max();

/**
 * @brief What a policy may observe about a resident tensor. A cheap value; owns nothing.
 *
 * The engine fills every field it knows; a policy reads what it needs. Ticks come from
 * the backend clock (virtual in the simulator), never from wall time.
 */
struct tensor_view {
  tensor_id id{};                    ///< the tensor
  tier_id tier{};                    ///< the tier whose policy is being told
  std::size_t bytes{0};              ///< size of the tensor's copy in this tier
  tick last_access{0};               ///< tick of the event being reported (insert/access)
  std::uint32_t access_count{0};     ///< accesses so far, this one included
  bool pinned{false};                ///< pinned now; pinned tensors must never be proposed
  bool write_access{false};          ///< on_access: the access writes the tensor
  /// on_insert: a prefetch copied the tensor in ahead of its use; the insert is not a use
  /// (the use that follows is reported by on_access). A policy that learns from the times
  /// of uses (`repeat`) does not count it.
  bool prefetch{false};
  /// Forecast of the next use, when the driver has one (a replayed trace: Belady).
  /// `std::nullopt`: no forecast; `no_next_use`: the forecast says never again.
  std::optional<tick> next_use{};
  /// Estimated ticks to move the tensor out and back in over its links (0 = unknown).
  tick transfer_cost{0};
  /// Estimated ticks to recompute it instead of moving it; `std::nullopt` when it cannot
  /// be recomputed (no recompute callback).
  std::optional<tick> recompute_cost{};
};

/**
 * @brief Input to an eviction decision: free room in one tier.
 */
struct eviction_request {
  tier_id from{};                ///< the tier that lacks room (the policy's own tier)
  std::size_t bytes_needed{0};   ///< free at least this much in total
  /// The largest single allocation the freed room must hold (0 = no contiguity need).
  /// A fragmentation-aware policy may prefer one large victim to several small ones.
  std::size_t contiguous_bytes{0};
  tick now{0};                   ///< tick of the request
  /// The tensor the room is for, when the engine knows it (tensor_id{} otherwise: a new
  /// tensor, or an engine that does not say). It is not resident in this tier; a policy
  /// that remembers evicted ids may use it to decide as its algorithm would on that miss
  /// (ARC adapts its target before REPLACE), but must not assume it is inserted next.
  tensor_id incoming{};
};

/**
 * @brief A policy's answer: victims in preference order, most preferred first.
 *
 * The engine may skip any of them (in flight, pinned meanwhile) and asks again if it
 * still lacks room. Because proposing changes no state, asking again with the same request
 * returns the same victims: before asking again, the engine reports a victim it skipped as
 * pinned with `on_pin(id)` (pins may reach the policy lazily, batched like accesses), and
 * for victims skipped for another reason (in flight) it adds their bytes to
 * `bytes_needed`, so that the policy proposes further ones. The caller owns the proposal
 * and reuses it across calls, so in a steady state proposing allocates nothing (the
 * vector keeps its capacity).
 *
 * Invariant: `bytes == min(SIZE_MAX, sum of the victims' bytes as the policy knows them)`
 * when every victim was added with add().
 */
struct eviction_proposal {
  std::vector<tensor_id> victims;  ///< preference order, no duplicates
  std::size_t bytes{0};            ///< bytes the victims free, saturating at SIZE_MAX

  /**
   * @brief Append a victim and count its bytes (saturating).
   * @param id The victim.
   * @param n Its bytes.
   * @throws std::bad_alloc only when the vector must grow and the host is out of memory
   */
  void add(tensor_id id, std::size_t n)
  {
    victims.push_back(id);
    bytes = (n > std::numeric_limits<std::size_t>::max() - bytes) ? std::numeric_limits<std::size_t>::max()
                                                                    : bytes + n;
  }
  /// @brief Empty the proposal, keeping the vector's capacity.
  void clear() noexcept
  {
    victims.clear();
    bytes = 0;
  }
  /// @brief True when no victim is proposed.
  [[nodiscard]] bool empty() const noexcept { return victims.empty(); }
  /// @brief True when the victims free at least `req.bytes_needed`.
  [[nodiscard]] bool covers(eviction_request const& req) const noexcept { return bytes >= req.bytes_needed; }
};

/**
 * @brief An eviction policy: a deterministic ordering over tensor ids, driven by events.
 *
 * Hooks, all `noexcept` (a policy never throws on an expected path):
 * - `on_insert(view)`: a tensor became resident in the tier. Inserting a known id updates
 *   it and counts as an access. `view.prefetch`: a prefetch brought it in ahead of its
 *   use (the use is reported by on_access when it comes).
 * - `on_access(view)`: the tensor was used. Unknown id: no-op. Called on every access, so
 *   it must be O(1) and must not allocate.
 * - `on_erase(id)`: the tensor left the tier (evicted, freed, moved). Unknown id: no-op.
 * - `on_pin(id)` / `on_unpin(id)`: pin count went 0 -> 1 / 1 -> 0. Idempotent; unknown id:
 *   no-op. See Note [How a policy learns that a tensor is pinned].
 * - `propose(req, out)`: append victims to `out`, in preference order, never a pinned
 *   tensor, each at most once; stop once `req.bytes_needed` is covered, or propose every
 *   evictable tensor when it cannot be. The caller passes `out` empty (it clears it);
 *   proposing changes no state. May throw only `std::bad_alloc` from growing `out`, and
 *   `tierpool::logic_error` in one case: a policy that needs information the driver did
 *   not give (`belady` without next-use forecasts). That is a configuration error, not an
 *   expected path; the message says what is missing and which policy to use instead.
 * - `name()`: the registry name ("lru").
 *
 * Thread safety: policies are **externally synchronized**. The runtime calls every member
 * of one policy instance under that tier's lock, so a policy needs no lock of its own.
 * Determinism: the same event sequence yields the same proposals (replay tests rely on
 * it): no iteration over hash containers, no clocks, no unseeded randomness.
 *
 * Every policy header ends with `static_assert(tierpool::eviction_policy<my_policy>);`.
 */
template <class P>
concept eviction_policy =
  std::move_constructible<P> &&
  requires(P& p, P const& cp, tensor_view const& v, tensor_id id, eviction_request const& req,
           eviction_proposal& out) {
    { p.on_insert(v) } noexcept;
    { p.on_access(v) } noexcept;
    { p.on_erase(id) } noexcept;
    { p.on_pin(id) } noexcept;
    { p.on_unpin(id) } noexcept;
    { p.propose(req, out) } -> std::same_as<void>;
    { cp.name() } noexcept -> std::convertible_to<std::string_view>;
  };

namespace detail {

/// One table of function pointers per erased policy type (a hand-written vtable).
struct policy_vtable {
  void* (*clone)(void const* self);
  void (*destroy)(void* self) noexcept;
  void (*on_insert)(void* self, tensor_view const& v) noexcept;
  void (*on_access)(void* self, tensor_view const& v) noexcept;
  void (*on_erase)(void* self, tensor_id id) noexcept;
  void (*on_pin)(void* self, tensor_id id) noexcept;
  void (*on_unpin)(void* self, tensor_id id) noexcept;
  void (*propose)(void* self, eviction_request const& req, eviction_proposal& out);
  std::string_view (*name)(void const* self) noexcept;
  bool (*validate)(void const* self) noexcept;
  std::type_info const& (*type)() noexcept;
};

template <class P>
inline constexpr policy_vtable policy_vtable_for{
  [](void const* s) -> void* { return new P(*static_cast<P const*>(s)); },
  [](void* s) noexcept { delete static_cast<P*>(s); },
  [](void* s, tensor_view const& v) noexcept { static_cast<P*>(s)->on_insert(v); },
  [](void* s, tensor_view const& v) noexcept { static_cast<P*>(s)->on_access(v); },
  [](void* s, tensor_id id) noexcept { static_cast<P*>(s)->on_erase(id); },
  [](void* s, tensor_id id) noexcept { static_cast<P*>(s)->on_pin(id); },
  [](void* s, tensor_id id) noexcept { static_cast<P*>(s)->on_unpin(id); },
  [](void* s, eviction_request const& req, eviction_proposal& out) { static_cast<P*>(s)->propose(req, out); },
  [](void const* s) noexcept -> std::string_view { return static_cast<P const*>(s)->name(); },
  [](void const* s) noexcept -> bool {
    if constexpr (requires(P const& p) { { p.validate() } -> std::convertible_to<bool>; }) {
      return static_cast<P const*>(s)->validate();
    } else {
      (void)s;
      return true;
    }
  },
  []() noexcept -> std::type_info const& { return typeid(P); },
};

}  // namespace detail

/**
 * @brief Any eviction policy, type-erased, with value semantics: what a tier stores.
 *
 * Each hook is one indirect call through a per-type function table; the policy lives in
 * one heap block allocated at construction (policies hold containers, so a small buffer
 * would rarely fit and would make moves costlier). Moves swap two pointers.
 *
 * Thread safety: externally synchronized, like the policy it holds.
 * Ownership: owns a copy of the policy. Copying copies the policy (its whole state);
 * a moved-from object is empty (`has_value() == false`) and may only be assigned to or
 * destroyed.
 *
 * @code
 * tierpool::any_eviction_policy p{tierpool::lru_policy{{.refresh_interval = 1000}}};
 * p.on_insert({.id = tierpool::tensor_id{1}, .bytes = 4096, .last_access = 10});
 * tierpool::eviction_proposal out;                 // reuse across calls
 * p.propose({.bytes_needed = 4096}, out);          // out.victims == {tensor_id{1}}
 * @endcode
 */
class any_eviction_policy {
 public:
  /**
   * @brief Take (a copy of) a policy.
   * @param policy Any type satisfying eviction_policy; it must be copy-constructible.
   * @throws std::bad_alloc if the heap block cannot be allocated
   */
  template <eviction_policy P>
    requires(!std::same_as<std::remove_cvref_t<P>, any_eviction_policy>)
  explicit any_eviction_policy(P policy) : self_(new P(std::move(policy))), vt_(&detail::policy_vtable_for<P>)
  {
    static_assert(std::copy_constructible<P>, "any_eviction_policy holds copyable policies (value semantics)");
  }

  /// @brief Copy the held policy, state included. @throws std::bad_alloc
  any_eviction_policy(any_eviction_policy const& other)
    : self_(other.vt_ != nullptr ? other.vt_->clone(other.self_) : nullptr), vt_(other.vt_)
  {
  }
  /// @brief Take the other's policy; the other becomes empty.
  any_eviction_policy(any_eviction_policy&& other) noexcept
    : self_(std::exchange(other.self_, nullptr)), vt_(std::exchange(other.vt_, nullptr))
  {
  }
  /// @brief Copy-and-swap. @throws std::bad_alloc
  any_eviction_policy& operator=(any_eviction_policy const& other)
  {
    if (this != &other) {
      any_eviction_policy tmp(other);
      swap(tmp);
    }
    return *this;
  }
  /// @brief Take the other's policy; the other becomes empty.
  any_eviction_policy& operator=(any_eviction_policy&& other) noexcept
  {
    any_eviction_policy tmp(std::move(other));
    swap(tmp);
    return *this;
  }
  ~any_eviction_policy()
  {
    if (vt_ != nullptr) { vt_->destroy(self_); }
  }

  /// @brief Exchange the held policies.
  void swap(any_eviction_policy& other) noexcept
  {
    std::swap(self_, other.self_);
    std::swap(vt_, other.vt_);
  }

  /// @brief Forward to the policy's on_insert. Precondition: has_value().
  void on_insert(tensor_view const& v) noexcept { vt_->on_insert(self_, v); }
  /// @brief Forward to the policy's on_access. Precondition: has_value().
  void on_access(tensor_view const& v) noexcept { vt_->on_access(self_, v); }
  /// @brief Forward to the policy's on_erase. Precondition: has_value().
  void on_erase(tensor_id id) noexcept { vt_->on_erase(self_, id); }
  /// @brief Forward to the policy's on_pin. Precondition: has_value().
  void on_pin(tensor_id id) noexcept { vt_->on_pin(self_, id); }
  /// @brief Forward to the policy's on_unpin. Precondition: has_value().
  void on_unpin(tensor_id id) noexcept { vt_->on_unpin(self_, id); }

  /**
   * @brief Clear `out`, then let the policy fill it. Precondition: has_value().
   * @param req What to free.
   * @param out Reused proposal; its capacity is kept.
   * @throws std::bad_alloc only when `out` must grow and the host is out of memory
   * @throws tierpool::logic_error when the policy needs information the driver did not
   *         give (`belady` without next-use forecasts; see eviction_policy)
   */
  void propose(eviction_request const& req, eviction_proposal& out)
  {
    out.clear();
    vt_->propose(self_, req, out);
  }
  /**
   * @brief Convenience for tools and tests: a fresh proposal (allocates).
   * @param req What to free.
   * @return The proposal.
   * @throws std::bad_alloc
   */
  [[nodiscard]] eviction_proposal propose(eviction_request const& req)
  {
    eviction_proposal out;
    propose(req, out);
    return out;
  }

  /// @brief The held policy's name. Precondition: has_value().
  [[nodiscard]] std::string_view name() const noexcept { return vt_->name(self_); }
  /// @brief The held policy's validate() when it has one, else true. False when empty.
  [[nodiscard]] bool validate() const noexcept { return vt_ != nullptr && vt_->validate(self_); }
  /// @brief False only for a moved-from object.
  [[nodiscard]] bool has_value() const noexcept { return vt_ != nullptr; }

  /**
   * @brief The held policy if it is a `P`, else nullptr (compares typeid, so it also
   *        works across shared-library boundaries).
   * @return Pointer to the held policy, or nullptr.
   */
  template <class P>
  [[nodiscard]] P* target() noexcept
  {
    return (vt_ != nullptr && vt_->type() == typeid(P)) ? static_cast<P*>(self_) : nullptr;
  }
  /// @copydoc target()
  template <class P>
  [[nodiscard]] P const* target() const noexcept
  {
    return (vt_ != nullptr && vt_->type() == typeid(P)) ? static_cast<P const*>(self_) : nullptr;
  }

 private:
  void* self_;
  detail::policy_vtable const* vt_;
};

/// @brief Swap two erased policies.
inline void swap(any_eviction_policy& a, any_eviction_policy& b) noexcept { a.swap(b); }

static_assert(eviction_policy<any_eviction_policy>, "any_eviction_policy must satisfy tierpool::eviction_policy");

// ---------------------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------------------

/**
 * @brief A policy plug-in (a shared object) could not be used: the file cannot be loaded,
 *        a required symbol is missing, it was built against another policy interface
 *        version, its registration failed, or a name it registers is taken.
 *        Thrown by policy_registry::load_plugin() and by create() for a plug-in spec.
 */
struct TIERPOOL_EXPORT plugin_error : logic_error {
  using logic_error::logic_error;
};

/// @brief The type of a policy parameter, which fixes how its text value is parsed.
enum class parameter_type : std::uint8_t {
  boolean,           ///< true/false, 1/0, yes/no, on/off -> `bool`
  integer,           ///< signed decimal -> `std::int64_t`
  unsigned_integer,  ///< unsigned decimal (ticks, counts) -> `std::uint64_t`
  real,              ///< decimal floating point -> `double`
  bytes,             ///< a byte size such as 512MiB (detail::parse_byte_size) -> `std::uint64_t`
  string,            ///< any text without ',' -> `std::string`
};

/// @brief Name of a parameter type ("boolean", "unsigned_integer", ...).
[[nodiscard]] TIERPOOL_EXPORT std::string_view to_string(parameter_type t) noexcept;

/// @brief One parameter a registered policy accepts.
struct policy_parameter {
  std::string name;           ///< key in the spec: `lru:<name>=<value>`; [a-z0-9_]+
  parameter_type type{parameter_type::string};  ///< how values are parsed
  std::string default_value;  ///< text, parsed like a value given in a spec
  std::string description;    ///< one sentence, with the unit
};

/// @brief What the registry knows about a policy (for `tierpool policies` and messages).
struct policy_info {
  std::string name;                          ///< registry key, [a-z0-9_]+
  std::string description;                   ///< one sentence
  std::vector<policy_parameter> parameters;  ///< in registration order
};

/**
 * @brief Parsed, typed parameter values handed to a policy factory: every declared
 *        parameter is present, with its default unless the spec set it.
 *
 * Thread safety: a value; const members are reentrant.
 */
class TIERPOOL_EXPORT policy_params {
 public:
  /// @brief A parsed value. `bytes` and `unsigned_integer` hold `std::uint64_t`.
  using value_type = std::variant<bool, std::int64_t, std::uint64_t, double, std::string>;

  /**
   * @brief Set (or replace) a value. The registry calls this; tests may too.
   * @param name Parameter name.
   * @param type How the value was parsed (reported by type_of).
   * @param value Parsed value; its alternative must match `type`.
   * @param given True when the spec set it, false for a default.
   * @throws tierpool::logic_error if the alternative does not match `type`
   */
  void set(std::string name, parameter_type type, value_type value, bool given = false);

  /**
   * @brief The value of a parameter as `T` (one of `bool`, `std::int64_t`,
   *        `std::uint64_t`, `double`, `std::string`).
   * @param name Parameter name.
   * @return The value.
   * @throws tierpool::logic_error if there is no such parameter or it holds another type
   */
  template <class T>
  [[nodiscard]] T get(std::string_view name) const
  {
    value_type const& v = find(name);
    if (auto const* p = std::get_if<T>(&v)) { return *p; }
    type_mismatch(name);
  }

  /// @brief True when the parameter exists (it always does for declared ones).
  [[nodiscard]] bool contains(std::string_view name) const noexcept;
  /// @brief True when the spec set the parameter (false when it holds its default).
  [[nodiscard]] bool given(std::string_view name) const noexcept;
  /// @brief Number of parameters.
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

 private:
  struct entry {
    std::string name;
    parameter_type type;
    value_type value;
    bool given;
  };
  [[nodiscard]] value_type const& find(std::string_view name) const;
  [[noreturn]] void type_mismatch(std::string_view name) const;
  [[nodiscard]] entry const* lookup(std::string_view name) const noexcept;

  std::vector<entry> entries_;
};

/// @brief Builds a policy from its parsed parameters. May throw tierpool::logic_error
///        for combinations of values it rejects.
using policy_factory = std::function<any_eviction_policy(policy_params const&)>;
/// @brief Builds a prefetch predictor from its parsed parameters (include/tierpool/prefetch.hpp).
using predictor_factory = std::function<any_prefetch_predictor(policy_params const&)>;

/**
 * @brief Named policy factories: `create("lru:refresh_interval=1000")`.
 *
 * Spec grammar: `name[:key=value[,key=value]...]`; blanks around names, keys and values
 * are ignored. Every error is a tierpool::logic_error whose message lists what exists: the
 * registered names, or the policy's parameters with their types and defaults.
 *
 * Plug-in specs: `path/to/libmine.so:name[:key=value,...]`. When the part before the first
 * ':' ends in ".so" or contains '/', create() and parse() load that shared object (once per
 * path per process; see load_plugin()) and build `name` from the plug-in's own policies,
 * so that `pool_options::policy = "./libmine.so:mine"` and
 * `TIERPOOL_POLICY=/opt/x/libmine.so:mine:k=1` need no code. A bare file name (no '/') is
 * searched like dlopen() does; write `./libmine.so` for the current directory. Paths
 * containing ':' cannot be written in a spec (use load_plugin()).
 *
 * Registration is explicit (no static initializers): built-ins through the generated
 * register_builtin_policies(), a user's own with add(), a plug-in through its
 * `extern "C" void tierpool_register_policies(tierpool::policy_registry&)` (write it with
 * TIERPOOL_POLICY_PLUGIN) and load_plugin().
 *
 * Thread safety: add() and load_plugin() are not safe concurrently with anything; const
 * members are safe to call concurrently (the process-wide plug-in cache has its own lock).
 * Ownership: a value (copyable, movable).
 *
 * @code
 * auto registry = tierpool::policy_registry::with_builtins();
 * tierpool::any_eviction_policy p = registry.create("lru:refresh_interval=1000");
 * for (tierpool::policy_info const& info : registry.list()) { std::puts(info.name.c_str()); }
 * @endcode
 */
class TIERPOOL_EXPORT policy_registry {
 public:
  /// @brief An empty registry.
  policy_registry() = default;

  /**
   * @brief A registry holding every built-in policy (the generated list; see
   *        cmake/tierpool_add_policy.cmake). Defined in the tierpool::policies library.
   * @return The registry.
   */
  [[nodiscard]] static policy_registry with_builtins();

  /**
   * @brief Register a policy.
   * @param name Registry key, non-empty, [a-z0-9_]+.
   * @param description One sentence.
   * @param parameters Accepted parameters with defaults (names unique, [a-z0-9_]+).
   * @param factory Builds the policy from parsed parameters.
   * @throws tierpool::logic_error if the name is taken or malformed, a parameter name is
   *         malformed or repeated, a default does not parse as its type, or the factory
   *         is empty
   */
  void add(std::string name, std::string description, std::vector<policy_parameter> parameters,
           policy_factory factory);

  /**
   * @brief Load a policy plug-in and add every policy (and prefetch predictor) it registers.
   *
   * The shared object is opened with `dlopen(RTLD_NOW | RTLD_LOCAL)` once per path per
   * process and never closed (policies built from it may live as long as the process).
   * It must export `tierpool_policy_abi_version()` returning the tierpool::policy_abi_version
   * it was built with, and `tierpool_register_policies(policy_registry&)`; both are defined
   * by TIERPOOL_POLICY_PLUGIN. Loading the same plug-in into the same registry again is a
   * no-op. Strong guarantee: on error the registry is unchanged.
   *
   * @param path The shared object; a name without '/' is searched like dlopen() does.
   * @return Names of the policies the plug-in registers, sorted (predictors not included).
   * @throws tierpool::plugin_error if the file cannot be loaded (the message carries
   *         dlerror()'s text), a symbol is missing, the interface version differs ("built
   *         against policy interface vN, this tierpool has vM"), its registration throws,
   *         or it registers a policy or predictor name this registry already holds
   */
  std::vector<std::string> load_plugin(std::filesystem::path const& path);

  /**
   * @brief Build a policy from a spec such as `"lru"` or `"lru:refresh_interval=1000"`.
   * @param spec `name[:key=value[,key=value]...]`, or a plug-in spec
   *        `path/lib.so:name[:key=value,...]` (see the class comment).
   * @return The policy.
   * @throws tierpool::logic_error for a malformed spec, an unknown name (the message lists
   *         the registered names), an unknown, repeated or ill-typed parameter (the message
   *         lists the policy's parameters with types and defaults), or when the factory
   *         rejects the values
   * @throws tierpool::plugin_error (a logic_error) when a plug-in spec's shared object
   *         cannot be used (see load_plugin())
   */
  [[nodiscard]] any_eviction_policy create(std::string_view spec) const;

  /**
   * @brief Parse a spec into the policy's parameters without building the policy.
   * @param spec As for create().
   * @param[out] name_out The policy name.
   * @return The parameters, defaults filled in.
   * @throws tierpool::logic_error as create()
   */
  [[nodiscard]] policy_params parse(std::string_view spec, std::string* name_out = nullptr) const;

  /// @brief True when a policy of this name is registered.
  [[nodiscard]] bool contains(std::string_view name) const noexcept;
  /**
   * @brief Description and parameters of one policy.
   * @throws tierpool::logic_error for an unknown name (lists the registered names)
   */
  [[nodiscard]] policy_info const& info(std::string_view name) const;
  /// @brief Every registered policy, sorted by name (for `tierpool policies`).
  [[nodiscard]] std::vector<policy_info> list() const;

  /**
   * @brief Register a prefetch predictor (the same rules as add(); predictors have their
   *        own names, so a predictor and a policy may share one).
   * @throws tierpool::logic_error as add()
   */
  void add_predictor(std::string name, std::string description, std::vector<policy_parameter> parameters,
                     predictor_factory factory);
  /**
   * @brief Build a predictor from a spec such as `"sequence:depth=8"` (or a plug-in spec
   *        `path/lib.so:name[:...]`, as create()).
   * @throws tierpool::logic_error as create(), naming the registered predictors
   */
  [[nodiscard]] any_prefetch_predictor create_predictor(std::string_view spec) const;
  /// @brief True when a predictor of this name is registered.
  [[nodiscard]] bool contains_predictor(std::string_view name) const noexcept;
  /// @brief Every registered predictor, sorted by name.
  [[nodiscard]] std::vector<policy_info> list_predictors() const;
  /// @brief Number of registered policies.
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

 private:
  struct entry {
    policy_info info;
    policy_factory factory;
  };
  [[nodiscard]] entry const& find(std::string_view name, std::string_view spec) const;

  std::map<std::string, entry, std::less<>> entries_;  // sorted: list() is deterministic
  std::vector<std::string> plugins_;  // plug-in keys loaded by load_plugin(), in load order
  struct predictor_entry {
    policy_info info;
    predictor_factory factory;
  };
  std::map<std::string, predictor_entry, std::less<>> predictors_;  // sorted, like entries_
};

/**
 * @brief True when a policy spec names a plug-in: the part before the first ':' ends in
 *        ".so" or contains '/' (see policy_registry).
 * @param spec A policy spec.
 */
[[nodiscard]] TIERPOOL_EXPORT bool is_plugin_spec(std::string_view spec) noexcept;

/**
 * @brief Add every built-in policy to `registry` (generated from the
 *        `tierpool_add_policy()` calls in policies/CMakeLists.txt).
 * @param registry The registry to fill.
 * @throws tierpool::logic_error if a built-in name is already registered
 */
TIERPOOL_EXPORT void register_builtin_policies(policy_registry& registry);

}  // namespace tierpool

/**
 * @brief Define the two entry points of a policy plug-in; the body that follows is the
 *        registration function.
 *
 * Expands to `extern "C" std::uint32_t tierpool_policy_abi_version()` (returning the
 * tierpool::policy_abi_version the plug-in is compiled against, checked by the loader) and
 * the head of `extern "C" void tierpool_register_policies(tierpool::policy_registry& REGISTRY)`,
 * both with default visibility. The body may throw (a tierpool::logic_error from add());
 * the loader reports it as a tierpool::plugin_error.
 *
 * @code
 * TIERPOOL_POLICY_PLUGIN(registry)
 * {
 *   registry.add("mru", "Most recently used first", {}, [](tierpool::policy_params const&) {
 *     return tierpool::any_eviction_policy{my::mru_policy{}};
 *   });
 * }
 * @endcode
 */
#define TIERPOOL_POLICY_PLUGIN(REGISTRY)                                                        \
  extern "C" TIERPOOL_EXPORT std::uint32_t tierpool_policy_abi_version();                      \
  extern "C" TIERPOOL_EXPORT void tierpool_register_policies(::tierpool::policy_registry&);    \
  extern "C" std::uint32_t tierpool_policy_abi_version() { return ::tierpool::policy_abi_version; } \
  extern "C" void tierpool_register_policies(::tierpool::policy_registry& REGISTRY)

/** @} */

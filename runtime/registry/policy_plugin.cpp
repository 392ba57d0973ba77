// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// policy_plugin.cpp — owns policy plug-ins (include/tierpool/policy.hpp): the process-wide
// cache of loaded shared objects (detail::plugin_policies), policy_registry::load_plugin()
// and is_plugin_spec(). Entry points: policy_registry::load_plugin(), and create()/parse()
// in policy_registry.cpp for specs such as "./libmine.so:mine:k=1".
//
// Note [Policy plug-ins stay loaded]
// ----------------------------------
// Rationale: an any_eviction_policy built by a plug-in's factory holds a function table and
// code that live in the shared object; a tier may keep it for the life of the process, and
// copies of the registry's factories may be anywhere. Unloading is never safe.
// Approach: each shared object is dlopen()ed once per path (RTLD_NOW: every symbol resolved
// at load, so a broken plug-in fails here and not in the middle of an eviction; RTLD_LOCAL:
// its symbols do not leak into later plug-ins), its policies are registered into a private
// registry kept in a cache that is never destroyed, and dlclose() is never called. The cache
// is leaked on purpose (no static destructor runs after a tier that still holds a policy).
// Limitations: a plug-in cannot be reloaded after it changed on disk without a new process.
// A plug-in must be built with the same compiler and standard library as the host (the
// interface is C++); tierpool_policy_abi_version() only guards tierpool's own types.
#include <tierpool/error.hpp>
#include <tierpool/policy.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace tierpool {
namespace detail {

// Declared in policy_registry.cpp too (a core-private function; hidden visibility).
policy_registry const& plugin_policies(std::filesystem::path const& path, std::string* key_out);

namespace {

struct loaded_plugin {
  std::string key;            // the path as opened (absolute when it had a '/')
  void* handle{nullptr};      // never closed: Note [Policy plug-ins stay loaded]
  policy_registry policies;   // what its tierpool_register_policies() added
};

class plugin_cache {
 public:
  loaded_plugin const& get(std::filesystem::path const& path)
  {
    std::string const key = key_of(path);
    std::lock_guard lock(mutex_);
    if (auto const it = loaded_.find(key); it != loaded_.end()) { return *it->second; }
    auto lp = load(key);
    return *loaded_.emplace(key, std::move(lp)).first->second;
  }

 private:
  static std::string key_of(std::filesystem::path const& path)
  {
    std::string const text = path.string();
    if (text.empty()) { throw plugin_error("policy plug-in: empty path"); }
    if (text.find('/') == std::string::npos) { return text; }  // searched like dlopen() does
    return std::filesystem::absolute(path).lexically_normal().string();
  }

  template <class Fn>
  static Fn symbol(void* handle, char const* name)
  {
    void* const sym = ::dlsym(handle, name);
    if (sym == nullptr) { return nullptr; }
    Fn fn = nullptr;
    static_assert(sizeof(fn) == sizeof(sym));
    std::memcpy(&fn, &sym, sizeof(fn));  // object -> function pointer, without a pedantic cast
    return fn;
  }

  static std::unique_ptr<loaded_plugin> load(std::string const& key)
  {
    using abi_fn = std::uint32_t (*)();
    using register_fn = void (*)(policy_registry&);
    std::string const who = "policy plug-in '" + key + "'";

    ::dlerror();  // clear a stale message
    void* const handle = ::dlopen(key.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      char const* const why = ::dlerror();
      throw plugin_error(who + " could not be loaded: " + (why != nullptr ? why : "dlopen failed"));
    }
    // From here on the handle stays open even on error: closing is never safe once code
    // from it may have run (its static constructors did).
    auto const abi = symbol<abi_fn>(handle, "tierpool_policy_abi_version");
    if (abi == nullptr) {
      throw plugin_error(who + " does not export tierpool_policy_abi_version(); a tierpool policy plug-in "
                               "defines it with TIERPOOL_POLICY_PLUGIN (see docs/chapters/policies.md)");
    }
    std::uint32_t const version = abi();
    if (version != policy_abi_version) {
      throw plugin_error(who + " was built against policy interface v" + std::to_string(version) +
                         ", this tierpool has v" + std::to_string(policy_abi_version) +
                         "; rebuild the plug-in against this tierpool");
    }
    auto const reg = symbol<register_fn>(handle, "tierpool_register_policies");
    if (reg == nullptr) {
      throw plugin_error(who + " does not export tierpool_register_policies(tierpool::policy_registry&); "
                               "a tierpool policy plug-in defines it with TIERPOOL_POLICY_PLUGIN "
                               "(see docs/chapters/policies.md)");
    }
    auto lp = std::make_unique<loaded_plugin>();
    lp->key = key;
    lp->handle = handle;
    try {
      reg(lp->policies);
    } catch (std::exception const& e) {
      throw plugin_error(who + ": tierpool_register_policies failed: " + e.what());
    } catch (...) {
      throw plugin_error(who + ": tierpool_register_policies threw an exception not derived from std::exception");
    }
    return lp;
  }

  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<loaded_plugin>> loaded_;  // never erased
};

plugin_cache& cache()
{
  static auto* const c = new plugin_cache;  // leaked: Note [Policy plug-ins stay loaded]
  return *c;
}

}  // namespace

policy_registry const& plugin_policies(std::filesystem::path const& path, std::string* key_out)
{
  loaded_plugin const& lp = cache().get(path);
  if (key_out != nullptr) { *key_out = lp.key; }
  return lp.policies;
}

}  // namespace detail

bool is_plugin_spec(std::string_view spec) noexcept
{
  std::string_view head = spec.substr(0, spec.find(':'));
  while (!head.empty() && (head.front() == ' ' || head.front() == '\t')) { head.remove_prefix(1); }
  while (!head.empty() && (head.back() == ' ' || head.back() == '\t')) { head.remove_suffix(1); }
  constexpr std::string_view so = ".so";
  bool const ends_so = head.size() > so.size() && head.substr(head.size() - so.size()) == so;
  return ends_so || head.find('/') != std::string_view::npos;
}

std::vector<std::string> policy_registry::load_plugin(std::filesystem::path const& path)
{
  std::string key;
  policy_registry const& theirs = detail::plugin_policies(path, &key);
  std::vector<std::string> names;
  names.reserve(theirs.entries_.size());
  for (auto const& [name, e] : theirs.entries_) { names.push_back(name); }  // sorted (std::map)
  if (std::find(plugins_.begin(), plugins_.end(), key) != plugins_.end()) { return names; }  // already here
  for (auto const& [name, e] : theirs.entries_) {
    if (entries_.find(name) != entries_.end()) {
      throw plugin_error("policy plug-in '" + key + "' registers policy '" + name +
                         "', which this registry already holds (a built-in or another plug-in's)");
    }
  }
  for (auto const& [name, e] : theirs.predictors_) {
    if (predictors_.find(name) != predictors_.end()) {
      throw plugin_error("policy plug-in '" + key + "' registers prefetch predictor '" + name +
                         "', which this registry already holds (a built-in or another plug-in's)");
    }
  }
  plugins_.push_back(key);  // may throw bad_alloc: nothing added yet
  try {
    for (auto const& [name, e] : theirs.entries_) { entries_.emplace(name, e); }
    for (auto const& [name, e] : theirs.predictors_) { predictors_.emplace(name, e); }
  } catch (...) {  // out of memory halfway: undo (strong guarantee; none of these names existed)
    for (auto const& [name, e] : theirs.entries_) { entries_.erase(name); }
    for (auto const& [name, e] : theirs.predictors_) { predictors_.erase(name); }
    plugins_.pop_back();
    throw;
  }
  return names;
}

}  // namespace tierpool

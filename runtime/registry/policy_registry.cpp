// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// policy_registry.cpp — owns the policy spec text format ("lru:refresh_interval=1000") of
// include/tierpool/policy.hpp: policy_registry::add/create/parse, and policy_params.
// Every error is a tierpool::logic_error that lists what exists. with_builtins() is not
// here: it lives in the generated builtin_policies.cpp of the tierpool::policies library,
// so that the core depends on no particular policy. A plug-in spec ("./libmine.so:mine")
// is handed to the plug-in's own registry (policy_plugin.cpp).
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#include <tierpool/policy.hpp>

#include <charconv>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

namespace tierpool {
namespace detail {
// Defined in policy_plugin.cpp: the policies of a plug-in, loaded once per path.
policy_registry const& plugin_policies(std::filesystem::path const& path, std::string* key_out);
}  // namespace detail

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s)
{
  while (!s.empty() && is_blank(s.front())) { s.remove_prefix(1); }
  while (!s.empty() && is_blank(s.back())) { s.remove_suffix(1); }
  return s;
}

bool is_identifier(std::string_view s)
{
  if (s.empty()) { return false; }
  for (char const c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) { return false; }
  }
  return true;
}

std::string lower(std::string_view s)
{
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') { c = static_cast<char>(c - 'A' + 'a'); }
  }
  return out;
}

char const* expected_text(parameter_type t)
{
  switch (t) {
    case parameter_type::boolean: return "a boolean (true/false, 1/0, yes/no, on/off)";
    case parameter_type::integer: return "a signed decimal integer";
    case parameter_type::unsigned_integer: return "an unsigned decimal integer";
    case parameter_type::real: return "a decimal number";
    case parameter_type::bytes: return "a byte size such as 4096, 512MiB or 2GiB";
    case parameter_type::string: return "text without ','";
  }
  return "a value";
}

template <class T>
std::optional<T> parse_number(std::string_view text)
{
  T v{};
  char const* const first = text.data();
  char const* const last = first + text.size();
  auto const [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc{} || ptr != last) { return std::nullopt; }
  return v;
}

// Parse `text` as `type` into `out`; false (never a throw) when it does not parse.
// (An out-parameter rather than std::optional<value_type>: GCC 12 with sanitizers reports
// a false -Wmaybe-uninitialized on moving the std::string alternative out of an optional.)
bool parse_value(parameter_type type, std::string_view text, policy_params::value_type& out)
{
  switch (type) {
    case parameter_type::boolean: {
      std::string const t = lower(text);
      if (t == "true" || t == "1" || t == "yes" || t == "on") { out.emplace<bool>(true); return true; }
      if (t == "false" || t == "0" || t == "no" || t == "off") { out.emplace<bool>(false); return true; }
      return false;
    }
    case parameter_type::integer: {
      if (!text.empty() && text.front() == '+') { text.remove_prefix(1); }
      auto const v = parse_number<std::int64_t>(text);
      if (v) { out.emplace<std::int64_t>(*v); }
      return v.has_value();
    }
    case parameter_type::unsigned_integer: {
      if (!text.empty() && text.front() == '+') { text.remove_prefix(1); }
      auto const v = parse_number<std::uint64_t>(text);
      if (v) { out.emplace<std::uint64_t>(*v); }
      return v.has_value();
    }
    case parameter_type::real: {
      if (!text.empty() && text.front() == '+') { text.remove_prefix(1); }
      auto const v = parse_number<double>(text);
      if (v) { out.emplace<double>(*v); }
      return v.has_value();
    }
    case parameter_type::bytes: {
      try {
        out.emplace<std::uint64_t>(static_cast<std::uint64_t>(detail::parse_byte_size(text)));
        return true;
      } catch (logic_error const&) {
        return false;
      }
    }
    case parameter_type::string:
      out.emplace<std::string>(text);
      return true;
  }
  return false;
}

bool holds(parameter_type type, policy_params::value_type const& v)
{
  switch (type) {
    case parameter_type::boolean: return std::holds_alternative<bool>(v);
    case parameter_type::integer: return std::holds_alternative<std::int64_t>(v);
    case parameter_type::unsigned_integer:
    case parameter_type::bytes: return std::holds_alternative<std::uint64_t>(v);
    case parameter_type::real: return std::holds_alternative<double>(v);
    case parameter_type::string: return std::holds_alternative<std::string>(v);
  }
  return false;
}

// "refresh_interval=0 (unsigned_integer: Promote ...), promote_on_write=true (boolean: ...)"
std::string describe_parameters(policy_info const& info)
{
  if (info.parameters.empty()) { return "policy '" + info.name + "' takes no parameters"; }
  std::string out = "parameters of '" + info.name + "' (with defaults): ";
  bool first = true;
  for (policy_parameter const& p : info.parameters) {
    if (!first) { out += ", "; }
    first = false;
    out += p.name + "=" + p.default_value + " (" + std::string(to_string(p.type));
    if (!p.description.empty()) { out += ": " + p.description; }
    out += ")";
  }
  return out;
}

}  // namespace

std::string_view to_string(parameter_type t) noexcept
{
  switch (t) {
    case parameter_type::boolean: return "boolean";
    case parameter_type::integer: return "integer";
    case parameter_type::unsigned_integer: return "unsigned_integer";
    case parameter_type::real: return "real";
    case parameter_type::bytes: return "bytes";
    case parameter_type::string: return "string";
  }
  return "unknown";
}

// ---- policy_params ----

void policy_params::set(std::string name, parameter_type type, value_type value, bool given)
{
  if (!holds(type, value)) {
    throw logic_error("policy_params::set: value of '" + name + "' does not hold a " +
                      std::string(to_string(type)));
  }
  for (entry& e : entries_) {
    if (e.name == name) {
      e.type = type;
      e.value = std::move(value);
      e.given = given;
      return;
    }
  }
  entries_.push_back(entry{std::move(name), type, std::move(value), given});
}

policy_params::entry const* policy_params::lookup(std::string_view name) const noexcept
{
  for (entry const& e : entries_) {
    if (e.name == name) { return &e; }
  }
  return nullptr;
}

bool policy_params::contains(std::string_view name) const noexcept { return lookup(name) != nullptr; }

bool policy_params::given(std::string_view name) const noexcept
{
  entry const* e = lookup(name);
  return e != nullptr && e->given;
}

policy_params::value_type const& policy_params::find(std::string_view name) const
{
  if (entry const* e = lookup(name)) { return e->value; }
  std::string known;
  for (entry const& e : entries_) { known += (known.empty() ? "" : ", ") + e.name; }
  throw logic_error("policy_params: no parameter '" + std::string(name) + "' (known: " +
                    (known.empty() ? std::string("none") : known) + ")");
}

void policy_params::type_mismatch(std::string_view name) const
{
  entry const* e = lookup(name);
  throw logic_error("policy_params: parameter '" + std::string(name) + "' is of type " +
                    std::string(to_string(e != nullptr ? e->type : parameter_type::string)) +
                    "; read it as bool (boolean), std::int64_t (integer), std::uint64_t "
                    "(unsigned_integer, bytes), double (real) or std::string (string)");
}

// ---- policy_registry ----

namespace {

// The checks add() and add_predictor() share; `what` is "policy" or "predictor".
void check_registration(char const* fn, char const* what, std::string const& name, bool taken, bool has_factory,
                        std::vector<policy_parameter> const& parameters)
{
  std::string const head = std::string("policy_registry::") + fn + ": ";
  if (!is_identifier(name)) { throw logic_error(head + what + " name '" + name + "' must be non-empty [a-z0-9_]"); }
  if (taken) { throw logic_error(head + "a " + what + " named '" + name + "' is already registered"); }
  if (!has_factory) { throw logic_error(head + what + " '" + name + "' has an empty factory"); }
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    policy_parameter const& p = parameters[i];
    if (!is_identifier(p.name)) {
      throw logic_error(head + what + " '" + name + "': parameter name '" + p.name + "' must be non-empty [a-z0-9_]");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (parameters[j].name == p.name) {
        throw logic_error(head + what + " '" + name + "': parameter '" + p.name + "' is declared twice");
      }
    }
    policy_params::value_type scratch;
    if (!parse_value(p.type, trim(p.default_value), scratch)) {
      throw logic_error(head + what + " '" + name + "': default '" + p.default_value + "' of parameter '" + p.name +
                        "' is not " + expected_text(p.type));
    }
  }
}

}  // namespace

void policy_registry::add(std::string name, std::string description, std::vector<policy_parameter> parameters,
                          policy_factory factory)
{
  check_registration("add", "policy", name, entries_.find(name) != entries_.end(), static_cast<bool>(factory),
                     parameters);
  std::string key = name;
  entries_.emplace(std::move(key),
                   entry{policy_info{std::move(name), std::move(description), std::move(parameters)}, std::move(factory)});
}

policy_registry::entry const& policy_registry::find(std::string_view name, std::string_view spec) const
{
  auto const it = entries_.find(name);
  if (it != entries_.end()) { return it->second; }
  std::string names;
  for (auto const& [key, e] : entries_) { names += (names.empty() ? "" : ", ") + key; }
  std::string msg = "unknown policy '" + std::string(name) + "'";
  if (spec != name) { msg += " in \"" + std::string(spec) + "\""; }
  msg += "; registered policies: " + (names.empty() ? std::string("(none)") : names);
  throw logic_error(msg);
}

namespace {

// "path/lib.so:name:k=v" -> the plug-in's registry, its key, and "name:k=v".
struct plugin_spec {
  policy_registry const* policies;
  std::string key;
  std::string_view rest;
};

plugin_spec open_plugin_spec(std::string_view spec)
{
  std::string_view const whole = trim(spec);
  std::size_t const colon = whole.find(':');
  plugin_spec out{nullptr, {}, colon == std::string_view::npos ? std::string_view{} : whole.substr(colon + 1)};
  out.policies = &detail::plugin_policies(std::filesystem::path(std::string(trim(whole.substr(0, colon)))), &out.key);
  return out;
}

// Run `fn` on the plug-in's registry; its errors name the plug-in.
template <class Fn>
auto with_plugin(std::string_view spec, Fn fn)
{
  plugin_spec const ps = open_plugin_spec(spec);  // plugin_error passes through
  try {
    return fn(*ps.policies, ps.rest);
  } catch (plugin_error const&) {
    throw;
  } catch (logic_error const& e) {
    throw logic_error("policy plug-in '" + ps.key + "': " + e.what());
  }
}

}  // namespace

namespace {

// Spec -> parameters against `entries` (policies or predictors); `what` names the kind in
// messages ("policy", "predictor"), `kinds` its plural.
template <class Map>
policy_params parse_spec(Map const& entries, std::string_view spec, std::string* name_out, std::string const& what,
                         std::string const& kinds)
{
  auto registered = [&] {
    std::string names;
    for (auto const& [key, e] : entries) { names += (names.empty() ? "" : ", ") + key; }
    return names.empty() ? std::string("(none)") : names;
  };
  std::string_view const whole = trim(spec);
  std::size_t const colon = whole.find(':');
  std::string_view const name = trim(whole.substr(0, colon));
  if (name.empty()) {
    throw logic_error(what + " spec \"" + std::string(spec) + "\" names no " + what +
                      " (expected name[:key=value,...]); registered " + kinds + ": " + registered());
  }
  auto const found = entries.find(name);
  if (found == entries.end()) {
    std::string msg = "unknown " + what + " '" + std::string(name) + "'";
    if (whole != name) { msg += " in \"" + std::string(whole) + "\""; }
    throw logic_error(msg + "; registered " + kinds + ": " + registered());
  }
  policy_info const& info = found->second.info;

  policy_params params;
  for (policy_parameter const& p : info.parameters) {
    policy_params::value_type value;
    (void)parse_value(p.type, trim(p.default_value), value);  // add() checked that it parses
    params.set(p.name, p.type, std::move(value), false);
  }

  if (colon != std::string_view::npos) {
    std::string_view rest = whole.substr(colon + 1);
    while (!trim(rest).empty()) {  // "lru:" and a trailing ',' are accepted
      std::size_t const comma = rest.find(',');
      std::string_view const item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);

      std::size_t const eq = item.find('=');
      std::string_view const key = trim(item.substr(0, eq));
      if (eq == std::string_view::npos || key.empty()) {
        throw logic_error(what + " spec \"" + std::string(whole) + "\": '" + std::string(trim(item)) +
                          "' is not key=value; " + describe_parameters(info));
      }
      std::string_view const text = trim(item.substr(eq + 1));
      policy_parameter const* decl = nullptr;
      for (policy_parameter const& p : info.parameters) {
        if (p.name == key) { decl = &p; }
      }
      if (decl == nullptr) {
        throw logic_error(what + " '" + info.name + "' has no parameter '" + std::string(key) + "'; " +
                          describe_parameters(info));
      }
      if (params.given(key)) {
        throw logic_error(what + " spec \"" + std::string(whole) + "\" sets '" + std::string(key) + "' twice; " +
                          describe_parameters(info));
      }
      policy_params::value_type value;
      if (!parse_value(decl->type, text, value)) {
        throw logic_error(what + " '" + info.name + "': parameter '" + decl->name + "' expects " +
                          expected_text(decl->type) + ", got '" + std::string(text) + "'; " +
                          describe_parameters(info));
      }
      params.set(decl->name, decl->type, std::move(value), true);
    }
  }
  if (name_out != nullptr) { *name_out = info.name; }
  return params;
}

}  // namespace

void policy_registry::add_predictor(std::string name, std::string description, std::vector<policy_parameter> parameters,
                                    predictor_factory factory)
{
  check_registration("add_predictor", "predictor", name, predictors_.find(name) != predictors_.end(),
                     static_cast<bool>(factory), parameters);
  std::string key = name;
  predictors_.emplace(std::move(key), predictor_entry{policy_info{std::move(name), std::move(description),
                                                                  std::move(parameters)},
                                                      std::move(factory)});
}

any_prefetch_predictor policy_registry::create_predictor(std::string_view spec) const
{
  if (is_plugin_spec(spec)) {
    return with_plugin(spec, [](policy_registry const& r, std::string_view rest) { return r.create_predictor(rest); });
  }
  std::string name;
  policy_params const params = parse_spec(predictors_, spec, &name, "predictor", "predictors");
  return predictors_.find(name)->second.factory(params);
}

bool policy_registry::contains_predictor(std::string_view name) const noexcept
{
  return predictors_.find(name) != predictors_.end();
}

std::vector<policy_info> policy_registry::list_predictors() const
{
  std::vector<policy_info> out;
  out.reserve(predictors_.size());
  for (auto const& [key, e] : predictors_) { out.push_back(e.info); }
  return out;
}

policy_params policy_registry::parse(std::string_view spec, std::string* name_out) const
{
  if (is_plugin_spec(spec)) {
    return with_plugin(spec, [name_out](policy_registry const& r, std::string_view rest) { return r.parse(rest, name_out); });
  }
  return parse_spec(entries_, spec, name_out, "policy", "policies");
}

any_eviction_policy policy_registry::create(std::string_view spec) const
{
  if (is_plugin_spec(spec)) {
    return with_plugin(spec, [](policy_registry const& r, std::string_view rest) { return r.create(rest); });
  }
  std::string name;
  policy_params const params = parse(spec, &name);
  return entries_.find(name)->second.factory(params);
}

bool policy_registry::contains(std::string_view name) const noexcept { return entries_.find(name) != entries_.end(); }

policy_info const& policy_registry::info(std::string_view name) const { return find(name, name).info; }

std::vector<policy_info> policy_registry::list() const
{
  std::vector<policy_info> out;
  out.reserve(entries_.size());
  for (auto const& [key, e] : entries_) { out.push_back(e.info); }
  return out;
}

}  // namespace tierpool

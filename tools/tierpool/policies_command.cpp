// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// policies_command.cpp — owns `tierpool policies`: every registered eviction policy and
// prefetch predictor, sorted by name, with its one-line description and its parameters
// (name, type, default, description), as text or as one Boost.JSON object (--json, keys
// "policies" and "predictors"); --plugin PATH (repeatable) loads policy plug-ins first and
// marks what they register. Entry point:
// tierpool::cli::policies_command().

// GCC 12 reports a false -Wnull-dereference inside std::string assignment when it inlines
// Boost.ProgramOptions' typed_value<...>::notify; the pragma must precede the includes
// because the diagnostic is located in the library headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include "commands.hpp"

#include <tierpool/error.hpp>
#include <tierpool/policy.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace tierpool::cli {
namespace {

namespace po = boost::program_options;
namespace json = boost::json;

// One section: a heading, then each entry with its description, origin and parameters.
void print_section(char const* what, char const* used_by, std::vector<policy_info> const& list,
                   std::map<std::string, std::string> const& origin)
{
  std::size_t name_w = 0;
  std::size_t param_w = 0;
  std::size_t type_w = 0;
  std::size_t default_w = 0;
  for (policy_info const& info : list) {
    name_w = std::max(name_w, info.name.size());
    for (policy_parameter const& p : info.parameters) {
      param_w = std::max(param_w, p.name.size());
      type_w = std::max(type_w, to_string(p.type).size());
      default_w = std::max(default_w, p.default_value.size());
    }
  }
  std::printf("%s (%zu); a spec is name[:key=value,...], e.g. for %s\n\n", what, list.size(), used_by);
  for (policy_info const& info : list) {
    std::printf("%-*s  %s\n", static_cast<int>(name_w), info.name.c_str(), info.description.c_str());
    auto const from = origin.find(info.name);
    if (from != origin.end()) {
      std::printf("%-*s  plug-in: %s\n", static_cast<int>(name_w), "", from->second.c_str());
    }
    if (info.parameters.empty()) { std::printf("%-*s  (no parameters)\n", static_cast<int>(name_w), ""); }
    for (policy_parameter const& p : info.parameters) {
      std::string const type(to_string(p.type));
      std::printf("%-*s  %-*s  %-*s  default %-*s  %s\n", static_cast<int>(name_w), "", static_cast<int>(param_w),
                  p.name.c_str(), static_cast<int>(type_w), type.c_str(), static_cast<int>(default_w),
                  p.default_value.c_str(), p.description.c_str());
    }
  }
}

json::array to_json_array(std::vector<policy_info> const& list, std::map<std::string, std::string> const& origin)
{
  json::array policies;
  for (policy_info const& info : list) {
    json::array params;
    for (policy_parameter const& p : info.parameters) {
      params.push_back(json::object{{"name", p.name},
                                    {"type", std::string(to_string(p.type))},
                                    {"default", p.default_value},
                                    {"description", p.description}});
    }
    json::object o{{"name", info.name}, {"description", info.description}};
    auto const from = origin.find(info.name);
    if (from != origin.end()) {
      o["plugin"] = from->second;
    } else {
      o["plugin"] = nullptr;
    }
    o["parameters"] = std::move(params);
    policies.push_back(std::move(o));
  }
  return policies;
}

}  // namespace

int policies_command(int argc, char** argv)
{
  po::options_description desc(
    "tierpool policies: every eviction policy and prefetch predictor this tierpool knows,\n"
    "sorted by name, with its description and parameters (name, type, default, description).\n"
    "Plug-ins named with --plugin are loaded first and what they register is listed with the\n"
    "built-ins.\n\noptions");
  std::vector<std::string> plugins;
  desc.add_options()
    ("help,h", "show this help")
    ("plugin", po::value(&plugins)->composing(), "policy plug-in (shared object) to load; repeatable")
    ("json", "print one JSON object instead of text");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (po::error const& e) {
    std::fprintf(stderr, "tierpool policies: %s\n\n", e.what());
    std::cerr << desc << '\n';
    return 2;
  }
  if (vm.count("help") != 0U) {
    std::cout << desc << '\n';
    return 0;
  }

  auto registry = policy_registry::with_builtins();
  std::map<std::string, std::string> origin;            // policy name -> plug-in path
  std::map<std::string, std::string> predictor_origin;  // predictor name -> plug-in path
  for (std::string const& path : plugins) {
    std::vector<policy_info> const before = registry.list_predictors();
    for (std::string const& name : registry.load_plugin(path)) { origin.emplace(name, path); }  // plugin_error -> main
    for (policy_info const& p : registry.list_predictors()) {
      bool const had = std::any_of(before.begin(), before.end(), [&](policy_info const& b) { return b.name == p.name; });
      if (!had) { predictor_origin.emplace(p.name, path); }
    }
  }
  std::vector<policy_info> const list = registry.list();
  std::vector<policy_info> const predictors = registry.list_predictors();
  if (vm.count("json") != 0U) {
    json::object const o{{"policy_abi_version", policy_abi_version},
                         {"policies", to_json_array(list, origin)},
                         {"predictors", to_json_array(predictors, predictor_origin)}};
    std::cout << json::serialize(o) << '\n';
  } else {
    print_section("eviction policies", "TIERPOOL_POLICY", list, origin);
    std::printf("\n");
    print_section("prefetch predictors", "TIERPOOL_PREFETCH or tierpool replay --prefetch", predictors,
                  predictor_origin);
  }
  return 0;
}

}  // namespace tierpool::cli

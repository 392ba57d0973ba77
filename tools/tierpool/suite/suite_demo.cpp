// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_demo.cpp — the oversubscription demo as a child process of `tierpool suite`
// (suite_demo.hpp).
#include "suite/suite_demo.hpp"

#include <unistd.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tierpool::cli::suite {

namespace fs = std::filesystem;
namespace json = boost::json;

std::string find_demo()
{
  if (char const* e = std::getenv("TIERPOOL_DEMO"); e != nullptr && *e != '\0') { return e; }
  std::error_code ec;
  fs::path const self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) { return {}; }
  for (fs::path const& cand : {self.parent_path().parent_path() / "examples" / "oversubscribe" / "oversubscribe",
                               self.parent_path() / "oversubscribe"}) {
    if (fs::exists(cand, ec)) { return cand.string(); }
  }
  return {};
}

std::optional<json::object> run_demo(std::string const& demo, std::vector<std::string> args, std::string const& json_path,
                                     std::string* why)
{
  args.insert(args.begin(), demo);
  args.push_back("--json");
  args.push_back(json_path);
  std::vector<char*> argv;
  for (std::string& a : args) { argv.push_back(a.data()); }
  argv.push_back(nullptr);
  std::string const err_path = json_path + ".err";
  pid_t const pid = fork();
  if (pid < 0) {
    if (why != nullptr) { *why = "cannot start it (fork failed)"; }
    return std::nullopt;
  }
  if (pid == 0) {
    std::FILE* devnull = std::fopen("/dev/null", "w");
    std::FILE* err = std::fopen(err_path.c_str(), "w");
    if (devnull != nullptr) { (void)dup2(fileno(devnull), 1); }
    if (err != nullptr || devnull != nullptr) { (void)dup2(fileno(err != nullptr ? err : devnull), 2); }
    execv(demo.c_str(), argv.data());
    _exit(127);
  }
  int st = 0;
  bool const ok = waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  if (!ok) {
    if (why != nullptr) {  // its last line on stderr says why (`oversubscribe: out of memory: ...`)
      std::ifstream e(err_path);
      std::string line;
      std::string last;
      while (std::getline(e, line)) {
        if (!line.empty()) { last = line; }
      }
      *why = !last.empty() ? last
             : WIFEXITED(st) ? "exit status " + std::to_string(WEXITSTATUS(st))
                             : "killed by signal " + std::to_string(WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
    std::error_code ec;
    fs::remove(err_path, ec);
    return std::nullopt;
  }
  std::error_code rm_ec;
  fs::remove(err_path, rm_ec);
  std::ifstream in(json_path);
  std::stringstream ss;
  ss << in.rdbuf();
  boost::system::error_code ec;
  json::value v = json::parse(ss.str(), ec);
  if (ec || !v.is_object()) {
    if (why != nullptr) { *why = "it wrote no JSON to " + json_path; }
    return std::nullopt;
  }
  return v.as_object();
}

double num(json::object const& o, char const* key)
{
  json::value const* v = o.if_contains(key);
  if (v == nullptr) { return 0.0; }
  if (v->is_double()) { return v->as_double(); }
  if (v->is_int64()) { return static_cast<double>(v->as_int64()); }
  if (v->is_uint64()) { return static_cast<double>(v->as_uint64()); }
  return 0.0;
}

void append_sim_demo_args(device_preset const& p, std::vector<std::string>& args)
{
  char link[64];
  std::snprintf(link, sizeof link, "%.6g,%llu", p.host_link.bandwidth_bytes_per_s,
                static_cast<unsigned long long>(p.host_link.latency_ns));
  args.insert(args.end(), {"--backend", "sim", "--virtual-clock", "--kernel-time", "--link", link});
  if (p.kernel_flops > 0) {
    char roof[64];
    auto const [flops, bytes] = kernel_roofline_of(p);
    std::snprintf(roof, sizeof roof, "%.6g,%.6g", flops, bytes);
    args.insert(args.end(), {"--kernel-roofline", roof});
  }
  if (!p.host_costs.none()) {
    char hc[160];
    std::snprintf(hc, sizeof hc, "kernel=%lluns,copy=%lluns,event=%lluns,host_func=%lluns",
                  static_cast<unsigned long long>(p.host_costs.compute), static_cast<unsigned long long>(p.host_costs.copy),
                  static_cast<unsigned long long>(p.host_costs.event),
                  static_cast<unsigned long long>(p.host_costs.host_func));
    args.insert(args.end(), {"--host-costs", hc});
  }
}

demo_times demo_times_of(json::object const& r, bool simulated)
{
  auto list = [&](char const* key) {
    std::vector<double> v;
    if (json::value const* a = r.if_contains(key); a != nullptr && a->is_array()) {
      for (json::value const& x : a->as_array()) { v.push_back(x.is_number() ? x.to_number<double>() : 0.0); }
    }
    return v;
  };
  std::vector<double> const it = list(simulated ? "virtual_iteration_seconds" : "iteration_seconds");
  demo_times t;
  t.first = it.empty() ? 0.0 : it.front();
  t.steady = num(r, simulated ? "virtual_steady_seconds_per_iteration" : "steady_seconds_per_iteration");
  t.reference_steady =
    num(r, simulated ? "reference_virtual_steady_seconds_per_iteration" : "reference_steady_seconds_per_iteration");
  return t;
}

}  // namespace tierpool::cli::suite

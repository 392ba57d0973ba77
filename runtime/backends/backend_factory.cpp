// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// backend_factory.cpp — owns backend selection: names ("auto" / "sim" / "cuda"),
// TIERPOOL_BACKEND, and the automatic CUDA -> sim fallback with its one log message.
// This is the one runtime file that knows whether the CUDA backend is compiled in.
// Entry points: select_backend(), select_backend_from_env().
#include <tierpool/backend_factory.hpp>
#include <tierpool/config.hpp>
#include <tierpool/error.hpp>
#include <tierpool/log.hpp>

#if TIERPOOL_HAS_CUDA
#include <tierpool/backends/cuda_backend.hpp>
#endif

#include <cstdlib>
#include <string>
#include <utility>

namespace tierpool {
namespace {

constexpr char const* kValidNames = "auto, sim, cuda";

// Try the CUDA backend; null with `why` when it is not compiled in or not usable.
std::unique_ptr<backend> try_cuda(int device, std::string& why, status& code)
{
#if TIERPOOL_HAS_CUDA
  auto b = make_cuda_backend(device, &why);
  code = status::no_device;
  return b;
#else
  (void)device;
  why = "the CUDA backend is not compiled in (TIERPOOL_HAS_CUDA=0)";
  code = status::not_supported;
  return nullptr;
#endif
}

std::string describe_device(backend const& b)
{
  auto const& c = b.caps();
  return "CUDA device " + std::to_string(c.device_ordinal) + " (" + c.device_name + ")";
}

// The sim backend for device `device`: the ordinal is the selection's, whatever `sim` says.
std::unique_ptr<backend> make_sim_for(sim_options const& sim, int device)
{
  sim_options o = sim;
  o.device_ordinal = device;
  return make_sim_backend(o);
}

}  // namespace

std::string_view to_string(backend_choice c) noexcept
{
  switch (c) {
    case backend_choice::automatic: return "auto";
    case backend_choice::sim: return "sim";
    case backend_choice::cuda: return "cuda";
  }
  return "unknown";
}

backend_choice parse_backend_choice(std::string_view name)
{
  if (name == "auto") { return backend_choice::automatic; }
  if (name == "sim") { return backend_choice::sim; }
  if (name == "cuda") { return backend_choice::cuda; }
  throw logic_error("unknown backend '" + std::string(name) + "' (valid: " + kValidNames + ")");
}

std::optional<backend_choice> backend_choice_from_env()
{
  char const* env = std::getenv("TIERPOOL_BACKEND");
  if (env == nullptr || *env == '\0') { return std::nullopt; }
  std::string_view const name(env);
  if (name == "auto" || name == "sim" || name == "cuda") { return parse_backend_choice(name); }
  throw logic_error("TIERPOOL_BACKEND: unknown backend '" + std::string(name) + "' (valid: " + kValidNames + ")");
}

backend_selection select_backend(backend_choice choice, sim_options const& sim, int device, fallback_notice notice)
{
  if (device < 0) {
    throw logic_error("select_backend: device ordinal " + std::to_string(device) + " is negative (devices count from 0)");
  }
  backend_selection sel;
  switch (choice) {
    case backend_choice::sim:
      sel.backend = make_sim_for(sim, device);
      sel.reason = "the simulated device was requested";
      if (device != 0) { sel.reason += " (simulated device " + std::to_string(device) + ")"; }
      return sel;
    case backend_choice::cuda: {
      std::string why;
      status code = status::no_device;
      sel.backend = try_cuda(device, why, code);
      if (!sel.backend) { throw backend_error(code, "the CUDA backend was requested but is unavailable: " + why); }
      sel.reason = "the CUDA backend was requested: " + describe_device(*sel.backend);
      return sel;
    }
    case backend_choice::automatic: {
      std::string why;
      status code = status::no_device;
      sel.backend = try_cuda(device, why, code);
      if (sel.backend) {
        sel.reason = "automatic selection found " + describe_device(*sel.backend);
        return sel;
      }
      sel.backend = make_sim_for(sim, device);
      sel.fell_back = true;
      sel.reason = "no usable CUDA device (" + why + "); using the simulated device";
      if (device != 0) { sel.reason += " " + std::to_string(device); }
      if (notice == fallback_notice::stderr_line) {
        log_message(log_level::warning, "tierpool: " + sel.reason +
                                          "; to use it without this message choose it (TIERPOOL_BACKEND=sim, "
                                          "backend_choice::sim) or set fallback_notice::silent");
      }
      return sel;
    }
  }
  throw logic_error("select_backend: invalid backend_choice value");
}

backend_selection select_backend_from_env(sim_options const& sim, int device, fallback_notice notice,
                                          backend_choice default_choice)
{
  auto const from_env = backend_choice_from_env();
  auto sel = select_backend(from_env.value_or(default_choice), sim, device, notice);
  if (from_env) { sel.reason = "TIERPOOL_BACKEND=" + std::string(to_string(*from_env)) + ": " + sel.reason; }
  return sel;
}

}  // namespace tierpool

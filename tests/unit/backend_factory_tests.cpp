// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// backend_factory_tests.cpp — backend selection (names, TIERPOOL_BACKEND, the automatic
// CUDA -> sim fallback and its stderr line), make_cuda_backend() on a machine without a
// driver, and the byte-size parser the selection's callers use (detail/parse.hpp).
#include <tierpool/backend_factory.hpp>
#include <tierpool/config.hpp>
#include <tierpool/detail/parse.hpp>
#include <tierpool/error.hpp>
#if TIERPOOL_HAS_CUDA
#include <tierpool/backends/cuda_backend.hpp>
#endif

#include <gtest/gtest.h>

#include "support/scoped_env.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace {

using namespace tierpool::literals;

using tierpool::test::scoped_env;

// True when the CUDA driver library can be loaded (a machine with a driver installed).
[[maybe_unused]] bool driver_library_present()
{
  void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h == nullptr) { return false; }
  ::dlclose(h);
  return true;
}

bool contains(std::string const& s, std::string_view part) { return s.find(part) != std::string::npos; }

// ---------------------------------------------------------------- names

TEST(BackendChoice, ParsesValidNamesAndRoundTrips)
{
  using tierpool::backend_choice;
  EXPECT_EQ(tierpool::parse_backend_choice("auto"), backend_choice::automatic);
  EXPECT_EQ(tierpool::parse_backend_choice("sim"), backend_choice::sim);
  EXPECT_EQ(tierpool::parse_backend_choice("cuda"), backend_choice::cuda);
  for (auto c : {backend_choice::automatic, backend_choice::sim, backend_choice::cuda}) {
    EXPECT_EQ(tierpool::parse_backend_choice(tierpool::to_string(c)), c);
  }
}

TEST(BackendChoice, BadNameIsLogicErrorListingValidNames)
{
  for (char const* bad : {"bogus", "", "CUDA", "sim "}) {
    try {
      (void)tierpool::parse_backend_choice(bad);
      FAIL() << "expected logic_error for '" << bad << "'";
    } catch (tierpool::logic_error const& e) {
      std::string const what = e.what();
      EXPECT_TRUE(contains(what, "'" + std::string(bad) + "'")) << what;
      EXPECT_TRUE(contains(what, "auto, sim, cuda")) << what;
    }
  }
}

// ---------------------------------------------------------------- selection

TEST(SelectBackend, ExplicitSimUsesTheOptions)
{
  tierpool::sim_options o;
  o.device_bytes = 64_MiB;
  auto sel = tierpool::select_backend(tierpool::backend_choice::sim, o);
  ASSERT_NE(sel.backend, nullptr);
  EXPECT_EQ(sel.backend->caps().name, "sim");
  EXPECT_EQ(sel.backend->caps().device_bytes, 64_MiB);
  EXPECT_FALSE(sel.fell_back);
  EXPECT_TRUE(contains(sel.reason, "requested")) << sel.reason;
}

// The device ordinal reaches the sim backend: devices 0 and 1 are two simulated devices
// (pool_options::device comes this way). A negative ordinal is refused for every choice.
TEST(SelectBackend, TheDeviceOrdinalSelectsTheSimulatedDevice)
{
  tierpool::sim_options o;
  o.device_ordinal = 5;  // replaced by the selection's device
  auto one = tierpool::select_backend(tierpool::backend_choice::sim, o, 1);
  EXPECT_EQ(one.backend->caps().device_ordinal, 1);
  EXPECT_TRUE(contains(one.backend->caps().device_name, "simulated device 1 (")) << one.backend->caps().device_name;
  EXPECT_TRUE(contains(one.reason, "simulated device 1")) << one.reason;
  auto zero = tierpool::select_backend(tierpool::backend_choice::sim, o);
  EXPECT_EQ(zero.backend->caps().device_ordinal, 0);
  auto fallback = tierpool::select_backend(tierpool::backend_choice::automatic, {}, 2, tierpool::fallback_notice::silent);
  if (fallback.fell_back) {
    EXPECT_EQ(fallback.backend->caps().device_ordinal, 2);
    EXPECT_TRUE(contains(fallback.reason, "using the simulated device 2")) << fallback.reason;
  }
  for (auto c : {tierpool::backend_choice::sim, tierpool::backend_choice::automatic, tierpool::backend_choice::cuda}) {
    try {
      (void)tierpool::select_backend(c, {}, -1, tierpool::fallback_notice::silent);
      ADD_FAILURE() << "a negative device was accepted";
    } catch (tierpool::logic_error const& e) {
      EXPECT_TRUE(contains(e.what(), "device ordinal -1 is negative")) << e.what();
    }
  }
  EXPECT_THROW((void)tierpool::select_backend(tierpool::backend_choice::sim, {}, 256), tierpool::logic_error);
}

TEST(SelectBackend, ExplicitSimPrintsNothing)
{
  testing::internal::CaptureStderr();
  auto sel = tierpool::select_backend(tierpool::backend_choice::sim);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(sel.backend->caps().name, "sim");
}

TEST(SelectBackend, AutomaticWithoutDriverFallsBackToSimWithReason)
{
  auto sel = tierpool::select_backend(tierpool::backend_choice::automatic, {}, 0, tierpool::fallback_notice::silent);
  ASSERT_NE(sel.backend, nullptr);
  if (sel.backend->caps().name == "cuda") {
    EXPECT_FALSE(sel.fell_back);
    GTEST_SKIP() << "a usable CUDA device is present: " << sel.reason;
  }
  EXPECT_EQ(sel.backend->caps().name, "sim");
  EXPECT_TRUE(sel.fell_back);
  EXPECT_TRUE(contains(sel.reason, "no usable CUDA device")) << sel.reason;
  EXPECT_TRUE(contains(sel.reason, "using the simulated device")) << sel.reason;
#if TIERPOOL_HAS_CUDA
  if (!driver_library_present()) {
    // This is the static-cudart path: the binary started and the first call failed cleanly.
    EXPECT_TRUE(contains(sel.reason, "no CUDA driver (cudaErrorInsufficientDriver")) << sel.reason;
  }
#else
  EXPECT_TRUE(contains(sel.reason, "not compiled in")) << sel.reason;
#endif
}

TEST(SelectBackend, FallbackNoticeIsOneStderrLineOrSilent)
{
  testing::internal::CaptureStderr();
  auto loud = tierpool::select_backend(tierpool::backend_choice::automatic);
  std::string const printed = testing::internal::GetCapturedStderr();
  if (!loud.fell_back) { GTEST_SKIP() << "a usable CUDA device is present"; }
  EXPECT_EQ(printed, "tierpool: " + loud.reason +
                       "; to use it without this message choose it (TIERPOOL_BACKEND=sim, backend_choice::sim) or "
                       "set fallback_notice::silent\n");

  testing::internal::CaptureStderr();
  auto quiet = tierpool::select_backend(tierpool::backend_choice::automatic, {}, 0, tierpool::fallback_notice::silent);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(quiet.fell_back);
}

TEST(SelectBackend, ExplicitCudaUnavailableThrowsBackendError)
{
  try {
    auto sel = tierpool::select_backend(tierpool::backend_choice::cuda);
    EXPECT_EQ(sel.backend->caps().name, "cuda");
    GTEST_SKIP() << "a usable CUDA device is present";
  } catch (tierpool::backend_error const& e) {
    std::string const what = e.what();
    EXPECT_TRUE(contains(what, "the CUDA backend was requested but is unavailable")) << what;
#if TIERPOOL_HAS_CUDA
    EXPECT_EQ(e.code(), tierpool::status::no_device);
    if (!driver_library_present()) { EXPECT_TRUE(contains(what, "cudaErrorInsufficientDriver")) << what; }
#else
    EXPECT_EQ(e.code(), tierpool::status::not_supported);
#endif
  }
}

TEST(SelectBackendFromEnv, VariableChoosesSim)
{
  scoped_env env("TIERPOOL_BACKEND", "sim");
  testing::internal::CaptureStderr();
  auto sel = tierpool::select_backend_from_env();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(sel.backend->caps().name, "sim");
  EXPECT_FALSE(sel.fell_back);
  EXPECT_EQ(sel.reason.rfind("TIERPOOL_BACKEND=sim: ", 0), 0U) << sel.reason;
}

TEST(SelectBackendFromEnv, UnsetOrEmptyUsesDefaultChoice)
{
  for (char const* value : {static_cast<char const*>(nullptr), ""}) {
    scoped_env env("TIERPOOL_BACKEND", value);
    EXPECT_EQ(tierpool::backend_choice_from_env(), std::nullopt);
    auto sel = tierpool::select_backend_from_env({}, 0, tierpool::fallback_notice::silent,
                                                 tierpool::backend_choice::sim);
    EXPECT_EQ(sel.backend->caps().name, "sim");
    EXPECT_FALSE(contains(sel.reason, "TIERPOOL_BACKEND")) << sel.reason;
  }
}

TEST(SelectBackendFromEnv, BadVariableIsLogicErrorNamingIt)
{
  scoped_env env("TIERPOOL_BACKEND", "gpu");
  try {
    (void)tierpool::select_backend_from_env();
    FAIL() << "expected logic_error";
  } catch (tierpool::logic_error const& e) {
    std::string const what = e.what();
    EXPECT_TRUE(contains(what, "TIERPOOL_BACKEND")) << what;
    EXPECT_TRUE(contains(what, "'gpu'")) << what;
  }
}

#if TIERPOOL_HAS_CUDA
// Runs without a GPU: on a driverless machine the statically linked cudart must fail
// cleanly, and make_cuda_backend must say why.
TEST(MakeCudaBackend, NullWithDriverReasonWithoutDriver)
{
  if (driver_library_present()) { GTEST_SKIP() << "a CUDA driver is installed on this machine"; }
  for (int device : {0, 3, -1}) {
    std::string why;
    auto b = tierpool::make_cuda_backend(device, &why);
    EXPECT_EQ(b, nullptr);
    EXPECT_EQ(why.rfind("no CUDA driver (cudaErrorInsufficientDriver: ", 0), 0U) << why;
  }
  std::string why;
  EXPECT_EQ(tierpool::cuda_device_count(&why), 0);
  EXPECT_TRUE(contains(why, "cudaErrorInsufficientDriver")) << why;
  EXPECT_EQ(tierpool::make_cuda_backend(0), nullptr);  // why_not may be null
}

TEST(MakeCudaBackend, OutOfRangeOrdinalIsNullWithReason)
{
  std::string why;
  auto b = tierpool::make_cuda_backend(1 << 20, &why);
  EXPECT_EQ(b, nullptr);
  EXPECT_FALSE(why.empty());
  if (driver_library_present() && tierpool::cuda_device_count() > 0) {
    EXPECT_TRUE(contains(why, "does not exist")) << why;
  }
}
#endif

// ---------------------------------------------------------------- byte sizes

TEST(ParseByteSize, AcceptsNumbersAndUnits)
{
  using tierpool::detail::parse_byte_size;
  EXPECT_EQ(parse_byte_size("0"), 0U);
  EXPECT_EQ(parse_byte_size("4096"), 4096U);
  EXPECT_EQ(parse_byte_size("4096B"), 4096U);
  EXPECT_EQ(parse_byte_size("512MiB"), 512_MiB);
  EXPECT_EQ(parse_byte_size("2GiB"), 2_GiB);
  EXPECT_EQ(parse_byte_size("2gib"), 2_GiB);
  EXPECT_EQ(parse_byte_size(" 2 GiB "), 2_GiB);
  EXPECT_EQ(parse_byte_size("64K"), 64_KiB);
  EXPECT_EQ(parse_byte_size("3M"), 3_MiB);
  EXPECT_EQ(parse_byte_size("1T"), 1024_GiB);
  EXPECT_EQ(parse_byte_size("1TiB"), 1024_GiB);
  EXPECT_EQ(parse_byte_size("16GB"), 16'000'000'000U);
  EXPECT_EQ(parse_byte_size("5kB"), 5000U);
  EXPECT_EQ(parse_byte_size("1.5GiB"), 1_GiB + 512_MiB);
  EXPECT_EQ(parse_byte_size("0.5KiB"), 512U);
}

TEST(ParseByteSize, RejectsMalformedTextWithLogicError)
{
  using tierpool::detail::parse_byte_size;
  for (char const* bad : {"", "   ", "MiB", "-1GiB", "12 XB", "1.GiB", "2GiB extra", "0x10", "1,5GiB",
                          "99999999999999999999", "20000000TiB", "1.1234567GiB"}) {
    try {
      (void)parse_byte_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (tierpool::logic_error const& e) {
      std::string const what = e.what();
      EXPECT_TRUE(contains(what, "'" + std::string(bad) + "'")) << what;
      EXPECT_TRUE(contains(what, "GiB")) << what;
    }
  }
}

TEST(FormatByteSize, UsesBinaryUnits)
{
  using tierpool::detail::format_byte_size;
  EXPECT_EQ(format_byte_size(0), "0 B");
  EXPECT_EQ(format_byte_size(1023), "1023 B");
  EXPECT_EQ(format_byte_size(1536), "1.5 KiB");
  EXPECT_EQ(format_byte_size(16ULL << 30), "16.0 GiB");
  EXPECT_EQ(format_byte_size(16'000'000'000ULL), "14.9 GiB");
}

}  // namespace

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// error_tests.cpp — the exception hierarchy and the checking macros.
#include <tierpool/error.hpp>
#include <tierpool/pool.hpp>
#include <tierpool/tier.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

tierpool::status failing_call() { return tierpool::status::injected_fault; }

// The message is for the user (no source path in it); the location is kept apart.
TEST(Error, ExpectsThrowsLogicErrorWithLocationKeptApart)
{
  try {
    TIERPOOL_EXPECTS(1 + 1 == 3, "arithmetic is broken");
    FAIL() << "TIERPOOL_EXPECTS did not throw";
  } catch (tierpool::logic_error const& e) {
    EXPECT_STREQ(e.what(), "tierpool: arithmetic is broken");
    EXPECT_EQ(e.file(), "error_tests.cpp");
    EXPECT_GT(e.line(), 0);
  }
}

// A misuse caught inside the library: no source path of tierpool's in the message.
TEST(Error, PoolMisuseMessagesCarryNoSourcePath)
{
  tierpool::pool_options o;
  o.backend = tierpool::backend_choice::sim;
  o.read_environment = false;
  o.publish.enabled = false;
  tierpool::pool p{o};
  try {
    (void)p.allocate(0);
    FAIL() << "allocate(0) did not throw";
  } catch (tierpool::logic_error const& e) {
    EXPECT_STREQ(e.what(), "tierpool: pool::allocate: bytes must be > 0");
    EXPECT_EQ(e.file(), "tensor_ops.cpp");  // the file name only, where the check is
  }
}

TEST(Error, TryThrowsBackendErrorCarryingTheStatus)
{
  try {
    TIERPOOL_TRY(failing_call());
    FAIL() << "TIERPOOL_TRY did not throw";
  } catch (tierpool::backend_error const& e) {
    EXPECT_EQ(e.code(), tierpool::status::injected_fault);
    std::string const msg = e.what();
    EXPECT_NE(msg.find("failing_call()"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[injected_fault]"), std::string::npos) << msg;
  }
}

TEST(Error, TryPassesOk)
{
  EXPECT_NO_THROW(TIERPOOL_TRY(tierpool::status::ok));
}

TEST(Error, OutOfMemoryIsABadAllocWithDetails)
{
  tierpool::out_of_memory const oom("tier 0 is full", tierpool::tier_id{0}, 4096);
  tierpool::bad_alloc const& as_ours = oom;
  std::bad_alloc const& as_std = oom;
  EXPECT_STREQ(as_ours.what(), "tier 0 is full");
  EXPECT_STREQ(as_std.what(), "tier 0 is full");
  EXPECT_EQ(oom.tier(), tierpool::tier_id{0});
  EXPECT_EQ(oom.requested(), 4096U);
}

TEST(Error, EveryStatusHasAName)
{
  using tierpool::status;
  for (auto s : {status::ok, status::not_ready, status::invalid_value, status::out_of_memory,
                 status::not_supported, status::no_device, status::device_error, status::injected_fault}) {
    EXPECT_NE(tierpool::to_string(s), "unknown");
  }
  EXPECT_EQ(tierpool::to_string(tierpool::tier_kind::pinned_host), "pinned_host");
}

}  // namespace

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// pool_device_loss_tests.cpp — a device lost to a sticky error (status::device_lost):
// the call that finds it and every later call that needs the device throw device_lost
// naming exactly the tensors whose only copy was on the device; the others keep their
// bytes on the host; write-through tensors survive; close() frees the pool without
// hanging. The loss is injected by a backend wrapper around sim that, once "lost", fails
// every call as a dead CUDA context does.
#include <gtest/gtest.h>

#include <tierpool/pool.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "../unit/pool_test_util.hpp"

namespace tierpool::test {
namespace {

// Forwards to a sim backend until lose(); afterwards every call that would reach the
// device fails with device_lost (deallocation is a no-op then: a dead context frees
// nothing, and the sim's memory goes with the wrapper).
class lossy_backend final : public backend {
 public:
  explicit lossy_backend(std::shared_ptr<sim_backend> inner) : in_(std::move(inner)) {}
  void lose() noexcept { lost_.store(true); }
  [[nodiscard]] bool is_lost() const noexcept { return lost_.load(); }

  [[nodiscard]] backend_caps const& caps() const noexcept override { return in_->caps(); }
  [[nodiscard]] status allocate(tier_kind kind, std::size_t bytes, void** out, int numa_node) noexcept override
  {
    return is_lost() ? fail(out) : in_->allocate(kind, bytes, out, numa_node);
  }
  void deallocate(tier_kind kind, void* ptr, std::size_t bytes) noexcept override
  {
    if (!is_lost()) { in_->deallocate(kind, ptr, bytes); }
  }
  [[nodiscard]] status device_memory_info(std::size_t* f, std::size_t* t) noexcept override
  {
    return is_lost() ? status::device_lost : in_->device_memory_info(f, t);
  }
  [[nodiscard]] status create_stream(stream_handle* out, int priority) noexcept override
  {
    return is_lost() ? status::device_lost : in_->create_stream(out, priority);
  }
  void destroy_stream(stream_handle s) noexcept override { in_->destroy_stream(s); }
  [[nodiscard]] status synchronize_stream(stream_handle s) noexcept override
  {
    return is_lost() ? status::device_lost : in_->synchronize_stream(s);
  }
  [[nodiscard]] status create_event(event_handle* out) noexcept override
  {
    return is_lost() ? status::device_lost : in_->create_event(out);
  }
  void destroy_event(event_handle e) noexcept override { in_->destroy_event(e); }
  [[nodiscard]] status record_event(event_handle e, stream_handle s) noexcept override
  {
    return is_lost() ? status::device_lost : in_->record_event(e, s);
  }
  [[nodiscard]] status query_event(event_handle e) noexcept override
  {
    return is_lost() ? status::device_lost : in_->query_event(e);
  }
  [[nodiscard]] status synchronize_event(event_handle e) noexcept override
  {
    return is_lost() ? status::device_lost : in_->synchronize_event(e);
  }
  [[nodiscard]] status stream_wait_event(stream_handle s, event_handle e) noexcept override
  {
    return is_lost() ? status::device_lost : in_->stream_wait_event(s, e);
  }
  [[nodiscard]] status copy_async(copy_desc const& d, stream_handle s) noexcept override
  {
    return is_lost() ? status::device_lost : in_->copy_async(d, s);
  }
  [[nodiscard]] status prefetch_async(void* p, std::size_t n, memory_location to, stream_handle s) noexcept override
  {
    return is_lost() ? status::device_lost : in_->prefetch_async(p, n, to, s);
  }
  [[nodiscard]] status advise(void* p, std::size_t n, mem_advice a, memory_location w) noexcept override
  {
    return is_lost() ? status::device_lost : in_->advise(p, n, a, w);
  }
  [[nodiscard]] status launch_host_func(stream_handle s, host_fn fn, void* user) noexcept override
  {
    return is_lost() ? status::device_lost : in_->launch_host_func(s, fn, user);
  }
  [[nodiscard]] tick now() const noexcept override { return in_->now(); }
  [[nodiscard]] std::string last_error() const override
  {
    return is_lost() ? "an illegal memory access was encountered (simulated)" : in_->last_error();
  }

 private:
  static status fail(void** out) noexcept
  {
    if (out != nullptr) { *out = nullptr; }
    return status::device_lost;
  }
  std::shared_ptr<sim_backend> in_;
  std::atomic<bool> lost_{false};
};

struct loss_fixture {
  std::shared_ptr<lossy_backend> be = std::make_shared<lossy_backend>(make_sim());
  pool_options options()
  {
    pool_options o;
    o.backend_object = be;
    o.read_environment = false;
    o.tiers.push_back({.kind = tier_kind::device, .capacity_bytes = 2_MiB, .chunk_bytes = 1_MiB});
    o.tiers.push_back({.kind = tier_kind::pinned_host, .capacity_bytes = 8_MiB, .chunk_bytes = 1_MiB});
    return o;
  }
};

// Tensors written on the device (only copy there), tensors clean on the device (a host copy
// too), host-only ones and a write-through one; then the device dies.
TEST(PoolDeviceLoss, TheCallThatFindsItNamesExactlyTheTensorsLost)
{
  std::vector<std::unique_ptr<modify_job>> jobs;  // outlives the sim (see below)
  loss_fixture f;
  pool p(f.options());
  auto s = p.create_stream();
  tensor dirty_a = p.allocate(256_KiB, {.name = "dirty_a"});
  tensor dirty_b = p.allocate(256_KiB, {.name = "dirty_b"});
  tensor clean = p.allocate(256_KiB, {.name = "clean"});
  tensor host_only = p.allocate(256_KiB, {.name = "host_only", .preferred_tier = tier_id{1}});
  tensor wt = p.allocate(256_KiB, {.name = "wt", .write_through = true});
  for (auto* t : {&dirty_a, &dirty_b, &clean, &host_only, &wt}) { fill(p, *t, t->bytes() + static_cast<std::uint64_t>(t->id()), 0); }
  auto key = [](tensor const& t) { return t.bytes() + static_cast<std::uint64_t>(t.id()); };
  ASSERT_EQ(modify_on_stream(p, dirty_a, s, key(dirty_a), 1, jobs), status::ok);
  ASSERT_EQ(modify_on_stream(p, dirty_b, s, key(dirty_b), 1, jobs), status::ok);
  ASSERT_EQ(modify_on_stream(p, wt, s, key(wt), 1, jobs), status::ok);
  { lease l = p.acquire(clean, access_mode::read, s); }
  p.synchronize(s);  // also waits for wt's write-back

  f.be->lose();
  try {
    lease l = p.acquire(host_only, access_mode::read, s);  // a copy-in: the device is gone
    FAIL() << "no throw";
  } catch (device_lost const& e) {
    EXPECT_EQ(e.code(), status::device_lost);
    std::vector<tensor_id> lost = e.lost_tensors();
    std::sort(lost.begin(), lost.end());
    EXPECT_EQ(lost, (std::vector<tensor_id>{dirty_a.id(), dirty_b.id()}));
    std::string const what = e.what();
    EXPECT_NE(what.find("the device was lost"), std::string::npos) << what;
    EXPECT_NE(what.find("2 tensor(s) lost"), std::string::npos) << what;
    EXPECT_NE(what.find("'dirty_a'"), std::string::npos) << what;
    EXPECT_NE(what.find("'dirty_b'"), std::string::npos) << what;
    EXPECT_EQ(what.find("'clean'"), std::string::npos) << what;
  }
  // Every later call that needs the device says so; the survivors' bytes are on the host.
  EXPECT_THROW((void)p.acquire(clean, access_mode::read, s), device_lost);
  EXPECT_THROW((void)p.allocate(4096), device_lost);
  EXPECT_THROW(p.synchronize(s), device_lost);
  EXPECT_THROW(p.demote(clean, tier_id{1}), device_lost);
  EXPECT_THROW((void)p.acquire_host(dirty_a, access_mode::read), device_lost);
  p.prefetch(clean);  // a hint: nothing
  EXPECT_TRUE(check(p, clean, key(clean), 0));
  EXPECT_TRUE(check(p, host_only, key(host_only), 0));
  EXPECT_TRUE(check(p, wt, key(wt), 1));  // written through before the loss
  pool_stats const st = p.stats();
  EXPECT_TRUE(st.device_lost);
  EXPECT_EQ(st.lost_tensors, 2U);
  EXPECT_NE(p.summary().find("DEVICE LOST: 2 tensors"), std::string::npos);
  p.free(dirty_a);  // freeing lost or surviving tensors works
  p.free(clean);
  p.close();  // frees without waiting on the dead device
}

TEST(PoolDeviceLoss, AFailedGrowthFindsItToo)
{
  loss_fixture f;
  pool p(f.options());
  tensor a = p.allocate(256_KiB, {.name = "a", .preferred_tier = tier_id{1}});
  fill(p, a, 1, 0);
  f.be->lose();
  try {
    (void)p.allocate(3_MiB, {.name = "big", .preferred_tier = tier_id{1}});  // grows the pinned tier
    FAIL() << "no throw";
  } catch (device_lost const& e) {
    EXPECT_TRUE(e.lost_tensors().empty());  // a's host copy is whole
    EXPECT_NE(std::string(e.what()).find("0 tensor(s) lost"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(check(p, a, 1, 0));
  p.close();
}

// A pool destroyed after the loss, with tensors still live and copies in flight: no hang.
TEST(PoolDeviceLoss, DestroyingThePoolAfterALossDoesNotHang)
{
  // The jobs outlive the sim: after the loss nothing drains the sim's streams but its
  // destructor, which runs the queued rewrites.
  std::vector<std::unique_ptr<modify_job>> jobs;
  loss_fixture f;
  {
    pool p(f.options());
    auto s = p.create_stream();
    std::vector<tensor> ts;
    for (int i = 0; i < 12; ++i) {
      ts.push_back(p.allocate(256_KiB));
      fill(p, ts.back(), static_cast<std::uint64_t>(i), 0);
      ASSERT_EQ(modify_on_stream(p, ts.back(), s, static_cast<std::uint64_t>(i), 1, jobs), status::ok);
      p.prefetch(ts.front());
    }
    f.be->lose();
    EXPECT_THROW(p.synchronize(s), device_lost);
    EXPECT_TRUE(p.validate());
  }  // the destructor closes: must return
  SUCCEED();
}

}  // namespace
}  // namespace tierpool::test

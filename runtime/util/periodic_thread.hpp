// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// periodic_thread.hpp — a thread that calls one function every period until stopped
// (the pool's device-pressure check). stop() wakes it at once and joins; the destructor
// stops. The function must not throw (an exception is caught and dropped: a check that
// failed once is tried again next period).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace tierpool::detail {

class periodic_thread {
 public:
  periodic_thread() = default;
  periodic_thread(periodic_thread const&) = delete;
  periodic_thread& operator=(periodic_thread const&) = delete;
  ~periodic_thread() { stop(); }

  /// Start calling `fn` every `period` (first after one period). Not while running.
  /// @throws std::system_error when no thread can be made (nothing runs then)
  void start(std::chrono::milliseconds period, std::function<void()> fn)
  {
    stop_ = false;
    thread_ = std::thread([this, period, f = std::move(fn)] {
      std::unique_lock lk(mtx_);
      while (!cv_.wait_for(lk, period, [this] { return stop_; })) {
        lk.unlock();
        try {
          f();
        } catch (...) {  // tried again next period
        }
        lk.lock();
      }
    });
  }

  /// Wake the thread and join it (idempotent; not from the thread itself).
  void stop() noexcept
  {
    {
      std::lock_guard lk(mtx_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) { thread_.join(); }
  }

 private:
  std::mutex mtx_;
  std::condition_variable cv_;
  bool stop_{false};  // under mtx_
  std::thread thread_;
};

}  // namespace tierpool::detail

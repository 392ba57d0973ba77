// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
/**
 * @file record_lock.hpp
 * @brief Internal: locks of tensor records that remember which records the calling
 *        thread holds, so that eviction never try-locks a record it already owns (which is
 *        undefined behaviour on a std::mutex). See Note [Lock order of the pool].
 */
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "migration/records.hpp"

namespace tierpool::detail {

/// @brief Records the calling thread holds (few: the acquired one and claimed victims).
inline std::vector<tensor_record const*>& held_records() noexcept
{
  thread_local std::vector<tensor_record const*> held;
  return held;
}

/// @brief True when the calling thread holds `r`'s lock.
inline bool holds_record(tensor_record const& r) noexcept
{
  auto const& h = held_records();
  return std::find(h.begin(), h.end(), &r) != h.end();
}

[[noreturn]] void throw_held(tensor_record const& r);  // copy_engine.cpp

/// @brief A blocking or try lock of a record, noted in held_records() while held.
class record_lock {
 public:
  /// Blocking lock.
  /// Throws logic_error when this thread holds it already (a pool call re-entered from
  /// inside the pool; std::mutex would deadlock).
  explicit record_lock(tensor_record& r) : rec_(&r)
  {
    if (!held_records().empty() && holds_record(r)) [[unlikely]] {
      rec_ = nullptr;
      throw_held(r);
    }
    r.mtx.lock();
    note();
  }
  /// Try lock: owns() tells whether it succeeded. Never called on a held record.
  record_lock(tensor_record& r, std::try_to_lock_t) : rec_(&r)
  {
    if (r.mtx.try_lock()) {
      note();
    } else {
      rec_ = nullptr;
    }
  }
  record_lock(record_lock&& o) noexcept : rec_(std::exchange(o.rec_, nullptr)) {}
  record_lock& operator=(record_lock&&) = delete;
  record_lock(record_lock const&) = delete;
  record_lock& operator=(record_lock const&) = delete;
  ~record_lock() { unlock(); }

  [[nodiscard]] bool owns() const noexcept { return rec_ != nullptr; }
  void unlock() noexcept
  {
    if (rec_ == nullptr) { return; }
    auto& h = held_records();
    if (auto it = std::find(h.begin(), h.end(), rec_); it != h.end()) { h.erase(it); }
    if (rec_->free_when_unpinned && rec_->pins == 0 && rec_->paused == 0 && rec_->drop_held) [[unlikely]] {
      // The handle died and no lease or paused request holds the record any more (Note
      // [Low-memory callbacks run unlocked], pool_impl.cpp): free it now; the references
      // that kept it and the pool alive are dropped after the unlock (the record first,
      // then the pool).
      std::shared_ptr<record_owner> keep_alive;
      record_ref keep_self;
      rec_->owner()->finish_dropped_locked(*rec_, keep_alive, keep_self);
      rec_->mtx.unlock();
      rec_ = nullptr;
      return;
    }
    rec_->mtx.unlock();
    rec_ = nullptr;
  }

 private:
  void note()
  {
    try {
      held_records().push_back(rec_);
    } catch (...) {
      rec_->mtx.unlock();
      throw;
    }
  }
  tensor_record* rec_;
};

}  // namespace tierpool::detail

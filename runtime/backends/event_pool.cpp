// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// runtime/backends/event_pool.cpp — the event recycling cache (event_pool.hpp).
// Entry points: event_pool::acquire / release. Backend calls (create_event, destroy_event)
// run outside the mutex; the mutex covers only the cache vector, the outstanding set and
// the counters.
//
// Invariant: created_ == destroyed_ + outstanding_.size() + cache_.size().
#include "backends/event_pool.hpp"

#include <new>
#include <utility>

namespace tierpool::detail {

event_pool::event_pool(backend& be, std::size_t max_cached) : backend_{&be}, max_cached_{max_cached}
{
  cache_.reserve(max_cached_);  // release never allocates: push_back stays within capacity
}

event_pool::~event_pool()
{
  for (event_handle const e : cache_) {
    backend_->destroy_event(e);
  }
  outstanding_.for_each([this](std::uint64_t v) { backend_->destroy_event(event_handle{static_cast<std::uintptr_t>(v)}); });
}

status event_pool::acquire(event_handle* out) noexcept
{
  if (out == nullptr) {
    return status::invalid_value;
  }
  {
    std::lock_guard lock(mtx_);
    if (!cache_.empty()) {
      event_handle const e = cache_.back();
      try {
        outstanding_.insert(e.value);
      } catch (std::bad_alloc const&) {
        ++create_failures_;
        return status::out_of_memory;  // e stays cached
      }
      cache_.pop_back();
      ++reused_;
      *out = e;
      return status::ok;
    }
  }
  event_handle e{};
  status const s = backend_->create_event(&e);
  if (s != status::ok) {
    std::lock_guard lock(mtx_);
    ++create_failures_;
    return s;
  }
  {
    std::lock_guard lock(mtx_);
    try {
      if (e.value == flat_u64_set::kEmpty) { throw std::bad_alloc(); }  // the one value the set cannot hold
      outstanding_.insert(e.value);
      ++created_;
      *out = e;
      return status::ok;
    } catch (std::bad_alloc const&) {
      ++create_failures_;
    }
  }
  backend_->destroy_event(e);  // could not track it: give it back rather than leak it
  return status::out_of_memory;
}

bool event_pool::try_release(event_handle e) noexcept
{
  if (!e) {
    return true;
  }
  {
    std::lock_guard lock(mtx_);
    if (!outstanding_.erase(e.value)) {
      return false;
    }
    if (cache_.size() < max_cached_) {
      cache_.push_back(e);  // capacity reserved at construction: cannot throw
      return true;
    }
    ++destroyed_;
  }
  backend_->destroy_event(e);
  return true;
}

void event_pool::release(event_handle e)
{
  TIERPOOL_EXPECTS(try_release(e),
                   "event_pool::release: event was not acquired from this pool or was already released");
}

bool event_pool::owns(event_handle e) const noexcept
{
  std::lock_guard lock(mtx_);
  return outstanding_.contains(e.value);
}

event_pool_stats event_pool::stats() const noexcept
{
  std::lock_guard lock(mtx_);
  return {created_, reused_, destroyed_, create_failures_, outstanding_.size(), cache_.size()};
}

}  // namespace tierpool::detail

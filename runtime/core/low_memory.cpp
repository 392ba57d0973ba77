// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// low_memory.cpp — owns the low-memory callbacks (low_memory.hpp).
#include "core/low_memory.hpp"

#include <tierpool/error.hpp>

namespace tierpool::detail {

std::uint64_t low_memory_callbacks::add(low_memory_callback cb)
{
  TIERPOOL_EXPECTS(static_cast<bool>(cb), "pool::add_low_memory_callback: empty callback");
  auto p = std::make_shared<low_memory_callback>(std::move(cb));
  std::lock_guard lock(mtx_);
  std::uint64_t const id = next_id_++;
  callbacks_.emplace_back(id, std::move(p));
  count_.store(callbacks_.size(), std::memory_order_relaxed);
  return id;
}

void low_memory_callbacks::remove(std::uint64_t id)
{
  std::lock_guard lock(mtx_);
  std::erase_if(callbacks_, [&](auto const& e) { return e.first == id; });
  count_.store(callbacks_.size(), std::memory_order_relaxed);
}

bool low_memory_callbacks::run(low_memory_event const& ev)
{
  thread_local bool in_callback = false;
  if (in_callback || !any()) { return false; }
  std::vector<std::shared_ptr<low_memory_callback>> cbs;
  {
    std::lock_guard lock(mtx_);
    for (auto const& e : callbacks_) { cbs.push_back(e.second); }
  }
  if (cbs.empty()) { return false; }
  struct reset {
    bool& flag;
    ~reset() { flag = false; }
  } r{in_callback};
  in_callback = true;
  for (auto const& cb : cbs) { (*cb)(ev); }
  calls_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// thread_shard.cpp — hands out hit-path shards round-robin (thread_shard.hpp).
#include "util/thread_shard.hpp"

#include <algorithm>

namespace tierpool::detail {

std::size_t assign_thread_shard() noexcept
{
  static std::atomic<std::size_t> next{0};
  return std::min(next.fetch_add(1, std::memory_order_relaxed), kShards);
}

}  // namespace tierpool::detail

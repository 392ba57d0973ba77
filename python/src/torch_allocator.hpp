// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// torch_allocator.hpp — the C entry points a torch.cuda.memory.CUDAPluggableAllocator calls
// (tierpool_torch_malloc / tierpool_torch_free, defined in torch_allocator.cpp), and the
// pool they take their blocks from. docs/chapters/pytorch_offload.md, "A MemPool".
#pragma once

#include <cstddef>
#include <cstdint>

#include <tierpool/pool.hpp>

namespace tierpool::python {

/// Blocks handed out and what happened to them.
struct torch_allocator_figures {
  std::uint64_t live_blocks{0};
  std::uint64_t live_bytes{0};
  std::uint64_t mallocs{0};
  std::uint64_t frees{0};
  std::uint64_t failures{0};       ///< mallocs that returned null (no pool, out of memory, another device)
  std::uint64_t foreign_frees{0};  ///< frees of a pointer this allocator did not hand out (ignored, logged)
};

/// Make `p` the pool the entry points allocate from (null: none; mallocs then fail).
/// @throws tierpool::logic_error while blocks of another pool are live.
void torch_allocator_attach(tierpool::pool* p);
/// The figures above.
[[nodiscard]] torch_allocator_figures torch_allocator_stats();

}  // namespace tierpool::python

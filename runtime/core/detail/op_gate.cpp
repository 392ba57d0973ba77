// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// op_gate.cpp — the asymmetric barrier of the quiesce gate (Note [The quiesce gate],
// op_gate.hpp): membarrier(2) where Linux has it, a seq_cst fence elsewhere.
#include "core/detail/op_gate.hpp"

#include <atomic>
#include <exception>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tierpool::detail {

bool op_gate::register_asymmetric() noexcept
{
#if defined(__linux__) && defined(SYS_membarrier)
  // QUERY lists the commands; registering is needed once before PRIVATE_EXPEDITED works.
  long const cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
  if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) { return false; }
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
#else
  return false;
#endif
}

void op_gate::heavy_barrier() noexcept
{
  // Without membarrier every entrant uses seq_cst read-modify-writes and the closer's
  // store of closed_ is seq_cst: no fence is needed here (and GCC refuses
  // atomic_thread_fence under ThreadSanitizer). The syscall is a full barrier itself.
#if defined(__linux__) && defined(SYS_membarrier)
  if (asymmetric()) {
    // Cannot fail once registered; if it did, entrants with own slots could be missed, so
    // stop the process rather than check a pool that is changing.
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0) { std::terminate(); }
  }
#endif
}

}  // namespace tierpool::detail

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_mpi.hpp — `tierpool suite run --mpi`: one rank per device, bundles gathered to rank
// 0 (docs/chapters/suite.md, "Across nodes"). Built against MPI only with
// -DTIERPOOL_ENABLE_MPI=ON; otherwise mpi_start() refuses with the reason.
#pragma once

#include <string>
#include <vector>

namespace tierpool::cli::suite {

/// The calling process's place in the run.
struct mpi_world {
  int rank{0};
  int size{1};
  std::string host;  ///< the rank's host name
};

/// True when this tierpool was built with MPI.
[[nodiscard]] bool mpi_built() noexcept;
/// MPI_Init and the world. @throws tierpool::logic_error when built without MPI.
[[nodiscard]] mpi_world mpi_start(int* argc, char*** argv);
/// Every rank's `mine`, in rank order, on rank 0 (empty elsewhere). Collective.
[[nodiscard]] std::vector<std::string> mpi_gather(std::string const& mine);
/// The largest `value` over the ranks, on every rank. Collective.
[[nodiscard]] int mpi_max(int value);
/// MPI_Finalize (no-op when mpi_start was not called).
void mpi_finish() noexcept;

}  // namespace tierpool::cli::suite

// SPDX-FileCopyrightText: 2026 tierpool contributors
// SPDX-License-Identifier: Apache-2.0
//
// suite_mpi.cpp — the MPI half of `tierpool suite run --mpi` (suite_mpi.hpp). Bundles are
// gathered as JSON text: their sizes with MPI_Gather, then the bytes with MPI_Gatherv.
#include "suite/suite_mpi.hpp"

#include <tierpool/error.hpp>

#if defined(TIERPOOL_WITH_MPI)
#include <mpi.h>
#endif

#include <unistd.h>

#include <numeric>

namespace tierpool::cli::suite {
namespace {
bool g_started = false;
}  // namespace

#if defined(TIERPOOL_WITH_MPI)

bool mpi_built() noexcept { return true; }

mpi_world mpi_start(int* argc, char*** argv)
{
  int ok = 0;
  MPI_Initialized(&ok);
  if (ok == 0 && MPI_Init(argc, argv) != MPI_SUCCESS) { throw logic_error("--mpi: MPI_Init failed"); }
  g_started = true;
  mpi_world w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  char host[256] = {};
  (void)gethostname(host, sizeof host - 1);
  w.host = host;
  return w;
}

std::vector<std::string> mpi_gather(std::string const& mine)
{
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int const n = static_cast<int>(mine.size());
  std::vector<int> sizes(static_cast<std::size_t>(size), 0);
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(static_cast<std::size_t>(size), 0);
  std::exclusive_scan(sizes.begin(), sizes.end(), offsets.begin(), 0);
  std::string all(rank == 0 ? static_cast<std::size_t>(offsets.back() + sizes.back()) : 0U, '\0');
  MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank == 0) {
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(sizes[r])));
    }
  }
  return out;
}

int mpi_max(int value)
{
  int out = value;
  MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

void mpi_finish() noexcept
{
  if (g_started) {
    MPI_Finalize();
    g_started = false;
  }
}

#else

bool mpi_built() noexcept { return false; }

mpi_world mpi_start(int* /*argc*/, char*** /*argv*/)
{
  throw logic_error("--mpi: this tierpool was built without MPI (configure with -DTIERPOOL_ENABLE_MPI=ON and "
                    "Open MPI installed: apt-get install libopenmpi-dev openmpi-bin)");
}

std::vector<std::string> mpi_gather(std::string const& mine) { return {mine}; }

int mpi_max(int value) { return value; }

void mpi_finish() noexcept { (void)g_started; }

#endif

}  // namespace tierpool::cli::suite

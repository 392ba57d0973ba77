#!/usr/bin/env bash
# Installs what tierpool needs to build and test on Debian 12, skipping what is already there.
# Usage: scripts/install-deps.sh   (as root, or with sudo available)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libhwloc-dev hwloc-nox          # topology: NUMA / CPU-less (CXL) nodes; lstopo + hwloc-annotate for fixtures
  libtbb-dev                      # oneTBB: concurrent containers, worker arenas
  libzstd-dev liblz4-dev          # the codecs a tensor is compressed with when it leaves a tier (runtime/codec)
  liburing-dev                    # optional: the storage tier's io_uring engine (without it: pread/pwrite)
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev   # intrusive, JSON, CLI
  libgtest-dev libgmock-dev googletest  # tests
  libbenchmark-dev                # micro-benchmarks
  clang libclang-rt-14-dev        # libFuzzer targets of the trace readers (scripts/run-fuzzers.sh)
  doxygen                         # the API reference and book (TIERPOOL_BUILD_DOCS, target docs)
  python3-venv python3-dev        # the Python package (pyproject.toml): its virtual environment and headers
  python3-torch                   # tierpool.torch (activation offload) and its tests: PyTorch 1.13 (CPU) with Debian's numpy
  libopenmpi-dev openmpi-bin      # tierpool suite run --mpi (TIERPOOL_ENABLE_MPI; scripts/run-tests.sh turns it on)
  chromium                        # headless browser for the suite report's rendering test (cli.suite_report.browser)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: everything is already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"

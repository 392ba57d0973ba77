#!/usr/bin/env bash
# The README's test command: (re)build if needed and run the whole CTest suite.
# GPU tests (label `gpu`) skip cleanly where there is no device.
# Extra arguments go to ctest, e.g. `scripts/run-tests.sh -L cpu` or `-R arena`.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  ./scripts/install-deps.sh
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD_DIR" -j"${JOBS:-2}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"${JOBS:-2}" "$@"

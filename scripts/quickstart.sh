#!/usr/bin/env bash
# The README's first quick-start command: install what is missing, build, run the main job.
# Until the tiered pool lands, the main job is `tierpool info` (backend, devices, NUMA nodes,
# default tiers); on a machine without a GPU it runs on the simulated device.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j"${JOBS:-2}"
echo
"$BUILD_DIR"/bin/tierpool info

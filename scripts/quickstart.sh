#!/usr/bin/env bash
# The README's first quick-start command: install what is missing, build, run the main job:
# the oversubscription demo (an MLP whose working set is 4x the device tier, trained through
# the tiered pool and verified bit for bit against a run that fits). On a machine without a
# GPU (or without a driver) it runs on the simulated device and says so.
# Extra arguments go to the demo, e.g. `scripts/quickstart.sh --iterations 10 --json out.json`.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j"${JOBS:-2}"
echo
"$BUILD_DIR"/examples/oversubscribe/oversubscribe "$@"

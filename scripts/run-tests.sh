#!/usr/bin/env bash
# The README's test command: (re)build if needed and run the whole CTest suite, then build
# the Python package into a virtual environment and run its tests (python/tests).
# GPU tests (label `gpu`) skip cleanly where there is no device.
# Extra arguments go to ctest, e.g. `scripts/run-tests.sh -L cpu` or `-R arena`.
# TIERPOOL_SKIP_PYTHON=1 skips the Python part; PYTHON names the interpreter of its
# virtual environment (default: Debian's /usr/bin/python3; the environment is
# $BUILD_DIR/pyenv, made once and reused).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  ./scripts/install-deps.sh
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD_DIR" -j"${JOBS:-2}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"${JOBS:-2}" "$@"

if [ "${TIERPOOL_SKIP_PYTHON:-0}" != 1 ]; then
  # The package is built by pip (scikit-build-core + nanobind, pyproject.toml) into
  # build/wheel/<wheel tag>, which later runs rebuild incrementally: the build
  # requirements are installed in the environment once and used without isolation.
  PYENV="$BUILD_DIR/pyenv"
  if [ ! -x "$PYENV/bin/python" ]; then
    "${PYTHON:-/usr/bin/python3}" -m venv "$PYENV"
    "$PYENV/bin/python" -m pip install -q --disable-pip-version-check \
      "scikit-build-core>=0.10" "nanobind>=3.0" pytest numpy
  fi
  "$PYENV/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation ./
  "$PYENV/bin/python" -m pytest python/tests -q -p no:cacheprovider
fi

#!/usr/bin/env bash
# The README's test command: (re)build if needed and run the whole CTest suite, then build
# the Python package into a virtual environment and run its tests (python/tests).
# GPU tests (label `gpu`) skip cleanly where there is no device.
# Extra arguments go to ctest, e.g. `scripts/run-tests.sh -L cpu` or `-R arena`.
# TIERPOOL_SKIP_PYTHON=1 skips the Python part; PYTHON names the interpreter of its
# virtual environment (default: Debian's /usr/bin/python3; the environment is
# $BUILD_DIR/pyenv, made once and reused; with --system-site-packages where the interpreter
# has PyTorch, so that the tierpool.torch tests run). TIERPOOL_CMAKE_ARGS: more options for
# the first configure of $BUILD_DIR (CI: -DTIERPOOL_TEST_PCH=ON).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  ./scripts/install-deps.sh
  # `tierpool suite run --mpi` and its test where Open MPI is installed (install-deps.sh does).
  MPI_OPT=()
  if command -v mpicxx >/dev/null 2>&1; then MPI_OPT=(-DTIERPOOL_ENABLE_MPI=ON); fi
  # shellcheck disable=SC2206  # options, split on spaces
  EXTRA_OPT=(${TIERPOOL_CMAKE_ARGS:-})
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${MPI_OPT[@]}" "${EXTRA_OPT[@]}" >/dev/null
fi
cmake --build "$BUILD_DIR" -j"${JOBS:-2}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"${JOBS:-2}" "$@"

if [ "${TIERPOOL_SKIP_PYTHON:-0}" != 1 ]; then
  # The package is built by pip (scikit-build-core + nanobind, pyproject.toml) into
  # build/wheel/<wheel tag>, which later runs rebuild incrementally: the build
  # requirements are installed in the environment once and used without isolation.
  # Where the interpreter has PyTorch (Debian's python3-torch, scripts/install-deps.sh),
  # the environment sees the system's packages (--system-site-packages) so that
  # tierpool.torch is tested, and numpy is not pip-installed: Debian's torch is built
  # against Debian's numpy 1.24, which a numpy 2 in the environment would shadow. An
  # environment made before torch was installed is made again.
  PY="${PYTHON:-/usr/bin/python3}"
  PYENV="$BUILD_DIR/pyenv"
  SYSTEM_TORCH=0
  if "$PY" -c "import torch" >/dev/null 2>&1; then SYSTEM_TORCH=1; fi
  if [ "$SYSTEM_TORCH" = 1 ] && [ -f "$PYENV/pyvenv.cfg" ] &&
     ! grep -q "include-system-site-packages = true" "$PYENV/pyvenv.cfg"; then
    echo "run-tests: remaking $PYENV with --system-site-packages (PyTorch found)"
    rm -rf "$PYENV"
  fi
  if [ ! -x "$PYENV/bin/python" ]; then
    if [ "$SYSTEM_TORCH" = 1 ]; then
      "$PY" -m venv --system-site-packages "$PYENV"
      "$PYENV/bin/python" -m pip install -q --disable-pip-version-check \
        "scikit-build-core>=0.10" "nanobind>=3.0" pytest
    else
      "$PY" -m venv "$PYENV"
      "$PYENV/bin/python" -m pip install -q --disable-pip-version-check \
        "scikit-build-core>=0.10" "nanobind>=3.0" pytest numpy
    fi
  fi
  # The extension links the library built above, installed into $BUILD_DIR/python-prefix
  # (static, position-independent libraries), so pip compiles only the bindings
  # (TIERPOOL_PYTHON_PREFIX, CMakeLists.txt), in a build folder of their own
  # (build/wheel-prefixed/<tag>: a plain `pip install .` keeps build/wheel/<tag> and builds
  # the library). A build tree without install rules, with shared libraries or with
  # sanitizers gives pip nothing to link: it builds the library, as `pip install .` does.
  PIP_CONFIG=()
  cache="$BUILD_DIR/CMakeCache.txt"
  if grep -q '^TIERPOOL_ENABLE_INSTALL:BOOL=ON$' "$cache" && grep -q '^TIERPOOL_SANITIZE:STRING=$' "$cache" &&
     ! grep -qE '^BUILD_SHARED_LIBS:BOOL=(ON|1|TRUE|YES)$' "$cache"; then
    prefix="$(realpath -m "$BUILD_DIR/python-prefix")"
    cmake --install "$BUILD_DIR" --prefix "$prefix" >/dev/null
    PIP_CONFIG=(--config-settings=cmake.define.TIERPOOL_PYTHON_PREFIX="$prefix"
                "--config-settings=build-dir=build/wheel-prefixed/{wheel_tag}")
  fi
  "$PYENV/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation "${PIP_CONFIG[@]}" ./
  "$PYENV/bin/python" -m pytest python/tests -q -p no:cacheprovider
fi

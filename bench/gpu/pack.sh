#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# bench/gpu/pack.sh — prepare what bench/gpu/check.sh runs on a lent GPU machine, on this
# (GPU-less) machine: a build with the CUDA backend, slimmed to the executables the check
# runs, plus the shared libraries the GPU machine lacks (hwloc, TBB, Boost, ...).
#
#   bench/gpu/pack.sh            # builds in build-gpu-work/, assembles build-gpu/
#   then carry "build-gpu" in the device run and call bench/gpu/check.sh there.
#
# Environment:
#   WORK_BUILD   build tree to build in (default build-gpu-work; an existing configured
#                tree such as build-bench is reused as is)
#   PACK_DEST    the folder to assemble (default build-gpu; check.sh reads BUILD_GPU)
#   JOBS         parallel jobs (default 2)
#   PACK_PYTHON  the interpreter to build the Python extension for: the GPU machine's is
#                Python 3.12 (default: pyenv's 3.12 where it is installed; none: skipped)
#
# build-gpu/ keeps the work tree's layout for what it holds (bin/, tests/, examples/, the
# CTestTestfile.cmake files and the files they include) with paths rewritten to build-gpu,
# and adds lib-carry/:
#   lib-carry/*.so*          libraries found with ldd that are not part of the C runtime
#                            (libstdc++ and libgcc_s too: check.sh uses them only where the
#                            GPU machine's own are older than the binaries need)
#   lib-carry/SOURCE_ROOT    this checkout's path (check.sh maps it onto the GPU machine's)
#   lib-carry/gpu_tests.txt  the test executables labelled `gpu` (run directly without ctest)
# The whole of build-gpu must stay under the device tool's 64 MiB carry limit: pack.sh
# fails above 60 MiB.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
WORK=${WORK_BUILD:-build-gpu-work}
case $WORK in /*) ;; *) WORK=$ROOT/$WORK ;; esac
DEST=${PACK_DEST:-build-gpu}
case $DEST in /*) ;; *) DEST=$ROOT/$DEST ;; esac
JOBS=${JOBS:-2}

if [[ ! -f $WORK/CMakeCache.txt ]]; then
  cmake -S "$ROOT" -B "$WORK" -G Ninja -DTIERPOOL_ENABLE_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
grep -q '^TIERPOOL_ENABLE_CUDA:STRING=OFF' "$WORK/CMakeCache.txt" &&
  { echo "pack.sh: $WORK is configured without CUDA" >&2; exit 1; }

# Test executables with the gpu label (tierpool_add_test(NAME x ... LABELS gpu)).
mapfile -t GPU_TESTS < <(grep -ho 'tierpool_add_test(NAME [A-Za-z0-9_]\+ .*LABELS[^)]*gpu' tests/CMakeLists.txt |
  sed 's/tierpool_add_test(NAME \([A-Za-z0-9_]*\) .*/\1/' | sort -u)
TARGETS=(tierpool_cli "${GPU_TESTS[@]}")
grep -q 'add_executable(oversubscribe' examples/oversubscribe/CMakeLists.txt 2>/dev/null && TARGETS+=(oversubscribe)
echo "pack.sh: building ${TARGETS[*]} in $WORK"
cmake --build "$WORK" -j "$JOBS" --target "${TARGETS[@]}"

rm -rf "$DEST"
mkdir -p "$DEST/lib-carry" "$DEST/bin"
copy_exe() {  # copy_exe RELATIVE_PATH: stripped copy at the same place under build-gpu
  local rel=$1
  [[ -x $WORK/$rel ]] || { echo "pack.sh: $WORK/$rel missing, skipped" >&2; return 0; }
  mkdir -p "$DEST/$(dirname "$rel")"
  cp "$WORK/$rel" "$DEST/$rel"
  strip --strip-debug "$DEST/$rel" 2>/dev/null || true
}
copy_exe bin/tierpool
: > "$DEST/lib-carry/gpu_tests.txt"
for t in "${GPU_TESTS[@]}"; do
  copy_exe "tests/$t"
  [[ -x $DEST/tests/$t ]] && echo "tests/$t" >> "$DEST/lib-carry/gpu_tests.txt"
done
copy_exe examples/oversubscribe/oversubscribe

# The Python extension, built for the GPU machine's Python 3.12 with a 3.12 of this machine
# (its headers; nanobind's CMake files from any interpreter here), with the CUDA backend:
# build-gpu/python/tierpool/ holds it with the package's Python files; check.sh runs
# python/tests with it on PYTHONPATH.
PY=${PACK_PYTHON:-/root/.pyenv/versions/3.12.1/bin/python3}
pack_python() {  # a failure here leaves the rest of the pack as it is
  local nbdir pyver pyb
  nbdir=$({ "$ROOT/build/pyenv/bin/python" -m nanobind --cmake_dir || python3 -m nanobind --cmake_dir; } 2>/dev/null | head -n1 || true)
  if [[ -z $nbdir ]]; then
    echo "pack.sh: no nanobind here (run scripts/run-tests.sh once): the Python extension is not packed" >&2
    return 1
  fi
  pyver=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
  pyb=$WORK/python$pyver  # one build tree per interpreter (CMake caches the one it found)
  # The extension links the library built above (installed into $WORK/python-prefix:
  # TIERPOOL_PYTHON_PREFIX, only the bindings are compiled), where the tree has install rules.
  local prefix=""
  if grep -q '^TIERPOOL_ENABLE_INSTALL:BOOL=ON$' "$WORK/CMakeCache.txt" &&
     cmake --install "$WORK" --prefix "$WORK/python-prefix" > /dev/null; then
    prefix=$WORK/python-prefix
  fi
  cmake -S "$ROOT" -B "$pyb" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIERPOOL_BUILD_PYTHON=ON \
    -DTIERPOOL_ENABLE_CUDA=ON -DTIERPOOL_BUILD_TESTS=OFF -DTIERPOOL_BUILD_BENCH=OFF -DTIERPOOL_BUILD_EXAMPLES=OFF \
    -DTIERPOOL_BUILD_TOOLS=OFF -DTIERPOOL_BUILD_DOCS=OFF -DTIERPOOL_ENABLE_INSTALL=OFF \
    -DTIERPOOL_PYTHON_PREFIX="$prefix" -DPython_EXECUTABLE="$PY" -Dnanobind_ROOT="$nbdir" > /dev/null &&
    cmake --build "$pyb" -j "$JOBS" --target _tierpool || return 1
  mkdir -p "$DEST/python/tierpool"
  cp python/tierpool/*.py python/tierpool/*.pyi python/tierpool/py.typed "$DEST/python/tierpool/"
  cp "$pyb"/python/_tierpool*.so "$DEST/python/tierpool/"
  strip --strip-debug "$DEST"/python/tierpool/_tierpool*.so 2>/dev/null || true
}
if [[ -x $PY ]]; then
  pack_python || { echo "pack.sh: the Python extension could not be built for $PY: not packed" >&2; rm -rf "$DEST/python"; }
else
  echo "pack.sh: no $PY: the Python extension is not packed (PACK_PYTHON names a Python 3.12)" >&2
fi

# The cudaMemcpyAsync baseline.
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$NVCC" -O2 -std=c++17 -o "$DEST/bin/copy_bw" bench/gpu/copy_bw.cu || echo "pack.sh: nvcc failed; check.sh compiles copy_bw there" >&2
  # nvbandwidth, the reference tool, when its source is here (NVBANDWIDTH_SRC: a checkout of
  # github.com/NVIDIA/nvbandwidth); tierpool suite run finds it beside tierpool.
  if [[ -n ${NVBANDWIDTH_SRC:-} ]]; then
    bash bench/gpu/build_nvbandwidth.sh "$NVBANDWIDTH_SRC" "$DEST/bin" || echo "pack.sh: nvbandwidth did not build" >&2
  fi
fi

# CTest files (paths rewritten to build-gpu), so `ctest -L gpu` runs in build-gpu. Discover
# the gtest cases here first (`ctest -N` runs each executable's --gtest_list_tests), so the
# GPU machine needs no CMake modules of its own.
(cd "$WORK" && ctest -N -L gpu > /dev/null) || echo "pack.sh: ctest -N -L gpu failed; discovery happens there" >&2
# Every file a CTestTestfile.cmake includes comes along (gtest's *_include.cmake and
# *_tests.cmake, and TEST_INCLUDE_FILES such as tests/*_labels.cmake): ctest stops at an
# include() of a missing file.
{
  (cd "$WORK" && find . -name CTestTestfile.cmake -o -name '*_include.cmake' -o -name '*_tests.cmake')
  find "$WORK" -name CTestTestfile.cmake -not -path '*/CMakeFiles/*' -exec sed -n 's/^include("\([^"]*\)").*/\1/p' {} + |
    while read -r inc; do if [[ $inc == "$WORK"/* && -f $inc ]]; then echo ".${inc#"$WORK"}"; fi; done
} | sort -u | while read -r f; do
  case $f in ./CMakeFiles/*|*/CMakeFiles/*) continue ;; esac
  mkdir -p "$DEST/$(dirname "$f")"
  sed "s#$WORK#$DEST#g" "$WORK/$f" > "$DEST/$f"
done
# Discovered test lists must stay newer than the executables and the include files, or
# ctest would rediscover (which needs this machine's CMake modules).
find "$DEST" -name '*_tests.cmake' -exec touch {} +

# Shared libraries the GPU machine lacks: everything ldd resolves except the C runtime.
for exe in "$DEST"/bin/* "$DEST"/tests/* "$DEST"/examples/oversubscribe/oversubscribe "$DEST"/python/tierpool/*.so; do
  [[ -f $exe && -x $exe ]] || continue
  ldd "$exe" 2>/dev/null | awk '/=> \// { print $3 }'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libcuda.so*) continue ;;
  esac
  cp -L "$lib" "$DEST/lib-carry/"
done
echo "$ROOT" > "$DEST/lib-carry/SOURCE_ROOT"
echo "$DEST" > "$DEST/lib-carry/BUILD_ROOT"

du -sh "$DEST"
ls "$DEST/lib-carry"
KIB=$(du -sk "$DEST" | cut -f1)
if ((KIB > 60 * 1024)); then
  echo "pack.sh: $DEST is $((KIB / 1024)) MiB, over the 60 MiB kept under the 64 MiB carry limit" >&2
  exit 1
fi

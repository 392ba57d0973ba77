#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# Builds NVIDIA's nvbandwidth (the reference copy-bandwidth tool) here, on a machine without
# a GPU or driver, for the GPU machine: `tierpool suite run` runs it there when it finds it
# (docs/chapters/suite.md, "nvbandwidth"). Never committed: the binary goes to OUT_DIR
# (default build-gpu/bin, which bench/gpu/pack.sh fills and the device tool carries).
#
#   bench/gpu/build_nvbandwidth.sh SRC_DIR [OUT_DIR]
#
# SRC_DIR: a checkout of github.com/NVIDIA/nvbandwidth. The CUDA toolkit here lacks NVML's
# header and the driver's libraries: nvml.h comes from PyPI's nvidia-nvml-dev wheel, and the
# link uses stub libraries (libcuda from the toolkit's stubs/, libnvidia-ml made here from
# the symbols nvbandwidth uses) whose sonames the GPU machine's driver provides at run time.
# CUDA_ARCH (default 90, Hopper) is the GPU's compute capability.
set -euo pipefail
SRC=${1:?usage: build_nvbandwidth.sh SRC_DIR [OUT_DIR]}
OUT=${2:-build-gpu/bin}
ARCH=${CUDA_ARCH:-90}
CUDA=${CUDA_HOME:-/usr/local/cuda}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# nvml.h from the wheel (a zip).
pip download -q --no-deps nvidia-nvml-dev -d "$WORK/wheel" >/dev/null
python3 -m zipfile -e "$WORK"/wheel/*.whl "$WORK/nvml" >/dev/null
NVML_INC=$(dirname "$(find "$WORK/nvml" -name nvml.h | head -1)")

# Compile first against the header; the NVML symbols the objects need become the stub.
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
  -DCMAKE_CUDA_COMPILER="$CUDA/bin/nvcc" -DCMAKE_CXX_FLAGS="-I$NVML_INC" -DCMAKE_CUDA_FLAGS="-I$NVML_INC" \
  -DCMAKE_EXE_LINKER_FLAGS="-L$WORK/stubs -L$CUDA/lib64/stubs -L$CUDA/targets/x86_64-linux/lib/stubs" >/dev/null
mkdir -p "$WORK/stubs"
cmake --build "$WORK/build" -j2 -- -k >/dev/null 2>&1 || true  # objects compile; the link fails without the stub
syms=$(find "$WORK/build" -name '*.o' -exec nm -u {} + | awk '{print $2}' | grep '^nvml' | sort -u)
{
  echo "/* stub: the GPU machine's driver provides the real libnvidia-ml.so.1 */"
  for s in $syms; do echo "int $s(void) { return 999; }"; done
} > "$WORK/stubs/nvml_stub.c"
cc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o "$WORK/stubs/libnvidia-ml.so" "$WORK/stubs/nvml_stub.c"
cmake --build "$WORK/build" -j2 >/dev/null
mkdir -p "$OUT"
cp "$WORK/build/nvbandwidth" "$OUT/nvbandwidth"
echo "build_nvbandwidth: $OUT/nvbandwidth (sm_$ARCH; needs the driver's libcuda.so.1 and libnvidia-ml.so.1)"
readelf -d "$OUT/nvbandwidth" | grep NEEDED

#!/usr/bin/env bash
# Builds the libFuzzer targets of the trace readers and of the codecs (fuzz/, clang + ASan + UBSan +
# _GLIBCXX_ASSERTIONS) in their own build folder and runs each for a bounded time on its seed corpus
# (fuzz/corpus/<reader>).
# A crash stops the script with the failing input saved as build-fuzz/crashes/<reader>/crash-*;
# commit such an input under tests/trace/regressions/<reader>/ (trace_test replays it).
#
# Usage: scripts/run-fuzzers.sh [seconds per fuzzer, default 20] [reader ...]
#   readers: text binary oracle_general csv codec (default: all; codec is fuzz/fuzz_codec.cpp)
# Environment: BUILD_DIR (default build-fuzz), CXX (default clang++), JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-20}
shift || true
readers=("$@")
if [ ${#readers[@]} -eq 0 ]; then readers=(text binary oracle_general csv codec); fi
target_of() { if [ "$1" = codec ]; then echo fuzz_codec; else echo "fuzz_trace_$1"; fi; }

BUILD_DIR=${BUILD_DIR:-build-fuzz}
CXX_FUZZ=${CXX:-clang++}
if ! command -v "$CXX_FUZZ" >/dev/null 2>&1; then
  echo "run-fuzzers: $CXX_FUZZ not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
fi
case "$("$CXX_FUZZ" --version)" in
  *clang*) ;;
  *) echo "run-fuzzers: $CXX_FUZZ is not clang; libFuzzer needs clang (set CXX=clang++)" >&2; exit 2 ;;
esac

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CXX_FUZZ" \
    -DTIERPOOL_BUILD_FUZZERS=ON -DTIERPOOL_BUILD_TESTS=OFF -DTIERPOOL_BUILD_TOOLS=OFF \
    -DTIERPOOL_BUILD_BENCH=OFF -DTIERPOOL_BUILD_EXAMPLES=OFF -DTIERPOOL_ENABLE_INSTALL=OFF \
    -DTIERPOOL_ENABLE_CUDA=OFF >/dev/null
fi
targets=()
for r in "${readers[@]}"; do targets+=("$(target_of "$r")"); done
cmake --build "$BUILD_DIR" -j"${JOBS:-2}" --target "${targets[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for r in "${readers[@]}"; do
  work="$BUILD_DIR/corpus/$r"       # grows while fuzzing; the committed seeds stay as they are
  crashes="$BUILD_DIR/crashes/$r"
  target=$(target_of "$r")
  log="$BUILD_DIR/$target.log"
  rm -rf "$crashes"
  mkdir -p "$work" "$crashes"
  echo "==== $target: ${seconds}s (log: $log)"
  status=0
  "$BUILD_DIR/fuzz/$target" "$work" "fuzz/corpus/$r" \
    -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$crashes/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|ERROR|SUMMARY|Test unit written" "$log" || true
  if [ "$status" -ne 0 ]; then
    echo "run-fuzzers: $target failed (exit $status); failing input in $crashes, details in $log" >&2
    exit 1
  fi
done
echo "run-fuzzers: no failures (${seconds}s per reader)"

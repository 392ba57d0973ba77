#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# bench/gpu/demo_profile.sh — where the oversubscription demo's time goes on a GPU, in one
# short run (about a minute): the demo at 1x, 2x and 4x with 5 and 20 iterations (the
# difference is the steady per-iteration time, without the first iteration's allocations),
# with and without prefetch, each under `time` (user + system CPU against wall: a busy host
# or a waiting one), and at 4x a trace of the pool's calls (.tpb) for `tierpool replay` and
# `tierpool trace stat` here, and at 4x every copy's device time (copies_4x.jsonl, with
# TIERPOOL_CUDA_COPY_TIMING). Run after bench/gpu/pack.sh, with build-gpu carried:
#
#   run(command="bash bench/gpu/demo_profile.sh", carry=["build-gpu"], timeout_s=240)
#
# Writes demo_profile.txt (one line per run), demo_4x.tpb and copies_4x.jsonl to
# ${OUT:-bench/results/demo-profile}.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${BUILD_GPU:-$ROOT/build-gpu}
OUT_DIR=${OUT:-$ROOT/bench/results/demo-profile}
mkdir -p "$OUT_DIR"
LIBS=$(mktemp -d)
for f in "$B"/lib-carry/*.so*; do
  case ${f##*/} in libstdc++.so*|libgcc_s.so*|libz.so*|libzstd.so*|liblz4.so*|libudev.so*) ;; *) ln -s "$f" "$LIBS/" ;; esac
done
export LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
DEMO=$B/examples/oversubscribe/oversubscribe
TXT=$OUT_DIR/demo_profile.txt
: > "$TXT"
one() {  # one NAME ARGS...: the demo under `time`, its JSON figures and the CPU time in one line
  local name=$1 t0 t1 cpu
  shift
  t0=$(date +%s%N)
  cpu=$( { TIMEFORMAT='%U %S'; time timeout 60 "$DEMO" --backend "${DEMO_BACKEND:-cuda}" --json "$LIBS/$name.json" "$@" > /dev/null 2>&1; } 2>&1 | tail -n1)
  t1=$(date +%s%N)
  python3 - "$LIBS/$name.json" "$name" "$cpu" "$(((t1 - t0) / 1000000))" >> "$TXT" <<'PY'
import json, sys
path, name, cpu, wall_ms = sys.argv[1:5]
try:
    d = json.load(open(path))
except (OSError, ValueError) as e:
    print(f"{name}: no JSON ({e})"); sys.exit(0)
u, s = (float(x) for x in cpu.split())
it = d["iterations"]
print(f"{name}: iterations {it} seconds {d['seconds']:.4f} ({1e3 * d['seconds'] / it:.2f} ms/it) reference "
      f"{d['reference_seconds']:.4f} ({1e3 * d['reference_seconds'] / it:.2f} ms/it) stall {d['stall_seconds']:.4f} "
      f"h2d {d['bytes_h2d']} in {d['copies_h2d']} d2h {d['bytes_d2h']} in {d['copies_d2h']} evictions {d['evictions']} "
      f"prefetches {d['prefetches']} late {d['prefetch_late']} verified {d['verified']} | process wall {wall_ms} ms "
      f"user {u:.2f} s sys {s:.2f} s")
PY
}
if command -v nvidia-smi > /dev/null; then nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader >> "$TXT"; fi
for x in 1 2 4; do
  for it in 5 20; do one "x${x}_it${it}" --oversubscription "$x" --iterations "$it"; done
  one "x${x}_it20_noprefetch" --oversubscription "$x" --iterations 20 --no-prefetch
done
one x4_it5_trace --oversubscription 4 --iterations 5 --trace "$OUT_DIR/demo_4x.tpb"
# Every copy's device time (Note [Copy timing] in runtime/backends/cuda/cuda_backend.cpp):
# one JSON line per copy, for both the oversubscribed pool and the reference's.
TIERPOOL_CUDA_COPY_TIMING=$OUT_DIR/copies_4x.jsonl one x4_it20_copy_timing --oversubscription 4 --iterations 20
if [[ -s $OUT_DIR/copies_4x.jsonl ]]; then
  python3 "$ROOT/bench/gpu/copy_timing_report.py" "$OUT_DIR/copies_4x.jsonl" >> "$TXT" 2>&1
fi
cat "$TXT"

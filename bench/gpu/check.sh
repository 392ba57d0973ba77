#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions run through `step` (bash -c), not directly
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
#
# bench/gpu/check.sh — the GPU check (docs/chapters/benchmarks.md) as one short script for a session
# that is lent a GPU. Each step is timed and tolerant: a failed step records its exit
# status and the tail of its output, and the script goes on. Every step runs under
# `timeout`; no step starts after CHECK_BUDGET_S seconds or runs more than 30 s past it:
# total under 8 minutes, whatever hangs.
#
#   bench/gpu/pack.sh                          # here: build-gpu/ (CUDA build + lib-carry/)
#   run(command="bash bench/gpu/check.sh", carry=["build-gpu"], timeout_s=540)
#
# Results go to "${OUT:-bench/results/gpu-$(date +%F)}":
#   summary.json        every step: status, exit code, seconds, output tails; the GPU
#   ctest_gpu.xml       `ctest -L gpu` as JUnit (when ctest exists there)
#   pytest_cuda.txt     where pack.sh packed the Python extension (build-gpu/python): the
#                       GPU's Python tests (python/tests/test_torch_cuda.py, DLPack on a torch
#                       stream) with their printed figures
#   pytest_all.txt, pytest.xml   the whole of python/tests with the machine's Python and torch
#   info.json           `tierpool info --json`
#   bench_hitpath.json  `tierpool bench hitpath --threads 2 --json`
#   bench_copy.json     `tierpool bench copy --json` (default sizes)
#   bandwidth.json      per tensor size: the pool's copies (bench copy, pinned_host tier)
#                       against cudaMemcpyAsync of pinned memory (bench/gpu/copy_bw.cu)
#   demo_2x.json, demo_4x.json   examples/oversubscribe at 2x and 4x oversubscription
#   demo_4x_plan.json   the same at 4x with the transfer planner (TIERPOOL_PREFETCH=plan,
#                       --no-prefetch): its planner figures, timed events included
#   suite/DEVICE.json   `tierpool suite run --devices all --preset quick --budget 120s` bundles
#                       (SUITE_PRESET, SUITE_BUDGET_S)
#   suite/calibrated.json, calibrate.txt   `tierpool suite calibrate` of the first bundle: the
#                       link and the host's costs, with the fit's measured-against-simulated table
# Under the device tool (OUT set), which brings back at most 8 files, everything but
# summary.json is packed into results.tar.gz at the end.
#
# Environment: BUILD_GPU (default build-gpu), CHECK_BACKEND (default cuda; `sim` runs the
# whole script on a machine without a GPU, as a dry run), CHECK_BUDGET_S (default 420: no
# step starts after that many seconds), BW_TOTAL (bytes per bandwidth size, default 1GiB),
# SUITE_PRESET (quick or full, default quick), SUITE_BUDGET_S (the suite's budget, default 120).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT_DIR=${OUT:-$ROOT/bench/results/gpu-$(date +%F)}
mkdir -p "$OUT_DIR"
B=${BUILD_GPU:-$ROOT/build-gpu}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
BACKEND=${CHECK_BACKEND:-cuda}
BUDGET_S=${CHECK_BUDGET_S:-420}
BW_TOTAL=${BW_TOTAL:-1073741824}
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
START=$(date +%s)
STEPS=$SCRATCH/steps.tsv
: > "$STEPS"
CARRIED=$B/lib-carry
TP=$B/bin/tierpool
DEMO=$B/examples/oversubscribe/oversubscribe

# The carried libraries our binaries run with: hwloc, TBB and Boost always; the C++
# runtime (libstdc++, libgcc_s) only where the machine's own is too old for the binaries
# (a carried libstdc++ older than the machine's would break its ctest, run under with_libs).
LIBS=$SCRATCH/lib
mkdir -p "$LIBS"
for f in "$CARRIED"/*.so*; do
  [[ -e $f ]] || continue
  case ${f##*/} in
    libstdc++.so*|libgcc_s.so*) ;;
    # Base libraries the machine has itself (a newer one serves, and the machine's Python and
    # torch were built against theirs): carried only where it lacks them.
    libz.so*|libzstd.so*|liblz4.so*|libudev.so*)
      if ! { ldconfig -p 2>/dev/null || true; } | grep -q "[[:space:]]${f##*/} "; then ln -s "$f" "$LIBS/"; fi ;;
    *) ln -s "$f" "$LIBS/" ;;
  esac
done
if command -v ldd >/dev/null 2>&1; then
  for exe in "$TP" "$DEMO" "$B"/tests/*; do
    [[ -f $exe && -x $exe ]] || continue
    if LD_LIBRARY_PATH=$LIBS ldd "$exe" 2>&1 | grep -q 'not found'; then
      for f in "$CARRIED"/libstdc++.so* "$CARRIED"/libgcc_s.so*; do if [[ -e $f ]]; then ln -sf "$f" "$LIBS/"; fi; done
      echo "libraries: this machine's C++ runtime is too old for $exe: using the carried one"
      break
    fi
  done
fi

# Our binaries get these libraries; python3/nvcc/nvidia-smi keep the machine's own.
with_libs() { LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
export -f with_libs
export B LIBS CARRIED OUT_DIR ROOT DEMO

# step NAME LIMIT_S OUTFILE|- COMMAND...: run with a time limit; stdout to OUTFILE (in
# $OUT_DIR) or to the scratch log; record status, exit code, seconds.
step() {
  local name=$1 limit=$2 outfile=$3
  shift 3
  local now elapsed rc=0 status t0 t1 out
  now=$(date +%s)
  elapsed=$((now - START))
  if ((elapsed >= BUDGET_S)); then
    printf '%s\tskipped\t-1\t0\t%s\n' "$name" "$outfile" >> "$STEPS"
    echo "== $name: skipped (${elapsed}s used of ${BUDGET_S}s)"
    return 0
  fi
  ((limit > BUDGET_S - elapsed + 30)) && limit=$((BUDGET_S - elapsed + 30))
  out=$SCRATCH/$name.out
  [[ $outfile != - ]] && out=$OUT_DIR/$outfile
  echo "== $name (limit ${limit}s)"
  t0=$(date +%s%N)
  # bash -c: the command may be one of this script's (exported) functions.
  timeout --kill-after=5 "$limit" bash -c '"$@"' "$name" "$@" > "$out" 2> "$SCRATCH/$name.err" || rc=$?
  t1=$(date +%s%N)
  status=ok
  ((rc == 0)) || status=failed
  ((rc == 124 || rc == 137)) && status=timeout
  [[ $outfile != - ]] && cp "$out" "$SCRATCH/$name.out"
  [[ $outfile != - && ! -s $out ]] && rm -f "$out"
  printf '%s\t%s\t%d\t%d.%03d\t%s\n' "$name" "$status" "$rc" $(((t1 - t0) / 1000000000)) \
    $((((t1 - t0) / 1000000) % 1000)) "$outfile" >> "$STEPS"
  echo "   $status (rc $rc)"
  tail -n 3 "$SCRATCH/$name.err" | sed 's/^/   | /' || true
  return 0
}

# ---- 0. the machine and the build -------------------------------------------------
step nvidia_smi 20 - nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,memory.free,compute_cap \
  --format=csv,noheader,nounits

if [[ ! -x $TP ]]; then
  if command -v cmake >/dev/null 2>&1; then
    build_here() {
      cmake -S "$ROOT" -B "$B" -G Ninja -DTIERPOOL_ENABLE_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
        cmake --build "$B" -j "$(nproc)" --target tierpool_cli oversubscribe cuda_backend_test pool_conformance_cuda_test
    }
    export -f build_here
    step build 240 - build_here
  else
    printf 'build\tfailed\t127\t0\t-\n' >> "$STEPS"
    echo "build: no $TP and no cmake" > "$SCRATCH/build.err"
  fi
fi

# The carried build names this checkout's path: map it onto this machine's.
if [[ -f $CARRIED/BUILD_ROOT ]]; then
  OLD_B=$(cat "$CARRIED/BUILD_ROOT")
  OLD_ROOT=$(cat "$CARRIED/SOURCE_ROOT")
  if [[ $OLD_ROOT != "$ROOT" && ! -e $OLD_ROOT ]]; then
    # Compiled-in paths (test fixtures) need the old root itself: a symlink when allowed.
    { mkdir -p "$(dirname "$OLD_ROOT")" && ln -s "$ROOT" "$OLD_ROOT"; } 2>/dev/null || true
  fi
  if [[ $OLD_B != "$B" ]]; then
    find "$B" \( -name 'CTestTestfile.cmake' -o -name '*_include.cmake' \) -exec sed -i "s#$OLD_B#$B#g" {} +
    find "$B" -name '*_tests.cmake' -exec sed -i "s#$OLD_B#$B#g" {} +
  fi
  # The discovered gtest lists must be newer than the executables and the include files
  # (IS_NEWER_THAN), or ctest rediscovers them with the CMake modules of the machine that
  # packed them; a copy need not keep modification times. (Packed builds only: in a
  # developer's build this would hide tests added since the last discovery.)
  find "$B" -name '*_tests.cmake' -exec touch {} +
fi

# Device memory free now, in MiB: nothing below asks for more than half of it.
FREE_MIB=$({ timeout 20 nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits 2>/dev/null || true; } | head -n1 | tr -dc 0-9)
FREE_MIB=${FREE_MIB:-0}
if [[ $BACKEND == sim ]]; then FREE_MIB=1048576; fi

# ---- 1. ctest -L gpu ----------------------------------------------------------------
# ctest where it is there and lists the gpu tests (four at a time: each test is a process
# that starts CUDA); else the gpu test executables and the demo's kernel check directly.
run_gpu_tests() {
  local n=0 rc=0 t r
  if command -v ctest >/dev/null 2>&1 && [[ -f $B/CTestTestfile.cmake ]]; then
    n=$(cd "$B" && with_libs ctest -N -L gpu 2>/dev/null | sed -n 's/^Total Tests: *//p')
  fi
  if ((${n:-0} > 0)); then
    (cd "$B" && with_libs ctest -L gpu -j 4 --output-on-failure --timeout 90 --output-junit "$OUT_DIR/ctest_gpu.xml")
    return
  fi
  echo "ctest: not there or no gpu tests listed; running the executables directly"
  while read -r t; do
    echo "--- $t"
    (cd "$B/$(dirname "$t")" && with_libs timeout 120 "./$(basename "$t")") || rc=1
  done < <(cat "$CARRIED/gpu_tests.txt" 2>/dev/null || true)
  if [[ -x $DEMO ]]; then
    echo "--- oversubscribe --check-kernels --backend cuda"
    r=0
    with_libs timeout 90 "$DEMO" --check-kernels --backend cuda || r=$?
    ((r == 0 || r == 77)) || rc=1
  fi
  return "$rc"
}
export -f run_gpu_tests
step ctest_gpu 150 - run_gpu_tests

# ---- 1b. the Python package's tests with the machine's Python 3.12 and its CUDA torch ---
# The tests that need the GPU (CUDA training through the pool, torch's MemPool, DLPack on a
# torch stream: their printed figures in pytest_cuda.txt); the whole of python/tests comes
# after the suite (4c).
if [[ -d $B/python/tierpool ]]; then
  pytest_here() {
    # The carried libraries (hwloc, TBB, Boost) for the extension alone; torch keeps the
    # machine's own C++ runtime unless the check found it too old.
    PYTHONPATH="$B/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 with_libs python3 -m pytest \
      -p no:cacheprovider -o addopts="" "$@" 2>&1
  }
  export -f pytest_here
  step python_cuda 150 pytest_cuda.txt pytest_here -rA -s "$ROOT/python/tests/test_torch_cuda.py" \
    "$ROOT/python/tests/test_torch.py::test_a_torch_stream_is_a_pool_stream_and_dlpack_orders_it"
fi

# ---- 2. tierpool info and the two pool benchmarks ---------------------------------------
export TIERPOOL_BACKEND=$BACKEND
step info 30 info.json with_libs "$TP" info --json
step bench_hitpath 60 bench_hitpath.json with_libs "$TP" bench hitpath --threads 2 --runs 5 --json
if ((FREE_MIB >= 1024)); then
  step bench_copy 60 bench_copy.json with_libs "$TP" bench copy --runs 5 --json
else
  printf 'bench_copy\tskipped\t-1\t0\tbench_copy.json\n' >> "$STEPS"
fi

# ---- 3. host<->device bandwidth: pool copies against cudaMemcpyAsync -------------------
COPY_BW=$B/bin/copy_bw
if [[ ! -x $COPY_BW && $BACKEND == cuda ]] && command -v nvcc >/dev/null 2>&1; then
  step copy_bw_build 90 - nvcc -O2 -std=c++17 -o "$SCRATCH/copy_bw" bench/gpu/copy_bw.cu
  [[ -x $SCRATCH/copy_bw ]] && COPY_BW=$SCRATCH/copy_bw
fi
# A quarter of BW_TOTAL sits on the device at a time (pool tier or copy_bw slots).
if ((FREE_MIB * 1048576 / 2 >= BW_TOTAL / 4 + 268435456)); then
  for size in 1048576 16777216 67108864; do
    step "pool_copy_$size" 60 - with_libs "$TP" bench copy --bytes "$BW_TOTAL" --tensor-bytes "$size" --runs 5 --json
    if [[ $BACKEND == cuda ]]; then
      if [[ -x $COPY_BW ]]; then
        step "cuda_copy_$size" 60 - with_libs "$COPY_BW" "$size" "$BW_TOTAL" 5
      else  # no nvcc: the same copies from PyTorch (pinned tensors, non_blocking copies)
        step "cuda_copy_$size" 90 - python3 - "$size" "$BW_TOTAL" <<'EOF'
import json, sys, time, torch
tb, total = int(sys.argv[1]), int(sys.argv[2]); n = total // tb
h = torch.empty(n * tb, dtype=torch.uint8, pin_memory=True); d = torch.empty(max(2, n // 4) * tb, dtype=torch.uint8, device="cuda")
k = d.numel() // tb
def one(up):
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for i in range(n):
        a, b = d[(i % k) * tb:(i % k + 1) * tb], h[i * tb:(i + 1) * tb]
        (a.copy_(b, non_blocking=True) if up else b.copy_(a, non_blocking=True))
    torch.cuda.synchronize(); return n * tb / (time.perf_counter() - t0) / 1e9
one(True); r = sorted((one(True), one(False)) for _ in range(5))
print(json.dumps({"benchmark": "torch_copy", "tensor_bytes": tb, "bytes": n * tb, "runs": 5,
                  "h2d_gbps": sorted(x[0] for x in r)[2], "d2h_gbps": sorted(x[1] for x in r)[2]}))
EOF
      fi
    fi
  done
else
  printf 'bandwidth\tskipped\t-1\t0\t-\n' >> "$STEPS"
  echo "bandwidth: skipped, ${FREE_MIB} MiB free on the device" > "$SCRATCH/bandwidth.err"
fi

# ---- 4. the oversubscription demo at 2x and 4x -----------------------------------------
for x in 2 4; do
  if [[ -x $DEMO ]]; then
    step "demo_${x}x" 75 - with_libs "$DEMO" --oversubscription "$x" --backend "$BACKEND" --json "$OUT_DIR/demo_${x}x.json"
  else
    printf 'demo_%sx\tfailed\t127\t0\t-\n' "$x" >> "$STEPS"
    echo "no $DEMO in the build" > "$SCRATCH/demo_${x}x.err"
  fi
done
# The transfer planner instead of the demo's own prefetch, at 4x: on a GPU it measures the
# compute between accesses with timed events (docs/chapters/policies.md, "On a GPU"); its
# JSON's pool.planner_timed_accesses and planner_period_compute_seconds say what it learned.
if [[ -x $DEMO ]]; then
  step demo_4x_plan 75 - with_libs env TIERPOOL_PREFETCH=plan "$DEMO" --oversubscription 4 --backend "$BACKEND" \
    --no-prefetch --json "$OUT_DIR/demo_4x_plan.json"
fi

# ---- 4b. the benchmark suite (docs/chapters/suite.md): one bundle per device ---------------
# `all`: every CUDA device (on a sim dry run, the simulated presets). The quick preset in
# 2 min by default, without kv-serving (a CPU-bound replay of over a minute that no GPU
# changes); SUITE_PRESET=full and SUITE_BUDGET_S choose another.
SUITE_BUDGET_S=${SUITE_BUDGET_S:-120}
step suite $((SUITE_BUDGET_S + 30)) - with_libs "$TP" suite run --devices all --preset "${SUITE_PRESET:-quick}" \
  --budget "${SUITE_BUDGET_S}s" --demo "$DEMO" --only link,oversub-train,replay-train,infer-stream,kv-paging,allocator \
  --out "$OUT_DIR/suite"

# ---- 4b'. calibration: the first device's bundle as a preset, the host's costs fitted to
# its steady demo times on the simulator (--skip-math runs: seconds), and the fit's table of
# measured against simulated times (docs/chapters/suite.md, "Calibration").
for bundle in "$OUT_DIR"/suite/cuda-0.json "$OUT_DIR"/suite/sim-h200-sxm.json; do
  if [[ -f $bundle ]]; then
    step calibrate 120 calibrate.txt with_libs "$TP" suite calibrate "$bundle" -o "$OUT_DIR/suite/calibrated.json" \
      --demo "$DEMO"
    break
  fi
done

# ---- 4c. the whole of python/tests with the machine's Python and torch -------------------
if [[ -d $B/python/tierpool ]]; then
  step python_tests 200 pytest_all.txt pytest_here -q "$ROOT/python/tests" --junitxml="$OUT_DIR/pytest.xml"
fi

# ---- 5. summary.json and bandwidth.json ------------------------------------------------
python3 - "$STEPS" "$SCRATCH" "$OUT_DIR" "$BACKEND" "$START" "$ROOT" <<'EOF' || cp "$STEPS" "$OUT_DIR/summary.tsv"
import json, os, subprocess, sys, time
steps_file, scratch, out, backend, start, root = sys.argv[1:7]
def tail(path, n=2000):
    try:
        with open(path, errors="replace") as f: return f.read()[-n:]
    except OSError: return ""
steps = []
for line in open(steps_file):
    name, status, rc, secs, outfile = line.rstrip("\n").split("\t")
    steps.append({"name": name, "status": status, "rc": int(rc), "seconds": round(float(secs or 0), 2),
                  "output": None if outfile == "-" else outfile,
                  "stdout_tail": tail(os.path.join(scratch, name + ".out")),
                  "stderr_tail": tail(os.path.join(scratch, name + ".err"))})
def first_json(name):
    for line in tail(os.path.join(scratch, name + ".out"), 1 << 20).splitlines():
        if line.startswith("{"):
            try: return json.loads(line)
            except ValueError: pass
    return None
bw = []
for size in (1048576, 16777216, 67108864):
    p, c = first_json(f"pool_copy_{size}"), first_json(f"cuda_copy_{size}")
    row = {"tensor_bytes": size, "pool": p, "cudaMemcpyAsync": c}
    if p and c:
        base = c.get("pattern_gbps") or (c["h2d_gbps"] + c["d2h_gbps"]) / 2
        row["pool_gbps"], row["baseline_gbps"] = p["pool_gbps"], base
        row["ratio"] = p["pool_gbps"] / base if base else None
    bw.append(row)
if any(r["pool"] or r["cudaMemcpyAsync"] for r in bw):
    json.dump({"note": "pool_gbps and pattern_gbps count bytes both ways (in and written back) over the whole "
               "pattern; h2d_gbps/d2h_gbps are one direction at a time", "sizes": bw},
              open(os.path.join(out, "bandwidth.json"), "w"), indent=1)
try: rev = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
except OSError: rev = ""
# A demo that exits 0 on the simulated device (its CUDA kernels could not run on this GPU)
# did not check the GPU: say so.
warnings = []
for x in (2, 4):
    try:
        with open(os.path.join(out, f"demo_{x}x.json")) as f: demo = json.load(f)
    except (OSError, ValueError): continue
    if demo.get("backend") != backend:
        warnings.append(f"demo_{x}x ran on {demo.get('backend')!r}, not {backend!r}")
    if demo.get("verified") is not True:
        warnings.append(f"demo_{x}x: not verified")
summary = {"script": "bench/gpu/check.sh", "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "backend": backend,
           "git": rev, "total_seconds": round(time.time() - float(start), 1),
           "gpu": tail(os.path.join(scratch, "nvidia_smi.out")).strip(),
           "failed": [s["name"] for s in steps if s["status"] not in ("ok", "skipped")],
           "warnings": warnings, "steps": steps}
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(f"check.sh: {len(steps)} steps, failed: {summary['failed'] or 'none'}, warnings: {warnings or 'none'}, "
      f"{summary['total_seconds']} s -> {out}")
EOF
# The device tool brings back at most 8 files: under its $OUT, everything but summary.json
# goes into one archive (bench/results/ keeps the files themselves).
if [[ -n ${OUT:-} ]]; then
  (cd "$OUT_DIR" && find . -mindepth 1 -maxdepth 1 ! -name summary.json ! -name results.tar.gz -print0 |
    xargs -0 -r tar czf results.tar.gz && find . -mindepth 1 -maxdepth 1 ! -name summary.json \
    ! -name results.tar.gz -exec rm -rf {} +)
fi
ls -la "$OUT_DIR"
if cut -f2 "$STEPS" | grep -qx -e failed -e timeout; then exit 1; fi
exit 0

#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 tierpool contributors
# SPDX-License-Identifier: Apache-2.0
"""Summarizes a copy-timing file of the CUDA backend (TIERPOOL_CUDA_COPY_TIMING=FILE, Note
[Copy timing] in runtime/backends/cuda/cuda_backend.cpp): per kind of copy (source ->
destination, small or from 1 MiB up) the count, the median and 90th percentile of the
copies' device durations and their sum; per stream how busy it was over the span from the
first copy's start to the last one's end.

    bench/gpu/copy_timing_report.py copies.jsonl[.gz]

On an H200 (bench/results/gpu-2026-12-04/copies_4x_pageable_spill.jsonl.gz) it showed
device<->pinned copies of 1 MiB at 24-27 us and copies through pageable memory at
200-250 us, one stream busy 417 ms of 502."""

import collections
import gzip
import json
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def busy_us(intervals):
    total, cur = 0.0, None
    for a, b in sorted(intervals):
        if cur is None or a > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    return total + (cur[1] - cur[0] if cur else 0.0)


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: copy_timing_report.py FILE", file=sys.stderr)
        return 2
    copies = load(argv[1])
    if not copies:
        print("no copies in", argv[1])
        return 1
    start = min(c["start_us"] for c in copies)
    end = max(c["end_us"] for c in copies)
    print(f"{len(copies)} copies over {(end - start) / 1e3:.1f} ms of device time")
    kinds = collections.defaultdict(list)
    for c in copies:
        size = ">=1MiB" if c["bytes"] >= 1 << 20 else "<1MiB"
        kinds[(c["src"], c["dst"], size)].append(c["end_us"] - c["start_us"])
    print(f"{'source':<12} {'destination':<12} {'size':<7} {'copies':>7} {'median us':>10} {'p90 us':>8} {'sum ms':>8}")
    for (src, dst, size), d in sorted(kinds.items()):
        d.sort()
        print(f"{src:<12} {dst:<12} {size:<7} {len(d):>7} {d[len(d) // 2]:>10.1f} {d[int(len(d) * 0.9)]:>8.1f} "
              f"{sum(d) / 1e3:>8.1f}")
    streams = collections.defaultdict(list)
    for c in copies:
        streams[c["stream"]].append((c["start_us"], c["end_us"]))
    for s, iv in sorted(streams.items()):
        print(f"stream {s}: {len(iv)} copies, busy {busy_us(iv) / 1e3:.1f} ms of {(end - start) / 1e3:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

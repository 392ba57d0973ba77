#!/bin/sh
# A stand-in for NVIDIA's nvbandwidth -j (its JSON layout, version 0.8), for the suite's
# test on a preset: two GPU columns, the copy-engine testcases the suite asks for.
cat <<'JSON'
{"nvbandwidth": {"CUDA Runtime Version": 13000, "Driver Version": "580.00", "git_version": "v0.8",
 "testcases": [
  {"name": "host_to_device_memcpy_ce", "status": "Passed", "bandwidth_description": "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
   "bandwidth_matrix": [["55.1", "54.9"]], "sum": 110.0},
  {"name": "device_to_host_memcpy_ce", "status": "Passed", "bandwidth_matrix": [["53.2", "53.0"]], "sum": 106.2},
  {"name": "host_to_device_bidirectional_memcpy_ce", "status": "Passed", "bandwidth_matrix": [["41.7", "N/A"]], "sum": 41.7},
  {"name": "device_to_host_bidirectional_memcpy_ce", "status": "Waived"}
 ]}}
JSON

#!/bin/sh
# A stand-in for the oversubscription demo (cli.suite_run.demo_row_fails): at 4x it fails
# as the demo does when the device tier is too fragmented (its error on stderr, exit 3);
# otherwise it writes the JSON fields `tierpool suite` reads, with made-up times.
json=
x=
prev=
for a in "$@"; do
  [ "$prev" = "--json" ] && json=$a
  [ "$prev" = "--oversubscription" ] && x=$a
  prev=$a
done
if [ "$x" = "4" ]; then
  echo "oversubscribe: out of memory: tierpool: out of memory: cannot place 2.0 MiB; cause: fragmentation" >&2
  exit 3
fi
cat > "$json" <<JSON
{"iterations": 4, "verified": true, "stall_seconds": 0, "bytes_h2d": 1000, "bytes_d2h": 1000,
 "iteration_seconds": [0.004, 0.002, 0.002, 0.002], "virtual_iteration_seconds": [0.004, 0.002, 0.002, 0.002],
 "steady_seconds_per_iteration": 0.002, "reference_steady_seconds_per_iteration": 0.001,
 "virtual_steady_seconds_per_iteration": 0.002, "reference_virtual_steady_seconds_per_iteration": 0.001}
JSON

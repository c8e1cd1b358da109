#!/usr/bin/env bash
# NR-FS throughput sweep (NrOS Figure 3 shape) on Reef under QEMU: usr/fsbench.c at write ratios
# 0 and 100 %, one shared file and a file per thread, on 1 core/1 node, 2 cores/1 node and
# 2 cores/2 nodes, with as many threads as cores, REPS boots per point (default 3). Prints a
# markdown table of ops/s (median, min, max) and leaves the raw result lines in OUT
# (default bench/fsbench-results.txt). Usage: bash bench/fsbench-sweep.sh [REPS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
secs=${2:-2}
out=${OUT:-bench/fsbench-results.txt}
: > "$out"
echo "| cores/nodes | mode | writes | ops/s median | min | max | runs |"
echo "|---|---|---|---|---|---|---|"
for cfg in "1 1" "2 1" "2 2"; do
  set -- $cfg
  cores=$1 nodes=$2
  for mode in shared private; do
    for w in 0 100; do
      vals=()
      for _ in $(seq "$reps"); do
        line=$(cargo xtask run --cores "$cores" --nodes "$nodes" --memory 1024 -- \
          init=/test/fsbench -t "$cores" -w "$w" -s "$mode" -d "$secs" 2>&1 \
          | tr -d '\r' | grep '^fsbench threads=' || true)
        if [[ -z $line || $line != *sanity=ok* ]]; then
          echo "fsbench failed: ${cores}c${nodes}n $mode w=$w" >&2
          exit 1
        fi
        echo "${cores}c${nodes}n $line" >> "$out"
        vals+=("$(sed -E 's/.*ops_per_sec=([0-9.]+).*/\1/' <<<"$line")")
      done
      sorted=$(printf '%s\n' "${vals[@]}" | sort -g)
      min=$(head -1 <<<"$sorted"); max=$(tail -1 <<<"$sorted")
      med=$(sed -n "$(( (reps + 1) / 2 ))p" <<<"$sorted")
      printf '| %sc/%sn | %s | %s %% | %.0f | %.0f | %.0f | %s |\n' \
        "$cores" "$nodes" "$mode" "$w" "$med" "$min" "$max" "$reps"
    done
  done
done

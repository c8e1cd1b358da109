#!/bin/bash
# The distribute_at sweep of docs/results.md (fsload grow at 4c2n, 3 runs of each value):
# bash bench/results/issue13-grow/sweep.sh > sweep.log
cd "$(dirname "$0")/../../.."
for run in 1 2 3; do
for at in 0 64 256 1024 4096; do
  r=$(timeout 300 cargo xtask run --cores 4 --nodes 2 -- init=/bin/busybox sh -c "/test/onhare -o distribute_at=$at timeshare /tmp /test/fsload grow -d 2 /tmp; poweroff -f" 2>&1 | grep -E "^fsload grow|directories_distributed" | tr '\n' ' ')
  echo "at=$at run=$run $r"
done
done

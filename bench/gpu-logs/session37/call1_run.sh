#!/usr/bin/env bash
# Session 37, call 1: on an H200, session 35's waiting question (h200_rows_and_bars). On any card,
# Nsight Compute's duration of every kernel of one 8B hand-written batched decode step at 16 x 512
# (graph replays, caches as they run): how the attention's time splits between the kernel and the
# boundaries around it (session 36 call 3 measured the step with and without its launches).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
h200_rows_and_bars
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
args="--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16 --context 512 --kv-tokens 40000"
timeout 60 $lg bench $args 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |bandwidth" | tee "$out/bench_16x512.txt"
timeout 300 $ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
  --launch-skip 3000 --launch-count 600 $lg bench $args > "$out/ncu_16x512.csv" 2>&1
echo "ncu rc $?"
python3 - "$out/ncu_16x512.csv" <<'PY' | tee "$out/ncu_16x512_summary.txt"
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10 and r[-3] == "gpu__time_duration.sum"]
by = collections.defaultdict(list)
for r in rows:
    by[r[4][:60]].append(float(r[-1].replace(",", "")))
unit = rows[0][-2] if rows else "?"
print(len(rows), "kernels, unit", unit)
for k, v in sorted(by.items(), key=lambda kv: -sum(kv[1])):
    v.sort()
    print(f"{k:60s} n {len(v):4d} sum {sum(v):10.1f} min {v[0]:8.1f} med {v[len(v)//2]:8.1f} max {v[-1]:8.1f}")
PY
exit 0

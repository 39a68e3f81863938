#!/usr/bin/env bash
# Session 41, call 1 (H200 only): session 40's call 10 (at the TMA row-GEMV default, the lab knobs
# of main's attention and LM head against the default at 8 and 16 sequences of 256 and 512
# positions: v10 where v8's rows form runs (LG_QWEN_ATTN_V10=2), the LM head as a row GEMV started
# by PDL (LG_QWEN_ROWS_HEAD=1), no rows form (LG_QWEN_ATTN_ROWS=0), two rounds), then Nsight
# Compute's duration of every kernel of the 8B hand-written step at 16 x 512 on this card (session
# 37's call 1 measured it on an H100): what is left between 5.10 ms and issue 13's 5.0.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200"; exit 0 ;; esac
ab_rounds ab_16x512.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 8,16 --context 256,512 --kv-tokens 40000" \
  default: v10:LG_QWEN_ATTN_V10=2 rowshead:LG_QWEN_ROWS_HEAD=1 norows:LG_QWEN_ATTN_ROWS=0
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
args="--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16 --context 512 --kv-tokens 40000"
timeout 150 $ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
  --launch-skip 3000 --launch-count 300 $lg bench $args > "$out/ncu_16x512.csv" 2>&1
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

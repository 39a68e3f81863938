#!/usr/bin/env bash
# Session 19, call 2: where the compiled lane's 8B one-sequence decode step (5.19 ms at 512
# positions) loses against the hand-written lane's (about 4.36): Nsight Compute kernel durations
# and DRAM bytes of every kernel of the last decode step, both lanes (one step after a 16-token
# prompt at 512 positions; ncu flushes the caches before each kernel and serializes them, so the
# sum is each kernel alone). Then one sequence at 32,768 positions with a 2,048-byte prefetch.
set -uo pipefail
source bench/device_env.sh
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for lane in compiled handwritten; do
  timeout 220 $ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
    $lg bench --shape qwen3-8b --lane $lane --prompt-len 16 --decode-tokens 2 --batch 1 --context 512 \
    > "$out/ncu_8b_b1_$lane.csv" 2>&1
  echo "$lane: rc $? $(wc -l < "$out/ncu_8b_b1_$lane.csv") lines at ${SECONDS}s"
done
xz -9 "$out"/ncu_*.csv
for pf in 2048 0; do
  r=$(LG_COMPILED_GEMV_PREFETCH=$pf timeout 60 $lg bench --shape qwen3-8b --lane compiled --prompt-len 512 \
    --decode-tokens 32 --context 32768 2>&1 | grep -E '^ +1 +32768')
  echo "pf=$pf: $r" | tee -a "$out/b1_32k.txt"
done
exit 0

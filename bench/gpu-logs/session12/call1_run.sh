#!/usr/bin/env bash
# Session 12, call 1: where the 30B-A3B one-token step goes, kernel by kernel, as Nsight Compute
# times each kernel node of the decode graph (no events between launches), with DRAM bytes; the
# 0.6B compiled step the same way; the plain bench lines beside them.
set -uo pipefail
source bench/device_env.sh
which ncu || ls /opt/nvidia/nsight-compute/*/ncu
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
m=gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread
timeout 240 $NCU --clock-control none --graph-profiling node --metrics $m --csv \
  $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --decode-tokens 2 \
  --batch 1 --context 512 > "$out/ncu_30b_a3b.csv" 2> "$out/ncu_30b_a3b.err"
echo "ncu rc $?"; wc -l "$out/ncu_30b_a3b.csv"; tail -3 "$out/ncu_30b_a3b.err"
timeout 120 $NCU --clock-control none --graph-profiling node --metrics $m --csv \
  $lg bench --shape qwen3-0.6b --lane compiled --prompt-len 2 --decode-tokens 2 \
  --batch 1 --context 512 > "$out/ncu_06b_compiled.csv" 2> "$out/ncu_06b_compiled.err"
echo "ncu rc $?"; wc -l "$out/ncu_06b_compiled.csv"
timeout 120 $NCU --clock-control none --graph-profiling node --metrics $m --csv \
  $lg bench --shape qwen3-0.6b --lane handwritten --prompt-len 2 --decode-tokens 2 \
  --batch 1 --context 512 > "$out/ncu_06b_handwritten.csv" 2> "$out/ncu_06b_handwritten.err"
echo "ncu rc $?"; wc -l "$out/ncu_06b_handwritten.csv"
for l in compiled handwritten; do
  LG_PROFILE_LAUNCHES=1 timeout 100 $lg bench --shape qwen3-0.6b --lane $l --prompt-len 512 --batch 1,16 \
    --context 512 > "$out/bench_06b_$l.txt" 2>&1
  grep -E "^ +[0-9]+ +512" "$out/bench_06b_$l.txt"
done
exit 0

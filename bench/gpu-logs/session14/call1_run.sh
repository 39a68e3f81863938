#!/usr/bin/env bash
# Session 14, call 1: (a) the grouped experts lab, both forms (WMMA tiles; cuBLAS grouped GEMM, its
# first run) at T = 16 .. 4096, to choose the experts' prefill form; (b) the 30B-A3B prefill as it
# is (launch profile at 2048), the baseline of that form; (c) the hand-written lock flake of session
# 13: the tiny-qwen2 lock under racecheck and memcheck, then a loop of the Qwen locks.
set -uo pipefail
source bench/device_env.sh
nvcc -O3 -std=c++17 -arch=sm_90 bench/labs/moe_grouped_mma_lab.cu -lcublas -o /tmp/lab > "$out/lab_build.txt" 2>&1
echo "lab build rc $?"
timeout 120 /tmp/lab 16,64,256,512,1024,2048,4096 > "$out/lab.txt" 2>&1; echo "lab rc $?"; cat "$out/lab.txt"
LG_PROFILE_LAUNCHES=1 timeout 150 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 512,2048 \
  --batch 1 --context 32 --decode-tokens 8 > "$out/prefill_30b_a3b.txt" 2>&1
echo "bench rc $?"; grep -iE "prefill|tok/s" "$out/prefill_30b_a3b.txt" | head -8
grep -A14 "T=2048" "$out/prefill_30b_a3b.txt" | head -16
mkdir -p /tmp/lk2/locks && cp locks/tiny-qwen2.lock.json /tmp/lk2/locks/ && ln -sfn "$PWD/models" /tmp/lk2/models
for tool in racecheck memcheck; do
  timeout 80 compute-sanitizer --tool $tool $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" \
    --shared /tmp/lgshared --compare-logits > "$out/$tool.txt" 2>&1; echo "$tool rc $?"; tail -3 "$out/$tool.txt"
done
dir=$(qwen_locks_dir)
end=$((SECONDS + 45)); i=0; fails=0
while [ $SECONDS -lt $end ]; do
  i=$((i + 1))
  CUDA_LAUNCH_BLOCKING=1 timeout 60 $lg lock check --lane handwritten --locks "$dir" --shared /tmp/lgshared --compare-logits \
    > "$out/run.txt" 2>&1 || { fails=$((fails + 1)); cp "$out/run.txt" "$out/fail_$i.txt"; }
done
echo "hand-written Qwen locks, CUDA_LAUNCH_BLOCKING=1: $i runs, $fails failed"
exit 0

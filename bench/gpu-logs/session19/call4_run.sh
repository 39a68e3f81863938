#!/usr/bin/env bash
# Session 19, call 4: the final binary. Defaults: decode GEMVs pipelined where a lane's part of a
# row spans more than two batches (LG_COMPILED_GEMV_PIPE=1), 2,048 bytes of each first row
# prefetched into L2 before the wait (LG_COMPILED_GEMV_PREFETCH=2048), the argmax read as float4
# and launched with PDL. Correctness: compiled_lane_tests whole, the MoE and Qwen locks on the
# compiled lane (logits; in a batch of 16). Speed, alternated twice: the defaults against the old
# loop (PIPE=0 PREFETCH=0), B = 1 and 16 at 512 positions (8B, 0.6B, 30B-A3B), one 8B sequence at
# 32,768 positions; the hand-written lane's same lines for the ratio; then Nsight Compute's kernel
# durations of the compiled 8B step (as call 2).
set -uo pipefail
source bench/device_env.sh
LG_SHARED_DIR=/tmp/lgshared timeout 220 /tmp/lgb/bin/compiled_lane_tests > "$out/compiled_lane_tests.txt" 2>&1
echo "compiled_lane_tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
{ timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_compiled.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_compiled.txt"
echo "checks done at ${SECONDS}s"
old="LG_COMPILED_GEMV_PIPE=0 LG_COMPILED_GEMV_PREFETCH=0"
b1() {  # LABEL LANE [ENV=VALUE...]: the 32,768-position line of an 8B batch-1 bench
  local label=$1 lane=$2
  shift 2
  local r
  r=$(env "$@" timeout 60 $lg bench --shape qwen3-8b --lane $lane --prompt-len 512 --decode-tokens 32 \
    --context 32768 2>&1 | grep -E '^ +1 +32768')
  echo "$label [$*]: $r" | tee -a "$out/b1_32k.txt"
}
for round in 1 2; do
  for cfg in "new:" "old:$old"; do
    label=${cfg%%:*}; knobs=${cfg#*:}
    for shape in qwen3-8b qwen3-0.6b bench/shapes/qwen3-30b-a3b; do step_ms "r$round $label" $shape $knobs; done
    b1 "r$round $label" compiled $knobs
  done
  echo "round $round done at ${SECONDS}s"
done
for shape in qwen3-8b qwen3-0.6b; do
  { echo "== handwritten $shape"; timeout 100 $lg bench --shape $shape --lane handwritten --prompt-len 2 --batch 1,16 \
    --context 512 --kv-tokens 12000 2>&1 | grep -E "^ +[0-9]+ +512"; } | tee -a "$out/handwritten.txt"
done
b1 "handwritten" handwritten
echo "benches done at ${SECONDS}s"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  $lg bench --shape qwen3-8b --lane compiled --prompt-len 16 --decode-tokens 2 --batch 1 --context 512 \
  > "$out/ncu_8b_b1_compiled.csv" 2>&1
echo "ncu rc $? at ${SECONDS}s"; xz -9 "$out"/ncu_*.csv
exit 0

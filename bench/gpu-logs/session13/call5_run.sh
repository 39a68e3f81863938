#!/usr/bin/env bash
# Session 13, call 5: the landed binary's checks (compiled-lane tests, every lock on both lanes),
# then why the compiled lane's few-output decode GEMVs (0.6B o_proj k9 and down k14: 1,024 outputs,
# a warp each) trail the hand-written GEMV: Nsight Compute's speed-of-light, occupancy and warp
# state sections of each, and an A/B of the load depth of such stages (LG_COMPILED_GEMV_SMALL_DEPTH,
# 4 = landed) and of __ldg against the volatile-asm streaming load (LG_COMPILED_GEMV_LDG).
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/compiled_lane_tests > "$out/compiled_lane_tests.txt" 2>&1
echo "tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
{ timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  for lane in compiled handwritten; do
    timeout 150 $lg lock check --lane $lane --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
    timeout 150 $lg lock check --lane $lane --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  done
} > "$out/locks.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks.txt"
for round in 1 2; do
  for v in "4 0" "8 0" "8 1" "16 0"; do
    set -- $v
    for shape in qwen3-0.6b bench/shapes/qwen3-30b-a3b; do
      r=$(LG_COMPILED_GEMV_SMALL_DEPTH=$1 LG_COMPILED_GEMV_LDG=$2 timeout 100 $lg bench --shape $shape --lane compiled \
        --prompt-len 2 --batch 1,16 --context 512 --kv-tokens 12000 2>&1 | grep -E "^ +[0-9]+ +512")
      echo "== round $round depth $1 ldg $2 $(basename $shape)" >> "$out/ab.txt"; echo "$r" >> "$out/ab.txt"
      echo "$round depth=$1 ldg=$2 $(basename $shape): $(echo "$r" | awk '{printf "B%s %s ms  ", $1, $3}')"
    done
  done
done
sec="--section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats"
timeout 120 ncu --clock-control none --cache-control none --graph-profiling node -k regex:'^k(9|14)_gemm$' -c 4 $sec \
  $lg bench --shape qwen3-0.6b --lane compiled --prompt-len 2 --decode-tokens 2 --batch 1 --context 512 \
  > "$out/ncu_06b_compiled_gemv.txt" 2>&1; echo "ncu rc $?"
timeout 120 ncu --clock-control none --cache-control none --graph-profiling node -k regex:'gemv_kernel' -c 6 $sec \
  $lg bench --shape qwen3-0.6b --lane handwritten --prompt-len 2 --decode-tokens 2 --batch 1 --context 512 \
  > "$out/ncu_06b_hw_gemv.txt" 2>&1; echo "ncu rc $?"
grep -E "^  k[0-9]+_gemm|gemv_kernel|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Block Limit Reg|Grid Size" \
  "$out/ncu_06b_compiled_gemv.txt" "$out/ncu_06b_hw_gemv.txt" | head -80
exit 0

#!/usr/bin/env bash
# Session 26, call 8: the session's defaults (dependents at a cuBLASLt GEMM's launch completion,
# v10 excepted; no prefetch_split). Every hand-written lane test, the locks at one sequence and
# with --batch-with 16, the compiled lane's checks; then the step ms for the record.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 300 $t > "$out/qwen_tests.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/qwen_tests.txt" | head
for bw in 0 16; do
  timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with $bw > "$out/locks_hw_$bw.txt" 2>&1
  echo "hw locks batch-with $bw rc $?"; grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw_$bw.txt"
done
compiled_checks '-CompiledLane.LongContext*'
{ echo "== round 1 hw8b default"
  timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 \
    --batch 1,16,32,64,128 --context 512,2048 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
  echo "== round 1 c8b default"
  timeout 120 $lg bench --shape qwen3-8b --lane compiled --prompt-len 8 --decode-tokens 32 \
    --batch 1,16,64 --context 512 --kv-tokens 150000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
} >> "$out/bench.txt"
ab_table bench.txt
exit 0

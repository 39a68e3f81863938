#!/usr/bin/env bash
# Session 16, call 5: the wide split-KV attention as a second form chosen per step
# (LaunchPlan::wide, from 64 rows; the form of every step before is unchanged). Correctness with
# the wide form at every step (LG_COMPILED_ATTN_WIDE_ROWS=1), then the 8B compiled step at the
# defaults and the 30B-A3B one-token step (which call 4 ran wide).
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
LG_COMPILED_ATTN_WIDE_ROWS=1 LG_SHARED_DIR=/tmp/lgshared timeout 120 /tmp/compiled_lane_tests \
  > "$out/compiled_lane_tests_wide.txt" 2>&1
echo "tests, wide at every step: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests_wide.txt" | head
LG_COMPILED_ATTN_WIDE_ROWS=1 timeout 60 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" \
  --shared /tmp/lgshared --batch-with 16 > "$out/locks_wide.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)" "$out/locks_wide.txt"
timeout 60 $lg bench --shape qwen3-8b --lane compiled --prompt-len 2 --batch 1,16,64,128 --context 512 \
  --kv-tokens 90000 > "$out/bench_8b.txt" 2>&1; grep -E "^ +[0-9]+ +512 " "$out/bench_8b.txt"
timeout 40 $lg bench --shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --batch 1 --context 512 \
  --kv-tokens 12000 > "$out/bench_30b_a3b.txt" 2>&1; grep -E "^ +[0-9]+ +512 " "$out/bench_30b_a3b.txt"
exit 0

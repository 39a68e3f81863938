#!/usr/bin/env bash
# Session 24, call 6: the first iteration's K/V loads issued before the PDL wait (v8's rows form,
# v10's first two tiles; the position's own row replaced at use), and v10's block-table lookups
# a tile ahead. Tests whole and with v10 in the plan, memcheck, the hand-written Qwen locks (plan,
# v10, v8 at every position); 8B steps: main's binary (lg_a) against this one's plan and v10,
# alternated twice; one sequence at 32,768 positions.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
LG_QWEN_ATTN_V10=1 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t \
  --gtest_filter='QwenKernels.DecodeAttention*:QwenMixedAttention.*:HandwrittenBatch.*' > "$out/qwen_tests_v10.txt" 2>&1
echo "qwen tests v10 in the plan: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" "$out/qwen_tests_v10.txt" | head -20
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 $cs --tool memcheck $t \
  --gtest_filter='*DecodeAttentionRope*:QwenMixedAttention.*' > "$out/memcheck_attention_tests.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$out/memcheck_attention_tests.txt"
{ timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  LG_QWEN_ATTN_V10=1 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  LG_QWEN_LONG_DECODE_FROM=0 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" \
    --shared /tmp/lgshared --compare-logits
} > "$out/locks_hw.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw.txt"
lg_new=$lg
for round in 1 2; do
  for v in a plan v10; do
    case $v in a) bin=/tmp/lgb/bin/lg_a; e=() ;; plan) bin=$lg_new; e=() ;; v10) bin=$lg_new; e=(LG_QWEN_ATTN_V10=1) ;; esac
    { echo "== round $round $v"
      env "${e[@]}" timeout 90 $bin bench --shape qwen3-8b --lane handwritten --prompt-len 16 \
        --decode-tokens 32 --batch 16,32,64,128 --context 128,512,1024 --kv-tokens 160000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
    [ $v = v10 ] || lg=$bin b1_32k "$v" handwritten
  done
done
ab_table bench.txt
exit 0

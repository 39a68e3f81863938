#!/usr/bin/env bash
# Session 24, call 2: v8's block-table lookups an iteration ahead of the loads that need them
# (each warp-iteration's entry misses L1), in the register form (LG_QWEN_ROWS_STAGES=0) and the
# staged form (3), against call 1's binary (lg_a: the register form without the lookahead, as
# main). Kernel tests at stages 0 and 3, memcheck, the hand-written Qwen locks; 8B steps at
# 16-64 sequences and one at 32,768 positions, alternated twice.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
for st in 0 3; do
  LG_QWEN_ROWS_STAGES=$st LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t > "$out/qwen_lane_tests_st$st.txt" 2>&1
  echo "qwen tests stages $st: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests_st$st.txt" | head -4
done
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
LG_QWEN_ROWS_STAGES=0 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 $cs --tool memcheck $t \
  --gtest_filter='*DecodeAttentionRope*' > "$out/memcheck_attention_tests.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$out/memcheck_attention_tests.txt"
{ LG_QWEN_ROWS_STAGES=0 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  LG_QWEN_ROWS_STAGES=0 LG_QWEN_LONG_DECODE_FROM=0 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" \
    --shared /tmp/lgshared --compare-logits
} > "$out/locks_hw.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw.txt"
lg_new=$lg
for round in 1 2; do
  for v in a new0 new3; do
    case $v in a) bin=/tmp/lgb/bin/lg_a; st=0 ;; new0) bin=$lg_new; st=0 ;; new3) bin=$lg_new; st=3 ;; esac
    { echo "== round $round $v"
      LG_QWEN_ROWS_STAGES=$st timeout 90 $bin bench --shape qwen3-8b --lane handwritten --prompt-len 16 \
        --decode-tokens 32 --batch 16,32,64 --context 128,512,1024 --kv-tokens 80000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
    lg=$bin b1_32k "$v" handwritten LG_QWEN_ROWS_STAGES=$st
  done
done
ab_table bench.txt
exit 0

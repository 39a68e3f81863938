#!/usr/bin/env bash
# Session 24, call 10: the rule as landed (v10 at a group of 4 and head_dim 128, 16-64 sequences,
# a split length of 2,048 or more: the longest sequence past 1,024 positions). The plan and
# kernel tests; 8B and 0.6B steps, the rule against v10 off, once.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t --gtest_filter='QwenKernels.*:HandwrittenBatch.*' > "$out/qwen_tests.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_tests.txt" | head
for shape in qwen3-8b qwen3-0.6b; do
  for v in rule off; do
    case $v in rule) e=() ;; off) e=(LG_QWEN_ATTN_V10=0) ;; esac
    { echo "== round 1 $shape $v"
      env "${e[@]}" timeout 90 $lg bench --shape $shape --lane handwritten --prompt-len 8 \
        --decode-tokens 32 --batch 16,32,64 --context 512,1024,2048 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
exit 0

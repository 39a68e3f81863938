#!/usr/bin/env bash
# Session 17, call 5: v8 streaming each warp's keys through a shared-memory ring, S - 1 iterations
# of cp.async ahead of its math (LG_QWEN_LONG_STAGES=3, 4; 0 = loads into registers, as landed):
# the decode-attention kernel tests at each setting (v8 at G = 2 and 4), the Qwen locks with v8
# at every position, and batch-1 decode at 8,192 and 32,768 positions, 8B, alternated.
set -uo pipefail
source bench/device_env.sh
for st in 0 4 3; do
  LG_QWEN_LONG_STAGES=$st LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 60 /tmp/lgb/bin/qwen_lane_tests \
    --gtest_filter='*DecodeAttention*:QwenMixedAttention.*' > "$out/qwen_lane_tests_s$st.txt" 2>&1
  echo "stages $st, kernel tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests_s$st.txt"
done
LG_QWEN_LONG_STAGES=4 LG_QWEN_LONG_DECODE_FROM=0 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" \
  --shared /tmp/lgshared --compare-logits > "$out/locks_v8_s4.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)" "$out/locks_v8_s4.txt"
for st in 0 4 3 0 4 3; do
  r=$(LG_QWEN_LONG_STAGES=$st timeout 60 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 \
    --decode-tokens 32 --context 8192,32768 2>&1 | grep -E '^ +1 +(8192|32768)' | tr '\n' ' ')
  echo "stages $st: $r" | tee -a "$out/b1_long.txt"
done
exit 0

#!/usr/bin/env bash
# Session 18, call 4: v8 with its next iteration's loads in flight while this one's are used
# (LG_QWEN_ROWS_PIPE=1: the queries read from shared memory at each use, freeing their registers
# for a second set of K/V slices), in the batched rows form and the single-sequence long graph.
# Its kernel, mixed and batch tests and the Qwen locks (v8 at every position, and in a batch of
# 16) with it; 8B decode at 16-64 sequences of 128, 512 and 1,024 positions and one sequence at
# 32,768, on and off alternated twice; 0.6B once.
set -uo pipefail
source bench/device_env.sh
LG_QWEN_ROWS_PIPE=1 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 /tmp/lgb/bin/qwen_lane_tests \
  --gtest_filter='*DecodeAttention*:QwenMixedAttention.*:HandwrittenBatch.*' > "$out/qwen_lane_tests_pipe.txt" 2>&1
echo "qwen tests, pipe: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests_pipe.txt" | head
{ LG_QWEN_ROWS_PIPE=1 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  LG_QWEN_ROWS_PIPE=1 LG_QWEN_LONG_DECODE_FROM=0 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" \
    --shared /tmp/lgshared --compare-logits
} > "$out/locks_pipe.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_pipe.txt"
for round in 1 2; do
  for v in LG_QWEN_ROWS_PIPE=0 LG_QWEN_ROWS_PIPE=1; do
    { echo "== round $round qwen3-8b $v"
      env $v timeout 90 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 --decode-tokens 32 \
        --batch 16,32,64 --context 128,512,1024 --kv-tokens 160000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
      env $v timeout 60 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 32 \
        --context 32768 2>&1 | grep -E '^ +1 +32768'
    } | tee -a "$out/ab.txt"
  done
done
for v in LG_QWEN_ROWS_PIPE=0 LG_QWEN_ROWS_PIPE=1; do
  { echo "== qwen3-0.6b $v"
    env $v timeout 90 $lg bench --shape qwen3-0.6b --lane handwritten --prompt-len 16 --decode-tokens 32 \
      --batch 16,32,64,128 --context 128,512,1024 --kv-tokens 160000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
  } | tee -a "$out/ab.txt"
done
exit 0

#!/usr/bin/env bash
# Session 18, call 5: the final binary. v8 with 4 heads a block now always keeps its next
# iteration's loads in flight (call 4's PIPE, no knob). qwen_lane_tests whole; the attention
# kernel tests under compute-sanitizer memcheck (the rows form at 2 and 4 heads a block, batched
# and single-sequence); the Qwen locks on the hand-written lane (in a batch of 16, with logits,
# v8 at every position); 8B decode at 1-128 sequences of 128, 512 and 1,024 positions and one
# sequence at 32,768, twice; transformers' batched decode in the same call.
set -uo pipefail
source bench/device_env.sh
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /tmp/lgb/bin/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 $cs --tool memcheck /tmp/lgb/bin/qwen_lane_tests \
  --gtest_filter='*DecodeAttentionRope*' > "$out/memcheck_attention_tests.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$out/memcheck_attention_tests.txt"
{ timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  LG_QWEN_LONG_DECODE_FROM=0 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" \
    --shared /tmp/lgshared --compare-logits
} > "$out/locks_hw.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw.txt"
for round in 1 2; do
  { echo "== round $round qwen3-8b"
    timeout 90 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 --decode-tokens 32 \
      --batch 1,16,32,64,128 --context 128,512,1024 --kv-tokens 160000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    timeout 60 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 32 \
      --context 32768 2>&1 | grep -E '^ +1 +32768'
  } | tee -a "$out/bench.txt"
done
timeout 300 python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 > "$out/hf_batch_peer.txt" 2>&1
grep '^{' "$out/hf_batch_peer.txt"
exit 0

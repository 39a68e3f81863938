#!/usr/bin/env bash
# Session 18, call 3: the rows form's rule (decode_attention_batch_plan: pairs of heads up to one
# wave of blocks, all heads of a block up to two, v9 past that except at a group of 2) checked and
# timed. (a) qwen_lane_tests whole by default, and its attention, mixed and batch tests with the
# rows form everywhere (LG_QWEN_ATTN_ROWS=2); the Qwen locks on the hand-written lane;
# compute-sanitizer memcheck of 0.6B batched steps (16 and 64 sequences: both rows forms).
# (b) 8B and 0.6B decode steps, default against the rule off (LG_QWEN_ATTN_ROWS=0), 1-128
# sequences of 128, 512 and 1,024 positions, two rounds at 8B; transformers' batched decode
# (hf_batch_peer.py) at 8B in the same call.
set -uo pipefail
source bench/device_env.sh
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /tmp/lgb/bin/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
LG_QWEN_ATTN_ROWS=2 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 /tmp/lgb/bin/qwen_lane_tests \
  --gtest_filter='*DecodeAttention*:QwenMixedAttention.*:HandwrittenBatch.*' > "$out/qwen_lane_tests_rows2.txt" 2>&1
echo "qwen tests, rows everywhere: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests_rows2.txt" | head
{ timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
  timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
} > "$out/locks_hw.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw.txt"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 200 $cs --tool memcheck $lg bench --shape qwen3-0.6b --lane handwritten --prompt-len 16 --decode-tokens 4 \
  --batch 16,64 --context 300 > "$out/memcheck_b16_64.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|^ +[0-9]+ +300 " "$out/memcheck_b16_64.txt"
for round in 1 2; do
  for v in LG_QWEN_ATTN_ROWS=1 LG_QWEN_ATTN_ROWS=0; do
    for shape in qwen3-8b qwen3-0.6b; do
      [ $round = 2 ] && [ $shape = qwen3-0.6b ] && continue
      { echo "== round $round $shape $v"
        env $v timeout 90 $lg bench --shape $shape --lane handwritten --prompt-len 16 --decode-tokens 32 \
          --batch 1,16,32,64,128 --context 128,512,1024 --kv-tokens 160000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
      } | tee -a "$out/ab.txt"
    done
  done
done
timeout 300 python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 > "$out/hf_batch_peer.txt" 2>&1
tail -5 "$out/hf_batch_peer.txt"
exit 0

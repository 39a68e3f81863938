#!/usr/bin/env bash
# Session 15, call 4: v9 where it wins (decode_attention_batch_tensor_cores: one split, 512+
# positions), v6 elsewhere. Kernel tests of both forms (explicitly, any knob), the batch and mixed
# tests, the hand-written Qwen locks; the 8B step at B = 1, 16, 64, 128 and 512 / 1,024 positions
# against v6 everywhere (LG_QWEN_ATTN_TC=0), alternated twice; issue 14's serving run at the
# default.
set -uo pipefail
source bench/device_env.sh
unpack_xz qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/qwen_lane_tests \
  --gtest_filter='*DecodeAttention*:HandwrittenBatch.*:QwenMixedAttention.*:*TinyBatch*:*TinyFixture*:HandwrittenLane*' \
  > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen_lane_tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
{ timeout 100 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 100 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_handwritten.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_handwritten.txt"
for round in 1 2; do
  for tc in 1 0; do
    LG_QWEN_ATTN_TC=$tc timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 \
      --decode-tokens 32 --batch 1,16,64,128 --context 512,1024 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | \
      sed "s/^/tc $tc /" | tee -a "$out/ab.txt"
  done
done
LG_STEP_TRACE="$out/trace.csv" $lg serve --shape qwen3-8b --max-seq 2048 --max-batch 256 > "$out/serve.log" 2>&1 &
sp=$!
for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
timeout 150 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
  --json "$out/load.json" > "$out/load.txt" 2>&1
grep -E "output|TTFT|ITL|mixed|completed" "$out/load.txt"
curl -s localhost:8000/metrics | grep -E "^lg_kv_blocks_used" | tee -a "$out/load.txt"
kill -INT "$sp"; timeout 30 tail --pid="$sp" -f /dev/null || kill -9 "$sp"
xz -9 "$out/trace.csv"
exit 0

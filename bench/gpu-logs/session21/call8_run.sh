#!/usr/bin/env bash
# Session 21, call 8: the hand-written lane's long-context decode attention (attn_decode_long_kernel,
# v8) in base-2 units with ex2.approx, as the compiled loop (calls 4-5). qwen_lane_tests and the
# hand-written locks (with logits, in a batch of 16); one 8B sequence at 32,768 positions on both
# lanes (the compiled lane unchanged since call 7: the machine's yardstick; the binary before this
# change did not fit the upload beside this one), B = 1, 16, 64 at 512.
set -uo pipefail
source bench/device_env.sh
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /tmp/lgb/bin/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen_lane_tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
{ timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_handwritten.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)" "$out/locks_handwritten.txt"
echo "checks done at ${SECONDS}s"
for r in 1 2 3; do
  b1_32k hw_new handwritten
  b1_32k compiled compiled
done
echo "32k done at ${SECONDS}s"
timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 2 --batch 1,16,64 --context 512 --kv-tokens 40000 \
  > "$out/hw_512.txt" 2>&1
grep -E "^ +[0-9]+ +512" "$out/hw_512.txt"
exit 0

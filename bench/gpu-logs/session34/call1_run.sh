#!/usr/bin/env bash
# Session 34, call 1: the row GEMV's K splits summed in split order (no atomics). First the
# checks: the kernel tests (QwenGemvRows.SplitSumsAreTheSameBitsOnAnyGrid is new), every
# hand-written test, and under the TMA row GEMV (LG_QWEN_GEMV_ROWS=2) the draw tests that parted
# under the atomic form (RowDraws.*), the batch tests and the Qwen locks with --batch-with 16.
# Then the question of why the TMA form lost to cuBLASLt on the H200 (thirty-first session):
# its ring's stages, hence blocks an SM (8: one, 4: two, 3: three, 2: five at one n-tile),
# against cuBLASLt at 2-32 sequences, two rounds alternated.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/lgb/bin/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen_lane_tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/qwen_lane_tests.txt" | head -20
qwen_tests 'RowDraws.*:HandwrittenBatch*:*TinyBatch*:*TinyFixture*:QwenGemvRows.*' LG_QWEN_GEMV_ROWS=2 | tail -4
LG_QWEN_GEMV_ROWS=2 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared \
  --batch-with 16 > "$out/locks_handwritten_tma.txt" 2>&1
echo "handwritten locks (tma, --batch-with 16) rc $?"; grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_handwritten_tma.txt"
echo "checks done at ${SECONDS} s"
ab_rounds tma_stages.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  cublaslt: s8:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=8 s4:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=4 \
  s3:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=3 s2:LG_QWEN_GEMV_ROWS=2,LG_QWEN_TMA_STAGES=2
echo "done at ${SECONDS} s"
exit 0

#!/usr/bin/env bash
# Session 44, call 4 (any card): the prompt chunks of a mixed step in one flash launch. run_rows
# launched the tensor-core prefill attention once per chunk, each after the one before; a launch's
# time is its longest chain of key tiles (a 512-token chunk: 29 us a layer on the H100, call 1's
# Nsight, where its FLOPs take ~3), so a serving step with 3-4 chunks paid 3-4 chains a layer.
# launch_attention_prefill_tc_runs puts every chunk's query tiles into one launch, the most keys
# first (LG_QWEN_FLASH_RUNS=0: a launch per chunk). Predicted: ~60 us a layer off a mixed step of
# ~4 chunks (~5% of it), +2% on issue 14's load.
# 1. The flash kernel's tests (the runs' bits against a launch per chunk), the lane's batch and
#    mixed tests, the Qwen locks alone and with --batch-with 16.
# 2. Issue 14's serving load, a launch per chunk against one, alternating, two rounds.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/lgb/bin/flash_attention_tests \
  --gtest_filter='FlashAttentionGpu.*:FlashAttentionLaunch.*' > "$out/flash_tests.txt" 2>&1
echo "flash tests rc $?"; grep -E "OK|FAILED|PASSED" "$out/flash_tests.txt" | tail -8
qwen_tests 'HandwrittenBatch.*:QwenMixedAttention.*:HandwrittenLane.*:TinyFixture*' | tail -3
hw_locks
echo "checks done at ${SECONDS}s"
for round in 1 2; do
  serve_load "apart$round" LG_QWEN_FLASH_RUNS=0
  serve_load "once$round" LG_QWEN_FLASH_RUNS=1
done
echo "done at ${SECONDS}s"
exit 0

#!/usr/bin/env bash
# Session 17, call 1: (a) the compiled lane's new tensor-core split-KV form (lg_dmma, the wide
# form) checked at every step (LG_COMPILED_ATTN_WIDE_ROWS=1): compiled_lane_tests' lane and batch
# tests, the Qwen locks; (b) batch-1 decode at 32,768 positions, 8B shape (issue 13's bar: within
# 1.3x of the step's floor): hand-written v8 against v9 run for one sequence
# (LG_QWEN_ATTN_SOLO_GQA=2) at several split counts, compiled base form against the mma form;
# (c) the compiled 8B and 0.6B steps at 1-128 sequences of 512 positions, wide form mma / heads.
set -uo pipefail
source bench/device_env.sh
unpack_xz compiled_lane_tests
LG_COMPILED_ATTN_WIDE_ROWS=1 LG_SHARED_DIR=/tmp/lgshared timeout 150 /tmp/compiled_lane_tests \
  --gtest_filter='CompiledLane.*:CompiledBatch.*' > "$out/compiled_lane_tests_mma.txt" 2>&1
echo "tests, mma at every step: rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests_mma.txt" | head
LG_COMPILED_ATTN_WIDE_ROWS=1 timeout 90 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" \
  --shared /tmp/lgshared --compare-logits > "$out/locks_mma.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)" "$out/locks_mma.txt"
b1() {  # LABEL LANE [ENV=VALUE...]: the 32,768-position line of a batch-1 bench
  local label=$1 lane=$2
  shift 2
  local r
  r=$(env "$@" timeout 60 $lg bench --shape qwen3-8b --lane "$lane" --prompt-len 512 --decode-tokens 32 \
    --context 32768 2>&1 | grep -E '^ +1 +32768')
  echo "$label [$*]: $r" | tee -a "$out/b1_32k.txt"
}
b1 "compiled base" compiled
b1 "compiled mma" compiled LG_COMPILED_ATTN_WIDE_ROWS=1
b1 "compiled mma" compiled LG_COMPILED_ATTN_WIDE_ROWS=1 LG_COMPILED_ATTN_BPS=5
b1 "hw v8" handwritten
b1 "hw v9 solo" handwritten LG_QWEN_ATTN_SOLO_GQA=2
b1 "hw v9 solo" handwritten LG_QWEN_ATTN_SOLO_GQA=2 LG_QWEN_GQA_MAX_SPLITS=49
b1 "hw v9 solo" handwritten LG_QWEN_ATTN_SOLO_GQA=2 LG_QWEN_GQA_MAX_SPLITS=128
b1 "hw v9 solo 2w" handwritten LG_QWEN_ATTN_SOLO_GQA=2 LG_QWEN_ATTN_TC_WARPS=2 LG_QWEN_GQA_MAX_SPLITS=82
bb() {  # LABEL SHAPE [ENV=VALUE...]: the compiled step at 1-128 sequences of 512 positions
  local label=$1 shape=$2
  shift 2
  { echo "== $shape $label [$*]"; env "$@" timeout 70 $lg bench --shape $shape --lane compiled --prompt-len 2 \
    --batch 1,16,64,128 --context 512 --kv-tokens 90000 2>&1 | grep -E "^ +[0-9]+ +512 "; } | tee -a "$out/batch.txt"
}
bb "mma from 64 rows" qwen3-8b
bb "mma at every step" qwen3-8b LG_COMPILED_ATTN_WIDE_ROWS=1
bb "4 heads from 64 rows (session 16)" qwen3-8b LG_COMPILED_ATTN_WIDE_FORM=heads
bb "mma from 64 rows" qwen3-0.6b
bb "mma at every step" qwen3-0.6b LG_COMPILED_ATTN_WIDE_ROWS=1
bb "no wide form (session 16)" qwen3-0.6b LG_COMPILED_ATTN_WIDE_FORM=heads
exit 0

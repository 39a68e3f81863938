#!/usr/bin/env bash
# Session 17, call 7: v8 in rows of 16-byte slices (LG_QWEN_LONG_ROWS=1: 16 lanes a key, 2 query
# heads a block, log2(16) shuffles a score for 2 keys at once; call 6 found v8 bound by its
# instructions): the decode-attention kernel tests and the Qwen locks with it at every position,
# then one sequence at 8,192 and 32,768 positions, 8B and 0.6B, alternated with v8; and the
# compiled lane's 4-head CUDA-core form at 32,768 positions against its default.
set -uo pipefail
source bench/device_env.sh
LG_QWEN_LONG_ROWS=1 LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 60 /tmp/lgb/bin/qwen_lane_tests \
  --gtest_filter='*DecodeAttention*' > "$out/qwen_lane_tests_rows.txt" 2>&1
echo "rows kernel tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure" "$out/qwen_lane_tests_rows.txt" | head
LG_QWEN_LONG_ROWS=1 LG_QWEN_LONG_DECODE_FROM=0 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" \
  --shared /tmp/lgshared --compare-logits > "$out/locks_rows.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)|relative" "$out/locks_rows.txt"
for shape in qwen3-8b qwen3-0.6b; do
  for rows in 0 1 0 1; do
    r=$(LG_QWEN_LONG_ROWS=$rows timeout 60 $lg bench --shape $shape --lane handwritten --prompt-len 512 \
      --decode-tokens 32 --context 8192,32768 2>&1 | grep -E '^ +1 +(8192|32768)' | tr '\n' ' ')
    echo "$shape rows $rows: $r" | tee -a "$out/b1_long.txt"
  done
done
for env in LG_COMPILED_ATTN_WIDE_ROWS=64 "LG_COMPILED_ATTN_WIDE_ROWS=1 LG_COMPILED_ATTN_WIDE_FORM=heads"; do
  r=$(env $env timeout 60 $lg bench --shape qwen3-8b --lane compiled --prompt-len 512 --decode-tokens 32 \
    --context 32768 2>&1 | grep -E '^ +1 +32768')
  echo "compiled [$env]: $r" | tee -a "$out/b1_long.txt"
done
exit 0

#!/usr/bin/env bash
# Session 16, call 3: (a) the compiled lane's pack kernels with an RMSNorm prologue take a block
# per row at decode-sized steps (LG_COMPILED_PACK_BLOCK_ROWS=0: warp spans, as before); (b) the
# split-KV decode attention with all 4 query heads of a KV head in one block at the 8B shape
# (LG_COMPILED_ATTN_QNE=32, and LG_COMPILED_ATTN_R=2 / 1 key steps a round; default: 2 heads).
# Correctness at the defaults and with (b), then A/B rounds.
set -uo pipefail
source bench/device_env.sh
compiled_checks
LG_COMPILED_ATTN_QNE=32 LG_COMPILED_ATTN_R=2 LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/compiled_lane_tests \
  > "$out/compiled_lane_tests_qg4.txt" 2>&1
echo "tests with 4 heads a block: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests_qg4.txt" | head
LG_COMPILED_ATTN_QNE=32 LG_COMPILED_ATTN_R=2 timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" \
  --shared /tmp/lgshared --batch-with 16 2>&1 | grep -E "^(ok|FAIL|ERROR)"
bench() {  # bench LABEL SHAPE BATCHES CONTEXTS [ENV...]
  local label=$1 shape=$2 batches=$3 contexts=$4
  shift 4
  local r
  r=$(env "$@" timeout 150 $lg bench --shape "$shape" --lane compiled --prompt-len 2 --batch $batches \
    --context $contexts --kv-tokens 140000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ +[0-9.]+ ")
  { echo "== $label $shape $*"; echo "$r"; } >> "$out/ab.txt"
  echo "$label $(basename $shape): $(echo "$r" | awk '{printf "B%s@%s %s  ", $1, $2, $3}')"
}
for round in 1 2; do
  bench "r$round pack-rows" qwen3-0.6b 16,64 128,512
  bench "r$round pack-spans" qwen3-0.6b 16,64 128,512 LG_COMPILED_PACK_BLOCK_ROWS=0
  bench "r$round qg2" qwen3-8b 16,64,128 512,1024
  bench "r$round qg4-r2" qwen3-8b 16,64,128 512,1024 LG_COMPILED_ATTN_QNE=32 LG_COMPILED_ATTN_R=2
  bench "r$round qg4-r1" qwen3-8b 16,64,128 512,1024 LG_COMPILED_ATTN_QNE=32 LG_COMPILED_ATTN_R=1
done
exit 0

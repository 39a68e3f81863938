#!/usr/bin/env bash
# Session 36, call 1: the hand-written lane's batched decode path split into its phases
# (stage_decode_batch, enqueue_decode_batch, enqueue_layer_lt beside enqueue_layer_rows): its batch,
# mixed and fixture tests on the card's default GEMVs and on cuBLASLt everywhere, the Qwen locks with
# --batch-with 16, and one eager profiled step (LG_PROFILE_LAUNCHES) per path. On an H200 (issue
# 13's card) then session 35's waiting call 3: the TMA row GEMV against cuBLASLt at 2-32 sequences
# and issue 13's 8B bars at the default and on the TMA form.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
f='HandwrittenBatch*:*TinyBatch*:*Mixed*:RowDraws.*'
qwen_tests "$f" | tail -4
qwen_tests "$f" LG_QWEN_GEMV_ROWS=0 | tail -4
qwen_tests "$f" LG_QWEN_GEMV_ROWS=2 | tail -4
timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16 \
  > "$out/locks_batch16.txt" 2>&1
echo "locks rc $?"; grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_batch16.txt"
for g in 0 2; do
  LG_PROFILE_LAUNCHES=1 LG_QWEN_GEMV_ROWS=$g timeout 90 $lg bench --shape qwen3-0.6b --lane handwritten --prompt-len 8 \
    --decode-tokens 4 --batch 8 --context 512 --kv-tokens 8000 > "$out/profile_rows$g.txt" 2>&1
  echo "profile rows=$g rc $?: $(grep -c "hand-written batched decode" "$out/profile_rows$g.txt") reports"
done
bench="--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32,64 --context 512 --kv-tokens 40000"
# shellcheck disable=SC2086  # the bench arguments split at spaces
timeout 90 $lg bench $bench 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |bandwidth" | tee "$out/bench_8b_default.txt"
echo "checks done at ${SECONDS} s"
h200_rows_and_bars  # on an H200 only (issue 13's card): session 35's waiting call 3
exit 0

#!/usr/bin/env bash
# Session 17, call 4: call 3's rows that its KV pools could not hold (the compiled lane rounds the
# pool down to a power-of-two count of blocks): 30B-A3B at 64 sequences, 8B at 128 sequences of
# 1,024 positions, the two wide forms and the hand-written lane.
set -uo pipefail
source bench/device_env.sh
for form in mma heads; do
  env=(); [ $form = heads ] && env=(LG_COMPILED_ATTN_WIDE_FORM=heads)
  { echo "== 30b-a3b compiled, wide form $form"; env "${env[@]}" timeout 90 $lg bench --shape bench/shapes/qwen3-30b-a3b \
      --lane compiled --prompt-len 2 --batch 64 --context 512 --kv-tokens 70000 2>&1 | grep -E "^ +[0-9]+ +512 "
    echo "== 8b compiled, wide form $form"; env "${env[@]}" timeout 60 $lg bench --shape qwen3-8b --lane compiled \
      --prompt-len 2 --batch 128 --context 1024 --kv-tokens 270000 2>&1 | grep -E "^ +[0-9]+ +1024 "
  } | tee -a "$out/bench.txt"
done
{ echo "== 8b handwritten"; timeout 60 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 2 --batch 128 \
    --context 1024 --kv-tokens 270000 2>&1 | grep -E "^ +[0-9]+ +1024 "; } | tee -a "$out/bench.txt"
exit 0

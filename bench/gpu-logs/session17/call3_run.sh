#!/usr/bin/env bash
# Session 17, call 3: the tensor-core split-KV form where attention weighs more: the 30B-A3B
# shape (GQA group 8: all 8 heads of a KV head a block) at 1, 16 and 64 sequences, and the 8B
# shape at 64 and 128 sequences of 1,024 positions; against the 4-head CUDA-core form
# (LG_COMPILED_ATTN_WIDE_FORM=heads), alternated, and the hand-written lane in the same call.
set -uo pipefail
source bench/device_env.sh
for form in mma heads mma heads; do
  env=(); [ $form = heads ] && env=(LG_COMPILED_ATTN_WIDE_FORM=heads)
  { echo "== 30b-a3b compiled, wide form $form"; env "${env[@]}" timeout 90 $lg bench --shape bench/shapes/qwen3-30b-a3b \
      --lane compiled --prompt-len 2 --batch 1,16,64 --context 512 --kv-tokens 40000 2>&1 | grep -E "^ +[0-9]+ +512 "
    echo "== 8b compiled, wide form $form"; env "${env[@]}" timeout 60 $lg bench --shape qwen3-8b --lane compiled \
      --prompt-len 2 --batch 64,128 --context 1024 --kv-tokens 140000 2>&1 | grep -E "^ +[0-9]+ +1024 "
  } | tee -a "$out/bench.txt"
done
{ echo "== 8b handwritten"; timeout 60 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 2 --batch 64,128 \
    --context 1024 --kv-tokens 140000 2>&1 | grep -E "^ +[0-9]+ +1024 "; } | tee -a "$out/bench.txt"
exit 0

#!/usr/bin/env bash
# Session 24, call 7: where the batched attention's time goes at 16 sequences, 8B: the step at
# contexts 16-1,024 with v8's rows form (the plan), v10, and no attention (LG_QWEN_SKIP, timing
# only): the intercept is the launch's fixed cost, the slope its streaming rate. Twice.
set -uo pipefail
source bench/device_env.sh
for round in 1 2; do
  for v in plan v10 noattn; do
    case $v in plan) e=() ;; v10) e=(LG_QWEN_ATTN_V10=1) ;; noattn) e=(LG_QWEN_SKIP='^attention$') ;; esac
    { echo "== round $round $v"
      env "${e[@]}" timeout 90 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
        --decode-tokens 32 --batch 16,64 --context 16,32,64,128,256,512,1024,2048 --kv-tokens 160000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
exit 0

#!/usr/bin/env bash
# Session 24, call 3: the batched decode attention's forms at 16-64 sequences of 512 and 1,024
# positions, 8B, hand-written lane (main's binary): the plan's rows form against v9 (tensor
# cores) everywhere, v9 with 2-warp blocks, v6, the rows form with 4 heads a block; and the step
# without its attention (LG_QWEN_SKIP, timing only). Two rounds.
set -uo pipefail
source bench/device_env.sh
for round in 1 2; do
  for v in plan v9 v9w2 v6 rows4 noattn; do
    case $v in
      plan) e=() ;;
      v9) e=(LG_QWEN_ATTN_ROWS=0 LG_QWEN_ATTN_TC=2) ;;
      v9w2) e=(LG_QWEN_ATTN_ROWS=0 LG_QWEN_ATTN_TC=2 LG_QWEN_ATTN_TC_WARPS=2) ;;
      v6) e=(LG_QWEN_ATTN_ROWS=0 LG_QWEN_ATTN_TC=0) ;;
      rows4) e=(LG_QWEN_ATTN_ROWS=2) ;;
      noattn) e=(LG_QWEN_SKIP='^attention$') ;;
    esac
    { echo "== round $round $v"
      env "${e[@]}" timeout 90 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 16 \
        --decode-tokens 32 --batch 16,32,64 --context 512,1024 --kv-tokens 80000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
exit 0

#!/usr/bin/env bash
# Session 26, call 7: with dependents starting at a GEMM's launch completion and no prefetch_split
# (LG_QWEN_PREFETCH_ITERS=0), do the plan's earlier choices still hold at 16-64 sequences of 512?
# Base against split-K off (LG_QWEN_SPLITK=0), v6/v9 instead of the rows form (LG_QWEN_ATTN_ROWS=0),
# pairs of heads a block (LG_QWEN_LONG_HEADS=2), the row GEMVs (LG_QWEN_GEMV_ROWS=1, <= 16).
set -uo pipefail
source bench/device_env.sh
for round in 1 2; do
  for v in base nosplitk norows pairs gemvrows; do
    case $v in base) e=(LG_QWEN_PREFETCH_ITERS=0) ;; nosplitk) e=(LG_QWEN_PREFETCH_ITERS=0 LG_QWEN_SPLITK=0) ;;
      norows) e=(LG_QWEN_PREFETCH_ITERS=0 LG_QWEN_ATTN_ROWS=0) ;; pairs) e=(LG_QWEN_PREFETCH_ITERS=0 LG_QWEN_LONG_HEADS=2) ;;
      gemvrows) e=(LG_QWEN_PREFETCH_ITERS=0 LG_QWEN_GEMV_ROWS=1) ;; esac
    { echo "== round $round hw8b $v"
      env "${e[@]}" timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
        --decode-tokens 32 --batch 16,32,64 --context 512 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
exit 0

#!/usr/bin/env bash
# Session 26, call 6: is v10's loss when started early (LG_EARLY_AFTER_GEMM=2) its loads before the
# wait (prefetch_split and its first two tiles)? k2 against k1 with LG_QWEN_PREFETCH_ITERS=0 (its
# tiles still load early), and k1 p2 for the record; 16-64 sequences of 1,024-2,048 positions.
set -uo pipefail
source bench/device_env.sh
for round in 1 2; do
  for v in k1p0 k2p0 k1p2; do
    case $v in k1p0) e=(LG_EARLY_AFTER_GEMM=1 LG_QWEN_PREFETCH_ITERS=0) ;; k2p0) e=(LG_EARLY_AFTER_GEMM=2 LG_QWEN_PREFETCH_ITERS=0) ;;
      k1p2) e=(LG_EARLY_AFTER_GEMM=1 LG_QWEN_PREFETCH_ITERS=2) ;; esac
    { echo "== round $round hw8b $v"
      env "${e[@]}" timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
        --decode-tokens 32 --batch 16,32,64 --context 1024,2048,4096 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
exit 0

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
python3 - "$out/bench.txt" <<'PY'
import sys, collections
rows = collections.defaultdict(list); st = None
for line in open(sys.argv[1]):
    if line.startswith("=="): st = line.split()[-1]; continue
    f = line.split()
    if len(f) > 3 and f[0].isdigit(): rows[(int(f[0]), int(f[1].lstrip('+')))].append((st, f[2]))
for k in sorted(rows): print(k, " ".join(f"{s}:{v}" for s, v in rows[k]))
PY
exit 0

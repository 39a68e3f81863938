#!/usr/bin/env bash
# Session 21, call 7: the one-row split-KV form (LaunchPlan::one_row: call 6's 3-block kernel for
# steps of one row; LG_COMPILED_ATTN_ONE_ROW=0 turns it off). Every compiled-lane test (the 32k
# long-context one too) and lock, memcheck of a compiled 0.6B step at 32,768 positions, A/B lines.
set -uo pipefail
source bench/device_env.sh
compiled_checks
echo "checks done at ${SECONDS}s"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 150 $cs --tool memcheck --print-limit 20 $lg bench --shape qwen3-0.6b --lane compiled --prompt-len 16 \
  --decode-tokens 2 --context 32768 > "$out/memcheck_compiled_06b_32k.txt" 2>&1
echo "memcheck 32k rc $?: $(grep -E 'ERROR SUMMARY' "$out/memcheck_compiled_06b_32k.txt")"
for r in 1 2 3; do
  b1_32k one_row compiled
  b1_32k off compiled LG_COMPILED_ATTN_ONE_ROW=0
done
b1_32k hw handwritten
echo "32k done at ${SECONDS}s"
for s in qwen3-8b qwen3-0.6b bench/shapes/qwen3-30b-a3b; do
  step_ms one_row $s
  step_ms off $s LG_COMPILED_ATTN_ONE_ROW=0
done
exit 0

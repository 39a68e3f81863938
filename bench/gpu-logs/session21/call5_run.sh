#!/usr/bin/env bash
# Session 21, call 5: the candidate binary (call 4's loop, plus iterations whose keys are all in the
# chunk neither clamped nor masked). Every compiled-lane test (the 32k long-context one too) and
# lock, compute-sanitizer memcheck of compiled 0.6B decode steps (1 and 16 sequences at 512
# positions; one at 32,768), A/B lines at 32,768 and 512 positions, both lanes.
set -uo pipefail
source bench/device_env.sh
compiled_checks
echo "checks done at ${SECONDS}s"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 $cs --tool memcheck --print-limit 20 $lg bench --shape qwen3-0.6b --lane compiled --prompt-len 16 \
  --decode-tokens 3 --batch 1,16 --context 512 --kv-tokens 12000 > "$out/memcheck_compiled_06b.txt" 2>&1
echo "memcheck rc $?: $(grep -E 'ERROR SUMMARY' "$out/memcheck_compiled_06b.txt")"
timeout 150 $cs --tool memcheck --print-limit 20 $lg bench --shape qwen3-0.6b --lane compiled --prompt-len 16 \
  --decode-tokens 2 --context 32768 > "$out/memcheck_compiled_06b_32k.txt" 2>&1
echo "memcheck 32k rc $?: $(grep -E 'ERROR SUMMARY' "$out/memcheck_compiled_06b_32k.txt")"
echo "memcheck done at ${SECONDS}s"
for r in 1 2 3; do
  b1_32k cur compiled
  b1_32k exp2off compiled LG_COMPILED_ATTN_EXP2=0
done
b1_32k hw handwritten
b1_32k hw handwritten
echo "32k done at ${SECONDS}s"
step_ms cur qwen3-8b
step_ms cur qwen3-0.6b
step_ms cur bench/shapes/qwen3-30b-a3b
timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 2 --batch 1,16 --context 512 --kv-tokens 12000 \
  > "$out/hw_512.txt" 2>&1
grep -E "^ +[0-9]+ +512" "$out/hw_512.txt"
exit 0

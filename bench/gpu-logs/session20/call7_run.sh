#!/usr/bin/env bash
# Session 20, call 7: the landing binary (call 6's). Every compiled-lane test (the 32k
# long-context ones too) and lock, compute-sanitizer memcheck of compiled 0.6B decode steps at one
# and 16 sequences, and the compiled lane's lines at 1, 16 and 64 sequences of 512 positions.
set -uo pipefail
source bench/device_env.sh
compiled_checks
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 $cs --tool memcheck --print-limit 20 $lg bench --shape qwen3-0.6b --lane compiled --prompt-len 16 \
  --decode-tokens 3 --batch 1,16 --context 512 --kv-tokens 12000 > "$out/memcheck_compiled_06b.txt" 2>&1
echo "memcheck rc $?: $(grep -E 'ERROR SUMMARY' "$out/memcheck_compiled_06b.txt")"
for s in qwen3-8b qwen3-0.6b; do
  timeout 100 $lg bench --shape $s --lane compiled --prompt-len 2 --batch 1,16,64 --context 512 --kv-tokens 40000 \
    > "$out/compiled_$s.txt" 2>&1
  echo "$s"; grep -E "^ +[0-9]+ +512" "$out/compiled_$s.txt"
done
exit 0

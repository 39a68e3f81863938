#!/usr/bin/env bash
# Session 46, call 2h (H100, warm after call 1b): the step without the top-k launch, and the
# per-launch profile (eager, events between launches) of the one-token step with the pair on and off.
source bench/device_env.sh
a30="--shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --batch 1 --context 512 --kv-tokens 12000"
bench_ms two_launches ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=0
bench_ms skip_topk ab30.txt '1 +512' "$a30" 'LG_COMPILED_SKIP=_topk$'
bench_ms pair ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=1
for v in 0 1; do
  LG_COMPILED_MOE_PAIR=$v LG_PROFILE_LAUNCHES=1 timeout 100 $lg bench $a30 > "$out/profile_pair$v.txt" 2>&1
  echo "== pair $v"; grep -iE "experts|topk|total|launch" "$out/profile_pair$v.txt" | head -12
done

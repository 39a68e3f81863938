#!/usr/bin/env bash
# Session 47, call 2 (any card): what the 30B-A3B one-token step's top-k costs, part by part, on a
# lab build (call2_topk_probe.patch: LG_COMPILED_TOPK_PROBE=chain ranks nothing, slot j takes expert
# j; =load reads the router softmax as the warp form does, then takes expert j; results wrong,
# timing only) against the default and the step without the topk launch; then the eager
# per-launch profile of the default and the chain form, and the default again (the machine's drift).
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
a30="--shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --batch 1 --context 512 --kv-tokens 12000"
bench_ms "default" ab30.txt '1 +512' "$a30"
bench_ms "chain" ab30.txt '1 +512' "$a30" LG_COMPILED_TOPK_PROBE=chain
bench_ms "skip_topk" ab30.txt '1 +512' "$a30" 'LG_COMPILED_SKIP=_topk$'
bench_ms "load" ab30.txt '1 +512' "$a30" LG_COMPILED_TOPK_PROBE=load
for v in default chain; do
  env $([ $v = chain ] && echo LG_COMPILED_TOPK_PROBE=chain) LG_PROFILE_LAUNCHES=1 timeout 100 $lg bench $a30 > "$out/profile_$v.txt" 2>&1
  echo "== $v"; grep -iE "experts|topk|gemm|total" "$out/profile_$v.txt" | head -12
done
bench_ms "default again" ab30.txt '1 +512' "$a30"

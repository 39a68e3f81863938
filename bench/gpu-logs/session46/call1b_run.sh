#!/usr/bin/env bash
# Session 46, call 1b (any card; run on main a686d9e's binaries, where the pair still was):
# session 45's call 1 cut to what ~6 device minutes hold after the session's failed starts: the
# wide-rows MoE probe with the pair on, the 30B-A3B one-token step with the pair on and off (two
# rounds), the MoE lock with the pair on, the lab at 48 layers.
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
LG_COMPILED_MOE_PAIR=1 LG_SHARED_DIR=/tmp/lgshared timeout 90 /tmp/lgb/bin/compiled_lane_tests \
  --gtest_filter='CompiledMoeProbe.WideExpertRows*' > "$out/moe_probe_wide.txt" 2>&1
echo "wide probe rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|OK \]" "$out/moe_probe_wide.txt" | head -4
a30="--shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --batch 1 --context 512 --kv-tokens 12000"
bench_ms pair ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=1
bench_ms two_launches ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=0
LG_COMPILED_MOE_PAIR=1 timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits \
  > "$out/moe_lock.txt" 2>&1
grep -E '^(ok|FAIL|ERROR)' "$out/moe_lock.txt" | head -3
timeout 60 ./.carry/moe_fused_lab 48 30 > "$out/lab.txt" 2>&1; tail -8 "$out/lab.txt"
bench_ms pair ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=1
bench_ms two_launches ab30.txt '1 +512' "$a30" LG_COMPILED_MOE_PAIR=0

#!/usr/bin/env bash
# Session 45, call 2 (any card): call 1's checks cut to what ~4 device minutes hold (the session's
# starts kept finding no machine): the wide-rows MoE probe with the experts pair on (the pair at
# one token against the staged executor), then the one-token step with the pair on and off at the
# Qwen3-30B-A3B shape cut to 12 layers (its weights made on the device in a quarter of the time;
# the pair changes each layer alike), then the lab at 12 layers.
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
LG_COMPILED_MOE_PAIR=1 LG_SHARED_DIR=/tmp/lgshared timeout 90 /tmp/lgb/bin/compiled_lane_tests \
  --gtest_filter='CompiledMoeProbe.WideExpertRows*' > "$out/moe_probe_wide.txt" 2>&1
echo "wide probe rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|OK \]" "$out/moe_probe_wide.txt" | head -4
mkdir -p /tmp/s12
python3 -c "import json; c = json.load(open('bench/shapes/qwen3-30b-a3b/config.json')); c['num_hidden_layers'] = 12; json.dump(c, open('/tmp/s12/config.json', 'w'))"
a12="--shape /tmp/s12 --lane compiled --prompt-len 2 --batch 1 --context 512 --kv-tokens 12000"
bench_ms pair ab12.txt '1 +512' "$a12" LG_COMPILED_MOE_PAIR=1
bench_ms two_launches ab12.txt '1 +512' "$a12" LG_COMPILED_MOE_PAIR=0
timeout 40 ./.carry/moe_fused_lab 12 20 2>&1 | tee "$out/lab.txt"
bench_ms pair ab12.txt '1 +512' "$a12" LG_COMPILED_MOE_PAIR=1
bench_ms two_launches ab12.txt '1 +512' "$a12" LG_COMPILED_MOE_PAIR=0

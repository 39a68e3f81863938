#!/usr/bin/env bash
# Session 37, call 7: v10 (the batched decode attention on the tensor cores) in blocks of 2 warps
# where 4-warp blocks took two waves (branch s37-v10-one-wave; calls 4 and 6). The attention
# kernel tests (2-, 4- and 8-warp blocks), the batch and mixed-step tests, the Qwen locks with
# --batch-with 16; then the step with the new rule against LG_QWEN_V10_WARPS=4 (the old rule at
# 32-64 sequences) at 32, 48 and 64 sequences of 1,024-4,096 positions, and the kernel alone under
# Nsight at 64 x 256 (v10 forced) with 2 and 4 warps.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
qwen_tests '*DecodeAttention*:*Mixed*:*Batch*' | tail -3
timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16 \
  > "$out/locks_batch16.txt" 2>&1
echo "locks rc $?"; grep -E "^(ok|FAIL|ERROR)" "$out/locks_batch16.txt"
ab_rounds ab_v10.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 32,48,64 --context 1024,2048,4096 --kv-tokens 300000" \
  two: four:LG_QWEN_V10_WARPS=4
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for w in 2 4; do
  LG_QWEN_ATTN_V10=2 LG_QWEN_V10_WARPS=$w timeout 100 $ncu --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum --csv -k regex:attn_decode --launch-skip 100 --launch-count 10 \
    $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 12 --batch 64 --context 256 \
    --kv-tokens 40000 > "$out/ncu_v10_w$w.csv" 2>&1
  echo "warps $w: $(grep -E '"gpu__time_duration.sum"' "$out/ncu_v10_w$w.csv" | awk -F'","' '{gsub(/[",]/,"",$NF); print $NF}' | sort -n | awk '{a[NR]=$1} END {print "n", NR, "min", a[1], "med", a[int(NR/2)+1]}')"
done
exit 0

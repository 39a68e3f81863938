#!/usr/bin/env bash
# Session 39, call 3: the draw as an exponential race (branch s39-race: draw::race_place; each
# token's place E_i / w_i from the request's key, the least wins) on the device kernel, held to the
# host's draw_token bit for bit (RowDraws: random rows of V up to 151,936 with every cut, and
# sampled generation on the lane against the host's draws), the Qwen locks with --batch-with 16;
# then, on an H200 only, the question waiting since session 35 (h200_rows_and_bars).
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$gpu"
qwen_tests 'RowDraws.*:*Sampl*:*Penalt*' | tail -12
timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16 \
  > "$out/locks_batch16.txt" 2>&1
echo "locks rc $?"; grep -E "^(ok|FAIL|ERROR)" "$out/locks_batch16.txt"
case "$gpu" in *H200*) s=$(date +%s); h200_rows_and_bars; echo "took $(( $(date +%s) - s )) s" ;; esac
exit 0

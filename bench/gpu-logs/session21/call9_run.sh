#!/usr/bin/env bash
# Session 21, call 9: the session's last binary. Qwen3-0.6B, one sequence at 32,768 positions with
# the compiled one-row form on and off (call 7 saw it cost 1.4% at 512 positions) and the
# hand-written lane; both lanes' 8B lines at 1, 16 and 64 sequences of 512 positions (the B = 64
# line needs --kv-tokens above 40,000).
set -uo pipefail
source bench/device_env.sh
for r in 1 2; do
  for v in "compiled:" "compiled:LG_COMPILED_ATTN_ONE_ROW=0" "handwritten:"; do
    IFS=: read -r lane envs <<< "$v"
    echo "0.6b $lane [$envs]: $(env $envs timeout 60 $lg bench --shape qwen3-0.6b --lane $lane --prompt-len 512 \
      --decode-tokens 32 --context 32768 2>&1 | grep -E '^ +1 +32768')" | tee -a "$out/b1_32k_06b.txt"
  done
done
for lane in handwritten compiled; do
  timeout 150 $lg bench --shape qwen3-8b --lane $lane --prompt-len 2 --batch 1,16,64 --context 512 --kv-tokens 80000 \
    > "$out/8b_512_$lane.txt" 2>&1
  echo "$lane"; grep -E "^ +[0-9]+ +512" "$out/8b_512_$lane.txt"
done
exit 0

#!/usr/bin/env bash
# Session 12, call 5: the top-k ranking alone as an out-of-line function (LG_COMPILED_TOPK_CALL=1,
# an experiment; the reductions stay inline), on and off alternated, 30B-A3B B = 1, with the
# launch profile of the first run of each; the MoE lock with it on.
set -uo pipefail
source bench/device_env.sh
for knob in 1 0 1 0; do
  f="$out/bench_topk${knob}.txt"
  prof=""; [ -e "$out/profiled$knob" ] || prof=1; touch "$out/profiled$knob"
  LG_PROFILE_LAUNCHES=$prof LG_COMPILED_TOPK_CALL=$knob timeout 100 $lg bench --shape bench/shapes/qwen3-30b-a3b \
    --lane compiled --prompt-len 2 --batch 1 --context 512 >> "$f" 2>&1
  echo "topk_call=$knob: $(grep -E '^ +1 +512' "$f" | tail -1 | awk '{print $3" ms ("$NF"x)"}') $(grep -m1 'k15_topk (grid 1 ' "$f")"
done
rm -f "$out"/profiled*
mkdir -p /tmp/lkm/locks && cp locks/tiny-qwen3-moe.lock.json /tmp/lkm/locks/ && ln -sfn "$PWD/models" /tmp/lkm/models
LG_COMPILED_TOPK_CALL=1 timeout 100 $lg lock check --lane compiled --locks /tmp/lkm/locks --shared /tmp/lgshared \
  > "$out/lock_topk_call.txt" 2>&1; grep -E "^(ok|FAIL|ERROR)" "$out/lock_topk_call.txt"
exit 0

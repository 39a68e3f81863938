#!/usr/bin/env bash
# Session 19, call 1: the compiled lane's decode GEMVs prefetch their first weight rows into L2
# before the wait on the previous launch (LG_COMPILED_GEMV_PREFETCH=bytes a row, 0 off; default
# 8192). Correctness at the default: compiled_lane_tests, the MoE and Qwen locks on the compiled
# lane (logits; in a batch of 16); qwen_lane_tests (last session's plan-scratch test had not run on
# a GPU). Then the prefetch size A/B, alternated (compiled lane, B = 1 and 16 at 512 positions),
# and one 8B sequence at 32,768 positions with and without it.
set -uo pipefail
source bench/device_env.sh
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/lgb/bin/compiled_lane_tests > "$out/compiled_lane_tests.txt" 2>&1
echo "compiled_lane_tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/compiled_lane_tests.txt" | head -12
{ timeout 60 $lg lock check --lane compiled --locks "$(moe_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --compare-logits
  timeout 150 $lg lock check --lane compiled --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_compiled.txt" 2>&1
grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_compiled.txt"
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /tmp/lgb/bin/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen_lane_tests rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_lane_tests.txt" | head
echo "checks done at ${SECONDS}s"
b1() {  # LABEL [ENV=VALUE...]: the 32,768-position line of an 8B batch-1 bench, compiled lane
  local label=$1
  shift
  local r
  r=$(env "$@" timeout 60 $lg bench --shape qwen3-8b --lane compiled --prompt-len 512 --decode-tokens 32 \
    --context 32768 2>&1 | grep -E '^ +1 +32768')
  echo "$label [$*]: $r" | tee -a "$out/b1_32k.txt"
}
for pf in 0 8192 2048 32768; do
  for shape in qwen3-8b qwen3-0.6b; do step_ms "r1 pf=$pf" $shape LG_COMPILED_GEMV_PREFETCH=$pf; done
done
b1 "pf=0" LG_COMPILED_GEMV_PREFETCH=0
b1 "pf=8192" LG_COMPILED_GEMV_PREFETCH=8192
echo "round 1 done at ${SECONDS}s"
for pf in 8192 0; do
  for shape in qwen3-8b qwen3-0.6b bench/shapes/qwen3-30b-a3b; do
    [ $SECONDS -lt 520 ] && step_ms "r2 pf=$pf" $shape LG_COMPILED_GEMV_PREFETCH=$pf
  done
done
[ $SECONDS -lt 540 ] && b1 "pf=0" LG_COMPILED_GEMV_PREFETCH=0
[ $SECONDS -lt 560 ] && b1 "pf=8192" LG_COMPILED_GEMV_PREFETCH=8192
echo "done at ${SECONDS}s"
exit 0

#!/usr/bin/env bash
# Session 33, call 1: what session 32's two calls held, in one call (device starts were scarce:
# five tries found no machine before this one). First the checks of the draw code never run on a
# GPU (session 31's kernel parameters read once into shared memory, session 32's penalties on
# the device: RowDraws.*, under memcheck too), every hand-written test and Qwen lock, the compiled
# lane's tests and locks; then the 8B step at 160 and 512 positions greedy, sampled and penalised
# on the lane (hand-written), greedy on the compiled lane, and transformers' batched peer last,
# with what is left of the call's 600 s.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/lgb/bin/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen_lane_tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran" "$out/qwen_lane_tests.txt" | head -20
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
  /tmp/lgb/bin/qwen_lane_tests --gtest_filter='RowDraws.*' > "$out/memcheck_row_draws.txt" 2>&1
echo "memcheck rc $?"
grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_row_draws.txt" | head -5
timeout 60 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared > "$out/locks_handwritten.txt" 2>&1
echo "handwritten locks rc $?"; grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_handwritten.txt"
compiled_checks '-CompiledLane.LongContext*'
echo "checks done at ${SECONDS} s"
bench="--shape qwen3-8b --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 160,512 --kv-tokens 80000"
for v in "none" "lane" "lane --sample-penalties 1.05,0.5,0.3"; do
  echo "== handwritten --sample $v"
  # shellcheck disable=SC2086  # the bench arguments split at spaces
  timeout 90 $lg bench $bench --lane handwritten --sample $v 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |sample|bandwidth"
done | tee "$out/bench_handwritten.txt"
echo "== compiled --sample none" | tee "$out/bench_compiled.txt"
# shellcheck disable=SC2086
timeout 100 $lg bench $bench --lane compiled --sample none 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ " | tee -a "$out/bench_compiled.txt"
left=$((585 - SECONDS))
echo "benches done at ${SECONDS} s; the peer gets ${left} s"
[ "$left" -gt 60 ] && timeout "$left" python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 2>&1 | grep -v Warning \
  | tee "$out/hf_batch_peer.txt"
exit 0

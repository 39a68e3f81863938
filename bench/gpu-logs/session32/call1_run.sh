#!/usr/bin/env bash
# Session 32, call 1 (not run: no device was lent in session 32; the next GPU session runs it on
# binaries built from main): the draw code on a GPU (session 31's review changes, never run there:
# the row-draw kernel reads its parameters once into shared memory, and
# RowDraws.BatchedSampledRequestsDrawOnTheDeviceAsOnTheHost; session 32's penalties applied on the
# device: RowDraws.Penalised*), memcheck of the draw tests, every hand-written lane test, the
# compiled lane's tests and locks; then the 8B step sampling with and without penalties, drawn on
# the lane and on the host.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /tmp/lgb/bin/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
echo "qwen_lane_tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran|row draws" "$out/qwen_lane_tests.txt" | head -20
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
  /tmp/lgb/bin/qwen_lane_tests --gtest_filter='RowDraws.*' > "$out/memcheck_row_draws.txt" 2>&1
echo "memcheck rc $?"
grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_row_draws.txt" | head -5
compiled_checks '-CompiledLane.LongContext*'
bench="--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 512 --kv-tokens 80000"
for v in "none" "lane" "lane --sample-penalties 1.05,0.5,0.3" "lane --sample-params 0,0,1 --sample-penalties 1.05,0,0"; do
  echo "== --sample $v"
  # shellcheck disable=SC2086  # the bench arguments split at spaces
  timeout 120 $lg bench $bench --sample $v 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |sample"
done | tee "$out/bench_sampling.txt"
echo "== host, penalised (8 steps)" | tee -a "$out/bench_sampling.txt"
# shellcheck disable=SC2086
timeout 200 $lg bench ${bench/--decode-tokens 32/--decode-tokens 8} --sample host --sample-penalties 1.05,0.5,0.3 2>&1 \
  | grep -E "^ +[0-9]+ +[0-9]+ " | tee -a "$out/bench_sampling.txt"
exit 0

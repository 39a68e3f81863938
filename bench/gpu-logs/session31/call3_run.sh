#!/usr/bin/env bash
# Session 31, call 3 (branch s31): sampled draws on the device (runtime/cuda/row_draws.h) and the
# batched decode back on cuBLASLt by default. The draw kernel against the host's draw_token and
# sampled generation on the device against the host's draws; every hand-written test, the
# batched ones on the TMA row GEMV too (LG_QWEN_GEMV_ROWS=2); the compiled lane's tests and
# locks; memcheck of the draw tests; lg run sampling on both GPU lanes.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
qwen_tests 'RowDraws.*'
grep -E "row draws" "$out"/qwen_tests*.txt 2>/dev/null | head; 
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 300 $t > "$out/qwen_tests_all.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|row draws" "$out/qwen_tests_all.txt" | head
qwen_tests 'HandwrittenBatch.*' LG_QWEN_GEMV_ROWS=2
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
  $t --gtest_filter='RowDraws.*' > "$out/memcheck_draws.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_draws.txt" | head -5
compiled_checks '-CompiledLane.LongContext*'
for lane in handwritten compiled; do
  for i in 1 2; do
    timeout 60 $lg run --lane $lane --model models/qwen3-pycode-22m --prompt "def fibonacci(n):" -n 40 \
      --temperature 0.8 --top-p 0.9 --seed 11 > "$out/run_${lane}_$i.txt" 2>&1
    echo "lg run $lane sampled ($i): rc $?"; tail -c 300 "$out/run_${lane}_$i.txt"; echo
  done
done
timeout 60 $lg run --lane cpu --model models/qwen3-pycode-22m --prompt "def fibonacci(n):" -n 40 \
  --temperature 0.8 --top-p 0.9 --seed 11 > "$out/run_cpu.txt" 2>&1; echo "cpu rc $?"; tail -c 300 "$out/run_cpu.txt"
exit 0

#!/usr/bin/env bash
# Session 36, call 6: the session's branch as it lands (s36: run_decode_batch split, v8's epilogue
# helpers, the emitter splits, byte-identical emission checked on the CPU): every hand-written
# test, cuda_runtime_tests, the Qwen locks on the hand-written lane (one sequence and with
# --batch-with 16), the compiled lane's tests (less the 85 s long-context one) and locks; then, on
# an H200 only, issue 13's waiting question (device_env.sh).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
/tmp/lgb/bin/cuda_runtime_tests > "$out/cuda_runtime_tests.txt" 2>&1; echo "cuda_runtime_tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/cuda_runtime_tests.txt"
qwen_tests '*' | tail -3
{ timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared
  timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16
} > "$out/locks_handwritten.txt" 2>&1
echo "locks rc $?"; grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_handwritten.txt"
compiled_checks '-CompiledLane.LongContext*'
echo "checks done at ${SECONDS} s"
h200_rows_and_bars
exit 0

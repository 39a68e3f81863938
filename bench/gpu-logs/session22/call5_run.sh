#!/usr/bin/env bash
# Session 22, call 5: Qwen3-MoE's post-attention RMSNorm as the router GEMM's prologue, the router
# stage storing the normed rows the experts read (pass_gemm_reduce_prologue_shared; 8 -> 7
# launches a decode layer). Checks: compiled_lane_tests (the 32k test left out), the compiled
# lane's locks, the MoE tests under compute-sanitizer memcheck; then the 30B-A3B step with the
# merge on and off (LG_COMPILED_SHARED_PROLOGUE=0), alternated three times.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
LG_SHARED_DIR=/tmp/lgshared timeout 300 compute-sanitizer --tool memcheck /tmp/lgb/bin/compiled_lane_tests \
  --gtest_filter='*Moe*' > "$out/memcheck_moe.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_moe.txt" | head -5
shape=bench/shapes/qwen3-30b-a3b
for r in 1 2 3; do
  step_ms shared $shape
  step_ms apart $shape LG_COMPILED_SHARED_PROLOGUE=0
done
exit 0

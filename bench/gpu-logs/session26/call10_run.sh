#!/usr/bin/env bash
# Session 26, call 10: the new graph test (a dependent noted with
# cuda::note_dependent_waits_for_completion keeps its programmatic edge) and its neighbour, with
# the defaults and with LG_EARLY_AFTER_GEMM=0.
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
for k in "" 0; do
  LG_EARLY_AFTER_GEMM=$k LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 $t \
    --gtest_filter='QwenKernels.*CublasLtGemm*' 2>&1 | grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) |Failure|Expected|Which is" | head -20
done
exit 0

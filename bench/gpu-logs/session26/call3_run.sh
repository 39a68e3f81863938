#!/usr/bin/env bash
# Session 26, call 3: LG_EARLY_AFTER_GEMM now defaults to 1 (call 2). The checks with the
# defaults (kernel tests, hand-written batch tests and locks with --batch-with 16, the compiled
# lane's tests and locks); then, with the attention's blocks resident during the QKV GEMM, how much
# of their split prefetch_split sends to L2 before the PDL wait: LG_QWEN_PREFETCH_ITERS 2 (the
# default: 128 keys at 8 warps), 8 (512), 1000 (the whole split), and k0 (early off) for the record;
# o50 / o100: a side branch of the graph sends half / all of o_proj's weights to L2 while the
# attention runs (LG_QWEN_L2_PREFETCH_O).
set -uo pipefail
source bench/device_env.sh
t=/tmp/lgb/bin/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t --gtest_filter='QwenKernels.*:HandwrittenBatch.*:QwenMixedAttention.*:*TinyBatch*' > "$out/qwen_tests.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/qwen_tests.txt" | head
timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16 > "$out/locks_hw.txt" 2>&1
echo "hw locks rc $?"; grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw.txt"
compiled_checks '-CompiledLane.LongContext*'
for round in 1 2; do
  for v in p2 p8 pall k0 o50 o100; do
    case $v in p2) e=(LG_QWEN_PREFETCH_ITERS=2) ;; p8) e=(LG_QWEN_PREFETCH_ITERS=8) ;;
      pall) e=(LG_QWEN_PREFETCH_ITERS=1000) ;; k0) e=(LG_EARLY_AFTER_GEMM=0) ;;
      o50) e=(LG_QWEN_L2_PREFETCH_O=50) ;; o100) e=(LG_QWEN_L2_PREFETCH_O=100) ;; esac
    { echo "== round $round hw8b $v"
      env "${e[@]}" timeout 120 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
        --decode-tokens 32 --batch 16,32,64,128 --context 512,1024 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
ab_table bench.txt
exit 0

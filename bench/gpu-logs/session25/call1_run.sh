#!/usr/bin/env bash
# Session 25, call 1: a PDL kernel behind a cuBLASLt GEMM starts at the GEMM's launch completion
# (cuda::note_untriggered_launch under LG_EARLY_AFTER_GEMM=1; 0, the default, keeps the
# programmatic port, which such a GEMM fires at its end). Checks with the knob on: the kernel tests
# (the new graph test among them), the hand-written batch tests and locks with --batch-with 16, the
# compiled lane's tests and locks. Then the 8B steps of 16-128 sequences on both lanes, knob on and
# off, alternated; v10 in place of the rows form with the knob on. (Written in session 25, which
# was lent no device: not yet run.)
set -uo pipefail
source bench/device_env.sh
export LG_EARLY_AFTER_GEMM=1  # the checks; the bench loops set it each run
t=/tmp/lgb/bin/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 $t --gtest_filter='QwenKernels.*:HandwrittenBatch.*:QwenMixedAttention.*:*TinyBatch*' > "$out/qwen_tests.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|PdlKernelBehind" "$out/qwen_tests.txt" | head
timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16 > "$out/locks_hw.txt" 2>&1
echo "hw locks rc $?"; grep -E "^(ok|FAIL|ERROR)" "$out/locks_hw.txt"
compiled_checks '-CompiledLane.LongContext*'
for round in 1 2; do
  for v in early late; do
    case $v in early) e=(LG_EARLY_AFTER_GEMM=1) ;; late) e=(LG_EARLY_AFTER_GEMM=0) ;; esac
    { echo "== round $round hw8b $v"
      env "${e[@]}" timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
        --decode-tokens 32 --batch 16,64,128 --context 512,2048 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
      echo "== round $round c8b $v"
      env "${e[@]}" timeout 100 $lg bench --shape qwen3-8b --lane compiled --prompt-len 8 \
        --decode-tokens 32 --batch 16,64 --context 512 --kv-tokens 100000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
    } >> "$out/bench.txt"
  done
done
# With the attention's blocks resident while the QKV GEMM runs, what v10 issues before its wait
# (its first two tiles) can overlap the GEMM: v10 wherever the rows form runs, knob on.
for round in 1 2; do
  { echo "== round $round hw8b v10-early"
    LG_EARLY_AFTER_GEMM=1 LG_QWEN_ATTN_V10=2 timeout 100 $lg bench --shape qwen3-8b --lane handwritten \
      --prompt-len 8 --decode-tokens 32 --batch 16,64 --context 512 --kv-tokens 300000 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ |skipped"
  } >> "$out/bench.txt"
done
ab_table bench.txt
exit 0

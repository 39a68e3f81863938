#!/usr/bin/env bash
# Session 35, call 3: cuda_runtime_tests with the tensor-map test's fix (call 2: CUresult 201, no
# context); on an H200 only (issue 13's card), the row GEMV's current form (slices, 3-4 stages)
# against cuBLASLt there and issue 13's 8B bars at the default (the session's device time left:
# no Nsight Compute, no peer).
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
/tmp/lgb/bin/cuda_runtime_tests > "$out/cuda_runtime_tests.txt" 2>&1; echo "cuda_runtime_tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$out/cuda_runtime_tests.txt"
case "$gpu" in *H200*) ;; *) exit 0 ;; esac
qwen_tests 'RowDraws.*:HandwrittenBatch*:*TinyBatch*' LG_QWEN_GEMV_ROWS=2 | tail -3
r=LG_QWEN_GEMV_ROWS=2
ab_rounds h200_rows.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  cublaslt: s3:$r,LG_QWEN_TMA_STAGES=3 s4:$r,LG_QWEN_TMA_STAGES=4 s3kh:$r,LG_QWEN_TMA_KHALVES=1,LG_QWEN_TMA_STAGES=3
ab_rounds h200_rows_06b.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  cublaslt: tma:$r tmakh:$r,LG_QWEN_TMA_KHALVES=1
echo "A/B done at ${SECONDS} s"
bench="--shape qwen3-8b --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 160,512 --kv-tokens 80000"
{ echo "== handwritten default"
  # shellcheck disable=SC2086  # the bench arguments split at spaces
  timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |bandwidth"
  echo "== handwritten $r"
  # shellcheck disable=SC2086
  env $r timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ "
} | tee "$out/bench_8b.txt"
exit 0

#!/usr/bin/env bash
# Session 35, call 3: cuda_runtime_tests with the tensor-map test's fix (call 2: CUresult 201, no
# context); on an H200 only (issue 13's card), the row GEMV's current form (slices, 3-4 stages)
# against cuBLASLt there, issue 13's 8B bars at the default, Nsight Compute of the TMA launches
# at 2 sequences, and transformers with what is left.
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
  echo "== compiled"
  # shellcheck disable=SC2086
  timeout 100 $lg bench $bench --lane compiled 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ "
} | tee "$out/bench_8b.txt"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
LG_QWEN_GEMV_ROWS=2 timeout 60 $ncu --clock-control none --section SpeedOfLight \
  --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy -k regex:gemv_rows_tma \
  --launch-skip 290 --launch-count 4 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
  --decode-tokens 8 --batch 2 --context 512 --kv-tokens 40000 > "$out/ncu_tma_b2.txt" 2>&1
echo "ncu rc $?"; grep -E "gemv_rows_tma_kernel|Duration|DRAM Throughput" "$out/ncu_tma_b2.txt" | head -12
left=$((420 - SECONDS))  # the session has about 700 s of device time left
echo "benches done at ${SECONDS} s; the peer gets ${left} s"
[ "$left" -gt 60 ] && timeout "$left" python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 2>&1 | grep -v Warning \
  | tee "$out/hf_batch_peer.txt"
exit 0

#!/usr/bin/env bash
# Session 34, call 3. Call 2 (H100) found the ordered split sum correct (RowDraws.* pass under the
# TMA row GEMV) but 3-11% slower than the atomic adds: the last split's round trips sit at each
# launch's tail. Now o_proj and down leave their K-split slices to the RMSNorm after them
# (GemvRowsOutput::kSlices; LG_QWEN_ROWS_SLICES=0 brings back the in-launch sum); only QKV sums its
# own. The checks, then the A/B at 8B and 0.6B, two rounds alternated. On an H200 only (the bars'
# card), issue 13's 8B bars at 160 and 512 positions, default and on the TMA row GEMV, the
# compiled lane, Nsight Compute on the TMA form's launches, and transformers with what is left of
# the 600 s.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
verdicts() { grep -E " rc |PASSED|FAILED  \]"; }
qwen_tests '*' | verdicts
# The determinism test must fail under the atomic adds it replaced (expected: FAILED).
qwen_tests 'QwenGemvRows.SplitSumsAreTheSameBitsOnAnyGrid' LG_QWEN_ROWS_ATOMIC_SPLITS=1 | verdicts
qwen_tests 'RowDraws.*:HandwrittenBatch*:*TinyBatch*:*TinyFixture*' LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_STAGES=3 | verdicts
LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_STAGES=3 timeout 90 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" \
  --shared /tmp/lgshared --batch-with 16 > "$out/locks_handwritten_tma.txt" 2>&1
echo "handwritten locks (tma, --batch-with 16) rc $?"; grep -E "^(ok|FAIL|ERROR)|locks" "$out/locks_handwritten_tma.txt"
echo "checks done at ${SECONDS} s"
r=LG_QWEN_GEMV_ROWS=2
k=LG_QWEN_TMA_KHALVES=1
ab_rounds tma_8b.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  cublaslt: s3:$r,LG_QWEN_TMA_STAGES=3 s4:$r,LG_QWEN_TMA_STAGES=4 s3kh:$r,$k,LG_QWEN_TMA_STAGES=3 \
  s3insum:$r,LG_QWEN_TMA_STAGES=3,LG_QWEN_ROWS_SLICES=0 s3atomic:$r,LG_QWEN_TMA_STAGES=3,LG_QWEN_ROWS_SLICES=0,LG_QWEN_ROWS_ATOMIC_SPLITS=1
ab_rounds tma_06b.txt 2 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  cublaslt: s3:$r,LG_QWEN_TMA_STAGES=3 s4:$r,LG_QWEN_TMA_STAGES=4 s4kh:$r,$k,LG_QWEN_TMA_STAGES=4 \
  s3atomic:$r,LG_QWEN_TMA_STAGES=3,LG_QWEN_ROWS_SLICES=0,LG_QWEN_ROWS_ATOMIC_SPLITS=1
echo "A/B done at ${SECONDS} s"
case "$gpu" in *H200*) ;; *) echo "not an H200: no bars"; exit 0 ;; esac
bench="--shape qwen3-8b --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 160,512 --kv-tokens 80000"
{ echo "== handwritten default"
  # shellcheck disable=SC2086  # the bench arguments split at spaces
  timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |bandwidth"
  echo "== handwritten $r LG_QWEN_TMA_STAGES=3"
  # shellcheck disable=SC2086
  env $r LG_QWEN_TMA_STAGES=3 timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ "
  echo "== compiled"
  # shellcheck disable=SC2086
  timeout 100 $lg bench $bench --lane compiled 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ "
} | tee "$out/bench_8b.txt"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in 2 16; do  # the H200's side of call 2's H100 profile (gate/up there: 2.82 TB/s, 84% of DRAM)
  LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_STAGES=3 timeout 60 $ncu --clock-control none --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy -k regex:gemv_rows_tma \
    --launch-skip 290 --launch-count 4 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 \
    --decode-tokens 8 --batch $b --context 512 --kv-tokens 40000 > "$out/ncu_tma_b$b.txt" 2>&1
  echo "ncu b$b rc $?"
  grep -E "gemv_rows_tma_kernel|Duration|DRAM Throughput" "$out/ncu_tma_b$b.txt" | head -12
done
left=$((585 - SECONDS))
echo "benches done at ${SECONDS} s; the peer gets ${left} s"
[ "$left" -gt 60 ] && timeout "$left" python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 2>&1 | grep -v Warning \
  | tee "$out/hf_batch_peer.txt"
exit 0

#!/usr/bin/env bash
# Session 36, call 2: v11, the batched decode attention's rows form fed by bulk copies
# (LG_QWEN_ATTN_BULK=1): the attention kernel tests (every form, v11 among them, against the
# reference; the mixed steps' row map), the batch tests under the knob, memcheck of the kernel
# test, then v8 against v11 at the sizes the plan gives the rows form (8B, 0.6B).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
qwen_tests 'QwenKernels.DecodeAttention*:QwenMixedAttention.*' | tail -3
qwen_tests 'HandwrittenBatch*:*TinyBatch*' LG_QWEN_ATTN_BULK=1 | tail -3
LG_SHARED_DIR=/tmp/lgshared timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool memcheck /tmp/lgb/bin/qwen_lane_tests \
  --gtest_filter='QwenKernels.DecodeAttentionRopeBatchAgainstReference:QwenMixedAttention.*' > "$out/memcheck_attn.txt" 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/memcheck_attn.txt" | head -4
echo "checks done at ${SECONDS} s"
b=LG_QWEN_ATTN_BULK=1
ab_rounds ab_8b.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32,64 --context 512,1024 --kv-tokens 80000" \
  v8: v11:$b
ab_rounds ab_06b.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 16,32,64 --context 512,1024 --kv-tokens 80000" \
  v8: v11:$b
echo "A/B done at ${SECONDS} s"

# On an H200 only (issue 13's card): session 35's waiting call 3, the TMA row GEMV against
# cuBLASLt at 2-32 sequences, and issue 13's 8B bars at the default, on the TMA form and with v11.
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) ;; *) exit 0 ;; esac
r=LG_QWEN_GEMV_ROWS=2
ab_rounds h200_rows.txt 2 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  cublaslt: s3:$r,LG_QWEN_TMA_STAGES=3 s4:$r,LG_QWEN_TMA_STAGES=4
ab_rounds h200_rows_06b.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
  cublaslt: tma:$r tmakh:$r,LG_QWEN_TMA_KHALVES=1
echo "H200 A/B done at ${SECONDS} s"
bench="--shape qwen3-8b --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 160,512 --kv-tokens 80000"
{ for v in "default:" "tma:$r" "tma+v11:$r,$b"; do
    echo "== handwritten ${v%%:*}"
    envs=${v#*:}
    # shellcheck disable=SC2086  # the bench arguments and settings split at spaces
    env ${envs//,/ } timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |bandwidth"
  done
} | tee "$out/bench_8b.txt"

exit 0

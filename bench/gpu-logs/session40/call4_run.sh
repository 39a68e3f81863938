#!/usr/bin/env bash
# Session 40, call 4: the TMA row GEMV up to 16 sequences made the H200's default too (call 2: it
# now beats cuBLASLt there at 2-16 sequences, 8B and 0.6B). The lane's row-GEMV, batch and mixed
# tests and the Qwen locks with --batch-with 16 under the new default; then issue 13's 8B bars at
# the new default against cuBLASLt (LG_QWEN_GEMV_ROWS=0, the old H200 default), two rounds.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$gpu"
qwen_tests '*GemvRows*:HandwrittenBatch.*:QwenMixed*:*DecodeAttention*' | tail -4
timeout 150 $lg lock check --lane handwritten --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16 \
  > "$out/locks_batch16.txt" 2>&1
echo "locks rc $?"; grep -E "^(ok|FAIL|ERROR)" "$out/locks_batch16.txt"
bench="--shape qwen3-8b --prompt-len 8 --decode-tokens 32 --batch 1,2,8,16,32,64,128 --context 160,512 --kv-tokens 80000"
{ for round in 1 2; do for v in "default:" "cublaslt:LG_QWEN_GEMV_ROWS=0"; do
    echo "== round $round ${v%%:*}"
    envs=${v#*:}
    # shellcheck disable=SC2086
    env ${envs} timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ "
  done; done
} | tee "$out/bench_8b_default.txt"
exit 0

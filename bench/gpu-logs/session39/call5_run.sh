#!/usr/bin/env bash
# Session 39, call 5 (the last device minutes, so one round each): the binaries of call 4. On an
# H200: the TMA row GEMV against cuBLASLt at 2-32 sequences of 8B, then issue 13's 8B bars at the
# default and on the TMA form (h200_rows_and_bars less its second round and its 0.6B part). On
# any other card: v8's rows form with its first keys' loads early against the default, 8B and
# 0.6B, 16-64 sequences of 256-512 positions (session 38's call 7, one round).
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$gpu"
case "$gpu" in
  *H200*)
    r=LG_QWEN_GEMV_ROWS=2
    ab_rounds h200_rows.txt 1 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 2,8,16,32 --context 512 --kv-tokens 40000" \
      cublaslt: s3:$r,LG_QWEN_TMA_STAGES=3
    bench="--shape qwen3-8b --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 160,512 --kv-tokens 80000"
    for v in "default:" "tma:$r"; do
      echo "== handwritten ${v%%:*}"
      envs=${v#*:}
      # shellcheck disable=SC2086
      env ${envs//,/ } timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |bandwidth"
    done | tee "$out/bench_8b.txt"
    ;;
  *)
    qwen_tests '*DecodeAttention*' LG_QWEN_ROWS_EARLY=1 | tail -3
    ab_rounds ab_early_8b.txt 1 "--shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16,32,64 --context 256,512 --kv-tokens 60000" \
      old: early:LG_QWEN_ROWS_EARLY=1 old2:
    ab_rounds ab_early_06b.txt 1 "--shape qwen3-0.6b --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 16,32,64 --context 256,512 --kv-tokens 60000" \
      old: early:LG_QWEN_ROWS_EARLY=1 old2:
    ;;
esac
exit 0

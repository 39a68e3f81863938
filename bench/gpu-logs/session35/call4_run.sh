#!/usr/bin/env bash
# Session 35, call 4, on what the last ~500 s of device time find. On an H200: call 3's part (the
# row GEMV against cuBLASLt there, issue 13's bars). On an H100: issue 13's table on this card with
# the row GEMV as its default at <= 16 sequences, both lanes, and transformers in the same call
# (its decode runs at 128-176 positions: the 160-position rows compare with it).
set -uo pipefail
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$gpu" in *H200*) exec bash bench/gpu-logs/session35/call3_run.sh ;; esac
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
bench="--shape qwen3-8b --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 160,512 --kv-tokens 80000"
{ echo "== handwritten default"
  # shellcheck disable=SC2086  # the bench arguments split at spaces
  timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |bandwidth"
  echo "== handwritten cuBLASLt (LG_QWEN_GEMV_ROWS=0)"
  # shellcheck disable=SC2086
  LG_QWEN_GEMV_ROWS=0 timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ "
  echo "== compiled"
  # shellcheck disable=SC2086
  timeout 100 $lg bench $bench --lane compiled 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ "
} | tee "$out/bench_8b.txt"
left=$((400 - SECONDS))
echo "benches done at ${SECONDS} s; the peer gets ${left} s"
[ "$left" -gt 60 ] && timeout "$left" python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 2>&1 | grep -v Warning \
  | tee "$out/hf_batch_peer.txt"
exit 0

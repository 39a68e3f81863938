#!/usr/bin/env bash
# Session 34, call 3: issue 13's 8B bars at 160 and 512 positions, hand-written (default and with
# the settings given as arguments, e.g. LG_QWEN_GEMV_ROWS=2 LG_QWEN_TMA_STAGES=3) and compiled,
# then transformers' batched peer with what is left of the call's 600 s.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
bench="--shape qwen3-8b --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 160,512 --kv-tokens 80000"
{ echo "== handwritten default"
  # shellcheck disable=SC2086  # the bench arguments split at spaces
  timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |bandwidth"
  if [ $# -gt 0 ]; then
    echo "== handwritten $*"
    # shellcheck disable=SC2086
    env "$@" timeout 90 $lg bench $bench --lane handwritten 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ "
  fi
  echo "== compiled"
  # shellcheck disable=SC2086
  timeout 100 $lg bench $bench --lane compiled 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ "
} | tee "$out/bench_8b.txt"
left=$((585 - SECONDS))
echo "benches done at ${SECONDS} s; the peer gets ${left} s"
[ "$left" -gt 60 ] && timeout "$left" python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 2>&1 | grep -v Warning \
  | tee "$out/hf_batch_peer.txt"
exit 0

#!/usr/bin/env bash
# Session 23, call 10: what each launch of the hand-written lane's 8B decode step of 16 sequences
# at 512 positions costs inside its graph (issue 13's B = 16 <= 5.0 ms): LG_QWEN_SKIP=REGEX leaves
# the layers' launches with a matching label out of the batched decode graphs (results wrong,
# timing only). Baseline first and last.
set -uo pipefail
source bench/device_env.sh
hw() {
  local label=$1
  shift
  bench_ms "$label" skip_hw.txt '16 +512' \
    "--shape qwen3-8b --lane handwritten --prompt-len 16 --decode-tokens 32 --batch 16 --context 512 --kv-tokens 20000" "$@"
}
hw base
hw "no rmsnorm" LG_QWEN_SKIP='^rmsnorm$'
hw "no qkv gemm" LG_QWEN_SKIP='^gemm qkv$'
hw "no attention" LG_QWEN_SKIP='^attention$'
hw "no o gemm" LG_QWEN_SKIP='^gemm o$'
hw "no gate/up gemm" LG_QWEN_SKIP='^gemm gate/up$'
hw "no swiglu" LG_QWEN_SKIP='^swiglu$'
hw "no down gemm" LG_QWEN_SKIP='^gemm down$'
hw "only the GEMMs" LG_QWEN_SKIP='^(rmsnorm|attention|swiglu)$'
hw base
exit 0

#!/usr/bin/env bash
# Session 9, call 3: long-context batch-1 decode (issues 12, 13): the per-head decode attention
# (v7, early + 80 registers) against the per-KV-head GQA kernel (v6, LG_QWEN_ATTN_SOLO_GQA=1) by
# context; the compiled lane at the same contexts.
# (Calls 1-3 ran a binary with the lab knob LG_QWEN_ATTN_BOUND3=1 for what is now the default,
# LG_QWEN_ATTN_BOUND=3; without it they ran the 64-register bound, now LG_QWEN_ATTN_BOUND=4.)
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb /tmp/lgshared
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
export LG_MODELS_DIR=$PWD/models
lg=/tmp/lgb/bin/lg
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
new() {  # $1: shape, $2: lane, $3: contexts; then env settings
  local shape=$1 lane=$2 ctx=$3; shift 3
  env "$@" timeout 250 $lg bench --shape "$shape" --lane "$lane" --prompt-len 512 --decode-tokens 64 --context "$ctx" 2>&1 |
    grep -E '^ +1 +[0-9]' | awk '{printf "%s %s (%s); ", $2, $3, $8}'
}
for round in 1 2; do
  for shape in qwen3-8b qwen3-0.6b; do
    ctx=32,512,1024,2048,4096,8192,32768
    echo "$round $shape v7 b3:   $(new $shape handwritten $ctx LG_QWEN_ATTN_BOUND3=1)"
    echo "$round $shape v7 b4:   $(new $shape handwritten $ctx)"
    echo "$round $shape v6 gqa:  $(new $shape handwritten $ctx LG_QWEN_ATTN_SOLO_GQA=1)"
    [ "$round" = 1 ] && echo "$round $shape compiled: $(new $shape compiled $ctx)"
  done
done 2>&1 | tee "$out/ab.txt"
exit 0

#!/usr/bin/env bash
# Session 9, call 2: batch-1 decode at exactly matched positions (issue 12). The new bench's
# `--context C --decode-tokens 64` decodes positions C+2 .. C+65 after 2 untimed steps; the
# pre-batching binary's `--prompt-len C+2 --decode-tokens 64` was meant to decode the same positions (it does not: that
# bench always decodes after a 32-token prompt, see bench/RESULTS.md, ninth session).
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
xz -dc .carry/lg_old.xz > /tmp/lg_old && chmod +x /tmp/lg_old
new() {  # $1: shape, $2: contexts; then env settings
  local shape=$1 ctx=$2; shift 2
  env "$@" timeout 200 $lg bench --shape "$shape" --lane handwritten --prompt-len 512 --decode-tokens 64 --context "$ctx" 2>&1 |
    grep -E '^ +1 +[0-9]' | awk '{printf "%s %s; ", $2, $3}'
}
old() {  # $1: shape, then contexts
  local shape=$1; shift
  for c in "$@"; do
    printf "%s %s; " "$c" "$(timeout 200 /tmp/lg_old bench --shape "$shape" --lane handwritten --prompt-len $((c + 2)) \
      --decode-tokens 64 2>&1 | grep "decode (batch 1" | sed -E 's/.*median ([0-9.]+) ms.*/\1/')"
  done
}
for round in 1 2; do
  for shape in qwen3-8b qwen3-0.6b; do
    ctx=32,96,640,8192; [ "$shape" = qwen3-8b ] && ctx=32,96,640,8192,32768
    echo "$round $shape early b4:  $(new $shape $ctx)"
    echo "$round $shape early b3:  $(new $shape $ctx LG_QWEN_ATTN_BOUND3=1)"
    echo "$round $shape v5 b4:     $(new $shape $ctx LG_QWEN_ATTN_EARLY=0)"
    echo "$round $shape early w16: $(new $shape $ctx LG_QWEN_ATTN_WARPS=16)"
    echo "$round $shape old:       $(old $shape 32 96 640 8192)"
  done
done 2>&1 | tee "$out/ab.txt"
exit 0

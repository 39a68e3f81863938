#!/usr/bin/env bash
# Session 9, call 1: the single-sequence decode attention (issue 12): v7 EARLY (locate + prefetch
# before the PDL wait) against v5's order, each at the 64- and 80-register bounds, and the
# pre-batching binary (5fc6195), at matched contexts; qwen_lane_tests; SASS of the kernels.
# (Calls 1-3 ran a binary with the lab knob LG_QWEN_ATTN_BOUND3=1 for what is now the default,
# LG_QWEN_ATTN_BOUND=3; without it they ran the 64-register bound, now LG_QWEN_ATTN_BOUND=4.)
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb /tmp/lgshared
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
export LG_MODELS_DIR=$PWD/models
cp -r /tmp/lgb/fixtures /tmp/lgshared/ && ln -sfn "$PWD/models" /tmp/lgshared/models
lg=/tmp/lgb/bin/lg
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
for f in .carry/*.xz; do case "$f" in *lg.tar.xz) ;; *) b=$(basename "$f" .xz); xz -dc "$f" > "/tmp/$b"; chmod +x "/tmp/$b";; esac; done
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
tar -C /tmp -xJf .carry/sass_in.tar.xz; for o in /tmp/att.cubin /tmp/att_old.cubin; do $cuobjdump -sass "$o" > "$out/sass_$(basename "$o" .cubin).txt" 2>&1; done
new() {  # $1: shape; then env settings
  local shape=$1; shift
  env "$@" timeout 200 $lg bench --shape "$shape" --lane handwritten --decode-tokens 64 --context 32,96,640 2>&1 |
    grep -E '^ +1 +[0-9]' | awk '{printf "ctx %s %s; ", $2, $3}'
}
old() { timeout 200 /tmp/lg_old bench --shape "$1" --lane handwritten --prompt-len "$2" --decode-tokens "$3" 2>&1 | grep "decode (batch 1"; }
for round in 1 2; do
  for shape in qwen3-8b qwen3-0.6b; do
    echo "$round $shape early: $(new $shape LG_QWEN_ATTN_EARLY=1)"
    echo "$round $shape v5:    $(new $shape LG_QWEN_ATTN_EARLY=0)"
    if [ "$round" = 1 ]; then
      echo "$round $shape early bound3: $(new $shape LG_QWEN_ATTN_BOUND3=1)"
      echo "$round $shape v5 bound3:    $(new $shape LG_QWEN_ATTN_BOUND3=1 LG_QWEN_ATTN_EARLY=0)"
    fi
    [ -x /tmp/lg_old ] && echo "$round $shape old p32+128:  $(old $shape 32 128)"
    [ -x /tmp/lg_old ] && echo "$round $shape old p512+256: $(old $shape 512 256)"
  done
done 2>&1 | tee "$out/ab.txt"
LG_PROFILE_LAUNCHES=1 timeout 200 $lg bench --shape qwen3-8b --lane handwritten --decode-tokens 32 --batch 16 --context 128 \
  > "$out/profile_b16.txt" 2>&1
grep -E '^ +16 +[0-9]' "$out/profile_b16.txt"
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 300 /tmp/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
grep -E "PASSED|FAILED" "$out/qwen_lane_tests.txt"
exit 0

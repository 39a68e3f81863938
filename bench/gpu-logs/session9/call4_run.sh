#!/usr/bin/env bash
# Session 9, call 4: batch-1 decode, v7 defaults (early, 80 registers, whole-wave splits) against
# LG_QWEN_ATTN_BOUND=4 and the pre-batching binary (5fc6195) at the same positions: the old bench
# always decodes after a 32-token prompt (positions 32..95 for 64 tokens); the new `--context 30`
# decodes positions 32..95 too (2 untimed steps first). Three alternated rounds, both lanes; then
# long contexts; then qwen_lane_tests and the hand-written locks, plain and in a batch of 16.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb /tmp/lgshared
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
export LG_MODELS_DIR=$PWD/models
cp -r /tmp/lgb/fixtures /tmp/lgshared/ && ln -sfn "$PWD/models" /tmp/lgshared/models
lg=/tmp/lgb/bin/lg
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
for f in lg_old qwen_lane_tests; do xz -dc .carry/$f.xz > /tmp/$f && chmod +x /tmp/$f; done
new() {  # $1: shape, $2: lane, $3: contexts; then env settings
  local shape=$1 lane=$2 ctx=$3; shift 3
  env "$@" timeout 250 $lg bench --shape "$shape" --lane "$lane" --prompt-len 512 --decode-tokens 64 --context "$ctx" 2>&1 |
    grep -E '^ +1 +[0-9]' | awk '{printf "%s %s; ", $2, $3}'
}
old() { timeout 200 /tmp/lg_old bench --shape "$1" --lane "$2" --prompt-len 512 --decode-tokens 64 2>&1 |
  grep "decode (batch 1" | sed -E 's/.*median ([0-9.]+) ms.*/\1/'; }
for round in 1 2 3; do
  for shape in qwen3-8b qwen3-0.6b; do
    echo "$round $shape hw v7:       $(new $shape handwritten 30)"
    echo "$round $shape hw bound 4:  $(new $shape handwritten 30 LG_QWEN_ATTN_BOUND=4)"
    echo "$round $shape hw old:      $(old $shape handwritten)"
    echo "$round $shape compiled:    $(new $shape compiled 30)"
    echo "$round $shape compiled old: $(old $shape compiled)"
  done
done 2>&1 | tee "$out/ab.txt"
for shape in qwen3-8b qwen3-0.6b; do
  echo "$shape hw v7:      $(new $shape handwritten 512,2048,4096,8192,32768)"
  echo "$shape hw bound 4: $(new $shape handwritten 512,2048,4096,8192,32768 LG_QWEN_ATTN_BOUND=4)"
done 2>&1 | tee "$out/long.txt"
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 300 /tmp/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
grep -E "PASSED|FAILED" "$out/qwen_lane_tests.txt"
timeout 200 $lg lock check --lane handwritten --compare-logits --shared /tmp/lgshared > "$out/lock_handwritten.txt" 2>&1
tail -3 "$out/lock_handwritten.txt"
timeout 300 $lg lock check --lane handwritten --batch-with 16 --shared /tmp/lgshared > "$out/lock_handwritten_batch.txt" 2>&1
tail -3 "$out/lock_handwritten_batch.txt"
exit 0

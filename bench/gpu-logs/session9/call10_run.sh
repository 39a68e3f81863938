#!/usr/bin/env bash
# Session 9, call 10: the long-context decode graph (v8, attention by KV head): qwen_lane_tests
# (the kernel test runs both forms), the Qwen locks on the hand-written lane with v8 at every
# position (LG_QWEN_LONG_DECODE_FROM=0), and batch-1 decode by context with v8 from 0 against v7 always.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb /tmp/lgshared
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
export LG_MODELS_DIR=$PWD/models
cp -r /tmp/lgb/fixtures /tmp/lgshared/ && ln -sfn "$PWD/models" /tmp/lgshared/models
lg=/tmp/lgb/bin/lg
xz -dc .carry/qwen_lane_tests.xz > /tmp/qwen_lane_tests && chmod +x /tmp/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 200 /tmp/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
grep -E "PASSED|FAILED" "$out/qwen_lane_tests.txt"
mkdir -p /tmp/lk/locks && cp locks/qwen3-pycode-22m.lock.json locks/tiny-qwen2.lock.json locks/tiny-qwen3.lock.json \
  locks/tiny-qwen3-untied-mqa.lock.json /tmp/lk/locks/ && ln -sfn "$PWD/models" /tmp/lk/models
LG_QWEN_LONG_DECODE_FROM=0 timeout 150 $lg lock check --lane handwritten --compare-logits --locks /tmp/lk/locks \
  --shared /tmp/lgshared > "$out/lock_handwritten_v8.txt" 2>&1
cat "$out/lock_handwritten_v8.txt"
new() {  # $1: shape, $2: contexts; then env settings
  local shape=$1 ctx=$2; shift 2
  env "$@" timeout 150 $lg bench --shape "$shape" --lane handwritten --prompt-len 512 --decode-tokens 64 --context "$ctx" 2>&1 |
    grep -E '^ +1 +[0-9]' | awk '{printf "%s %s (%s); ", $2, $3, $8}'
}
for shape in qwen3-8b qwen3-0.6b; do
  echo "$shape v8 from 0: $(new $shape 512,2048,4096,8192,32768 LG_QWEN_LONG_DECODE_FROM=0)"
  echo "$shape v7 always: $(new $shape 512,2048,4096,8192,32768 LG_QWEN_LONG_DECODE_FROM=1000000)"
done 2>&1 | tee "$out/ab.txt"
exit 0

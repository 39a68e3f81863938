#!/usr/bin/env bash
# Session 10, call 4: the final binary (v6 with chunks of 128 keys, register-held RMSNorm):
# qwen_lane_tests, the Qwen locks on the hand-written lane (with logits, and in a batch of 16);
# decode steps of both shapes at B = 1..128, 128 and 512 positions.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb /tmp/lgshared
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
export LG_MODELS_DIR=$PWD/models
cp -r /tmp/lgb/fixtures /tmp/lgshared/ && ln -sfn "$PWD/models" /tmp/lgshared/models
lg=/tmp/lgb/bin/lg
xz -dc .carry/qwen_lane_tests.xz > /tmp/qwen_lane_tests && chmod +x /tmp/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
grep -E "PASSED|FAILED" "$out/qwen_lane_tests.txt"
mkdir -p /tmp/lk/locks && cp locks/qwen3-pycode-22m.lock.json locks/tiny-qwen2.lock.json locks/tiny-qwen3.lock.json \
  locks/tiny-qwen3-untied-mqa.lock.json /tmp/lk/locks/ && ln -sfn "$PWD/models" /tmp/lk/models
lock() { timeout 100 $lg lock check --lane handwritten --locks /tmp/lk/locks --shared /tmp/lgshared "$@" 2>&1; }
lock --compare-logits > "$out/lock_handwritten.txt"; grep -c "^ok" "$out/lock_handwritten.txt"
lock --batch-with 16 > "$out/lock_handwritten_batch.txt"; grep -c "^ok" "$out/lock_handwritten_batch.txt"
for shape in qwen3-8b qwen3-0.6b; do
  timeout 120 $lg bench --shape $shape --lane handwritten --prompt-len 512 --decode-tokens 32 --batch 1,16,64,128 \
    --context 128,512 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | sed "s/^/$shape /" | tee -a "$out/bench.txt"
done
exit 0

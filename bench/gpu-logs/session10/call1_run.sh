#!/usr/bin/env bash
# Session 10, call 1: the last session's two unverified refactor commits (v7/v8 sharing their
# pieces): qwen_lane_tests, the Qwen locks on the hand-written lane (plain with logits, in a batch
# of 16, v8 at every position); batch-1 decode at 30 and 32,768 positions; then where a batched
# 8B decode step goes at 512 positions: the launch profile (eager, events between launches) at
# B = 16 and 64, and ncu kernel durations of a B = 16 step.
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
lock() { timeout 150 $lg lock check --lane handwritten --locks /tmp/lk/locks --shared /tmp/lgshared "$@" 2>&1; }
lock --compare-logits > "$out/lock_handwritten.txt"; tail -6 "$out/lock_handwritten.txt"
lock --batch-with 16 > "$out/lock_handwritten_batch.txt"; tail -6 "$out/lock_handwritten_batch.txt"
LG_QWEN_LONG_DECODE_FROM=0 lock --compare-logits > "$out/lock_handwritten_v8.txt"; tail -6 "$out/lock_handwritten_v8.txt"
for shape in qwen3-8b qwen3-0.6b; do
  timeout 150 $lg bench --shape $shape --lane handwritten --prompt-len 512 --decode-tokens 64 --context 30,32768 2>&1 |
    grep -E '^ +1 +[0-9]' | sed "s/^/$shape /" | tee -a "$out/b1.txt"
done
for B in 16 64; do
  LG_PROFILE_LAUNCHES=1 timeout 150 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 16 \
    --batch $B --context 512 > "$out/profile_b$B.txt" 2>&1
  grep -A14 "profile hand-written batched" "$out/profile_b$B.txt" | head -16; grep -E '^ +[0-9]+ +512' "$out/profile_b$B.txt"
done
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu --metrics gpu__time_duration.sum --csv $lg bench --shape qwen3-8b --lane handwritten \
  --prompt-len 16 --decode-tokens 2 --batch 16 --context 512 > "$out/ncu_b16.csv" 2>&1
wc -l "$out/ncu_b16.csv"
exit 0

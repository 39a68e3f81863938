#!/usr/bin/env bash
# Session 10, call 2: v8's batched form as the batched decode attention and the register-held
# RMSNorm: qwen_lane_tests (and the batch/mixed/kernel tests again under v6 and v5), the Qwen
# locks in a batch of 16; 8B hand-written decode at B = 1..128, 128 and 512 positions, v8 against
# v6 in the same call; ncu kernel durations of a B = 16 step at 512 positions.
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
for form in 6 5; do
  LG_QWEN_BATCH_ATTN=$form LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 /tmp/qwen_lane_tests \
    --gtest_filter='*Batch*:*Mixed*:*DecodeAttentionRopeBatch*' > "$out/qwen_lane_tests_v$form.txt" 2>&1
  echo "v$form: $(grep -E 'PASSED|FAILED' "$out/qwen_lane_tests_v$form.txt" | tr '\n' ' ')"
done
mkdir -p /tmp/lk/locks && cp locks/qwen3-pycode-22m.lock.json locks/tiny-qwen2.lock.json locks/tiny-qwen3.lock.json \
  locks/tiny-qwen3-untied-mqa.lock.json /tmp/lk/locks/ && ln -sfn "$PWD/models" /tmp/lk/models
timeout 150 $lg lock check --lane handwritten --batch-with 16 --locks /tmp/lk/locks --shared /tmp/lgshared \
  > "$out/lock_handwritten_batch.txt" 2>&1; tail -5 "$out/lock_handwritten_batch.txt"
bench() {  # $1: label, $2: shape, $3: batches, $4: contexts; then env settings
  local label=$1 shape=$2 batches=$3 ctx=$4; shift 4
  env "$@" timeout 200 $lg bench --shape $shape --lane handwritten --prompt-len 512 --decode-tokens 32 \
    --batch $batches --context $ctx 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | sed "s/^/$label $shape /" | tee -a "$out/ab.txt"
}
bench v8 qwen3-8b 1,16,64,128 128,512 LG_QWEN_BATCH_ATTN=8
bench v6 qwen3-8b 1,16,64,128 128,512 LG_QWEN_BATCH_ATTN=6
bench v8w2 qwen3-8b 16,64,128 512 LG_QWEN_BATCH_ATTN=8 LG_QWEN_BATCH_ATTN_WAVES=2
bench v8 qwen3-8b 16,64 2048 LG_QWEN_BATCH_ATTN=8
bench v6 qwen3-8b 16,64 2048 LG_QWEN_BATCH_ATTN=6
bench v8 qwen3-0.6b 16,64,128 512 LG_QWEN_BATCH_ATTN=8
bench v6 qwen3-0.6b 16,64,128 512 LG_QWEN_BATCH_ATTN=6
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 200 $ncu --metrics gpu__time_duration.sum --csv $lg bench --shape qwen3-8b --lane handwritten \
  --prompt-len 16 --decode-tokens 2 --batch 16 --context 512 > "$out/ncu_b16.csv" 2>&1
wc -l "$out/ncu_b16.csv"
exit 0

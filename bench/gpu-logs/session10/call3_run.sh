#!/usr/bin/env bash
# Session 10, call 3: the final default (v6 attention, register-held RMSNorm): the batch, mixed,
# RMSNorm and batched-attention tests; v6's shortest chunk (LG_QWEN_GQA_SPLIT) at 512 positions;
# `lg serve --shape qwen3-8b` under 512 requests at concurrency 128 (issue 14's load).
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out" /tmp/lgb /tmp/lgshared
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64
export LG_MODELS_DIR=$PWD/models
cp -r /tmp/lgb/fixtures /tmp/lgshared/ && ln -sfn "$PWD/models" /tmp/lgshared/models
lg=/tmp/lgb/bin/lg
xz -dc .carry/qwen_lane_tests.xz > /tmp/qwen_lane_tests && chmod +x /tmp/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 100 /tmp/qwen_lane_tests \
  --gtest_filter='*Batch*:*Mixed*:*RmsNorm*:*DecodeAttentionRopeBatch*' > "$out/qwen_lane_tests.txt" 2>&1
grep -E "PASSED|FAILED" "$out/qwen_lane_tests.txt"
for split in 64 128 256; do
  LG_QWEN_GQA_SPLIT=$split timeout 100 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 512 --decode-tokens 32 \
    --batch 16,64,128 --context 512 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | sed "s/^/split $split /" | tee -a "$out/splits.txt"
done
$lg serve --shape qwen3-8b --max-seq 2048 --max-batch 256 > "$out/serve.log" 2>&1 &
sp=$!
for _ in $(seq 1 120); do curl -s localhost:8000/health > /dev/null && break; sleep 1; done
timeout 150 python3 bench/load_gen.py -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128 \
  --json "$out/load.json" 2>&1 | tee "$out/load.txt" | grep -E "===|output|TTFT|ITL|mixed|completed"
curl -s localhost:8000/metrics | grep -E "^lg_kv_blocks_used" | tee -a "$out/load.txt"
kill -INT "$sp"; timeout 30 tail --pid="$sp" -f /dev/null || kill -9 "$sp"
exit 0

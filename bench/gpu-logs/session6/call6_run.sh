#!/bin/bash
set -u
out=${OUT:-/tmp/out}; mkdir -p $out /tmp/lgb /tmp/lgshared
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64 LG_MODELS_DIR=$PWD/models
cp -r /tmp/lgb/fixtures /tmp/lgshared/ && ln -sfn "$PWD/models" /tmp/lgshared/models && ln -sfn $PWD/models /tmp/models
B=/tmp/lgb/bin
date -u
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 120 $B/qwen_lane_tests --gtest_filter='HandwrittenBatch.*:QwenMixedAttention.*:*TinyBatch*:*TinyFixture*' > $out/tests.txt 2>&1; echo "tests rc $?"
grep -E "^\[  (FAILED|PASSED) |mixed steps" $out/tests.txt
timeout 100 $B/lg lock check --lane handwritten --batch-with 16 --shared /tmp/lgshared > $out/lock_hw_batch.txt 2>&1; echo "hw locks batch rc $?"; tail -2 $out/lock_hw_batch.txt
serve_load() {  # shape tag args...
  local shape=$1 tag=$2; shift 2
  $B/lg serve --shape $shape --max-seq 2048 --max-batch 256 > $out/serve_$tag.log 2>&1 &
  local SP=$!
  for i in $(seq 1 120); do curl -s localhost:8000/health >/dev/null && break; sleep 1; done
  timeout 150 python3 bench/load_gen.py "$@" --json $out/load_$tag.json > $out/load_$tag.txt 2>&1
  grep -E "===|output|TTFT|ITL" $out/load_$tag.txt
  curl -s localhost:8000/metrics | grep -E "^lg_kv_blocks_used" 
  kill -INT $SP; timeout 40 tail --pid=$SP -f /dev/null; kill -9 $SP 2>/dev/null
}
serve_load qwen3-8b 8b_load -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128
date -u
serve_load qwen3-8b 8b_poisson -n 48 --prompt-len 128:1024 --output-len 128:512 --request-rate 4,8,16
date -u
serve_load qwen3-0.6b 06b_load -n 512 --prompt-len 128:1024 --output-len 128:512 --concurrency 128
serve_load qwen3-0.6b 06b_streams256 -n 256 --prompt-len 128:1024 --output-len 128:512 --concurrency 256
date -u
serve_load qwen3-0.6b 06b_poisson -n 48 --prompt-len 128:1024 --output-len 128:512 --request-rate 8,16,32
date -u

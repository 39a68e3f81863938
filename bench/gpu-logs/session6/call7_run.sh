#!/bin/bash
set -u
out=${OUT:-/tmp/out}; mkdir -p $out /tmp/lgb /tmp/lgshared /tmp/src/models
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
ln -sfn $PWD/models/* /tmp/src/models/ && rm -f /tmp/src/models/*.lg /tmp/src/models/examples && cp -r .carry/g/models/* /tmp/src/models/ && cp -r .carry/g/locks /tmp/src/locks
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64 LG_MODELS_DIR=/tmp/src/models
cp -r /tmp/lgb/fixtures /tmp/lgshared/ && ln -sfn /tmp/src/models /tmp/lgshared/models && ln -sfn /tmp/src/models /tmp/models
B=/tmp/lgb/bin; T="LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=/tmp/src"
date -u
env LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=/tmp/src timeout 240 $B/compiled_lane_tests > $out/t_compiled.txt 2>&1; echo "compiled_lane_tests rc $?"; grep -E "^\[  (FAILED|PASSED) |Gemma" $out/t_compiled.txt | head
date -u
env LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=/tmp/src timeout 60 $B/flash_attention_tests > $out/t_flash.txt 2>&1; echo "flash rc $?"; grep -E "^\[  (FAILED|PASSED) " $out/t_flash.txt
env LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=/tmp/src timeout 120 $B/qwen_lane_tests --gtest_filter='FlashAttention*:HandwrittenLane*:HandwrittenBatch.*:*TinyFixture*' >> $out/t_flash.txt 2>&1; echo "qwen rc $?"; grep -E "^\[  (FAILED|PASSED) " $out/t_flash.txt | tail -2
date -u
{ timeout 150 $B/lg lock check --lane compiled --compare-logits --locks /tmp/src/locks --shared /tmp/lgshared; echo "rc $?";
  timeout 150 $B/lg lock check --lane compiled --batch-with 8 --compare-logits --locks /tmp/src/locks --shared /tmp/lgshared; echo "rc $?";
  timeout 100 $B/lg lock check --lane handwritten --locks /tmp/src/locks --shared /tmp/lgshared; echo "rc $?"; } > $out/locks.txt 2>&1
cat $out/locks.txt | cut -c1-150
date -u
timeout 90 $B/lg bench --shape qwen3-8b --lane handwritten --prompt-len 512,2048 --decode-tokens 32 2>&1 | grep -E "prefill|decode " | tee $out/bench_prefill.txt
date -u

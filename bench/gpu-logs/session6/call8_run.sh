#!/bin/bash
set -u
out=${OUT:-/tmp/out}; mkdir -p $out /tmp/lgb /tmp/lgshared /tmp/src/models
tar -C /tmp/lgb -xJf .carry/lg.tar.xz
ln -sfn $PWD/models/* /tmp/src/models/ && rm -f /tmp/src/models/*.lg /tmp/src/models/examples && cp -r .carry/g/models/* /tmp/src/models/ && cp -r .carry/g/locks /tmp/src/locks
export LD_LIBRARY_PATH=/tmp/lgb/lib:/usr/local/cuda/lib64 LG_MODELS_DIR=/tmp/src/models
cp -r /tmp/lgb/fixtures /tmp/lgshared/ && ln -sfn /tmp/src/models /tmp/lgshared/models && ln -sfn /tmp/src/models /tmp/models
B=/tmp/lgb/bin; S=.carry/g/shapes
date -u
{ timeout 60 $B/lg lock check --lane compiled --compare-logits --locks /tmp/src/locks --shared /tmp/lgshared; echo "rc $?";
  timeout 60 $B/lg lock check --lane compiled --batch-with 8 --compare-logits --locks /tmp/src/locks --shared /tmp/lgshared; echo "rc $?"; } > $out/a_locks.txt 2>&1
cat $out/a_locks.txt
for s in llama-3.1-8b mistral-7b-v0.3 gemma-3-12b-text; do
  echo "== $s $(date -u +%T)" >> $out/b_bench_families.txt
  timeout 90 $B/lg bench --shape $S/$s --lane compiled --prompt-len 2048 --decode-tokens 64 >> $out/b_bench_families.txt 2>&1; echo "rc $?" >> $out/b_bench_families.txt
done
grep -E "^==|prefill|decode|floor|error|rc " $out/b_bench_families.txt | grep -v json
date -u
timeout 150 python3 .carry/g/hf_peer.py --prefill-only $S/llama-3.1-8b $S/mistral-7b-v0.3 $S/gemma-3-12b-text 2>&1 | grep -v Warn > $out/c_hf_families.txt; cat $out/c_hf_families.txt | tail -5
date -u
env LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=/tmp/src timeout 60 $B/compiled_lane_tests --gtest_filter='CompiledBatch.TinyQwen3Moe*' > $out/d_moe_tests.txt 2>&1; echo "moe tests rc $?"; grep -E "OK \]|FAILED|PASSED" $out/d_moe_tests.txt | head -5
timeout 30 ./.carry/gemv_smem_lab > $out/f_lab.txt 2>&1; cat $out/f_lab.txt
date -u
LG_PROFILE_LAUNCHES=1 timeout 120 $B/lg bench --shape $S/qwen3-30b-a3b --lane compiled --batch 1,16,64 --context 512 --prompt-len 512,2048 --decode-tokens 32 > $out/e_bench_moe.txt 2>&1; echo "moe bench rc $?"; grep -vE "^json|^ +[0-9.]+ ms +[0-9.]+%" $out/e_bench_moe.txt | tail -14
date -u
timeout 150 python3 .carry/g/hf_moe_peer.py $S/qwen3-30b-a3b/config.json 1 16 2>&1 | grep -v Warn > $out/g_hf_moe.txt; tail -5 $out/g_hf_moe.txt
date -u

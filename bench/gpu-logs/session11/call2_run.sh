#!/usr/bin/env bash
# Session 11, call 2: split-K o_proj and down in the batched decode (slices summed by the RMSNorm
# after each; LG_QWEN_SPLITK=0 is the plain GEMMs) and the compiled lane's expert stages on by
# default. qwen_lane_tests; the Qwen locks on the hand-written lane (with logits, in a batch of 16);
# decode steps of both shapes at B = 1..128, 128 and 512 positions, split-K on and off alternated;
# compiled_lane_tests (MoE included); the MoE lock on the compiled lane; transformers' batched
# decode at the 8B shape last.
set -uo pipefail
source bench/device_env.sh
unpack_xz qwen_lane_tests; unpack_xz compiled_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 150 /tmp/qwen_lane_tests > "$out/qwen_lane_tests.txt" 2>&1
grep -E "PASSED|FAILED" "$out/qwen_lane_tests.txt"
locks=$(qwen_locks_dir)
lock() { timeout 100 $lg lock check --lane handwritten --locks "$locks" --shared /tmp/lgshared "$@" 2>&1; }
lock --compare-logits > "$out/lock_handwritten.txt"; grep -c "^ok" "$out/lock_handwritten.txt"
lock --batch-with 16 > "$out/lock_handwritten_batch.txt"; grep -c "^ok" "$out/lock_handwritten_batch.txt"
for round in 1 2; do
  for sk in 1 0; do
    for shape in qwen3-8b qwen3-0.6b; do
      LG_QWEN_SPLITK=$sk timeout 120 $lg bench --shape $shape --lane handwritten --prompt-len 512 --decode-tokens 32 \
        --batch 1,16,64,128 --context 128,512 2>&1 | grep -E '^ +[0-9]+ +[0-9]+ ' | sed "s/^/$shape splitk=$sk /" \
        | tee -a "$out/bench.txt"
    done
  done
done
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/compiled_lane_tests > "$out/compiled_lane_tests.txt" 2>&1
grep -E "^seed|PASSED|FAILED|tiny-qwen3-moe" "$out/compiled_lane_tests.txt" | head -20
mkdir -p /tmp/lkm/locks && cp locks/tiny-qwen3-moe.lock.json /tmp/lkm/locks/ && ln -sfn "$PWD/models" /tmp/lkm/models
timeout 100 $lg lock check --lane compiled --locks /tmp/lkm/locks --shared /tmp/lgshared --compare-logits \
  > "$out/lock_compiled_moe.txt" 2>&1; tail -3 "$out/lock_compiled_moe.txt"
timeout 100 $lg lock check --lane compiled --locks /tmp/lkm/locks --shared /tmp/lgshared --batch-with 8 \
  > "$out/lock_compiled_moe_batch.txt" 2>&1; tail -3 "$out/lock_compiled_moe_batch.txt"
timeout 250 python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 > "$out/hf_batch_peer.txt" 2>&1
tail -4 "$out/hf_batch_peer.txt"
exit 0

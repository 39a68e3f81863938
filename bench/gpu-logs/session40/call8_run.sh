#!/usr/bin/env bash
# Session 40, call 8 (H200): the draw tests under the H200's new default (the TMA row GEMV up to 16
# sequences: RowDraws compare two runs' draws, so the lane's logits must repeat run to run), then
# llama.cpp in the same call as the hand-written 8B step (issue 13: "above llama.cpp at the same
# batch in the same call"; session 33 measured it on an H100 only).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
[ -d models/qwen3-pycode-22m ] && qwen_tests 'RowDraws.*:*Sampl*:*Penalt*' | tail -4
timeout 60 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 32 --decode-tokens 32 --batch 1,16,64,128 \
  --context 160 --kv-tokens 40000 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ " | tee "$out/bench_8b_160.txt"
(cd .cache/llamacpp && SHAPES=8b LLBENCH_ARGS="--batches 16,64,128" timeout 330 bash run.sh) > "$out/llamacpp.jsonl" \
  2> "$out/llamacpp.log"
echo "llama.cpp rc $?"; cat "$out/llamacpp.jsonl" | tail -8
exit 0

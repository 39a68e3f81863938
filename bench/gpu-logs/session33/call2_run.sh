#!/usr/bin/env bash
# Session 33, call 2 (the machine of call 1, still warm): llama.cpp's peer at 8B with our
# hand-written step at its context in the same call. ../shared/peers/llamacpp copied into the
# ignored .gl/llamacpp and carried (with .carry); the shipped 22M model's safetensors left out of
# that upload so the two fit its 64 MiB.
set -uo pipefail
source bench/device_env.sh
timeout 60 $lg bench --shape qwen3-8b --lane handwritten --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 \
  --context 160 --kv-tokens 80000 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ " | tee "$out/bench_hw_160.txt"
WORK=/tmp/llamapeer SHAPES=8b LLBENCH_ARGS="--batches 16,64,128" timeout 420 bash .gl/llamacpp/run.sh \
  > "$out/llamacpp.jsonl" 2> "$out/llamacpp.err"
echo "llama rc $?"; cat "$out/llamacpp.jsonl"; tail -5 "$out/llamacpp.err"

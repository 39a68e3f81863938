#!/usr/bin/env bash
# Session 30, call 12 (H100): the landed tree (main 2339921: the .lg front-end and model fixes,
# sampling penalties) on the GPU lanes: compiled_lane_tests (all but the long-context test) and
# every compiled lock, the hand-written batched and fixture tests, and a greedy lg run with a
# repetition penalty on each GPU lane (the logits-row path penalised greedy requests now take).
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
qwen_tests 'HandwrittenBatch.*:*TinyFixture*:*TinyBatch*' || { [ $? = 124 ] && exit 0; }
for lane in handwritten compiled; do
  for rp in 1 1.3; do
    echo "== $lane repetition_penalty $rp"
    timeout 120 $lg run --model models/qwen3-pycode-22m --lane $lane --prompt "def fibonacci(n):" -n 40 \
      --repetition-penalty $rp -q 2>&1 | tail -4
  done
done
exit 0

#!/usr/bin/env bash
# Session 40, call 2: log probabilities on the GPU lanes (branch s40: a request asking for logprobs
# brings its logits row to the host, which makes the lane's pick). 48 requests of the 22M model
# (12 prompts, greedy and sampled, each with and without logprobs) on the cpu, hand-written and
# compiled lanes: asking must change no token, and each lane's logprobs are compared with the cpu
# lane's; then the Qwen locks on both GPU lanes with --batch-with 16 (the batching rewrite now
# refuses statements that mix the tokens of a step: the shipped programs must still load). On an
# H200 also the question waiting since session 35 and issue 16's 30B-A3B step.
set -uo pipefail
source bench/device_env.sh
gpu=$(nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader)
echo "$gpu"
d=bench/gpu-logs/session40
python3 $d/logprobs_requests.py /tmp/lp_req.jsonl
for lane in cpu handwritten compiled; do
  s=$(date +%s)
  timeout 120 $lg batch -m models/qwen3-pycode-22m -i /tmp/lp_req.jsonl -o "$out/lp_$lane.jsonl" --lane $lane -q \
    > "$out/lp_$lane.log" 2>&1
  echo "batch $lane rc $? in $(( $(date +%s) - s )) s"
done
python3 $d/logprobs_compare.py "$out/lp_cpu.jsonl" "$out/lp_handwritten.jsonl" "$out/lp_compiled.jsonl" 2>&1 | tee "$out/lp_compare.txt"
for lane in handwritten compiled; do
  timeout 150 $lg lock check --lane $lane --locks "$(qwen_locks_dir)" --shared /tmp/lgshared --batch-with 16 \
    > "$out/locks_${lane}_batch16.txt" 2>&1
  echo "locks $lane rc $?"; grep -cE "^ok" "$out/locks_${lane}_batch16.txt"; grep -E "^(FAIL|ERROR)" "$out/locks_${lane}_batch16.txt"
done
case "$gpu" in *H200*) s=$(date +%s); h200_rows_and_bars; echo "took $(( $(date +%s) - s )) s"
  step_ms main bench/shapes/qwen3-30b-a3b | tee "$out/step_30b.txt" ;; esac
exit 0

#!/usr/bin/env bash
# Session 40, call 3 (the H200 of call 2, warm): call 2's logprobs checks (its python files were
# not carried), issue 13's compiled-lane line and transformers' batched decode in the same call.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
d=bench/gpu-logs/session40
python3 $d/logprobs_requests.py /tmp/lp_req.jsonl
for lane in cpu handwritten compiled; do
  s=$(date +%s)
  timeout 120 $lg batch -m models/qwen3-pycode-22m -i /tmp/lp_req.jsonl -o "$out/lp_$lane.jsonl" --lane $lane -q \
    > "$out/lp_$lane.txt" 2>&1
  echo "batch $lane rc $? in $(( $(date +%s) - s )) s"
done
python3 $d/logprobs_compare.py "$out/lp_cpu.jsonl" "$out/lp_handwritten.jsonl" "$out/lp_compiled.jsonl" 2>&1 | tee "$out/lp_compare.txt"
timeout 120 $lg bench --shape qwen3-8b --prompt-len 8 --decode-tokens 32 --batch 1,16,64,128 --context 160,512 \
  --kv-tokens 80000 --lane compiled 2>&1 | grep -E "^ +[0-9]+ +\+?[0-9]+ |bandwidth" | tee "$out/bench_8b_compiled.txt"
timeout 300 python3 bench/peers/hf_batch_peer.py qwen3-8b 16 64 128 2>&1 | grep -v Warning | tail -8 | tee "$out/hf_batch_peer.txt"
exit 0

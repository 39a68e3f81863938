#!/usr/bin/env bash
# Session 46, call 3 (any card): the branch as it lands (the experts pair removed; the scheduler's
# per-request non-finite check): the compiled lane's tests but the 22M model's (not in this
# payload), the compiled locks, and the 30B-A3B step at 1 and 16 sequences.
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/gpu.txt"
compiled_checks '-*Pycode22m*'
step_ms landed bench/shapes/qwen3-30b-a3b

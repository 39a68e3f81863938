#!/usr/bin/env bash
# Session 22, call 8: an attention launch at T = 1 prefetches the next launch's GEMV weights
# (o_proj) into L2 before its wait, spread over its blocks (Renderer::prefetch_next;
# LG_COMPILED_PREFETCH_NEXT=0 off): a short context's attention is bound by latency and leaves the
# DRAM idle. Checks on this binary (with the review's fixes): compiled_lane_tests whole, the
# compiled lane's locks; then the steps with the prefetch on and off: 30B-A3B twice, 8B, 0.6B at
# 512 positions, and 8B at 32,768.
set -uo pipefail
source bench/device_env.sh
compiled_checks
for r in 1 2; do
  step_ms next bench/shapes/qwen3-30b-a3b
  step_ms none bench/shapes/qwen3-30b-a3b LG_COMPILED_PREFETCH_NEXT=0
done
for s in qwen3-8b qwen3-0.6b; do
  step_ms next $s
  step_ms none $s LG_COMPILED_PREFETCH_NEXT=0
done
b1_32k next compiled
b1_32k none compiled LG_COMPILED_PREFETCH_NEXT=0
exit 0

#!/usr/bin/env bash
# Session 39, call 1: on an H200 (the first lent since session 31), the question waiting since
# session 35 (h200_rows_and_bars: the TMA row GEMV against cuBLASLt at 2-32 sequences of 8B and
# 0.6B, then issue 13's 8B bars at the default and on the TMA form). Binaries carry session 38's
# LG_QWEN_ROWS_EARLY lab knob (off by default; call 2 measures it).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
s=$(date +%s)
h200_rows_and_bars
echo "h200_rows_and_bars took $(( $(date +%s) - s )) s"
exit 0

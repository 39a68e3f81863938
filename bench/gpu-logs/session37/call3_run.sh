#!/usr/bin/env bash
# Session 37, call 3 (and later H200 tries): on an H200 only, session 35's waiting question
# (h200_rows_and_bars: the TMA row GEMV against cuBLASLt at 2-32 sequences, issue 13's 8B bars).
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
h200_rows_and_bars
exit 0

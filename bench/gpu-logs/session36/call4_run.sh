#!/usr/bin/env bash
# Session 36, call 4: on an H200 only (exits at once on any other card; call 4 found an H100):
# session 35's waiting call 3, the TMA row GEMV against cuBLASLt at 2-32 sequences, and issue 13's
# 8B bars at the default and on the TMA form (device_env.sh). Its `tma+` line sets v11's knob,
# which only a build of branch s36-v11 reads.
set -uo pipefail
source bench/device_env.sh
h200_rows_and_bars LG_QWEN_ATTN_BULK=1
exit 0

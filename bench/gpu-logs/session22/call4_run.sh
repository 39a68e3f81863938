#!/usr/bin/env bash
# Session 22, call 4: call 3's early rows cost moe_down's kernel 170 registers (one block an SM);
# now with __launch_bounds__(256, 2) (128 registers, ptxas: 128 bytes of spill). The 30B-A3B step,
# early rows on and off, alternated three times.
set -uo pipefail
source bench/device_env.sh
shape=bench/shapes/qwen3-30b-a3b
for r in 1 2 3; do
  step_ms early $shape
  step_ms late $shape LG_COMPILED_MOE_EARLY_ROWS=0
done
exit 0

#!/usr/bin/env bash
# Session 36, call 7: CompiledLane.LongPromptPrefillAndDecodeMatchReference failed once in call 6
# (prefill logits rel err 0.02016 against its 2e-2 bound, a random prompt of 333 tokens; 8 reruns
# passed). The test now prints each draw's errors and the hand-written lane's prefill error on
# the same prompt: 40 draws show how near the bound they sit.
set -uo pipefail
source bench/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
LG_SHARED_DIR=/tmp/lgshared timeout 200 /tmp/lgb/bin/compiled_lane_tests \
  --gtest_filter='CompiledLane.LongPromptPrefillAndDecodeMatchReference' --gtest_repeat=40 > "$out/long_prompt_40.txt" 2>&1
echo "rc $?: $(grep -c '^\[       OK' "$out/long_prompt_40.txt") passed, $(grep -c '^\[  FAILED  \] CompiledLane' "$out/long_prompt_40.txt") failed"
python3 - "$out/long_prompt_40.txt" <<'PY'
import re, sys
rows = [tuple(map(float, m.groups())) for m in re.finditer(r"prefill logits rel err ([0-9.e+-]+), worst of 4 decode steps ([0-9.e+-]+); hand-written lane's prefill ([0-9.e+-]+)", open(sys.argv[1]).read())]
for name, xs in (("prefill", sorted(r[0] for r in rows)), ("decode (worst of 4)", sorted(r[1] for r in rows)),
                 ("hand-written prefill", sorted(r[2] for r in rows))):
    n = len(xs)
    print(f"{name}: n {n} min {xs[0]:.4f} median {xs[n // 2]:.4f} p90 {xs[int(n * 0.9)]:.4f} max {xs[-1]:.4f}")
PY
exit 0

#!/usr/bin/env bash
# Session 31, call 8: the final branch's draw tests (the host-drawing lane now tests/common's
# CountingLane) and the hand-written batched tests.
set -uo pipefail
source bench/device_env.sh
qwen_tests 'RowDraws.*:HandwrittenBatch.*'
grep -E "row draws" "$out/qwen_tests_1.txt"
exit 0

#!/usr/bin/env bash
# Session 21, call 10: the review's fixes. Every compiled-lane test, the long-context one now with
# the one-row form forced for the 22M model (LG_COMPILED_ATTN_ONE_ROW=1 inside the test: the form's
# split merge at 3,000 positions against the CPU reference), and the compiled locks.
set -uo pipefail
source bench/device_env.sh
compiled_checks
grep -E "long context decode" "$out/compiled_lane_tests.txt"
exit 0

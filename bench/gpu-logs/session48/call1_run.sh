#!/usr/bin/env bash
# Session 48, call 1 (any card). Binaries: branch s48 with session 47's call3_trigger_first.patch
# and call2_topk_probe.patch and session 38's call7_rows_early.patch applied (each behind its own
# setting; off by default except the trigger, whose off form is LG_COMPILED_TOPK_TRIGGER_FIRST=0).
# 1. Issue 16: session 47's call 3 as prepared (its header says what it runs): does the top-k
#    kernel triggering its dependents before its own wait take the ~6 us a layer that call 2 put
#    in its launch?
# 2. On an H200 only: the 30B-A3B step at 1 and 16 sequences at main's form and the 8B serving
#    load (issue 14) at main's default; call 2 then runs issue 13's A/B.
set -uo pipefail
bash bench/gpu-logs/session47/call3_run.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200, done"; exit 0 ;; esac
source bench/device_env.sh
serve_load ""
exit 0

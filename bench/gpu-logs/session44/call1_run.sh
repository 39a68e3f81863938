#!/usr/bin/env bash
# Session 44, call 1 (any card): session 43's call 4 as prepared there (its header says what it
# runs), on a build with its call4_rope_swiglu.patch and session 38's call7_rows_early.patch (a lab
# knob, off) applied.
exec bash bench/gpu-logs/session43/call4_run.sh

#!/usr/bin/env bash
# Session 44, call 2 (H200 only; not run: no H200 came): session 42's call 1 as prepared there (its
# header says what it runs), on a build with session 38's call7_rows_early.patch applied.
exec bash bench/gpu-logs/session42/call1_run.sh

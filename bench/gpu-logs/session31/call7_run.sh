#!/usr/bin/env bash
# Session 31, call 7: the integrated branch (s31 with the helpers' fixes: the emitted float-to-i32
# cast now saturates, Gemma 3 config defaults). The compiled lane's tests and locks, the
# hand-written lane's tests, the draw tests; then the sampled step on the trained 22M model
# (peaked rows, unlike random weights'), where top-p alone should take the gathered path.
set -uo pipefail
source bench/device_env.sh
compiled_checks '-CompiledLane.LongContext*'
t=/tmp/lgb/bin/qwen_lane_tests
LG_SHARED_DIR=/tmp/lgshared LG_SOURCE_DIR=$PWD timeout 300 $t > "$out/qwen_tests_all.txt" 2>&1
echo "qwen tests: rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|row draws" "$out/qwen_tests_all.txt" | head
b="--shape models/qwen3-pycode-22m --lane handwritten --prompt-len 8 --decode-tokens 24 --batch 1,16,64 --context 256"
for v in "none 0.6-20-0.95" "lane 0.6-20-0.95" "lane 0.6-0-0.95" "lane 1-0-0.9" "lane 1-0-1"; do
  set -- $v
  timeout 120 $lg bench $b --sample $1 --sample-params ${2//-/,} > "$out/bench22m_$1_$2.txt" 2>&1
  echo "22M handwritten sample=$1 params=$2 rc $?"; grep -E "^ +[0-9]+ +[0-9]+ " "$out/bench22m_$1_$2.txt"
done
exit 0

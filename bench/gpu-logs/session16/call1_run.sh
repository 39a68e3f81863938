#!/usr/bin/env bash
# Session 16, call 1: the compiled lane's prefill-form GEMMs with fewer launches:
#   stacked GEMMs (q/k/v and gate/up over one activation as one cuBLASLt call at T > 1;
#   LG_COMPILED_GEMM_STACK=0 keeps a GEMM a weight) and the gate/up epilogue writing down_proj's
#   bf16 operand (LG_COMPILED_EPILOGUE_PACK=0 packs it in its own kernel).
# Correctness (compiled_lane_tests, the MoE and Qwen locks on the compiled lane), then the three
# variants alternated twice (compiled lane, B = 1, 16, 64 at 512 positions, prefill 512), and the
# hand-written lane in the same call.
set -uo pipefail
source bench/device_env.sh
compiled_checks
bench() {  # bench LABEL SHAPE LANE [ENV...]
  local label=$1 shape=$2 lane=$3
  shift 3
  local r
  r=$(env "$@" timeout 150 $lg bench --shape "$shape" --lane "$lane" --prompt-len 512 --batch 1,16,64 --context 512 \
    --kv-tokens 40000 2>&1 | grep -E "^ +[0-9]+ +512|prefill T")
  { echo "== $label $shape $lane $*"; echo "$r"; } >> "$out/ab.txt"
  echo "$label $shape $lane: $(echo "$r" | awk '/prefill/ {printf "prefill %s ms  ", $3} /^ +[0-9]+ +512/ {printf "B%s %s ms  ", $1, $3}')"
}
for shape in qwen3-0.6b qwen3-8b; do bench "hand-written" $shape handwritten; done
for round in 1 2; do
  for shape in qwen3-0.6b qwen3-8b; do
    bench "r$round both" $shape compiled
    bench "r$round stack-only" $shape compiled LG_COMPILED_EPILOGUE_PACK=0
    bench "r$round neither" $shape compiled LG_COMPILED_EPILOGUE_PACK=0 LG_COMPILED_GEMM_STACK=0
  done
done
exit 0

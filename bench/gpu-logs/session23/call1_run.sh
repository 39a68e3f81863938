#!/usr/bin/env bash
# Session 23, call 1: what each launch of the 30B-A3B one-token step costs inside the graph.
# LG_COMPILED_SKIP=REGEX leaves the matching decode launches out (results wrong, timing only):
# the step's time without one kind of launch, 47 of the 48 layers (layer 0 has its own kernels),
# is the most that fusing that launch away could save. Baseline first and last; two rounds.
set -uo pipefail
source bench/device_env.sh
b1() {
  local label=$1
  shift
  bench_ms "$label" skip.txt '1 +512' \
    "--shape bench/shapes/qwen3-30b-a3b --lane compiled --prompt-len 2 --batch 1 --context 512 --kv-tokens 12000" "$@"
}
for round in 1 2; do
  b1 base
  b1 "no q/k/v" LG_COMPILED_SKIP='^k24_gemm$'
  b1 "no q/k norm" LG_COMPILED_SKIP='^k27_reduce$'
  b1 "no attention" LG_COMPILED_SKIP='^k28_attention$'
  b1 "no o_proj" LG_COMPILED_SKIP='^k11_gemm$'
  b1 "no ln2+router" LG_COMPILED_SKIP='^k13_gemm$'
  b1 "no topk" LG_COMPILED_SKIP='^k16_topk$'
  b1 "no gate/up" LG_COMPILED_SKIP='^k17_experts$'
  b1 "no down" LG_COMPILED_SKIP='^k20_experts$'
  b1 "no q/k norm, no router" LG_COMPILED_SKIP='^k(27_reduce|13_gemm)$'
  b1 "only the 4 weight streams" LG_COMPILED_SKIP='^k(27_reduce|28_attention|13_gemm|16_topk)$'
done
b1 base
exit 0

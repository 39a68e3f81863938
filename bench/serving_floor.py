#!/usr/bin/env python3
"""The floor of a `bench/load_gen.py` run: how fast any server could finish the same requests on one
GPU, counted from bytes and FLOPs (issue 14's load: 512 requests, prompts 128:1024, outputs 128:512,
concurrency 128), for the Qwen3 shapes `lg serve --shape` serves.

It draws the run's prompt and output lengths exactly as load_gen.py does (same seed, same RNG
calls) and counts, with a bf16 KV cache and bf16 weights:
  - prefill: 2 * (the layers' matmul parameters) FLOPs a prompt token, the LM head once a prompt
    (its last row), and the causal attention's 4 * layers * heads * head_dim FLOPs per (query, key)
    pair;
  - decode: each generated token after the first (the first comes from the prefill) is one row of a
    decode step: 2 * (matmul parameters + LM head) FLOPs, and the K/V of every earlier position read
    once (2 * layers * kv_heads * head_dim bf16 values a position);
  - weights: every step reads all of them once; at most `concurrency` sequences decode in a step, so
    there are at least (decode tokens / concurrency) steps.
It prints two floors: everything overlapped perfectly (the larger of compute time and memory time)
and the serial sum (prefill compute, then each decode step's weights and K/V), which is the
stricter model of a server whose steps run compute-bound GEMMs and memory-bound attention one after
another, as every server here does. Rates default to what `lg bench` measured on the H200
(bench/RESULTS.md, session 15: copy 4.25 TB/s, bf16 tensor cores 776 TFLOP/s).

    python3 bench/serving_floor.py --shape qwen3-8b -n 512 --prompt-len 128:1024 --output-len 128:512 \\
        --concurrency 128 --measured-s 24.2
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load_gen  # noqa: E402  (the same request draw)

# (hidden, intermediate, layers, heads, kv_heads, head_dim, vocab): lg serve --shape's presets
# (src/cli/preset_shapes.h), Qwen3's config.json values.
SHAPES = {
    "qwen3-8b": (4096, 12288, 36, 32, 8, 128, 151936),
    "qwen3-0.6b": (1024, 3072, 28, 16, 8, 128, 151936),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", choices=sorted(SHAPES), default="qwen3-8b")
    p.add_argument("-n", "--num-requests", type=int, default=512)
    p.add_argument("--prompt-len", default="128:1024")
    p.add_argument("--output-len", default="128:512")
    p.add_argument("--concurrency", type=int, default=128)
    p.add_argument("--token-range", default="0:151643")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--copy-tbps", type=float, default=4.25, help="HBM copy bandwidth, TB/s")
    p.add_argument("--tensor-tflops", type=float, default=776.0, help="bf16 tensor-core rate, TFLOP/s")
    p.add_argument("--measured-s", type=float, help="a measured run's duration, to print its ratio to the floors")
    args = p.parse_args()
    args.prompt_len = load_gen.parse_range(args.prompt_len, "--prompt-len")
    args.output_len = load_gen.parse_range(args.output_len, "--output-len")
    args.token_range = tuple(int(x) for x in args.token_range.split(":"))  # as load_gen.py reads it
    D, F, L, H, KV, Dh, V = SHAPES[args.shape]

    matmul = L * (D * (H + 2 * KV) * Dh + H * Dh * D + 3 * D * F)  # q/k/v, o, gate/up, down
    head = V * D
    weight_bytes = 2 * (matmul + head)  # the embedding is read a row a token: left out
    kv_per_pos = 2 * 2 * L * KV * Dh
    attn_per_pair = 4 * L * H * Dh

    reqs = load_gen.make_requests(args, None)
    prefill_flops = decode_flops = kv_bytes = 0.0
    n_in_total = n_out_total = decode_tokens = 0
    for r in reqs:
        n_in, n_out = len(r["prompt"]), r["max_tokens"]
        n_in_total += n_in
        n_out_total += n_out
        prefill_flops += 2 * matmul * n_in + 2 * head + attn_per_pair * n_in * (n_in + 1) / 2
        for pos in range(n_in + 1, n_in + n_out):  # decode rows: the token at pos attends to pos + 1 keys
            decode_flops += 2 * (matmul + head) + attn_per_pair * (pos + 1)
            kv_bytes += kv_per_pos * (pos + 1)
            decode_tokens += 1
    steps = -(-decode_tokens // args.concurrency)
    bw, tc = args.copy_tbps * 1e12, args.tensor_tflops * 1e12
    compute_s = (prefill_flops + decode_flops) / tc
    memory_s = (steps * weight_bytes + kv_bytes) / bw
    overlapped = max(compute_s, memory_s)
    step_weights_s = steps * max(weight_bytes / bw, 2 * (matmul + head) * args.concurrency / tc)
    serial = prefill_flops / tc + step_weights_s + kv_bytes / bw

    print(f"{args.shape}: {len(reqs)} requests, {n_in_total:,} prompt tokens, {n_out_total:,} output tokens "
          f"({decode_tokens:,} from decode steps), concurrency {args.concurrency}")
    print(f"  prefill {prefill_flops / 1e15:.2f} PFLOP = {prefill_flops / tc:.2f} s at {args.tensor_tflops:.0f} TFLOP/s")
    print(f"  decode: >= {steps:,} steps x {weight_bytes / 1e9:.2f} GB of weights = {steps * weight_bytes / bw:.2f} s, "
          f"K/V {kv_bytes / 1e12:.2f} TB = {kv_bytes / bw:.2f} s at {args.copy_tbps:.2f} TB/s, "
          f"{decode_flops / 1e15:.2f} PFLOP = {decode_flops / tc:.2f} s")
    for name, s in (("floor, all overlapped", overlapped), ("floor, steps in series", serial)):
        line = f"  {name}: {s:.2f} s = {n_out_total / s:,.0f} output tokens/s"
        if args.measured_s:
            line += f" (the measured {args.measured_s:.2f} s is {args.measured_s / s:.2f}x)"
        print(line)


if __name__ == "__main__":
    main()

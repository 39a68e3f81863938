#!/usr/bin/env python3
"""Writes a random Qwen3-8B-shaped checkpoint in the layout Hugging Face publishes it in, to time
start-up (`lg run`, time to ready) on the GPU machine without downloading 16 GB.

  python3 bench/make_checkpoint.py [--out /tmp/qwen3-8b-random] [--layers 36] [--seed 0]
  python3 bench/make_checkpoint.py --evict DIR    # drop DIR's files from the page cache (cold start)

The directory gets config.json (Qwen/Qwen3-8B's values), model-0000k-of-00005.safetensors shards
split by size in name order as transformers' save_pretrained splits them (the embedding in the first,
lm_head in the last), model.safetensors.index.json, and the tokenizer files of
models/qwen3-pycode-22m (the same Qwen vocabulary). Weights are bf16: matrices normal with std 0.02
(transformers' initializer_range), norm weights 1. They are made on the GPU when torch sees one
(seconds), else on the CPU (minutes). Needs torch and safetensors; no network.

--evict uses posix_fadvise(DONTNEED), which drops clean page-cache pages without root; check with
`vmtouch` or `fincore` if present.
"""
import argparse
import json
import os
import shutil
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENIZER_FROM = os.path.join(REPO, "models", "qwen3-pycode-22m")
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "generation_config.json"]
SHARDS = 5

# Qwen/Qwen3-8B config.json (transformers 4.51), the fields as published.
CONFIG = {
    "architectures": ["Qwen3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 12288,
    "max_position_embeddings": 40960,
    "max_window_layers": 36,
    "model_type": "qwen3",
    "num_attention_heads": 32,
    "num_hidden_layers": 36,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.51.0",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}


def tensor_shapes(c):
    """(name, shape) of every tensor of a Qwen3 dense checkpoint, in the order of its shards."""
    D, F, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    q, kv, dh = c["num_attention_heads"] * c["head_dim"], c["num_key_value_heads"] * c["head_dim"], c["head_dim"]
    out = [("model.embed_tokens.weight", [V, D])]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [
            (p + "input_layernorm.weight", [D]),
            (p + "mlp.down_proj.weight", [D, F]),
            (p + "mlp.gate_proj.weight", [F, D]),
            (p + "mlp.up_proj.weight", [F, D]),
            (p + "post_attention_layernorm.weight", [D]),
            (p + "self_attn.k_norm.weight", [dh]),
            (p + "self_attn.k_proj.weight", [kv, D]),
            (p + "self_attn.o_proj.weight", [D, q]),
            (p + "self_attn.q_norm.weight", [dh]),
            (p + "self_attn.q_proj.weight", [q, D]),
            (p + "self_attn.v_proj.weight", [kv, D]),
        ]
    out.append(("model.norm.weight", [D]))
    if not c["tie_word_embeddings"]:
        out.append(("lm_head.weight", [V, D]))
    return out


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def plan_shards(tensors, shards):
    """Splits the tensors, in order, into `shards` runs of about equal bytes (bf16)."""
    total = sum(2 * numel(s) for _, s in tensors)
    target = total / shards
    plan, run, acc = [], [], 0
    for name, shape in tensors:
        if run and acc + 2 * numel(shape) / 2 > target * (len(plan) + 1) and len(plan) < shards - 1:
            plan.append(run)
            run = []
        run.append((name, shape))
        acc += 2 * numel(shape)
    plan.append(run)
    return plan, total


def evict(path):
    files = [os.path.join(path, f) for f in sorted(os.listdir(path))]
    for f in files:
        if os.path.isfile(f):
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    print(f"evicted {len(files)} files of {path} from the page cache (clean pages)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/tmp/qwen3-8b-random")
    ap.add_argument("--layers", type=int, default=CONFIG["num_hidden_layers"], help="fewer for a quick try")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--evict", metavar="DIR", help="only drop DIR's files from the page cache")
    a = ap.parse_args()
    if a.evict:
        evict(a.evict)
        return 0

    import torch
    from safetensors.torch import save_file

    t0 = time.time()
    config = dict(CONFIG, num_hidden_layers=a.layers, max_window_layers=a.layers)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    for name in TOKENIZER_FILES:
        shutil.copy(os.path.join(TOKENIZER_FROM, name), os.path.join(a.out, name))

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        print("make_checkpoint: no GPU visible to torch: making the weights on the CPU (slow)", file=sys.stderr)
    gen = torch.Generator(device=device).manual_seed(a.seed)
    plan, total = plan_shards(tensor_shapes(config), SHARDS)
    weight_map = {}
    for k, run in enumerate(plan):
        file = f"model-{k + 1:05d}-of-{len(plan):05d}.safetensors"
        tensors = {}
        for name, shape in run:
            if len(shape) == 1:  # norm weights: 1, as a freshly initialised model
                t = torch.ones(shape, dtype=torch.bfloat16)
            else:
                t = (torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * 0.02).to(torch.bfloat16).cpu()
            tensors[name] = t
            weight_map[name] = file
        save_file(tensors, os.path.join(a.out, file), metadata={"format": "pt"})
        del tensors
        print(f"  {file}: {len(run)} tensors ({time.time() - t0:.1f} s)", flush=True)
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        f.write("\n")
    print(f"make_checkpoint: {a.out}: {total / 1e9:.2f} GB in {len(plan)} shards, {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

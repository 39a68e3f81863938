# Peer timing on the GPU machine (torch + transformers there): Hugging Face transformers'
# Qwen3MoeForCausalLM at the Qwen3-30B-A3B shape (bench/shapes/qwen3-30b-a3b/config.json: 128
# experts, top-8, hidden 2048, expert FFN 768, 48 layers), random bf16 weights (about 61 GB made on
# the GPU). Prints one JSON line:
#   params, active_params     all weights; those a decode token reads (attention, router, 8 experts, head)
#   decode_floor_ms           active bf16 bytes over the copy bandwidth (as lg bench computes it)
#   prefill_T_ms              forward over T tokens, batch 1, last-position logits (T = 512, 2048)
#   decode_B_ms               generate() greedy, dynamic cache, batch B: ms per step (B tokens),
#                             32-token prompts, 64 new tokens (B = 1, 16, 64 unless given)
#   decode_compiled_ms        batch 1, static cache + torch.compile(mode="reduce-overhead"), when it
#                             compiles (the experts' routing has data-dependent shapes), else its error
#   experts_implementation    which expert kernels transformers used
# Usage: python3 hf_moe_peer.py [CONFIG.json] [B ...]   (run it in the same call as lg bench)
import json, os, sys, time
import torch
from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

from peer_timing import compiled_decode_ms, copy_bw

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
path = args.pop(0) if args and args[0].endswith(".json") else os.path.join(here, "..", "shapes", "qwen3-30b-a3b",
                                                                            "config.json")
batches = [int(b) for b in args] or [1, 16, 64]
with open(path) as f:
    raw = json.load(f)
raw.pop("architectures", None)
raw.pop("transformers_version", None)
cfg = Qwen3MoeConfig(**raw)


bw = copy_bw()
torch.manual_seed(0)
torch.set_default_dtype(torch.bfloat16)  # made in bf16 on the device: fp32 first would need 122 GB
with torch.device("cuda"):
    model = Qwen3MoeForCausalLM(cfg).eval()
torch.set_default_dtype(torch.float32)
n = sum(p.numel() for p in model.parameters())
D, L, V = cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size
E = getattr(cfg, "num_experts", None) or getattr(cfg, "num_local_experts")
K, Fe = cfg.num_experts_per_tok, cfg.moe_intermediate_size
q, kv = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
active = L * ((q + 2 * kv) * D + D * q + E * D + K * 3 * Fe * D) + V * D
r = {"peer": "transformers Qwen3MoeForCausalLM", "config": os.path.relpath(path), "params": n, "active_params": active,
     "copy_TBps": round(bw, 3), "decode_floor_ms": active * 2 / (bw * 1e12) * 1e3,
     "experts_implementation": str(getattr(cfg, "_experts_implementation", None) or
                                   getattr(cfg, "experts_implementation", None) or "default"),
     "device": torch.cuda.get_device_name()}
g = torch.Generator(device="cuda").manual_seed(1)
with torch.no_grad():
    for T in (512, 2048):
        x = torch.randint(0, V, (1, T), device="cuda", generator=g)
        for _ in range(2): model(x, use_cache=False, logits_to_keep=1)
        torch.cuda.synchronize(); t0 = time.time()
        for _ in range(3): model(x, use_cache=False, logits_to_keep=1)
        torch.cuda.synchronize(); r[f"prefill_{T}_ms"] = (time.time() - t0) / 3 * 1e3
    P, N = 32, 64
    for B in batches:
        try:
            prompt = torch.randint(0, V, (B, P), device="cuda", generator=g)
            mask = torch.ones_like(prompt)
            model.generate(prompt, attention_mask=mask, max_new_tokens=4, min_new_tokens=4, do_sample=False)
            torch.cuda.synchronize(); t0 = time.time()
            model.generate(prompt, attention_mask=mask, max_new_tokens=N, min_new_tokens=N, do_sample=False)
            torch.cuda.synchronize(); r[f"decode_{B}_ms"] = (time.time() - t0) / N * 1e3
            r[f"decode_{B}_tok_per_s"] = B / r[f"decode_{B}_ms"] * 1e3
        except Exception as e:  # out of memory at a large batch: say so, keep the rest
            r[f"decode_{B}_error"] = f"{type(e).__name__}: {str(e)[:200]}"
            torch.cuda.empty_cache()
    try:
        prompt = torch.randint(0, V, (1, P), device="cuda", generator=g)
        r["decode_compiled_ms"] = compiled_decode_ms(model, cfg, prompt, N, warm=8, fullgraph=False)
    except Exception as e:
        r["decode_compiled_error"] = f"{type(e).__name__}: {str(e)[:200]}"
print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}), flush=True)

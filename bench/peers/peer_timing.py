# What the transformers peers (hf_peer.py, hf_moe_peer.py) time the same way: the copy bandwidth
# of the floor, and the torch.compile'd static-cache decode step. Imported from their folder.
import time

import torch
from transformers import StaticCache


def copy_bw():
    """Device-to-device copy bandwidth in TB/s, bytes read + written (lg bench's floor counts it so)."""
    x = torch.empty(2 << 30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
    for _ in range(3): y.copy_(x)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(10): y.copy_(x)
    e1.record(); torch.cuda.synchronize()
    return 2 * (2 << 30) / (e0.elapsed_time(e1) / 10 / 1e3) / 1e12


def compiled_decode_ms(model, cfg, prompt, new_tokens, warm, fullgraph):
    """ms per token of a greedy decode step of batch 1 with a static cache under
    torch.compile(mode="reduce-overhead") (CUDA graphs), the better of two runs of new_tokens
    after two of warm; prompt is [1, P] token ids."""
    P = prompt.shape[1]
    cache = StaticCache(config=cfg, max_cache_len=P + new_tokens + 64)

    def step(ids, pos):
        out = model(input_ids=ids, position_ids=pos.view(1, -1), cache_position=pos, past_key_values=cache,
                    use_cache=True)
        return out.logits[:, -1, :].argmax(-1, keepdim=True)

    step_c = torch.compile(step, mode="reduce-overhead", fullgraph=fullgraph)

    def run(k):
        cache.reset()
        tok = step(prompt, torch.arange(P, device="cuda"))
        torch.cuda.synchronize(); t0 = time.time()
        for i in range(k):
            torch.compiler.cudagraph_mark_step_begin()
            tok = step_c(tok, torch.tensor([P + i], device="cuda")).clone()
        torch.cuda.synchronize()
        return (time.time() - t0) / k * 1e3

    run(warm); run(warm)
    return min(run(new_tokens), run(new_tokens))

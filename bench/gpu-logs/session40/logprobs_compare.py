#!/usr/bin/env python3
"""Session 40: compare.py CPU.jsonl LANE.jsonl... : per lane, requests with logprobs against the same
request without (token ids must be equal), and each token's logprob against the cpu lane's where the
two lanes generated the same tokens so far (max and median absolute difference)."""
import json, statistics, sys

def load(path):
    out = {}
    for line in open(path):
        j = json.loads(line)
        b = j["response"]["body"]
        c = b["choices"][0]
        lp = c.get("logprobs")
        vals = None
        if lp:
            vals = [e["logprob"] for e in lp["content"]] if "content" in lp else lp["token_logprobs"]
        out[j["custom_id"]] = (c["token_ids"], vals)
    return out

cpu = load(sys.argv[1])
for path in sys.argv[2:]:
    lane = load(path)
    changed = sum(1 for k, (ids, _) in lane.items() if k.endswith("-1") and ids != lane[k[:-1] + "0"][0])
    diffs, same_tokens = [], 0
    for k, (ids, vals) in lane.items():
        if not k.endswith("-1"):
            continue
        cids, cvals = cpu[k]
        n = 0
        while n < len(ids) and n < len(cids) and ids[n] == cids[n]:
            n += 1
        same_tokens += n
        diffs += [abs(a - b) for a, b in zip(vals[:n], cvals[:n])]
    print(f"{path}: {changed} of {sum(1 for k in lane if k.endswith('-1'))} requests changed tokens when asking for logprobs; "
          f"logprobs vs cpu over {len(diffs)} tokens (shared prefixes): max {max(diffs):.4f}, median {statistics.median(diffs):.5f}")

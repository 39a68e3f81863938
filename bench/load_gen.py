#!/usr/bin/env python3
"""Load generator for `lg serve` (or any OpenAI-compatible /v1/completions server), in the spirit of
vLLM's benchmarks/benchmark_serving.py, with the Python standard library only.

It sends N streaming completion requests whose prompts are random token ids (lengths drawn
uniformly from --prompt-len) with `ignore_eos` and a random `max_tokens` (--output-len), either
all at once under a concurrency cap (--concurrency) or arriving as a Poisson process at fixed
rates (--request-rate 2,4,8: one run per rate). It reports, per run: output tokens/s, requests/s,
time to first token (TTFT), time per output token (TPOT), inter-token latency (ITL, between
streamed chunks, as vLLM measures it) and end-to-end latency, each mean/p50/p99, and checks each
stream for mix-ups (chunks of another request, a token count that differs from its usage).

    python3 bench/load_gen.py --url http://127.0.0.1:8000 -n 512 --prompt-len 128:1024 \\
        --output-len 128:512 --concurrency 128 --json out.json
    python3 bench/load_gen.py -n 200 --request-rate 2,4,8 --concurrency 256

The server must accept token-id prompts and `ignore_eos` (lg serve, vLLM). Exit status 1 when any
request failed or was mixed up.
"""

import argparse
import asyncio
import json
import math
import random
import sys
import time
import urllib.request
from urllib.parse import urlparse


def parse_range(text, name):
    """'128:1024' -> (128, 1024); '64' -> (64, 64)."""
    try:
        parts = [int(p) for p in text.split(":")]
    except ValueError:
        raise SystemExit(f"{name}: expected N or LO:HI (integers), got {text!r}")
    lo, hi = (parts[0], parts[0]) if len(parts) == 1 else parts[:2]
    if len(parts) > 2 or lo < 1 or hi < lo:
        raise SystemExit(f"{name}: expected N or LO:HI with 1 <= LO <= HI, got {text!r}")
    return lo, hi


def percentile(values, p):
    """The p-th percentile (0-100) with linear interpolation, as numpy's default."""
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * p / 100.0
    f = math.floor(k)
    c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)


def summary(values, scale=1000.0):
    """mean, p50, p99 (milliseconds by default)."""
    if not values:
        return {"mean": None, "p50": None, "p99": None}
    return {"mean": sum(values) / len(values) * scale, "p50": percentile(values, 50) * scale,
            "p99": percentile(values, 99) * scale}


async def read_http_response(reader):
    """The status and headers of an HTTP/1.1 response; the body is left to the caller."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("the server closed the connection before answering")
    status = int(status_line.split()[1])
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        key, _, value = line.decode("latin-1").partition(":")
        headers[key.strip().lower()] = value.strip()
    return status, headers


async def body_chunks(reader, headers):
    """Yields the body as it arrives: chunked transfer encoding, Content-Length or to EOF."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                await reader.readline()
                return
            data = await reader.readexactly(size)
            await reader.readexactly(2)
            yield data
    elif "content-length" in headers:
        yield await reader.readexactly(int(headers["content-length"]))
    else:
        yield await reader.read()


async def one_request(url, body):
    """Sends one streaming completion; returns its timings, tokens and problems."""
    u = urlparse(url)
    payload = json.dumps(body).encode()
    rec = {"ok": False, "error": None, "ttft": None, "itl": [], "latency": None, "output_tokens": 0,
           "prompt_tokens": len(body["prompt"]), "mixed_up": False}
    start = time.perf_counter()
    try:
        reader, writer = await asyncio.open_connection(u.hostname, u.port or 80, limit=1 << 20)
    except OSError as e:
        rec["error"] = f"connect: {e}"
        return rec
    try:
        writer.write(f"POST /v1/completions HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode() + payload)
        await writer.drain()
        status, headers = await read_http_response(reader)
        buf, last, ids, streamed, done, usage = b"", None, set(), 0, False, None
        async for data in body_chunks(reader, headers):
            if status != 200:
                rec["error"] = f"HTTP {status}: {data[:300].decode(errors='replace')}"
                return rec
            buf += data
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                if not event.startswith(b"data: "):
                    continue
                payload_text = event[6:]
                if payload_text == b"[DONE]":
                    done = True
                    continue
                chunk = json.loads(payload_text)
                if "error" in chunk:
                    rec["error"] = f"error event: {chunk['error'].get('message')}"
                    continue
                ids.add(chunk.get("id"))
                if chunk.get("usage"):
                    usage = chunk["usage"]
                choices = chunk.get("choices") or []
                if not choices:
                    continue
                choice = choices[0]
                n = len(choice.get("token_ids") or [])
                if n == 0 and not choice.get("text"):
                    continue  # the finish chunk
                now = time.perf_counter()
                streamed += n
                if last is None:
                    rec["ttft"] = now - start
                else:
                    rec["itl"].append(now - last)
                last = now
        rec["latency"] = time.perf_counter() - start
        if status != 200:
            rec["error"] = f"HTTP {status}"
        elif not done:
            rec["error"] = rec["error"] or "the stream ended without [DONE]"
        elif usage is None:
            rec["error"] = "no usage chunk"
        else:
            rec["output_tokens"] = usage["completion_tokens"]
            # Mixed up: chunks from several requests, or token ids that do not add up to the usage
            # (counted only when the server sends ids: lg serve --shape, or return_token_ids).
            rec["mixed_up"] = len(ids) != 1 or (streamed and streamed != usage["completion_tokens"]) or \
                usage["completion_tokens"] != body["max_tokens"]
            rec["ok"] = not rec["mixed_up"]
            if rec["mixed_up"]:
                rec["error"] = (f"mixed up: ids {sorted(map(str, ids))[:3]}, {streamed} ids streamed, usage "
                                f"{usage['completion_tokens']}, max_tokens {body['max_tokens']}")
    except (OSError, ValueError, asyncio.IncompleteReadError) as e:
        rec["error"] = f"{type(e).__name__}: {e}"
    finally:
        writer.close()
    return rec


def make_requests(args, model):
    rng = random.Random(args.seed)
    lo_id, hi_id = args.token_range
    out = []
    for _ in range(args.num_requests):
        n_in = rng.randint(*args.prompt_len)
        n_out = rng.randint(*args.output_len)
        body = {"prompt": [rng.randrange(lo_id, hi_id) for _ in range(n_in)], "max_tokens": n_out,
                "temperature": 0, "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True},
                "return_token_ids": True}
        if model:
            body["model"] = model
        out.append(body)
    return out


async def run(args, requests, rate):
    """Sends `requests` at `rate` per second (Poisson; inf: all at once) under the concurrency cap."""
    cap = asyncio.Semaphore(args.concurrency or len(requests))
    rng = random.Random(args.seed + 1)

    async def limited(body):
        async with cap:
            return await one_request(args.url, body)

    tasks = []
    start = time.perf_counter()
    for body in requests:
        tasks.append(asyncio.create_task(limited(body)))
        if rate != math.inf:
            await asyncio.sleep(rng.expovariate(rate))
    records = await asyncio.gather(*tasks)
    return records, time.perf_counter() - start


def report(records, duration, rate, args):
    ok = [r for r in records if r["ok"]]
    out_tokens = sum(r["output_tokens"] for r in ok)
    in_tokens = sum(r["prompt_tokens"] for r in ok)
    tpot = [(r["latency"] - r["ttft"]) / (r["output_tokens"] - 1) for r in ok if r["output_tokens"] > 1 and r["ttft"]]
    errors = {}
    for r in records:
        if r["error"]:
            errors[r["error"][:120]] = errors.get(r["error"][:120], 0) + 1
    return {
        "request_rate": "inf" if rate == math.inf else rate,
        "concurrency": args.concurrency or len(records),
        "num_requests": len(records),
        "completed": len(ok),
        "failed": len(records) - len(ok),
        "mixed_up": sum(1 for r in records if r["mixed_up"]),
        "duration_s": duration,
        "total_input_tokens": in_tokens,
        "total_output_tokens": out_tokens,
        "request_throughput": len(ok) / duration,
        "output_throughput": out_tokens / duration,
        "total_token_throughput": (in_tokens + out_tokens) / duration,
        "ttft_ms": summary([r["ttft"] for r in ok if r["ttft"] is not None]),
        "tpot_ms": summary(tpot),
        "itl_ms": summary([x for r in ok for x in r["itl"]]),
        "e2e_latency_ms": summary([r["latency"] for r in ok]),
        "errors": errors,
    }


def print_report(res):
    f = lambda v: "-" if v is None else f"{v:.2f}"
    print(f"=== rate {res['request_rate']} req/s, concurrency {res['concurrency']}: {res['completed']}/"
          f"{res['num_requests']} completed, {res['failed']} failed, {res['mixed_up']} mixed up, "
          f"{res['duration_s']:.2f} s")
    print(f"  output {res['output_throughput']:.1f} tok/s, total {res['total_token_throughput']:.1f} tok/s, "
          f"{res['request_throughput']:.2f} req/s ({res['total_input_tokens']} in, {res['total_output_tokens']} out)")
    for key in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_latency_ms"):
        s = res[key]
        print(f"  {key[:-3].upper():12} mean {f(s['mean'])} ms  p50 {f(s['p50'])} ms  p99 {f(s['p99'])} ms")
    for err, n in res["errors"].items():
        print(f"  error x{n}: {err}")


def served_model(url):
    """The served model's id and its context (max_model_len; None when the server does not say)."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/v1/models", timeout=10) as r:
            m = json.load(r)["data"][0]
            return m["id"], m.get("max_model_len")
    except Exception as e:  # noqa: BLE001: any failure here means no server to load
        raise SystemExit(f"cannot read {url}/v1/models: {e}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8000", help="the server (default %(default)s)")
    p.add_argument("-n", "--num-requests", type=int, default=256)
    p.add_argument("--prompt-len", default="128:1024", help="prompt tokens, N or LO:HI uniform (default %(default)s)")
    p.add_argument("--output-len", default="128:512", help="max_tokens, N or LO:HI uniform (default %(default)s)")
    p.add_argument("--concurrency", type=int, default=0, help="most requests in flight (default: all)")
    p.add_argument("--request-rate", default="inf",
                   help="Poisson arrival rates in requests/s, comma-separated, one run each; inf: all at once")
    p.add_argument("--token-range", default="0:151643",
                   help="prompt ids are drawn from [LO, HI) (default: Qwen's ids below its special tokens)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the results (a list, one per rate) to this file")
    args = p.parse_args()
    args.prompt_len = parse_range(args.prompt_len, "--prompt-len")
    args.output_len = parse_range(args.output_len, "--output-len")
    lo, hi = (int(x) for x in args.token_range.split(":"))
    args.token_range = (lo, hi)
    if args.num_requests < 1 or args.concurrency < 0 or not 0 <= lo < hi:
        raise SystemExit("--num-requests >= 1, --concurrency >= 0 and --token-range LO:HI with 0 <= LO < HI")
    try:
        rates = [math.inf if r.strip() == "inf" else float(r) for r in args.request_rate.split(",")]
    except ValueError:
        raise SystemExit(f"--request-rate: numbers or inf, comma-separated, got {args.request_rate!r}")
    if any(r <= 0 for r in rates):
        raise SystemExit("--request-rate: every rate must be > 0")

    model, context = served_model(args.url)
    # A server answers 400 to a prompt and max_tokens the context cannot hold together (as vLLM):
    # say so once here rather than as many errors as requests drawn past it.
    if context is not None and args.prompt_len[1] + args.output_len[1] > context:
        raise SystemExit(f"--prompt-len up to {args.prompt_len[1]} and --output-len up to {args.output_len[1]} exceed "
                         f"the server's context of {context} tokens (max_model_len): lower them or serve a longer "
                         f"--max-seq")
    requests = make_requests(args, model)
    results = []
    for rate in rates:
        records, duration = asyncio.run(run(args, requests, rate))
        res = report(records, duration, rate, args)
        res.update({"model": model, "url": args.url, "prompt_len": list(args.prompt_len),
                    "output_len": list(args.output_len), "seed": args.seed,
                    "date": time.strftime("%Y-%m-%d %H:%M:%S")})
        print_report(res)
        results.append(res)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

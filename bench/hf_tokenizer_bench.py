#!/usr/bin/env python3
"""Encode throughput of Hugging Face `tokenizers` on the corpus that bench/tokenizer_bench writes,
one thread, measured the same way (whole corpus in one `encode` call, no special tokens added;
the corpus as ~2 KB documents, one call each; each section in one call), for a side-by-side with lanegraph's tokenizer_bench. Optionally checks that
the ids equal the ones tokenizer_bench wrote (--expect-ids, little-endian int32).

Usage (on a machine with `tokenizers`):
  build/bench/tokenizer_bench --write-corpus corpus.txt --ids-out ids.bin   # where the corpus is made
  python3 bench/hf_tokenizer_bench.py --tokenizer models/qwen3-pycode-22m/tokenizer.json \
      --corpus corpus.txt [--expect-ids ids.bin] [--repeats 5]
"""
import argparse
import array
import os
import statistics
import sys
import time

# One thread: set before tokenizers is imported (it reads the variables once).
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("RAYON_NUM_THREADS", "1")

from tokenizers import Tokenizer  # noqa: E402


def read_sections(path):
    """The corpus and its sections (from the .sections index tokenizer_bench writes beside it)."""
    data = open(path, "rb").read()
    sections = []
    index = path + ".sections"
    if os.path.exists(index):
        at = 0
        for line in open(index):
            name, size = line.split()
            sections.append((name, data[at:at + int(size)].decode("utf-8")))
            at += int(size)
    if not sections:
        sections = [("all", data.decode("utf-8"))]
    return data, sections


def median_seconds(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--expect-ids")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    data, sections = read_sections(args.corpus)
    text = "".join(s for _, s in sections)
    mb = len(data) / 1e6
    print(f"corpus: {len(data)} bytes;", " ".join(f"{n} {len(s.encode())}" for n, s in sections))

    t0 = time.perf_counter()
    tok = Tokenizer.from_file(args.tokenizer)
    print(f"load tokenizer.json: {time.perf_counter() - t0:.3f} s")

    t0 = time.perf_counter()
    ids = tok.encode(text, add_special_tokens=False).ids
    cold = time.perf_counter() - t0
    warm = median_seconds(lambda: tok.encode(text, add_special_tokens=False), args.repeats)
    print(f"whole corpus: {len(ids)} tokens; cold {mb / cold:.2f} MB/s, "
          f"warm median {mb / warm:.2f} MB/s = {len(ids) / warm:.0f} tokens/s ({args.repeats} runs)")
    # The same ~2 KB documents as tokenizer_bench: whole lines, closed at 2,000 bytes.
    docs, start, at = [], 0, 0
    while at < len(data):
        nl = data.find(b"\n", at)
        at = len(data) if nl < 0 else nl + 1
        if at - start >= 2000 or at == len(data):
            docs.append(data[start:at].decode("utf-8"))
            start = at
    counts = []
    t = median_seconds(lambda: counts.append(sum(len(tok.encode(d, add_special_tokens=False).ids) for d in docs)),
                       args.repeats)
    print(f"documents: {len(docs)} of ~2 KB, {counts[-1]} tokens; warm median {mb / t:.2f} MB/s = "
          f"{counts[-1] / t:.0f} tokens/s")
    for name, s in sections:
        t = median_seconds(lambda: tok.encode(s, add_special_tokens=False), args.repeats)
        print(f"  {name:<7} {len(s.encode()) / 1e6 / t:8.2f} MB/s warm median")

    if args.expect_ids:
        expected = array.array("i")
        with open(args.expect_ids, "rb") as f:
            expected.frombytes(f.read())
        if sys.byteorder != "little":
            expected.byteswap()
        expected = expected.tolist()
        if expected == ids:
            print(f"ids: identical to {args.expect_ids} ({len(ids)} tokens)")
        else:
            first = next((i for i, (a, b) in enumerate(zip(expected, ids)) if a != b),
                         min(len(expected), len(ids)))
            lo = max(0, first - 5)
            print(f"ids: DIFFER from {args.expect_ids} at token {first} "
                  f"(lengths {len(expected)} vs {len(ids)})")
            print("  lanegraph:", expected[lo:first + 5])
            print("  hf       :", ids[lo:first + 5])
            print("  hf tokens:", [tok.id_to_token(i) for i in ids[lo:first + 5]])
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

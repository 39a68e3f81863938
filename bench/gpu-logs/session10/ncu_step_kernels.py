"""Kernel durations of the last decode step in an `ncu --metrics gpu__time_duration.sum --csv` log
of `lg bench` (steps split at the embedding kernel), summed per kernel name and launch shape."""
import collections
import csv
import re
import sys

lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
rows = [(r["Kernel Name"], r["Grid Size"], r["Block Size"], float(r["Metric Value"].replace(",", "")))
        for r in csv.DictReader(lines[start:]) if r.get("Metric Name") == "gpu__time_duration.sum"]
step = rows[max(i for i, r in enumerate(rows) if "embed" in r[0]):]
agg = collections.OrderedDict()
for name, grid, block, ns in step:
    m = re.search(r"dev::(\w+)", name)
    key = f"{m.group(1) if m else name[:60]} grid {grid} block {block}"
    a = agg.setdefault(key, [0, 0.0])
    a[0] += 1
    a[1] += ns
print(f"last step: {len(step)} kernels, {sum(r[3] for r in step) / 1e3:.1f} us")
for key, (n, ns) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"  {key[:100]:100s} x{n:3d} {ns / 1e3:8.1f} us  {ns / n / 1e3:7.2f} us each")

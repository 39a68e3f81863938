"""Kernel durations and DRAM bytes of the last decode step in an `ncu --metrics
gpu__time_duration.sum,dram__bytes_read.sum --csv` log of `lg bench`, summed per kernel name and
launch shape. The step starts at the last kernel whose name matches MARKER (the compiled lane's
`k0_gather`, the hand-written lane's `embed`). Usage: python3 ncu_step_kernels.py LOG.csv[.xz] MARKER"""
import collections
import csv
import lzma
import re
import sys

path, marker = sys.argv[1], sys.argv[2]
text = lzma.open(path, "rt").read() if path.endswith(".xz") else open(path).read()
lines = text.splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
kernels = collections.OrderedDict()
for r in csv.DictReader(lines[start:]):
    k = kernels.setdefault(r["ID"], {"name": r["Kernel Name"], "grid": r["Grid Size"], "block": r["Block Size"]})
    k[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
rows = list(kernels.values())
step = rows[max(i for i, r in enumerate(rows) if re.search(marker, r["name"])):]
ns_all = sum(r["gpu__time_duration.sum"] for r in step)
print(f"last step: {len(step)} kernels, {ns_all / 1e3:.1f} us, {sum(r['dram__bytes_read.sum'] for r in step) / 1e9:.3f} GB read")
agg = collections.OrderedDict()
for r in step:
    a = agg.setdefault((re.sub(r"\(.*", "", r["name"])[:60], r["grid"], r["block"]), [0, 0.0, 0.0])
    a[0] += 1
    a[1] += r["gpu__time_duration.sum"]
    a[2] += r["dram__bytes_read.sum"]
for (name, grid, block), (n, ns, b) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"  {name:60s} grid {grid:>14s} block {block:>12s} x{n:3d} {ns / 1e3:8.1f} us {ns / n / 1e3:7.2f} each"
          f" {b / n / 1e6:8.2f} MB each {b / ns / 1e3:5.2f} TB/s")

"""The last decode step in an `ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv` log of
`lg bench` (steps split at the embedding kernel): time and DRAM bytes summed per kernel name and
launch shape (session 10's ncu_step_kernels.py with the bytes)."""
import collections
import csv
import re
import sys

lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
kern = collections.OrderedDict()
for r in csv.DictReader(lines[start:]):
    k = kern.setdefault(r["ID"], {"name": r["Kernel Name"], "grid": r["Grid Size"], "block": r["Block Size"]})
    v = float(r["Metric Value"].replace(",", ""))
    unit = r.get("Metric Unit", "")
    if r["Metric Name"] == "gpu__time_duration.sum":
        k["ns"] = v * {"usecond": 1e3, "msecond": 1e6, "nsecond": 1.0}.get(unit, 1.0)
    elif r["Metric Name"] == "dram__bytes_read.sum":
        k["bytes"] = v * {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(unit, 1.0)
rows = list(kern.values())
step = rows[max(i for i, r in enumerate(rows) if "embed" in r["name"]):]
agg = collections.OrderedDict()
for r in step:
    m = re.search(r"dev::(\w+)", r["name"])
    key = f"{m.group(1) if m else r['name'][:60]} grid {r['grid']} block {r['block']}"
    a = agg.setdefault(key, [0, 0.0, 0.0])
    a[0] += 1
    a[1] += r.get("ns", 0.0)
    a[2] += r.get("bytes", 0.0)
print(f"last step: {len(step)} kernels, {sum(r.get('ns', 0) for r in step) / 1e3:.1f} us, "
      f"{sum(r.get('bytes', 0) for r in step) / 1e9:.2f} GB read")
for key, (n, ns, b) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"  {key[:96]:96s} x{n:3d} {ns / 1e3:8.1f} us {ns / n / 1e3:7.2f} us each {b / 1e9:7.2f} GB "
          f"{b / ns / 1e3 if ns else 0:5.2f} TB/s")

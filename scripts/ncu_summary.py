#!/usr/bin/env python3
"""Sums an Nsight Compute CSV (ncu --csv --metrics gpu__time_duration.sum,...) by kernel.

Usage: ncu_summary.py FILE.csv [ROWS]

One line per (kernel name, grid): total and median time, launches, and, where the CSV has
them, median DRAM bytes read (with the rate they make over the median time) and registers per
thread. Sorted by total time. Used by the call scripts in bench/gpu-logs/ to keep only the
summary of a profile (the raw CSV of a whole bench run is tens of thousands of lines).
"""
import collections
import csv
import statistics
import sys


def main():
    path = sys.argv[1]
    rows_out = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    with open(path) as f:
        lines = [line for line in f if line.startswith('"')]
    kernels = collections.OrderedDict()
    for rec in csv.DictReader(lines):
        k = kernels.setdefault(rec["ID"], {"name": rec["Kernel Name"], "grid": rec["Grid Size"]})
        k[rec["Metric Name"]] = rec["Metric Value"].replace(",", "")
    groups = collections.OrderedDict()
    for k in kernels.values():
        groups.setdefault((k["name"][:48], k["grid"]), []).append(k)
    table = []
    for (name, grid), ks in groups.items():
        t = [float(k["gpu__time_duration.sum"]) for k in ks]  # ns
        med_t = statistics.median(t)
        dram = [float(k["dram__bytes_read.sum"]) for k in ks if "dram__bytes_read.sum" in k]
        med_b = statistics.median(dram) if dram else None
        table.append((sum(t), name, grid, len(ks), med_t, med_b, ks[0].get("launch__registers_per_thread", "-")))
    table.sort(reverse=True)
    print(f"{'total us':>10} {'n':>5} {'median us':>10} {'MB read':>8} {'TB/s':>6} {'regs':>4}  kernel (grid)")
    for total, name, grid, n, med_t, med_b, regs in table[:rows_out]:
        mb = f"{med_b / 1e6:8.2f}" if med_b is not None else f"{'-':>8}"
        rate = f"{med_b / med_t / 1e3:6.2f}" if med_b is not None and med_t > 0 else f"{'-':>6}"
        print(f"{total / 1e3:10.1f} {n:5d} {med_t / 1e3:10.2f} {mb} {rate} {regs:>4}  {name} {grid}")


if __name__ == "__main__":
    main()

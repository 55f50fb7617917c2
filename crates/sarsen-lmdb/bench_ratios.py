#!/usr/bin/env python3
"""Ratios of sarsen-capi to sarsen and to lmdb per workload, from sarsen-bench JSON
files (several files or --repeat runs: the median rate of each)."""
import json, sys, statistics
from collections import defaultdict
rates = defaultdict(list)
order = []
for f in sys.argv[1:]:
    for r in json.load(open(f))['records']:
        key = (r['workload'], r['threads'])
        if key not in order:
            order.append(key)
        rates[(key, r['engine'])].append(r['ops_per_sec'])
med = {k: statistics.median(v) for k, v in rates.items()}
print("| workload | sarsen ops/s | sarsen-capi ops/s | lmdb ops/s | capi/sarsen | capi/lmdb |")
print("|---|---:|---:|---:|---:|---:|")
for key in order:
    s, c, l = (med.get((key, e)) for e in ("sarsen", "sarsen-capi", "lmdb"))
    if not (s and c and l):
        continue
    name = key[0] if key[1] == 1 else f"{key[0]} ({key[1]} threads)"
    print(f"| {name} | {s:,.0f} | {c:,.0f} | {l:,.0f} | {c/s:.3f} | {c/l:.3f} |")

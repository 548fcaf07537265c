#!/usr/bin/env python3
"""The A/B's two builds beside cuDNN (run.sh's files): per point cuDNN's median time over each build's best
median of its two runs (> 1: faster than cuDNN), and each build's two runs.
  vs_cudnn.py DIR   (DIR/cudnn.json, DIR/ab/{before,after}-{1,2}.json)"""
import json
import os
import sys

d = sys.argv[1]


def load(name):
    recs = json.load(open(os.path.join(d, name)))["records"]
    return {r["name"].split("/", 1)[1]: r["time"]["median_s"] for r in recs if r["status"] == "ok"}


cudnn = load("cudnn.json")
runs = {side: [load(f"ab/{side}-{i}.json") for i in (1, 2)] for side in ("before", "after")}
print("| point | cuDNN ms | before ms (runs) | after ms (runs) | cuDNN / before | cuDNN / after |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for k in runs["before"][0]:
    b = [r[k] * 1e3 for r in runs["before"]]
    a = [r[k] * 1e3 for r in runs["after"]]
    c = cudnn[k] * 1e3
    print(f"| `{k}` | {c:.3f} | {min(b):.3f} ({b[0]:.3f}, {b[1]:.3f}) | {min(a):.3f} ({a[0]:.3f}, {a[1]:.3f}) | "
          f"{c / min(b):.3f} | {c / min(a):.3f} |")

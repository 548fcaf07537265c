#!/usr/bin/env python3
"""The distribution of measured / predicted DRAM bytes over result files, for the L2 simulation
and the wave model side by side (issue 19; docs/io-model.md).

    scripts/dram_distribution.py [--flashio build-nocuda/flashio] [--misses] [--sim-arg=ARG]... FILE...

Runs `flashio analyze --json` twice (default, and --dram-waves) and prints per file and in total
how many fused DRAM points fall within ±10 % and ±25 %, and how many the wave model left outside
its scope. --misses lists every point outside ±10 % of the simulation with both ratios.
--sim-arg passes an option to the simulation's run only (e.g. --sim-arg=--l2-dirty-share=0: the
simulation without the measured dirty limit; --sim-arg=--l2-partitions=1: one pool).
"""
import argparse
import json
import os
import subprocess
import sys


def analyze(flashio, files, extra):
    out = subprocess.run([flashio, "analyze", "--json", *extra, *files], capture_output=True, text=True)
    if out.returncode not in (0, 3):  # 3: some verdicts do not hold (docs/hostile-input.md)
        sys.exit(f"flashio analyze failed ({out.returncode}): {out.stderr}")
    return json.loads(out.stdout)


def points(doc):
    """{(file, name): (ratio, judged, out_of_scope, dominant)} for fused records with a DRAM ratio."""
    got = {}
    for f in doc["files"]:
        path = os.path.basename(f["path"])
        for r in f["records"]:
            if r.get("dram_ratio") is None or not isinstance(r.get("dram_model"), dict):
                continue
            if r.get("dram_verdict") is None and r.get("dram_scope") is None:
                continue  # not a fused kernel
            got[(path, r["name"])] = (r["dram_ratio"], r.get("dram_verdict") is not None, r.get("dram_scope") is not None,
                                      r["dram_model"].get("dominant", ""))
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flashio", default="build-nocuda/flashio")
    ap.add_argument("--misses", action="store_true")
    ap.add_argument("--sim-arg", action="append", default=[], help="an option for the simulation's analyze run")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    sim = points(analyze(a.flashio, a.files, a.sim_arg))
    waves = points(analyze(a.flashio, a.files, ["--dram-waves"]))
    files = sorted({k[0] for k in sim})
    print(f"| file | points | simulation ±10 % | ±25 % | waves ±10 % | ±25 % | waves out of scope |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    tot = [0] * 6
    for f in files + [None]:
        keys = [k for k in sim if f is None or k[0] == f]
        row = [len(keys),
               sum(abs(sim[k][0] - 1) <= 0.10 for k in keys), sum(abs(sim[k][0] - 1) <= 0.25 for k in keys),
               sum(k in waves and abs(waves[k][0] - 1) <= 0.10 for k in keys),
               sum(k in waves and abs(waves[k][0] - 1) <= 0.25 for k in keys),
               sum(k in waves and waves[k][2] for k in keys)]
        print(f"| {f or '**all**'} | " + " | ".join(str(x) for x in row) + " |")
    if a.misses:
        print("\n| file | point | simulation | waves | dominant term (simulation) |\n| --- | --- | ---: | ---: | --- |")
        for k in sorted(sim):
            if abs(sim[k][0] - 1) > 0.10:
                w = waves.get(k, (float("nan"),))[0]
                print(f"| {k[0]} | {k[1]} | {sim[k][0]:.3f} | {w:.3f} | {sim[k][3]} |")


if __name__ == "__main__":
    main()

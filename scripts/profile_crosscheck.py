#!/usr/bin/env python3
"""Compares a `flashio profile` file (one record per kernel launch) with Nsight Compute's CSV of
the same program, kernel by kernel and byte count by byte count.

Both runs profile every kernel launch of the same deterministic program in the same order, so
launch i of one is launch i of the other (names are checked). Each byte count of ours
(counters.bytes: DRAM read/write, SM<->L2 read/write, L2 reductions, atomics) is compared with
ncu's metric (the quantities and units of scripts/ncu_crosscheck.py). Counts below 1 MB on both
sides are printed but not judged (a few dirty lines of L2 decide them). Exit 0 when every judged
count agrees within the tolerance (default 1 %). Both runs should treat the L2 alike (flashio
profile's and ncu's --cache-control, scripts/profile_crosscheck.sh): the profile file says which
it used, and the table's last line repeats it.

    scripts/profile_crosscheck.py OURS.json NCU.csv [--tolerance 0.01]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_crosscheck import QUANTITIES, read_ncu  # noqa: E402

NOISE_FLOOR = 1e6  # bytes; as ncu_crosscheck.py


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ours")
    ap.add_argument("ncu_csv")
    ap.add_argument("--tolerance", type=float, default=0.01)
    a = ap.parse_args()
    profile = json.load(open(a.ours))["profile"]
    records = [r for r in profile["records"] if r["kind"] == "kernel"]
    kernels = read_ncu(a.ncu_csv)
    if not records:
        sys.exit(f"{a.ours}: no kernel records ({'; '.join(profile.get('notes', []))})")
    if len(records) != len(kernels):
        sys.exit(f"{len(records)} kernel launches in {a.ours}, {len(kernels)} in {a.ncu_csv}: not the same run")
    worst, failed, rows = 0.0, 0, []
    for i, (r, (ncu_name, metrics)) in enumerate(zip(records, kernels)):
        c = r["counters"]
        if c.get("status") != "ok":
            sys.exit(f"launch {i} {r['name']}: no counters ({c.get('reason')})")
        short = r["name"].split("<")[0].split("::")[-1]
        if short not in ncu_name:
            sys.exit(f"launch {i}: ours is {r['name']}, ncu's is {ncu_name}: not the same kernel")
        for key, (metric, unit) in QUANTITIES.items():
            if key not in c["bytes"] or metric not in metrics:
                continue
            ours, theirs = c["bytes"][key], metrics[metric] * unit
            judged = max(ours, theirs) > NOISE_FLOOR
            rel = abs(ours - theirs) / max(theirs, 1.0) if judged else 0.0
            worst = max(worst, rel)
            failed += rel > a.tolerance
            rows.append((i, r["name"], key, ours, theirs, rel, judged))
    print("| launch | kernel | quantity | flashio profile (bytes) | ncu (bytes) | difference |")
    print("| ---: | --- | --- | ---: | ---: | ---: |")
    for i, name, key, ours, theirs, rel, judged in rows:
        diff = f"{100 * rel:.3f} %" if judged else "(< 1 MB)"
        print(f"| {i} | {name[:80]} | {key} | {ours:,.0f} | {theirs:,.0f} | {diff} |")
    ok = failed == 0
    print(f"\nflashio profile --cache-control {profile.get('cache_control', 'none (a file from before the option)')}.")
    print(f"{len(records)} launches, {len(rows)} byte counts; worst difference {100 * worst:.3f} % "
          f"(tolerance {100 * a.tolerance:.1f} %): {'PASS' if ok else f'FAIL ({failed} counts)'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

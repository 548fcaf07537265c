#!/usr/bin/env python3
"""Prints flash2's TFLOP/s against PyTorch SDPA's flash back-end, point by point, from a flashio
result file and a peers file of the same run (scripts/peers_sdpa.py --run-id). Usage:
  scripts/flash2_vs_sdpa.py FLASHIO.json SDPA.json [--method flash2] [--peer sdpa_flash]
One row per (pass, d, causal) and a column per N: "ours / peer (ratio)"."""
import argparse
import json
from collections import defaultdict


def load(path):
    with open(path) as f:
        return json.load(f)


def key(r):
    p = r["problem"]
    return (r["pass"], p["head_dim"], p["causal"], p["seqlen_q"], p.get("mma", ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("peers")
    ap.add_argument("--method", default="flash2")
    ap.add_argument("--peer", default="sdpa_flash")
    ap.add_argument("--mma", default="", help="the forced --mma of our records (default: none, the method's choice)")
    args = ap.parse_args()
    a, b = load(args.ours), load(args.peers)
    if a.get("run_id") != b.get("run_id"):
        print(f"note: run ids differ ({a.get('run_id')} vs {b.get('run_id')})")
    ours = {key(r)[:4]: r for r in a["records"]
            if r["method"] == args.method and r["status"] == "ok" and key(r)[4] == args.mma}
    peer = {key(r)[:4]: r for r in b["records"] if r["method"] == args.peer and r["status"] == "ok"}
    rows = defaultdict(dict)
    for k, r in ours.items():
        if k in peer:
            rows[k[:3]][k[3]] = (r["tflops"], peer[k]["tflops"])
    ns = sorted({k[3] for k in ours})
    print(f"| pass | d | causal | " + " | ".join(str(n) for n in ns) + " |")
    print("|---|---|---|" + "---|" * len(ns))
    worst = None
    for (ps, d, c), cols in sorted(rows.items()):
        cells = []
        for n in ns:
            if n in cols:
                x, y = cols[n]
                cells.append(f"{x:.0f} / {y:.0f} ({x / y:.2f})")
                if n >= 1024:
                    worst = min(worst, x / y) if worst is not None else x / y
            else:
                cells.append("-")
        print(f"| {ps} | {d} | {'yes' if c else 'no'} | " + " | ".join(cells) + " |")
    if worst is not None:
        print(f"lowest {args.method}/{args.peer} at N >= 1024: {worst:.3f}")


if __name__ == "__main__":
    main()

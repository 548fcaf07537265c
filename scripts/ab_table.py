#!/usr/bin/env python3
"""Before/after table of two builds measured in one session: per point, the best median of the
runs of each side, their ratio and, with two or more runs a side, the ratio of each round. Prints
Markdown.

    scripts/ab_table.py --before A1.json [A2.json ...] --after B1.json [B2.json ...] [--peer P1.json ...]

Each side's runs are alternated on the same GPU (A, B, A, B) so that clock drift hits both; the
spread of one side's runs against each other is printed as the noise to read the ratios against.
--peer adds another method's runs of the same points (cuDNN through scripts/peers_sdpa.py, say;
matched on the name without its method): its best median and its time over each side's (> 1: the
side is faster than the peer), per round where there is one peer run per round.
"""
import argparse
import json
import statistics


def load(paths, key=lambda name: name):
    """The files, and each file's ok records by key(name)."""
    runs = [json.load(open(p)) for p in paths]
    recs = [{key(r["name"]): r for r in f["records"] if r.get("status") == "ok"} for f in runs]
    return runs, recs


def without_method(name):
    return name.split("/", 1)[1]  # "flash3/bwd/b:8/..." -> "bwd/b:8/..."


def median_ms(recs, name):
    return [r[name]["time"]["median_s"] * 1e3 for r in recs]


def rounds(ratios):
    return " (" + ", ".join(f"{x:.3f}" for x in ratios) + ")" if len(ratios) > 1 else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", nargs="+", required=True)
    ap.add_argument("--after", nargs="+", required=True)
    ap.add_argument("--peer", nargs="+", default=[])
    a = ap.parse_args()
    bf, br = load(a.before)
    af, ar = load(a.after)
    pf, pr = load(a.peer, without_method)
    names = [n for n in br[0] if all(n in r for r in br + ar)]
    by_round = len(br) == len(ar)
    peer_rounds = len(pr) == len(br) and by_round
    rev = lambda fs: ", ".join(sorted({f["build"]["git_revision"][:7] for f in fs}))
    n_runs = lambda fs: f"{len(fs)} run" + ("s" if len(fs) > 1 else "")
    methods = lambda recs: ", ".join(sorted({r["method"] for r in recs[0].values()}))
    peer = methods(pr) if pf else None
    print(f"{bf[0]['device']['name']}; {methods(br)}, before: {rev(bf)} ({n_runs(bf)}), after: {rev(af)} "
          f"({n_runs(af)})" + (f"; peer: {peer} ({n_runs(pf)})" if pf else "") +
          "; best median of each side's runs, ms" + ("; (rounds)" if by_round and len(br) > 1 else "") + "\n")
    head = "| point | before | after | after / before |"
    if pf:
        head += f" {peer} | {peer} / before | {peer} / after |"
    print(head)
    print("| --- |" + " ---: |" * (head.count("|") - 2))
    ratios, peer_after = [], []
    for n in names:
        b, x = median_ms(br, n), median_ms(ar, n)
        ratios.append(min(x) / min(b))
        line = f"| `{n}` | {min(b):.4f} | {min(x):.4f} | {min(x) / min(b):.3f}"
        line += rounds([xi / bi for bi, xi in zip(b, x)]) if by_round else ""
        if pf:
            if all(without_method(n) in r for r in pr):
                p = median_ms(pr, without_method(n))
                peer_after.append(min(p) / min(x))
                per_round = lambda side: rounds([pi / si for pi, si in zip(p, side)]) if peer_rounds else ""
                line += f" | {min(p):.4f} | {min(p) / min(b):.3f}{per_round(b)} | {min(p) / min(x):.3f}{per_round(x)}"
            else:
                line += " | | |"
        print(line + " |")
    noise = [br[0][n]["time"]["median_s"] / br[1][n]["time"]["median_s"] for n in names] if len(br) > 1 else []
    print(f"\n{len(names)} points: after / before min {min(ratios):.3f}, median {statistics.median(ratios):.3f}, "
          f"max {max(ratios):.3f}" +
          (f"; before run 1 / run 2 (noise) {min(noise):.3f}–{max(noise):.3f}" if noise else "") +
          (f"; {peer} / after {min(peer_after):.3f}–{max(peer_after):.3f} at {len(peer_after)} points"
           if peer_after else ""))


if __name__ == "__main__":
    main()

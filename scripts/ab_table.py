#!/usr/bin/env python3
"""Before/after table of two builds measured in one session: per point, the best median of the
runs of each side, and their ratio. Prints Markdown.

    scripts/ab_table.py --before A1.json [A2.json ...] --after B1.json [B2.json ...]

Each side's runs are alternated on the same GPU (A, B, A, B) so that clock drift hits both; the
spread of one side's runs against each other is printed as the noise to read the ratios against.
"""
import argparse
import json
import statistics


def load(paths):
    runs = [json.load(open(p)) for p in paths]
    recs = [{r["name"]: r for r in f["records"] if r.get("status") == "ok"} for f in runs]
    return runs, recs


def best(recs, name):
    return min(r[name]["time"]["median_s"] for r in recs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", nargs="+", required=True)
    ap.add_argument("--after", nargs="+", required=True)
    a = ap.parse_args()
    bf, br = load(a.before)
    af, ar = load(a.after)
    names = [n for n in br[0] if all(n in r for r in br + ar)]
    rev = lambda fs: ", ".join(sorted({f["build"]["git_revision"][:7] for f in fs}))
    print(f"{bf[0]['device']['name']}; before: {rev(bf)} ({len(bf)} runs), after: {rev(af)} ({len(af)} runs); "
          f"best median of each side's runs, ms\n")
    print("| point | before | after | after / before |")
    print("| --- | ---: | ---: | ---: |")
    ratios = []
    for n in names:
        b, x = best(br, n), best(ar, n)
        ratios.append(x / b)
        print(f"| `{n}` | {b * 1e3:.4f} | {x * 1e3:.4f} | {x / b:.3f} |")
    noise = [br[0][n]["time"]["median_s"] / br[1][n]["time"]["median_s"] for n in names] if len(br) > 1 else []
    print(f"\n{len(names)} points: after / before min {min(ratios):.3f}, median {statistics.median(ratios):.3f}, "
          f"max {max(ratios):.3f}" + (f"; before run 1 / run 2 (noise) {min(noise):.3f}–{max(noise):.3f}" if noise else ""))


if __name__ == "__main__":
    main()

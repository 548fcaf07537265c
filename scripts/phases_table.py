#!/usr/bin/env python3
"""Where a sweep's time goes, from result files (records' phases_s, the file's wall_s).

    scripts/phases_table.py ONE_GPU.json [MORE_ONE_GPU.json ...] --multi TWO_GPU.json [...] [--write docs/sweep-time.md]

Prints a Markdown table per file (wall time, the sum of each phase over the points, and per GPU
the points' total and when its first point began) and a projection to more GPUs, T(n) = H + G / n: H the time that does not
shrink with more GPUs (host work that already uses every core), G the time the GPUs' workers
spend side by side; from the measured walls on one and several GPUs when both are given, else
H = inputs + reference of the one-GPU breakdown. With --write, replaces the block
between the <!-- phases-table --> markers of that file.
"""
import argparse
import json
import statistics
import sys

PHASES = ["inputs", "reference", "plan", "check", "timed", "counters"]


def load(path):
    with open(path) as f:
        d = json.load(f)
    recs = [r for r in d["records"] if "phases_s" in r]
    if "wall_s" not in d or not recs:
        sys.exit(f"phases_table: {path} has no wall_s or no phases_s (written before they existed?)")
    sums = {k: sum(r["phases_s"].get(k, 0.0) for r in recs) for k in PHASES + ["total"]}
    per_gpu, first = {}, {}
    for r in recs:
        gpu = r.get("device_index", 0)
        per_gpu[gpu] = per_gpu.get(gpu, 0.0) + r["phases_s"]["total"]
        if "started" in r["phases_s"]:  # when the point began (phases_s.started, where recorded): the GPU's first point
            first[gpu] = min(first.get(gpu, float("inf")), r["phases_s"]["started"])
    b = d.get("build", {})
    rev = b.get("git_revision", "?")[:12] + ("-dirty" if b.get("git_dirty") else "")
    gpus = len(d.get("devices") or [d["device"]])
    return {"path": path, "wall": d["wall_s"], "sums": sums, "per_gpu": per_gpu, "first": first, "points": len(recs),
            "rev": rev, "gpu": d["device"].get("name", "?"), "gpus": gpus}


def table(one, multi):
    out = ["| file | GPUs | points | wall s | " + " | ".join(PHASES) + " | other | per-GPU busy s | per-GPU first point s |",
           "| --- | --- | --- | --- | " + " | ".join("---" for _ in PHASES) + " | --- | --- | --- |"]
    for f in one + multi:
        s = f["sums"]
        other = s["total"] - sum(s[k] for k in PHASES)
        busy = ", ".join(f"{v:.1f}" for _, v in sorted(f["per_gpu"].items()))
        first = ", ".join(f"{v:.2f}" for _, v in sorted(f["first"].items())) or "–"
        out.append(f"| `{f['path'].split('/')[-1]}` | {f['gpus']} | {f['points']} | {f['wall']:.1f} | "
                   + " | ".join(f"{s[k]:.1f}" for k in PHASES) + f" | {other:.1f} | {busy} | {first} |")
    wall1 = statistics.median(f["wall"] for f in one)
    out.append("")
    out.append(f"{one[0]['gpu']}, revision {one[0]['rev']}. Median wall on one GPU {wall1:.1f} s"
               + (f"; on {multi[0]['gpus']} GPUs {statistics.median(f['wall'] for f in multi):.1f} s, "
                  f"{wall1 / statistics.median(f['wall'] for f in multi):.2f}x" if multi else "") + ".")
    # Projection T(n) = H + G/n: H the part that does not shrink with more GPUs (each worker's
    # start, host work on shared cores), G the part their workers do side by side. With several-GPU files, H and G
    # solve the two measured walls; without, H = inputs + reference of the one-GPU breakdown.
    if multi:
        n2 = multi[0]["gpus"]
        wall2 = statistics.median(f["wall"] for f in multi)
        g = (wall1 - wall2) * n2 / (n2 - 1)
        h = wall1 - g
        how = (f"H and G from the measured walls on 1 and {n2} GPUs: H = {h:.1f} s (does not shrink: what "
               f"every worker pays once, and host work the workers share), G = {g:.1f} s")
    else:
        h = statistics.median(f["sums"]["inputs"] + f["sums"]["reference"] for f in one)
        g = wall1 - h
        how = f"H = inputs + reference = {h:.1f} s (host work on every core), G = the rest = {g:.1f} s"
    out.append("")
    out.append(f"Projection T(n) = H + G/n, {how}:")
    out.append("")
    out.append("| GPUs | projected wall s | speed-up over one |")
    out.append("| --- | --- | --- |")
    for n in (1, 2, 4, 8):
        t = h + g / n
        out.append(f"| {n} | {t:.1f} | {wall1 / t:.2f}x |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("one", nargs="+", help="result files of the sweep on one GPU")
    ap.add_argument("--multi", nargs="*", default=[], help="result files of the same sweep on several GPUs")
    ap.add_argument("--write", help="Markdown file whose <!-- phases-table --> block to replace")
    ap.add_argument("--block", default="phases-table", help="the marker's name (several tables in one file)")
    a = ap.parse_args()
    text = table([load(p) for p in a.one], [load(p) for p in a.multi])
    if not a.write:
        sys.stdout.write(text)
        return
    with open(a.write) as f:
        doc = f.read()
    begin, end = f"<!-- {a.block} -->", f"<!-- /{a.block} -->"
    if begin not in doc or end not in doc:
        sys.exit(f"phases_table: {a.write} has no {begin} ... {end} block")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(a.write, "w") as f:
        f.write(head + begin + "\n" + text + end + tail)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Compares two profiles of the same program kernel by kernel and byte count by byte count: a
`flashio profile` file (one record per kernel launch, .json) against Nsight Compute's CSV of the
same program (.csv), or either against another of its kind (a repeat: how far the instrument
agrees with itself).

Both runs profile every kernel launch of the same deterministic program in the same order, so
launch i of one is launch i of the other (names are checked). Each byte count (DRAM read/write,
SM<->L2 read/write, L2 reductions, atomics; ours from counters.bytes, ncu's metrics with the
quantities and units of scripts/ncu_crosscheck.py) is compared. Counts below 1 MB on both sides
are printed but not judged (a few dirty lines of L2 decide them). Exit 0 when every judged count
agrees within the tolerance (default 1 %). Both runs should treat the L2 alike (flashio profile's
and ncu's --cache-control, scripts/profile_crosscheck.sh): a profile file says which it used, and
the table's last lines repeat it.

    scripts/profile_crosscheck.py A.json|A.csv B.json|B.csv [--tolerance 0.01] [--segments REGEX]

--segments REGEX: compares sums over segments instead of single kernels. The program launches a
kernel matching REGEX (a read-only pass over several times the L2: scripts/sdpa_tiny.py --flush)
before and after each region it measures; a segment is the kernels after a before-flush up to and
including the after-flush. Its DRAM writes are then every line the region dirtied, whether evicted
during a kernel or by the flush after it: a count that does not depend on when the L2 evicted the
lines (a single kernel's DRAM writes do: Nsight Compute differs from itself by up to 3.8 %, H100,
results/crosscheck/issue17-profile/ncu-vs-ncu.md). Run both profilers without their own cleaning
(--cache-control none: a flush of theirs between kernels would write lines back uncounted).
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_crosscheck import QUANTITIES, read_ncu  # noqa: E402

NOISE_FLOOR = 1e6  # bytes; as ncu_crosscheck.py


def read(path):
    """(label, [(kernel name, {quantity: bytes})] in launch order, a line about its L2 treatment)."""
    if path.endswith(".csv"):
        kernels = [(name, {key: metrics[metric] * unit for key, (metric, unit) in QUANTITIES.items() if metric in metrics})
                   for name, metrics in read_ncu(path)]
        return "ncu", kernels, f"{os.path.basename(path)}: Nsight Compute (its --cache-control as the script passed it)"
    profile = json.load(open(path))["profile"]
    records = [r for r in profile["records"] if r["kind"] == "kernel"]
    if not records:
        sys.exit(f"{path}: no kernel records ({'; '.join(profile.get('notes', []))})")
    kernels = []
    for i, r in enumerate(records):
        c = r["counters"]
        if c.get("status") != "ok":
            sys.exit(f"{path}: launch {i} {r['name']}: no counters ({c.get('reason')})")
        kernels.append((r["name"], dict(c["bytes"])))
    cache = profile.get("cache_control", "none (a file from before the option)")
    return "flashio profile", kernels, f"{os.path.basename(path)}: flashio profile --cache-control {cache}"


def segments(kernels, pattern):
    """[(first launch, last launch, {quantity: summed bytes})]: the kernels after each before-flush
    (the 1st, 3rd, ... kernel matching `pattern`) up to and including the after-flush that follows."""
    flushes = [i for i, (name, _) in enumerate(kernels) if re.search(pattern, name)]
    if not flushes or len(flushes) % 2:
        sys.exit(f"{len(flushes)} kernels match {pattern!r}: expected a before- and an after-flush per region")
    out = []
    for before, after in zip(flushes[0::2], flushes[1::2]):
        sums = {}
        for _, counts in kernels[before + 1:after + 1]:
            for key, v in counts.items():
                sums[key] = sums.get(key, 0.0) + v
        out.append((before + 1, after, sums))
    return out


def difference(counts_a, counts_b):
    """(quantity, a, b, relative difference or None under the noise floor) for each quantity both have."""
    for key in QUANTITIES:
        if key in counts_a and key in counts_b:
            x, y = counts_a[key], counts_b[key]
            yield key, x, y, (abs(x - y) / max(y, 1.0) if max(x, y) > NOISE_FLOOR else None)


def shown(rel):
    return "(< 1 MB)" if rel is None else f"{100 * rel:.3f} %"


def short(name):
    return name.split("<")[0].split("(")[0].split("::")[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tolerance", type=float, default=0.01)
    ap.add_argument("--segments", metavar="REGEX", help="compare sums over flush-delimited segments (above)")
    args = ap.parse_args()
    (label_a, a, about_a), (label_b, b, about_b) = read(args.a), read(args.b)
    if label_a == label_b:
        label_a, label_b = f"{label_a} ({os.path.basename(args.a)})", f"{label_b} ({os.path.basename(args.b)})"
    if len(a) != len(b):
        sys.exit(f"{len(a)} kernel launches in {args.a}, {len(b)} in {args.b}: not the same run")
    if args.segments:
        return compare_segments(args, a, b, label_a, label_b, about_a, about_b)
    worst, failed, rows = 0.0, 0, []
    for i, ((name_a, bytes_a), (name_b, bytes_b)) in enumerate(zip(a, b)):
        if short(name_a) not in name_b and short(name_b) not in name_a:
            sys.exit(f"launch {i}: {name_a} in {args.a}, {name_b} in {args.b}: not the same kernel")
        name = name_a if len(name_a) >= len(name_b) else name_b
        for key, x, y, rel in difference(bytes_a, bytes_b):
            worst = max(worst, rel or 0.0)
            failed += (rel or 0.0) > args.tolerance
            rows.append((i, name, key, x, y, rel))
    print(f"| launch | kernel | quantity | {label_a} (bytes) | {label_b} (bytes) | difference |")
    print("| ---: | --- | --- | ---: | ---: | ---: |")
    for i, name, key, x, y, rel in rows:
        print(f"| {i} | {name[:80]} | {key} | {x:,.0f} | {y:,.0f} | {shown(rel)} |")
    ok = failed == 0
    print(f"\n{about_a}.  \n{about_b}.")
    print(f"{len(a)} launches, {len(rows)} byte counts; worst difference {100 * worst:.3f} % "
          f"(tolerance {100 * args.tolerance:.1f} %): {'PASS' if ok else f'FAIL ({failed} counts)'}")
    return 0 if ok else 1


def compare_segments(args, a, b, label_a, label_b, about_a, about_b):
    sa, sb = segments(a, args.segments), segments(b, args.segments)
    if [(x, y) for x, y, _ in sa] != [(x, y) for x, y, _ in sb]:
        sys.exit("the flushes fall at different launches: not the same run")
    worst, failed, n = 0.0, 0, 0
    print(f"| segment | launches | first kernel | quantity | {label_a} (bytes) | {label_b} (bytes) | difference |")
    print("| ---: | --- | --- | --- | ---: | ---: | ---: |")
    for k, ((first, last, xa), (_, _, xb)) in enumerate(zip(sa, sb)):
        for key, x, y, rel in difference(xa, xb):
            worst, failed, n = max(worst, rel or 0.0), failed + ((rel or 0.0) > args.tolerance), n + 1
            print(f"| {k} | {first}-{last} | {short(a[first][0])} | {key} | {x:,.0f} | {y:,.0f} | {shown(rel)} |")
    print(f"\n{about_a}.  \n{about_b}.")
    print(f"{len(sa)} segments (each: the kernels after a flush matching {args.segments!r} up to and including the "
          f"next), {n} summed byte counts; worst difference {100 * worst:.3f} % (tolerance {100 * args.tolerance:.1f} %): "
          f"{'PASS' if failed == 0 else f'FAIL ({failed} counts)'}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Compares a flashio result file's counters with Nsight Compute's CSV of the same run.

The ncu run is `flashio run ... --reps 1 --warmup 0 --counters off`: per point it sees the
check launch (K kernels), the suite's L2 flush kernel, the timed launch (K kernels), then the
call marked with the point's NVTX range for outside tools (another flush, K kernels), with
the suite's own kernels between them (the runner's warm-up at its start, the inputs'
generator, the checks' row gathers): each point's timed launch is the K kernels after the next
flush, its marked call those after the flush after that. K comes from the suite's own
per-kernel breakdown. The timed launch's kernels are summed and compared with the suite's
counter pass, quantity by quantity.
"""
import argparse
import csv
import json
import sys

# suite key -> (ncu metric, bytes per unit)
QUANTITIES = {
    "dram_read": ("dram__bytes_read.sum", 1),
    "dram_write": ("dram__bytes_write.sum", 1),
    "l2_read": ("l1tex__m_xbar2l1tex_read_bytes.sum", 1),
    "l2_write": ("lts__t_sectors_srcunit_tex_op_write.sum", 32),
    "l2_red": ("lts__t_sectors_op_red.sum", 32),
    "l2_atom": ("lts__t_sectors_op_atom.sum", 32),
}
FLUSH_KERNEL = "l2_flush_kernel"


def read_ncu(path):
    """Kernels in launch order: [(name, {metric: value})]."""
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu's own log lines are not CSV
    kernels = {}
    for row in csv.DictReader(lines):
        kid = int(row["ID"])
        name, metrics = kernels.setdefault(kid, (row["Kernel Name"], {}))
        value = row["Metric Value"].replace(",", "")
        try:
            metrics[row["Metric Name"]] = float(value)
        except ValueError:
            pass
    return [kernels[k] for k in sorted(kernels)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("suite")
    ap.add_argument("ncu_csv")
    ap.add_argument("--tolerance", type=float, default=0.01)
    a = ap.parse_args()
    records = [r for r in json.load(open(a.suite))["records"] if r["status"] == "ok"]
    kernels = read_ncu(a.ncu_csv)
    pos, worst, rows = 0, 0.0, []
    for r in records:
        c = r["counters"]
        if c.get("status") != "ok":
            sys.exit(f"{r['name']}: the suite has no counters ({c.get('reason')})")
        k = sum(x["launches"] for x in c["kernels"])

        def after_next_flush(start):
            at = next((i for i in range(start, len(kernels)) if FLUSH_KERNEL in kernels[i][0]), None)
            if at is None or at + k >= len(kernels):
                sys.exit(f"{r['name']}: no L2 flush followed by {k} kernels after ncu launch {start}")
            return at + 1

        first = after_next_flush(pos)  # the timed launch
        timed = kernels[first : first + k]
        pos = after_next_flush(first + k) + k  # past the marked call
        for key, (metric, unit) in QUANTITIES.items():
            if key not in c["bytes"]:
                continue
            ncu = sum(m.get(metric, 0.0) for _, m in timed) * unit
            ours = c["bytes"][key]
            rel = abs(ours - ncu) / max(ncu, 1.0) if max(ours, ncu) > 1e6 else 0.0  # < 1 MB: noise floor
            worst = max(worst, rel)
            rows.append((r["name"], key, ours, ncu, rel))
    print(f"| point | quantity | suite (bytes) | ncu (bytes) | difference |")
    print(f"| --- | --- | ---: | ---: | ---: |")
    for name, key, ours, ncu, rel in rows:
        print(f"| {name} | {key} | {ours:,.0f} | {ncu:,.0f} | {100 * rel:.3f} % |")
    ok = worst <= a.tolerance
    print(f"\nworst difference {100 * worst:.3f} % (tolerance {100 * a.tolerance:.1f} %): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

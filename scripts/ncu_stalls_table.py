#!/usr/bin/env python3
"""A Markdown table from scripts/flash3_ncu.sh's Nsight Compute outputs: per head dim, flash3's
forward beside cuDNN's — duration, instructions executed, tensor-pipe use, issue slots busy,
cycles per issued instruction, and the stall reasons (warps stalled per issued instruction) that
reach 0.1 in any of them.

    scripts/ncu_stalls_table.py DIR        (DIR/{flash3,cudnn}-d{64,128,256}.txt)
    scripts/ncu_stalls_table.py FILE ...   (any Nsight Compute outputs with those sections, e.g.
                                            scripts/decode_ncu.sh's; a row per file, named by it)
"""
import os
import re
import sys


def read(path):
    t = open(path).read()
    m = {k: float(v) for k, v in re.findall(
        r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio\s+inst\s+([\d.]+)", t)}
    unit, dur = re.search(r"Duration\s+(us|ms)\s+([\d.,]+)", t).groups()
    m["duration_us"] = float(dur.replace(",", "")) * (1000 if unit == "ms" else 1)
    m["inst_M"] = float(re.search(r"Executed Instructions\s+inst\s+([\d,]+)", t).group(1).replace(",", "")) / 1e6
    busy = re.search(r"Issue Slots Busy\s+%\s+([\d.]+)", t)  # ComputeWorkloadAnalysis (not always collected)
    m["issue_busy"] = f"{float(busy.group(1)):.1f} %" if busy else "?"
    m["cpi"] = float(re.search(r"Warp Cycles Per Issued Instruction\s+cycle\s+([\d.]+)", t).group(1))
    pipe = re.search(r"(\w+) is the highest-utilized pipeline \(([\d.]+)%\)", t)
    m["pipe"] = f"{pipe.group(1)} {pipe.group(2)} %" if pipe else "?"
    for key, pattern in (("dram_pct", r"DRAM Throughput\s+%\s+([\d.]+)"), ("l2_hit", r"L2 Hit Rate\s+%\s+([\d.]+)")):
        found = re.search(pattern, t)
        m[key] = f"{float(found.group(1)):.1f} %" if found else "?"
    return m


def main():
    rows = []
    if len(sys.argv) == 2 and os.path.isdir(sys.argv[1]):
        for hd in (64, 128, 256):
            for who in ("flash3", "cudnn"):
                p = os.path.join(sys.argv[1], f"{who}-d{hd}.txt")
                if os.path.exists(p):
                    rows.append((hd, who, read(p)))
    else:
        for p in sys.argv[1:]:
            rows.append(("-", os.path.splitext(os.path.basename(p))[0], read(p)))
    stalls = sorted({k for _, _, m in rows for k, v in m.items() if isinstance(v, float) and k not in
                     ("duration_us", "inst_M", "issue_busy", "cpi") and v >= 0.1},
                    key=lambda k: (-max(m.get(k, 0) for _, _, m in rows), k))  # ties by name: the same order every run
    memory = all(hd == "-" for hd, _, _ in rows)  # files given: also DRAM throughput and L2 hit rate
    extra = " DRAM throughput | L2 hit rate |" if memory else ""
    print("| d | kernel | µs | instructions (M) | busiest pipe | issue slots busy | cycles per issue |" + extra + " "
          + " | ".join(stalls) + " |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: |" + (" ---: | ---: |" if memory else "") + " "
          + " | ".join("---:" for _ in stalls) + " |")
    for hd, who, m in rows:
        print(f"| {hd} | {who} | {m['duration_us']:.0f} | {m['inst_M']:.0f} | {m['pipe']} | {m['issue_busy']} | "
              f"{m['cpi']:.2f} |" + (f" {m['dram_pct']} | {m['l2_hit']} |" if memory else "") + " "
              + " | ".join(f"{m.get(k, 0):.2f}" for k in stalls) + " |")


if __name__ == "__main__":
    main()

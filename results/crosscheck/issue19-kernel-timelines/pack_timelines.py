#!/usr/bin/env python3
"""Packs the instrumented build's raw timelines (run.sh's /tmp/tl, /tmp/res) into this folder.

Raw: one line per block, `block sm start stamp...` (ns from the launch's first block start), a stamp at
the start of every STRIDE-th tile iteration (flash1: every iteration, flash2: every 16th), the last one the
block's end. Packed: every EVERY-th of those stamps (and the end), so a line holds every (STRIDE x EVERY)-th
iteration; the replay interpolates between them (tests/test_l2_sim.cpp: keeping every 16th changes no
replayed byte count by more than 0.2 %).
  pack_timelines.py RAW_DIR  (RAW_DIR/tl/*.txt, RAW_DIR/res/ct-*.json, RAW_DIR/res/side.txt)
"""
import json
import os
import shutil
import sys

RUNS = {  # name: (kernel file suffix, iterations per raw stamp, raw stamps per packed stamp)
    "bwd-1536-r1": ("flash1_bwd", 1, 16), "bwd-1536-r2": ("flash1_bwd", 1, 16),
    "bwd-1536-r3": ("flash1_bwd", 1, 16), "bwd-1536-r4": ("flash1_bwd", 1, 16),
    "bwd-2048-r1": ("flash1_bwd", 1, 16), "bwd-2048-r2": ("flash1_bwd", 1, 16),
    "bwd-2048-r3": ("flash1_bwd", 1, 16), "bwd-2048-r4": ("flash1_bwd", 1, 16),
    "f2-131072-r1": ("flash2_fwd", 16, 16),
    "f2-262144-r1": ("flash2_fwd", 16, 16), "f2-262144-r2": ("flash2_fwd", 16, 16),
    
    "fwd-b1h7n7900-r1": ("flash1_fwd", 1, 16), "fwd-b4h6n3900-r1": ("flash1_fwd", 1, 16),
}

raw = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
for name, (kernel, stride, every) in RUNS.items():
    src = os.path.join(raw, "tl", f"{name}-{kernel}.txt")
    rows = [l.split() for l in open(src) if not l.startswith("#")]
    with open(os.path.join(here, f"{name}.timeline.txt"), "w") as out:
        out.write(f"# {kernel}: per block its SM, its start and a stamp every {stride * every} tile iterations "
                  f"(ns from the first block's start, %globaltimer), the last stamp the block's end\n")
        out.write(f"# iterations per stamp: {stride * every}\n")
        for r in rows:
            stamps = r[3:]
            kept = stamps[:-1][::every] + stamps[-1:] if len(stamps) > 1 else stamps
            out.write(" ".join(r[:3] + kept) + "\n")
    result = json.load(open(os.path.join(raw, "res", f"ct-{name}.json")))
    with open(os.path.join(here, f"{name}.json"), "w") as out:
        json.dump(result, out, indent=1)
        out.write("\n")
shutil.copy(os.path.join(raw, "res", "side.txt"), os.path.join(here, "sides.txt"))

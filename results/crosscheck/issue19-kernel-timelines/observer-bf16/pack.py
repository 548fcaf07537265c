#!/usr/bin/env python3
"""Packs run.sh's raw start/end timelines (its tl.tar.xz: tl/*.txt, res/*.json) into DEST: per run
NAME.timeline.txt in the committed f2se format (per block its SM, its start, the start again as iteration 0's
stamp, its end), NAME.json (the counter pass of that launch) and clean-NAME.json (the committed kernel's run).
  pack.py RAW_DIR DEST
"""
import glob
import os
import shutil
import sys

raw, dest = sys.argv[1], sys.argv[2]
os.makedirs(dest, exist_ok=True)
for src in sorted(glob.glob(os.path.join(raw, "tl", "*-flash2_fwd.txt"))):
    name = os.path.basename(src)[: -len("-flash2_fwd.txt")]
    n = int(name.split("-")[-2])
    with open(os.path.join(dest, f"{name}.timeline.txt"), "w") as out:
        out.write("# flash2_fwd, start and end only (observer-h200/instance-start-end-outside-loop.patch: nothing in "
                  "the loop): per block its SM, its start, the start again as the stamp of iteration 0 and its end "
                  "(ns from the first block's start)\n")
        out.write(f"# iterations per stamp: {n // 64}\n")
        for line in open(src):
            if line.startswith("#"):
                continue
            b, sm, start, end = line.split()
            out.write(f"{b} {sm} {start} {start} {end}\n")
    shutil.copy(os.path.join(raw, "res", f"ct-{name}.json"), os.path.join(dest, f"{name}.json"))
    shutil.copy(os.path.join(raw, "res", f"clean-{name}.json"), os.path.join(dest, f"clean-{name}.json"))

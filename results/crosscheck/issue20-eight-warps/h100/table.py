#!/usr/bin/env python3
"""The eight-warp A/B's table from its files: h100/table.py DIR > DIR/ab.md.

DIR holds w4-{1,2}.json (the committed flash_decode), w8-{1,2}.json (../eight-warps.patch) and cudnn-{1,2}.json
(SDPA's cuDNN back-end after each round), as h100/run.sh writes them. Per point: both builds' medians (best round),
8 warps / 4 warps per round, and cuDNN's time / 8 warps' per round (contiguous K/V only: cuDNN has no paged layout here).
"""
import json
import sys
from pathlib import Path


def medians(path):
    out = {}
    for r in json.loads(Path(path).read_text())["records"]:
        if r["status"] != "ok":
            continue
        p = r["problem"]
        key = (p["batch"], p["seqlen_k"], p.get("kv_layout", "contiguous"))  # contiguous records omit it
        out[key] = r["time"]["median_s"] * 1e6
    return out


def main():
    d = Path(sys.argv[1])
    w4 = [medians(d / f"w4-{i}.json") for i in (1, 2)]
    w8 = [medians(d / f"w8-{i}.json") for i in (1, 2)]
    cu = [medians(d / f"cudnn-{i}.json") for i in (1, 2)]
    gpu = (d / "gpu.txt").read_text().splitlines()[-1]
    print(f"# flash_decode with 8 warps × 2 stages, A/B on {gpu.split(',')[0]} (from h100/table.py)\n")
    print(f"{gpu}; GQA 32:8, d 128, one query, `--counters off --reps 50`, two rounds alternated; µs: the better "
          "round's median.\n")
    print("| point | 4 warps µs | 8 warps µs | 8/4 (rounds) | cuDNN / 8 warps (rounds) | cuDNN / 4 warps (rounds) |")
    print("| --- | ---: | ---: | --- | --- | --- |")
    for key in sorted(w4[0], key=lambda k: (-k[0], -k[1], k[2])):
        b, nk, layout = key
        name = f"b {b}, {nk // 1024}k" + ("" if layout == "contiguous" else f", {layout}")
        ab = " ".join(f"{w8[i][key] / w4[i][key]:.3f}" for i in (0, 1))
        c8 = " ".join(f"{cu[i][key] / w8[i][key]:.3f}" for i in (0, 1)) if key in cu[0] else ""
        c4 = " ".join(f"{cu[i][key] / w4[i][key]:.3f}" for i in (0, 1)) if key in cu[0] else ""
        print(f"| {name} | {min(w[key] for w in w4):.1f} | {min(w[key] for w in w8):.1f} | {ab} | {c8} | {c4} |")


if __name__ == "__main__":
    main()

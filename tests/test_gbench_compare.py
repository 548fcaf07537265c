#!/usr/bin/env python3
"""Google Benchmark's tools/compare.py reads `flashio export --format gbench` unchanged.

Run: python3 tests/test_gbench_compare.py --flashio build/flashio --compare /usr/share/benchmark/compare.py
(the python must have scipy, which compare.py imports; Debian: libbenchmark-tools, python3-scipy).

Two runs of the same points with 20 repetition times each (time.samples_s), the second 30 %
slower on one point: compare.py must list both points, give the slower one a time change of
+0.30, and run its Mann-Whitney U test on the 20 vs 20 repetitions. The committed H100 and H200
files (no samples) compare point by point too. Exits 1 on a failure.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ["flash2/fwd/b:1/h:16/n:4096/d:64/fp16", "flash2/fwd/b:1/h:16/n:8192/d:64/fp16"]


def result_file(revision: str, slower: float) -> dict:
    records = []
    for k, name in enumerate(NAMES):
        median = 1e-3 * (k + 1) * (slower if k == 1 else 1.0)
        samples = [median * (1 + 0.01 * ((i * 7) % 20 - 9.5) / 9.5) for i in range(20)]
        s = sorted(samples)
        records.append({
            "name": name, "method": "flash2", "pass": "fwd", "status": "ok", "flops": 1e9, "device_index": 0,
            "counters": {"status": "not_collected"},
            "problem": {"batch": 1, "heads": 16, "kv_heads": 16, "seqlen_q": 4096 << k, "seqlen_k": 4096 << k,
                        "head_dim": 64, "dtype": "fp16", "causal": False, "padding": "none", "dropout": 0.0,
                        "seed": 0, "softmax_scale": 0.125},
            "time": {"median_s": 0.5 * (s[9] + s[10]), "min_s": s[0], "max_s": s[-1], "mean_s": sum(s) / 20,
                     "stddev_s": 0.0, "reps": 20, "warmup": 2, "l2_flushed": True, "clock": "cuda_events",
                     "samples_s": samples},
        })
    return {"schema": "flashio/result", "schema_version": 1, "run_id": revision, "producer": "flashio",
            "created": "2026-11-25T00:00:00Z", "command_line": "synthetic",
            "build": {"git_revision": revision}, "device": {"name": "NVIDIA H100 80GB HBM3"}, "records": records}


def export(flashio: str, src: str, out: str) -> None:
    subprocess.run([flashio, "export", "--format", "gbench", src, "-o", out], check=True)


def compare(script: str, a: str, b: str) -> str:
    res = subprocess.run([sys.executable, script, "--no-color", "benchmarks", a, b], capture_output=True, text=True)
    if res.returncode != 0:
        raise AssertionError(f"compare.py failed ({res.returncode}): {res.stderr}")
    return res.stdout


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flashio", required=True)
    ap.add_argument("--compare", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for tag, slower in (("a", 1.0), ("b", 1.3)):
            src = os.path.join(tmp, f"{tag}.json")
            with open(src, "w") as f:
                json.dump(result_file(tag * 7, slower), f)
            paths[tag] = os.path.join(tmp, f"{tag}.gbench.json")
            export(args.flashio, src, paths[tag])
        out = compare(args.compare, paths["a"], paths["b"])
        for name in NAMES:
            assert f"{name}/manual_time " in out, out
        slow = [l for l in out.splitlines() if l.startswith(NAMES[1] + "/manual_time ")]
        assert slow and re.search(r"\+0\.30\d\d", slow[0]), out
        fast = [l for l in out.splitlines() if l.startswith(NAMES[0] + "/manual_time ")]
        assert fast and re.search(r"[+-]0\.00\d\d", fast[0]), out
        assert "U Test, Repetitions: 20 vs 20" in out, out
        assert f"{NAMES[1]}/manual_time_median" in out, out

        # The committed files (no samples): one entry per point, matched across the two GPUs.
        for tag, name in (("h100", "nvidia-h100-fa2.json"), ("h200", "nvidia-h200-fa2.json")):
            export(args.flashio, os.path.join(ROOT, "results", name), os.path.join(tmp, f"{tag}.gbench.json"))
        out = compare(args.compare, os.path.join(tmp, "h100.gbench.json"), os.path.join(tmp, "h200.gbench.json"))
        assert "flash2/fwd/b:32/h:32/n:512/d:64/fp16/manual_time" in out, out
        assert "OVERALL_GEOMEAN" in out, out
    print("gbench compare.py: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

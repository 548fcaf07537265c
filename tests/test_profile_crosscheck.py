#!/usr/bin/env python3
"""scripts/profile_crosscheck.py's segment mode (issue 17): sums over flush-delimited segments,
and its verdict on the committed H100 files (results/crosscheck/issue17-profile/wb-*)."""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import profile_crosscheck  # noqa: E402

SCRIPT = os.path.join(ROOT, "scripts", "profile_crosscheck.py")
DATA = os.path.join(ROOT, "results", "crosscheck", "issue17-profile")


class Segments(unittest.TestCase):
    def test_a_segment_is_the_kernels_after_a_flush_through_the_next(self):
        kernels = [("randn", {"dram_write": 100.0}), ("reduce_kernel", {"dram_write": 7.0}),
                   ("fwd", {"dram_write": 10.0, "dram_read": 1.0}), ("bwd", {"dram_write": 20.0}),
                   ("reduce_kernel", {"dram_write": 5.0}), ("randn", {"dram_write": 300.0}),
                   ("reduce_kernel", {"dram_write": 9.0}), ("fwd", {"dram_write": 1.0}),
                   ("reduce_kernel", {"dram_write": 2.0})]
        got = profile_crosscheck.segments(kernels, "reduce_kernel")
        # the before-flush (and what came before it) is not a part; the after-flush is
        self.assertEqual(got, [(2, 4, {"dram_write": 35.0, "dram_read": 1.0}), (7, 8, {"dram_write": 3.0})])

    def test_an_unpaired_flush_is_refused(self):
        with self.assertRaises(SystemExit):
            profile_crosscheck.segments([("reduce_kernel", {}), ("fwd", {})], "reduce_kernel")
        with self.assertRaises(SystemExit):
            profile_crosscheck.segments([("fwd", {})], "reduce_kernel")


class CommittedFiles(unittest.TestCase):
    def run_script(self, a, b):
        return subprocess.run([sys.executable, SCRIPT, a, b, "--segments", "reduce_kernel"], capture_output=True,
                              text=True)

    def test_the_h100_files_agree_within_one_percent(self):
        r = self.run_script(os.path.join(DATA, "wb-profile-1.json"), os.path.join(DATA, "wb-ncu-1.csv"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("4 segments", r.stdout)
        self.assertIn("PASS", r.stdout)

    def test_two_percent_more_writes_in_one_kernel_fail(self):
        doc = json.load(open(os.path.join(DATA, "wb-profile-1.json")))
        recs = [r for r in doc["profile"]["records"] if r["kind"] == "kernel"]
        fwd = next(r for r in recs if "flash_fwd_kernel" in r["name"])
        total = sum(r["counters"]["bytes"]["dram_write"] for r in recs[recs.index(fwd):recs.index(fwd) + 7])
        bumped = copy.deepcopy(doc)
        for r in bumped["profile"]["records"]:
            if r["name"] == fwd["name"] and r["kind"] == "kernel":
                r["counters"]["bytes"]["dram_write"] += 0.02 * total
                break
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bumped.json")
            json.dump(bumped, open(path, "w"))
            r = self.run_script(path, os.path.join(DATA, "wb-ncu-1.csv"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("FAIL", r.stdout)


if __name__ == "__main__":
    unittest.main()

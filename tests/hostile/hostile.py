#!/usr/bin/env python3
"""Hostile-input suite (issue 21): the flashio CLI and its file readers, driven as a hostile user
would, each case in a fresh folder. Every case asserts

  - the exit code (0/1/2/3, never a signal: a crash or a sanitizer report fails the case);
  - a refusal (exit 1 or 2) says so in exactly one line on stderr, starting "flashio: ";
  - no file is left behind: the folder holds afterwards exactly what it held before, plus the
    outputs the case expects;
  - the inputs are unchanged (same bytes), except the outputs the case expects to replace;
  - it finishes within the time limit (default 10 s).

    tests/hostile/hostile.py --flashio build-nocuda/flashio [--filter TEXT] [--list] [--timeout S]

Needs only a CUDA-free build (no GPU): `run` is exercised with --dry-run, or up to the point where
it would need a GPU (exit 1, "no GPU"), after its checks of the command line and the output.
The cases are listed, with what each asserts, by --list (tests/hostile/README.md explains them).
"""
import argparse
import hashlib
import json
import os
import stat
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(ROOT, "results", "nvidia-h100-dsweep.json")  # a small committed result file

BAD = 2

# --- cases ---------------------------------------------------------------------------------------


class Case:
    def __init__(self, name, argv, rc, files=None, outputs=(), replaced=(), stderr_lines=None):
        self.name = name
        self.argv = argv  # "{d}" is the case's folder
        self.rc = rc  # an int or a tuple of allowed codes
        self.files = files or {}  # name -> bytes | ("exec", bytes) | ("fifo",) | ("dir",) | ("link", target)
        self.outputs = set(outputs)  # names the case may create
        self.replaced = set(replaced)  # existing names the case may change
        self.stderr_lines = stderr_lines  # None: one line when rc is 1 or 2


def fixture_doc():
    with open(FIXTURE) as f:
        return json.load(f)


def dumps(doc):
    return json.dumps(doc, indent=1).encode()


def journal_bytes(doc):
    header = {k: v for k, v in doc.items() if k != "records"}
    header["schema"] = "flashio/journal"
    lines = [json.dumps(header)] + [json.dumps(r) for r in doc["records"]]
    return ("\n".join(lines) + "\n").encode()


def mutated(fn):
    doc = fixture_doc()
    fn(doc)
    return dumps(doc)


def deep(n, open_="[", close="]"):
    return (open_ * n + close * n).encode()


def deep_objects(n):
    return ('{"a":' * n + "1" + "}" * n).encode()


def bad_result_files():
    """(label, bytes): result files every reader must refuse with exit 2."""
    valid = dumps(fixture_doc())
    out = [
        ("empty", b""),
        ("whitespace", b"  \n\t "),
        ("null", b"null"),
        ("array", b"[]"),
        ("object", b"{}"),
        ("number", b"1e999"),
        ("nul-bytes", b"\x00" * 64),
        ("bad-utf8", valid.replace(b'"flashio/result"', b'"flashio/result\xff"', 1)),
        ("trailing-garbage", valid + b"}"),
        ("two-documents", valid + valid),
        ("deep-array-1e6", deep(1000000)),
        ("deep-array-1e5", deep(100000)),
        ("deep-array-65", deep(65)),
        ("deep-object-1e5", deep_objects(100000)),
        ("deep-in-record", mutated(lambda d: d["records"][0].__setitem__("counters", json.loads(deep(70).decode())))),
        ("schema-version-99", mutated(lambda d: d.__setitem__("schema_version", 99))),
        ("schema-missing", mutated(lambda d: d.pop("schema"))),
        ("schema-wrong", mutated(lambda d: d.__setitem__("schema", "flashio/journal"))),
        ("records-object", mutated(lambda d: d.__setitem__("records", {}))),
        ("records-missing", mutated(lambda d: d.pop("records"))),
        ("record-empty", mutated(lambda d: d["records"].__setitem__(0, {}))),
        ("record-number", mutated(lambda d: d["records"].__setitem__(0, 7))),
        ("status-finished", mutated(lambda d: d["records"][0].__setitem__("status", "finished"))),
        ("pass-sideways", mutated(lambda d: d["records"][0].__setitem__("pass", "sideways"))),
        ("problem-missing", mutated(lambda d: d["records"][0].pop("problem"))),
        ("device-missing", mutated(lambda d: d.pop("device"))),
        ("device-string", mutated(lambda d: d.__setitem__("device", "H100"))),
        ("batch-string", mutated(lambda d: d["records"][0]["problem"].__setitem__("batch", "x"))),
        ("batch-negative", mutated(lambda d: d["records"][0]["problem"].__setitem__("batch", -1))),
        ("batch-zero", mutated(lambda d: d["records"][0]["problem"].__setitem__("batch", 0))),
        ("batch-float", mutated(lambda d: d["records"][0]["problem"].__setitem__("batch", 1.5))),
        ("batch-2^64", mutated(lambda d: d["records"][0]["problem"].__setitem__("batch", 18446744073709551615))),
        ("batch-1e30", mutated(lambda d: d["records"][0]["problem"].__setitem__("batch", 1e30))),
        ("block-r-2^32", mutated(lambda d: d["records"][0]["problem"].__setitem__("block_r", 4294967360))),
        ("dtype-fp8", mutated(lambda d: d["records"][0]["problem"].__setitem__("dtype", "fp8"))),
        ("median-string", mutated(lambda d: d["records"][0]["time"].__setitem__("median_s", "fast"))),
        ("tiles-string", mutated(lambda d: d["records"][0].__setitem__("tiles", "big"))),
    ]
    for frac in (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99):  # truncations at several offsets
        out.append((f"truncated-{int(frac * 100)}pct", valid[: int(len(valid) * frac)]))
    return out


def valid_result_files():
    """(label, bytes): unusual but valid result files every reader takes (exit 0; analyze 0 or 3)."""
    return [
        ("bom", b"\xef\xbb\xbf" + dumps(fixture_doc())),  # RFC 8259 lets a parser ignore a byte order mark
        ("unknown-top-key", mutated(lambda d: d.__setitem__("surprise", 1))),  # newer producers may add keys
        ("median-null-is-nan", nan_result_file()),
        ("no-records", mutated(lambda d: d.__setitem__("records", []))),
    ]


def nan_result_file():
    """time.median_s null: how NaN is written; read back as NaN, the file is valid."""
    return mutated(lambda d: [r["time"].__setitem__("median_s", None) for r in d["records"] if "time" in r])


def result_readers():
    """(label, argv for a file F, extra files): every command that reads a result file."""
    return [
        ("analyze", ["analyze", "{d}/F"], {}),
        ("report", ["report", "{d}/F"], {}),
        ("compare", ["compare", "{d}/F", "{d}/good.json"], {"good.json": dumps(fixture_doc())}),
        ("merge", ["merge", "{d}/F", "-o", "{d}/out.json"], {}),
        ("resume", ["run", "--dry-run", "-m", "flash2", "-n", "128", "-d", "64", "--resume", "{d}/F"], {}),
    ]


def file_cases():
    cases = []
    for rlabel, argv, extra in result_readers():
        for flabel, data in bad_result_files():
            cases.append(Case(f"{rlabel}/result:{flabel}", argv, BAD, files=dict(extra, F=data)))
        for flabel, special in [("fifo", ("fifo",)), ("dir", ("dir",)), ("link-dev-zero", ("link", "/dev/zero"))]:
            cases.append(Case(f"{rlabel}/result:{flabel}", argv, BAD, files=dict(extra, F=special)))
        for flabel, data in valid_result_files():  # NaN as null among them: read as NaN
            cases.append(Case(f"{rlabel}/result:{flabel}", argv, (0, 3) if rlabel == "analyze" else 0,
                              files=dict(extra, F=data), outputs={"out.json"} if rlabel == "merge" else ()))
    # /dev/zero named directly
    for rlabel, argv, extra in result_readers():
        cases.append(Case(f"{rlabel}/result:/dev/zero", [a.replace("{d}/F", "/dev/zero") for a in argv], BAD,
                          files=dict(extra)))
    # Journals (.jsonl): resume and merge.
    doc = fixture_doc()
    good = journal_bytes(doc)
    lines = good.decode().split("\n")
    journals = [
        ("deep-line", (lines[0] + "\n" + deep(1000000).decode() + "\n").encode()),
        ("deep-header", deep(1000000) + b"\n"),
        ("header-not-journal", ("{}\n" + "\n".join(lines[1:])).encode()),
        ("header-version-99",
         (json.dumps(dict(json.loads(lines[0]), schema_version=99)) + "\n" + "\n".join(lines[1:])).encode()),
        ("complete-bad-last-line", (lines[0] + "\n" + lines[1] + "\n{\"x\": 1}\n").encode()),
        ("bad-middle-line", (lines[0] + "\n{\"x\": 1}\n" + lines[1] + "\n").encode()),
        ("empty", b""),
        ("blank-line", (lines[0] + "\n\n" + lines[1] + "\n").encode()),
        ("record-without-problem",
         (lines[0] + "\n" + json.dumps({k: v for k, v in json.loads(lines[1]).items() if k != "problem"}) + "\n").encode()),
    ]
    for label, argv in [("merge", ["merge", "{d}/F.jsonl", "-o", "{d}/out.json"]),
                        ("resume", ["run", "--dry-run", "-m", "flash2", "-n", "128", "-d", "64", "--resume", "{d}/F.jsonl"])]:
        for jlabel, data in journals:
            cases.append(Case(f"{label}/journal:{jlabel}", argv, BAD, files={"F.jsonl": data}))
        # A killed run's half line (no newline at the end) is skipped, with a note: exit 0.
        cut = (lines[0] + "\n" + lines[1] + "\n" + lines[2][: len(lines[2]) // 2]).encode()
        cases.append(Case(f"{label}/journal:cut-short-last-line", argv, 0, files={"F.jsonl": cut},
                          outputs={"out.json"} if label == "merge" else ()))
    # Sweep files.
    sweeps = [
        ("empty", b""),
        ("deep", deep(1000000)),
        ("deep-objects", deep_objects(100000)),
        ("1e999", b'{"seqlen": 1e999}'),
        ("seqlen-2^64", b'{"seqlen": 18446744073709551616}'),
        ("seqlen-2^40", b'{"seqlen": 1099511627776, "method": "flash2"}'),
        ("block-r-2^32", b'{"block_r": 4294967360, "method": "flash2"}'),
        ("sparse-block-2^32", b'{"sparse_block": 4294967297, "pattern": "butterfly", "method": "blocksparse_flash"}'),
        ("batch-string", b'{"batch": "four"}'),
        ("batch-null", b'{"batch": null}'),
        ("batch-empty-list", b'{"batch": []}'),
        ("unknown-key", b'{"batchh": 4}'),
        ("array", b"[]"),
        ("string", b'"sweep"'),
        ("sweeps-empty", b'{"sweeps": []}'),
        ("sweeps-not-objects", b'{"sweeps": [1, 2]}'),
        ("axes-beside-sweeps", b'{"sweeps": [{}], "batch": 1}'),
        ("unknown-method", b'{"method": "flash9"}'),
        ("pass-sideways", b'{"pass": "sideways"}'),
        ("dropout-1", b'{"dropout": 1.0}'),
        ("tokens-and-batch", b'{"tokens": 16384, "batch": 2}'),
        ("points-explosion", json.dumps({"seqlen": list(range(64, 64 + 200)), "batch": list(range(1, 201)),
                                         "heads": list(range(1, 201)), "method": "flash2"}).encode()),
        ("pattern-2^40", b'{"seqlen": 1099511627776, "pattern": "butterfly", "method": "blocksparse_flash"}'),
        ("pattern-dev-zero", b'{"pattern": "file:/dev/zero", "method": "blocksparse_flash", "seqlen": 256}'),
        ("truncated", b'{"seqlen": [128, 256'),
        ("bad-utf8", b'{"method": "flash2\xff"}'),
    ]
    for label, data in sweeps:
        cases.append(Case(f"sweep:{label}", ["run", "--dry-run", "--sweep", "{d}/S.json"], BAD, files={"S.json": data}))
    for label, special in [("fifo", ("fifo",)), ("dir", ("dir",)), ("link-dev-zero", ("link", "/dev/zero"))]:
        cases.append(Case(f"sweep:{label}", ["run", "--dry-run", "--sweep", "{d}/S.json"], BAD, files={"S.json": special}))
    cases.append(Case("sweep:/dev/zero", ["run", "--dry-run", "--sweep", "/dev/zero"], BAD))
    cases.append(Case("sweep:missing", ["run", "--dry-run", "--sweep", "{d}/none.json"], BAD))
    # Pattern files named on the command line.
    patterns = [
        ("fifo", ("fifo",)), ("dir", ("dir",)), ("link-dev-zero", ("link", "/dev/zero")),
        ("empty", b""), ("header-2^40", b"1099511627776 1099511627776\n"), ("header-negative", b"-1 2\n"),
        ("wrong-shape", b"3 3\n111\n111\n111\n"), ("bad-char", b"2 2\n1x\n11\n"),
    ]
    for label, data in patterns:
        cases.append(Case(f"pattern:{label}", ["run", "--dry-run", "-m", "blocksparse_flash", "-n", "256", "-d", "64",
                                               "--sparse-block", "128", "--pattern", "file:{d}/P.txt"], BAD,
                          files={"P.txt": data}))
    # A result file never makes flashio open a path: a record's pattern "file:<fifo>" (opening
    # a FIFO for reading with no writer blocks) or "file:/dev/zero" is analysed without reading it.
    for target in ("fifo", "/dev/zero"):
        def with_pattern(d, target=target):
            p = d["records"][0]["problem"]
            p["pattern"] = "file:" + ("{d}/P" if target == "fifo" else target)
            p["sparse_block"] = 128
            p["density"] = 0.5
        data = mutated(with_pattern)
        for rlabel, argv in [("analyze", ["analyze", "{d}/F"]), ("report", ["report", "{d}/F"]),
                             ("merge", ["merge", "{d}/F", "-o", "{d}/out.json"])]:
            files = {"F": data}
            if target == "fifo":
                files["P"] = ("fifo",)
            cases.append(Case(f"{rlabel}/record-pattern-file:{target}", argv, (0, 3) if rlabel == "analyze" else 0,
                              files=files, outputs={"out.json"} if rlabel == "merge" else ()))
    # Huge records: analysed within the time limit, not modelled.
    for label, fn in [
        ("batch-1e9-heads-1e6", lambda d: d["records"][0]["problem"].update(batch=1000000000, heads=1000000, kv_heads=1000000)),
        ("seqlen-2^40", lambda d: d["records"][0]["problem"].update(seqlen_q=1 << 40, seqlen_k=1 << 40)),
        ("seqlen-2^30", lambda d: d["records"][0]["problem"].update(seqlen_q=1 << 30, seqlen_k=1 << 30)),
        ("sparse-2^40", lambda d: d["records"][0]["problem"].update(seqlen_q=1 << 40, seqlen_k=1 << 40,
                                                                    pattern="butterfly", sparse_block=128)),
    ]:
        for rlabel, argv in [("analyze", ["analyze", "{d}/F"]), ("report", ["report", "{d}/F"]),
                             ("compare", ["compare", "{d}/F", "{d}/F2"])]:
            data = mutated(fn)
            cases.append(Case(f"{rlabel}/huge:{label}", argv, (0, 3) if rlabel == "analyze" else 0,
                              files={"F": data, "F2": data}))
    return cases


def output_cases():
    """Name tricks for -o: same file by another spelling, links, folders, existing files."""
    good = dumps(fixture_doc())
    cases = []
    for label, out in [("same", "{d}/a.json"), ("dot-slash", "{d}/./a.json"), ("dotdot", "{d}/sub/../a.json"),
                       ("link", "{d}/link.json"), ("hardlink", "{d}/hard.json")]:
        cases.append(Case(f"merge-o:{label}", ["merge", "{d}/a.json", "-o", out], BAD,
                          files={"a.json": good, "sub": ("dir",), "link.json": ("link", "a.json"),
                                 "hard.json": ("hardlink", "a.json")}))
        cases.append(Case(f"merge-o-force:{label}", ["merge", "{d}/a.json", "-o", out, "--force"], BAD,
                          files={"a.json": good, "sub": ("dir",), "link.json": ("link", "a.json"),
                                 "hard.json": ("hardlink", "a.json")}))
    cases += [
        Case("merge-o:exists", ["merge", "{d}/a.json", "-o", "{d}/b.json"], BAD, files={"a.json": good, "b.json": b"mine"}),
        Case("merge-o:exists-force", ["merge", "{d}/a.json", "-o", "{d}/b.json", "--force"], 0,
             files={"a.json": good, "b.json": b"mine"}, replaced={"b.json"}),
        Case("merge-o:unrelated-tmp-kept", ["merge", "{d}/a.json", "-o", "{d}/out.json"], 0,
             files={"a.json": good, "out.json.tmp": b"someone else's"}, outputs={"out.json"}),
        Case("merge-o:input-named-tmp", ["merge", "{d}/out.json.tmp", "-o", "{d}/out.json"], 0,
             files={"out.json.tmp": good}, outputs={"out.json"}),
        Case("merge-o:folder", ["merge", "{d}/a.json", "-o", "{d}/sub"], BAD, files={"a.json": good, "sub": ("dir",)}),
        Case("merge-o:folder-slash", ["merge", "{d}/a.json", "-o", "{d}/new/"], BAD, files={"a.json": good}),
        Case("merge-o:no-folder", ["merge", "{d}/a.json", "-o", "{d}/none/x.json"], BAD, files={"a.json": good}),
        Case("merge-o:dev-null-force", ["merge", "{d}/a.json", "-o", "/dev/null", "--force"], BAD, files={"a.json": good}),
        Case("merge-o:fifo-force", ["merge", "{d}/a.json", "-o", "{d}/p", "--force"], BAD,
             files={"a.json": good, "p": ("fifo",)}),
        Case("merge-o:empty", ["merge", "{d}/a.json", "-o", ""], BAD, files={"a.json": good}),
        Case("merge-o:dangling-link", ["merge", "{d}/a.json", "-o", "{d}/dl"], BAD,
             files={"a.json": good, "dl": ("link", "nowhere")}),
        # report --html: the same safe write as merge -o (an HTML page, never over an input or a file).
        *[Case(f"report-html:{label}", ["report", "{d}/a.json", "--html", out, *force], BAD,
               files={"a.json": good, "sub": ("dir",), "link.json": ("link", "a.json"),
                      "hard.json": ("hardlink", "a.json"), "p": ("fifo",), "b.html": b"mine"})
          for label, out, force in [
              ("same-force", "{d}/a.json", ["--force"]), ("dotdot-force", "{d}/sub/../a.json", ["--force"]),
              ("link-force", "{d}/link.json", ["--force"]), ("hardlink-force", "{d}/hard.json", ["--force"]),
              ("exists", "{d}/b.html", []), ("folder", "{d}/sub", []), ("no-folder", "{d}/none/r.html", []),
              ("dev-null-force", "/dev/null", ["--force"]), ("fifo-force", "{d}/p", ["--force"]), ("empty", "", [])]],
        Case("report-html:exists-force", ["report", "{d}/a.json", "--html", "{d}/b.html", "--force"], 0,
             files={"a.json": good, "b.html": b"mine"}, replaced={"b.html"}),
        Case("report-html:force-without-html", ["report", "{d}/a.json", "--force"], BAD, files={"a.json": good}),
        Case("report-html:ok", ["report", "{d}/a.json", "--html", "{d}/r.html"], 0, files={"a.json": good},
             outputs={"r.html"}),
        Case("merge:duplicate-input", ["merge", "{d}/a.json", "{d}/a.json", "-o", "{d}/o.json"], BAD, files={"a.json": good}),
        Case("merge:ok", ["merge", "{d}/a.json", "-o", "{d}/o.json"], 0, files={"a.json": good}, outputs={"o.json"}),
        # run: the output checks come before the GPU is looked for (this build has none: exit 1).
        Case("run-o:exists", ["run", "-m", "flash2", "-n", "128", "-d", "64", "-o", "{d}/x.json"], BAD,
             files={"x.json": good}),
        Case("run-o:unrelated-tmp-kept", ["run", "-m", "flash2", "-n", "128", "-d", "64", "-o", "{d}/x.json"], 1,
             files={"x.json.tmp": b"someone else's"}),
        Case("run-o:is-the-sweep", ["run", "--sweep", "{d}/s.json", "-o", "{d}/./s.json", "--force"], BAD,
             files={"s.json": b'{"method": "flash2", "seqlen": 128, "head_dim": 64}'}),
        Case("run-o:is-the-pattern", ["run", "-m", "blocksparse_flash", "-n", "256", "--pattern", "file:{d}/p.txt",
                                      "-o", "{d}/p.txt", "--force"], BAD, files={"p.txt": b"2 2\n11\n11\n"}),
        Case("run-o:folder", ["run", "-m", "flash2", "-n", "128", "-o", "{d}"], BAD),
        Case("run-o:no-folder", ["run", "-m", "flash2", "-n", "128", "-o", "{d}/none/x.json"], BAD),
        Case("run-o:journal-exists", ["run", "-m", "flash2", "-n", "128", "-o", "{d}/x.json"], BAD,
             files={"x.jsonl": journal_bytes(fixture_doc())}),
    ]
    return cases


def cli_cases():
    base = ["run", "--dry-run", "-m", "flash2"]
    shape = {"--seqlen": "128", "--head-dim": "64"}
    options = ["--batch", "--heads", "--kv-heads", "--seqlen", "--seqlen-k", "--head-dim", "--block-r", "--block-c",
               "--sparse-block", "--sparse-window", "--sparse-global", "--tokens", "--model-dim", "--reps", "--warmup",
               "--device", "--dropout", "--density"]
    values = ["-1", "4294967297", "99999999999999999999", "abc", "", "1.5e"]
    cases = []
    for opt in options:
        for v in values:
            if opt == "--dropout" and v in ("-1",):
                pass
            args = list(base)
            for k, sv in shape.items():
                if k != opt:
                    args += [k, sv]
            if opt in ("--tokens",):
                args = [a for a in args]
            args += [opt, v]
            cases.append(Case(f"cli:{opt}={v!r}", args, BAD))
        if opt not in ("--reps", "--warmup", "--device", "--dropout", "--density"):  # CLI11 reads those: 0x10 is 16
            cases.append(Case(f"cli:{opt}='0x10'", [a for a in args[:-1]] + ["0x10"], BAD))
    # 64-bit values: refused, never truncated.
    cases += [
        Case("cli:--block-c 4294967360", base + ["-n", "128", "--block-c", "4294967360"], BAD),
        Case("cli:--sparse-block 4294967297", ["run", "--dry-run", "-m", "blocksparse_flash", "-n", "256",
                                                "--pattern", "butterfly", "--sparse-block", "4294967297"], BAD),
        Case("cli:--seed 2^63", base + ["-n", "128", "--seed", "9223372036854775808"], BAD),
        Case("cli:--batch with --tokens", base + ["-n", "128", "--batch", "2", "--tokens", "16384"], BAD),
        Case("cli:--heads with --model-dim", base + ["-n", "128", "--heads", "2", "--model-dim", "2048"], BAD),
        Case("cli:seqlen 2^40", base + ["-n", "1099511627776"], BAD),
        Case("cli:pattern at 2^40", ["run", "--dry-run", "-m", "blocksparse_flash", "-n", "1099511627776",
                                     "--pattern", "butterfly"], BAD),
        Case("cli:batch x heads x seqlen beyond 2^40", base + ["-n", "65536", "--batch", "65536", "--heads", "65536"], BAD),
        Case("cli:points explosion", base + ["-n", ",".join(str(64 + i) for i in range(300)),
                                             "--batch", ",".join(str(1 + i) for i in range(300)),
                                             "--heads", ",".join(str(1 + i) for i in range(300))], BAD),
        Case("predict:seqlen 2^40", ["predict", "--gpu", "h100-sxm", "--seqlen", "1099511627776"], BAD),
        Case("predict:seqlen 0", ["predict", "--gpu", "h100-sxm", "--seqlen", "0"], BAD),
        Case("predict:seqlen -5", ["predict", "--gpu", "h100-sxm", "--seqlen", "-5"], BAD),
        Case("predict:batch 1e9 heads 1e6", ["predict", "--gpu", "h100-sxm", "--batch", "1000000000", "--heads",
                                             "1000000", "--seqlen", "1024"], BAD),
        Case("predict:gpu empty", ["predict", "--gpu", ""], BAD),
        Case("predict:ok", ["predict", "--gpu", "h100-sxm", "--seqlen", "4096"], 0, stderr_lines=0),
    ]
    for opt in ["--preset", "--out", "--devices", "--shard", "--sweep", "--resume", "--counters"]:
        cases.append(Case(f"cli:empty {opt}", base + ["-n", "128", opt, ""], BAD))
    cases += [
        Case("cli:--shard 3/2", base + ["-n", "128", "--shard", "3/2"], BAD),
        Case("cli:--shard x", base + ["-n", "128", "--shard", "x"], BAD),
        Case("cli:--devices 0,0", base + ["-n", "128", "--devices", "0,0"], BAD),
        Case("cli:--devices 99999999999", base + ["-n", "128", "--devices", "99999999999"], BAD),
        Case("cli:--preset none", ["run", "--dry-run", "--preset", "nope"], BAD),
        Case("cli:--preset and --sweep", ["run", "--dry-run", "--preset", "fa2-figure4", "--sweep", "{d}/s.json"], BAD,
             files={"s.json": b"{}"}),
        Case("cli:unknown subcommand", ["frobnicate"], BAD),
        Case("cli:no subcommand", [], BAD),
        Case("cli:unknown option", ["run", "--frobnicate"], BAD),
        Case("cli:--method unknown", base[:-2] + ["-m", "flash9", "-n", "128"], BAD),
        Case("cli:--json without --dry-run", ["run", "--json", "-m", "flash2", "-n", "128"], BAD),
        Case("analyze:missing file", ["analyze", "{d}/none.json"], BAD),
        Case("report:no files", ["report"], BAD),
        Case("compare:one file", ["compare", "{d}/a.json"], BAD, files={"a.json": dumps(fixture_doc())}),
        Case("merge:no inputs", ["merge", "-o", "{d}/o.json"], BAD),
        Case("list:--batch 2^40", ["list", "--batch", "1099511627776", "-n", "1024"], BAD),
        # S of 6.2e18 bytes: standard's workspace once overflowed int64 judging it (fuzz_cli's finding).
        Case("list:-n 440964096 (S past int64 bytes)", ["list", "-n", "440964096", "4"], 0, stderr_lines=0),
        Case("dry-run:ok", base + ["-n", "128", "-d", "64"], 0, stderr_lines=1),
    ]
    # --kv-layout (issue 20): a page size that is not a positive multiple of 64, or a malformed value.
    for v in ["paged:32", "paged:0", "paged:", "paged", "paged:-64", "paged:64x", "paged:1e3", "paged:99999999999",
              "blocked:64", "", "contiguous,paged:96"]:
        cases.append(Case(f"cli:--kv-layout {v!r}", base + ["-n", "1", "--seqlen-k", "1000", "--kv-layout", v], BAD))
    cases.append(Case("cli:--kv-layout paged:64 ok", base + ["-n", "1", "--seqlen-k", "1000", "--kv-layout",
                                                             "contiguous,paged:64"], 0, stderr_lines=1))
    # --seqlens (issue 20): an empty length list, a lengths file that does not parse, bad grammar, a
    # lengths file that is binary, huge or a directory; a length 0 is allowed (that sequence has no rows).
    for v in ["", "uniform:", "uniform:5", "uniform:9-3", "uniform:0-0", "uniform:-1-5", "uniform:1-99999999999",
              "uniform:1-2-3", "file:", "ragged", "file:{d}/none.txt", "file:{d}", "file:{d}/empty.txt",
              "file:{d}/comments.txt", "file:{d}/bad.txt", "file:{d}/neg.txt", "file:{d}/zeros.txt",
              "file:{d}/binary.txt", "file:{d}/overflow.txt", "file:{d}/float.txt"]:
        cases.append(Case(f"cli:--seqlens {v!r}", base + ["--seqlens", v], BAD,
                          files={"empty.txt": b"", "comments.txt": b"# nothing\n", "bad.txt": b"512 12x\n",
                                 "neg.txt": b"5 -5\n", "zeros.txt": b"0 0 0\n", "binary.txt": bytes(range(256)),
                                 "overflow.txt": b"1 " + b"9" * 4096 + b"\n", "float.txt": b"1.5\n"}))
    cases.append(Case("cli:--seqlens with --padding", base + ["--seqlens", "uniform:1-9", "--padding", "random"], BAD))
    cases.append(Case("cli:--varlen-as alone", base + ["-n", "128", "--varlen-as", "padded"], BAD))
    cases.append(Case("cli:--varlen-as sideways", base + ["--seqlens", "uniform:1-9", "--varlen-as", "x"], BAD))
    cases.append(Case("cli:--seqlens file with a length 0 ok", base + ["--seqlens", "file:{d}/ok.txt", "--varlen-as",
                                                                       "packed,padded"], 0, stderr_lines=1,
                      files={"ok.txt": b"0 1 17 1013\n"}))
    return cases


def profile_cases():
    """flashio profile: refused before the program starts (no command, none such, not executable, a
    bad option or output); a program's own exit code passes through with its file written."""
    o = ["-o", "{d}/p.json"]
    files = {"a.json": dumps(fixture_doc()), "sub": ("dir",), "p": ("fifo",), "x.json": b"mine",
             "prog": ("exec", b"#!/bin/sh\nexit 0\n")}
    cases = [Case(f"profile:{label}", ["profile", *args], BAD, files=files) for label, args in [
        ("no command", o),
        ("nothing after --", o + ["--"]),
        ("no such command", o + ["--", "{d}/missing"]),
        ("not in PATH", o + ["--", "flashio-no-such-program"]),
        ("not executable", o + ["--", "{d}/a.json"]),
        ("a folder", o + ["--", "{d}/sub"]),
        ("--counters off", o + ["--counters", "off", "--", "true"]),
        ("--counters empty", o + ["--counters", "", "--", "true"]),
        ("--range bad", o + ["--range", "(", "--", "true"]),
        ("--range empty", o + ["--range", "", "--", "true"]),
        ("-o exists", ["-o", "{d}/x.json", "--", "true"]),
        ("-o folder", ["-o", "{d}/sub", "--", "true"]),
        ("-o no-folder", ["-o", "{d}/none/p.json", "--", "true"]),
        ("-o empty", ["-o", "", "--", "true"]),
        ("-o dev-null-force", ["-o", "/dev/null", "--force", "--", "true"]),
        ("-o fifo-force", ["-o", "{d}/p", "--force", "--", "true"]),
        ("-o is the program", ["-o", "{d}/prog", "--force", "--", "{d}/prog"]),
    ]]
    cases += [
        Case("profile:exit code passes through", ["profile", *o, "--", "sh", "-c", "exit 5"], 5, outputs={"p.json"},
             stderr_lines=2),
        Case("profile:ok", ["profile", *o, "--", "true"], 0, outputs={"p.json"}, stderr_lines=2),
        Case("profile:-o exists-force", ["profile", "-o", "{d}/x.json", "--force", "--", "true"], 0,
             files={"x.json": b"mine"}, replaced={"x.json"}, stderr_lines=2),
    ]
    return cases


def all_cases():
    return cli_cases() + file_cases() + output_cases() + profile_cases()


# --- running -------------------------------------------------------------------------------------


def make_files(d, files):
    for name, data in files.items():
        path = os.path.join(d, name)
        if isinstance(data, bytes):
            with open(path, "wb") as f:
                f.write(data)
        elif data[0] == "exec":  # an executable file with these bytes
            with open(path, "wb") as f:
                f.write(data[1])
            os.chmod(path, 0o755)
        elif data[0] == "fifo":
            os.mkfifo(path)
        elif data[0] == "dir":
            os.mkdir(path)
    for name, data in files.items():  # links after their targets
        path = os.path.join(d, name)
        if isinstance(data, tuple) and data[0] == "link":
            os.symlink(data[1], path)
        elif isinstance(data, tuple) and data[0] == "hardlink":
            os.link(os.path.join(d, data[1]), path)


def snapshot(d):
    """name -> digest (regular files), or the kind, for everything under d (links not followed)."""
    out = {}
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, d)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    out[rel] = hashlib.sha256(f.read()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = "link:" + os.readlink(path)
            else:
                out[rel] = "dir" if stat.S_ISDIR(st.st_mode) else "special"
    return out


def run_case(flashio, case, timeout):
    """None when the case holds, else why not."""
    with tempfile.TemporaryDirectory(prefix="flashio-hostile-") as d:
        make_files(d, case.files)
        before = snapshot(d)
        argv = [flashio] + [a.replace("{d}", d) for a in case.argv]
        start = time.monotonic()
        try:
            p = subprocess.run(argv, cwd=d, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"did not finish within {timeout} s"
        took = time.monotonic() - start
        after = snapshot(d)
        allowed = case.rc if isinstance(case.rc, tuple) else (case.rc,)
        err = p.stderr.decode(errors="replace")
        if p.returncode < 0:
            return f"killed by signal {-p.returncode}; stderr: {err[-2000:]}"
        if p.returncode not in allowed:
            return f"exit {p.returncode}, expected {case.rc}; stderr: {err[-2000:]}"
        if "Sanitizer" in err or "runtime error:" in err:
            return f"sanitizer report: {err[-3000:]}"
        want_lines = case.stderr_lines
        if want_lines is None and p.returncode in (1, 2):
            want_lines = 1
        if want_lines is not None:
            got = err.splitlines()
            if len(got) != want_lines or (want_lines and not err.endswith("\n")):
                return f"stderr has {len(got)} lines, expected {want_lines}: {err[-2000:]!r}"
            if want_lines and p.returncode in (1, 2) and not got[0].startswith("flashio: "):
                return f"stderr does not start with 'flashio: ': {err[-500:]!r}"
        for name, digest in before.items():
            if name not in case.replaced and after.get(name) != digest:
                return f"input {name} was {'removed' if name not in after else 'changed'}"
        extra = set(after) - set(before) - case.outputs
        if extra:
            return f"left behind: {sorted(extra)}"
        if took > timeout:
            return f"took {took:.1f} s"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flashio", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--list", action="store_true", help="list the cases and what each asserts")
    ap.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args()
    cases = [c for c in all_cases() if args.filter in c.name]
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    if args.list:
        for c in cases:
            print(f"{c.name}\texit {c.rc}; outputs {sorted(c.outputs) or '-'}; replaced {sorted(c.replaced) or '-'}")
        print(f"{len(cases)} cases")
        return 0
    failed = 0
    for c in cases:
        why = run_case(os.path.abspath(args.flashio), c, args.timeout)
        if why:
            failed += 1
            print(f"FAIL {c.name}: {why}")
    print(f"hostile: {len(cases) - failed} of {len(cases)} cases hold")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The bytes each attention method moves per pass, at both levels, against the IO model: flashio's
own methods (``flashio run --counters full`` files) and the peers (``scripts/peers_sdpa.py
--counters`` files), one table per head dim, rows per (N, pass, method).

Every figure comes from the files and from ``flashio analyze --json`` on them (the model: the
method's exact SM↔L2 bytes with its tiles — for a peer, the FlashAttention-2 model with the tiles
its launches imply, analysis/models/peers.cpp); nothing here computes a model. Per row:

    tile         Br×Bc of the forward kernel, then of the backward (fwd · bwd), as analyze read
                 them (a peer's from its kernel names and grids); "—" where no model applies
    read         SM ← L2 bytes, model / measured (the kernels the model describes)
    write + red  SM → L2 stores and L2 reductions and atomics, model / measured (reductions as the
                 counter counts them: 1.5 × on GH100, analysis/README.md)
    ratio        measured / model over both; verdict: analyze's (±3 %), "not judged" (standard:
                 compulsory bytes only) or "no model"
    DRAM         L2 ↔ DRAM bytes measured over the whole pass (read + write; not modelled for peers)
    note         footnotes: why no model applies, kernels with local memory, kernels outside the
                 model (PyTorch's copies) and their SM↔L2 bytes

A point a method did not run (skipped, oom, error) is a row with its status and reason.

    scripts/peer_bytes_table.py [--flashio BIN] [--causal false|true|any] FILE...     Markdown on stdout
    scripts/peer_bytes_table.py --readme README.md FILE...       between <!-- peer-bytes --> markers
    scripts/peer_bytes_table.py --readme README.md --check FILE...   exit 1 when README.md differs

The binary: --flashio, else $FLASHIO_BIN, else build/flashio (a CUDA-free build is enough).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from readme_block import write_block  # noqa: E402

# Rows in this order under each (N, pass); other methods after them, by name.
METHOD_ORDER = ["flash2", "sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "sdpa_math", "flex_attention", "standard"]
PASS_ORDER = ["fwd", "bwd", "fwdbwd"]
NAME_FIELDS = ("b:", "h:", "kvh:", "n:", "nk:", "d:")


def variant(name: str) -> str:
    """What a point's name says beyond the problem the table shows (a forced mma path, a tile)."""
    parts = name.split("/")[2:]
    keep = [p for p in parts if not p.startswith(NAME_FIELDS) and p not in ("fp16", "bf16", "causal")]
    return " [" + "/".join(keep) + "]" if keep else ""


def analyze(flashio: str, files: List[str]) -> Dict[Tuple[str, str], dict]:
    """(file, record name) → the record's entry of ``flashio analyze --json``."""
    r = subprocess.run([flashio, "analyze", "--json"] + files, capture_output=True, text=True)
    if r.returncode not in (0, 3):  # 3: a verdict does not hold, which is a result here
        sys.exit(f"peer_bytes_table: flashio analyze failed (exit {r.returncode}): {r.stderr.strip()}")
    out = {}
    for f in json.loads(r.stdout)["files"]:
        for rec in f["records"]:
            out.setdefault((f["path"], rec["name"]), rec)
    return out


def gb(v: Optional[float]) -> str:
    return "—" if v is None else f"{v / 1e9:.3f}"


def tile(t: Optional[dict]) -> str:
    return f"{t['block_r']}×{t['block_c']}" if t else "—"


class Notes:
    """Footnotes, numbered in order of first use, each text once."""

    def __init__(self) -> None:
        self.texts: List[str] = []

    def ref(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"


def row(rec: dict, a: Optional[dict], notes: Notes) -> List[str]:
    """The cells after (N, pass, method) for one record and its analysis."""
    if rec.get("status") != "ok":
        why = rec.get("reason") or rec.get("status")
        return ["—", "—", "—", "—", rec.get("status", "?"), "—", notes.ref(f"{rec.get('status')}: {why}")]
    a = a or {}
    m = a.get("measured") or {}
    model = a.get("sm_l2_model")
    tiles = a.get("tiles") or {}
    parts = [tile(tiles.get("fwd"))] if rec.get("pass") != "bwd" else []
    if rec.get("pass") != "fwd":
        parts.append(tile(tiles.get("bwd")))
    tile_cell = " · ".join(parts) if model and (tiles.get("fwd") or tiles.get("bwd")) else "—"
    meas_read = m.get("l2_read")
    meas_rest = None if m.get("sm_l2") is None or meas_read is None else m["sm_l2"] - meas_read
    exp_read = model["read"] if model else None
    exp_rest = a["sm_l2_expected"] - model["read"] if model and "sm_l2_expected" in a else None
    outside = m.get("outside_model") or {}
    dram = m.get("dram")
    if dram is not None and outside:
        dram += outside.get("dram", 0)
    ratio = a.get("sm_l2_ratio")
    verdict = a.get("sm_l2_verdict")
    refs = []
    if not model:
        verdict_cell = "no model"
        refs.append(notes.ref(a.get("note") or "no model"))
    elif verdict is None:
        verdict_cell = "not judged" if ratio is not None else "—"
        if a.get("note"):
            refs.append(notes.ref(a["note"].split("; ")[0]))
    else:
        verdict_cell = "holds" if verdict else "FAILS"
    for u in a.get("local_memory") or []:
        refs.append(notes.ref(f"{u['kernel']}: {u['local_bytes_per_thread']} B of local memory per thread "
                              f"({u['registers_per_thread']} registers): its traffic is not in the model"))
    if outside:
        refs.append(f"+{gb(outside.get('sm_l2'))} GB SM↔L2 in " +
                    notes.ref("outside the model: " + ", ".join(outside.get("kernels", []))))
    return [tile_cell, f"{gb(exp_read)} / {gb(meas_read)}", f"{gb(exp_rest)} / {gb(meas_rest)}",
            "—" if ratio is None else f"{ratio:.3f}", verdict_cell, gb(dram), " ".join(refs)]


def describe(path: str, doc: dict) -> str:
    dev = (doc.get("device") or {}).get("name", "?")
    rev = ((doc.get("build") or {}).get("git_revision") or "?")[:7]
    return (f"- `{path}`: {dev}, revision {rev}, {doc.get('created', '?')}, {len(doc.get('records', []))} records; "
            f"`{doc.get('command_line', '')}`")


def table(files: List[str], flashio: str, causal: str) -> str:
    docs = {p: json.load(open(p, encoding="utf-8")) for p in files}
    analysis = analyze(flashio, files)
    points: Dict[int, List[Tuple[Any, ...]]] = {}
    for path, doc in docs.items():
        for rec in doc.get("records", []):
            p = rec.get("problem") or {}
            if causal != "any" and bool(p.get("causal")) != (causal == "true"):
                continue
            method = rec.get("method", "?")
            order = METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER)
            pass_ = rec.get("pass", "?")
            key = (p.get("seqlen_q", 0), PASS_ORDER.index(pass_) if pass_ in PASS_ORDER else 9, order, method,
                   rec.get("name", ""))
            points.setdefault(p.get("head_dim", 0), []).append((key, path, rec))
    notes = Notes()
    out = [f"Generated by `scripts/peer_bytes_table.py` from `flashio analyze` on these files (no figure typed "
           f"by hand); {'non-causal' if causal == 'false' else 'causal' if causal == 'true' else 'all'} points:", ""]
    out += [describe(p, d) for p, d in docs.items()]
    out.append("")
    if not points:
        out.append("No record in these files.")
    for d in sorted(points):
        out += [f"**d = {d}** (bytes in GB; read and write + red: model / measured)", "",
                "| N | pass | method | tile (fwd · bwd) | SM↔L2 read | SM↔L2 write + red | ratio | verdict | DRAM | note |",
                "| ---: | --- | --- | --- | ---: | ---: | ---: | --- | ---: | --- |"]
        for key, path, rec in sorted(points[d], key=lambda x: x[0]):
            a = analysis.get((path, rec.get("name", "")))
            cells = [str(key[0]), rec.get("pass", "?"), rec.get("method", "?") + variant(rec.get("name", ""))]
            out.append("| " + " | ".join(cells + row(rec, a, notes)) + " |")
        out.append("")
    if notes.texts:
        out.append("Notes:")
        out.append("")
        out += [f"{i + 1}. {t}" for i, t in enumerate(notes.texts)]
    return "\n".join(out).rstrip("\n") + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="result files: flashio run --counters full, peers_sdpa.py --counters")
    ap.add_argument("--flashio", default=os.environ.get("FLASHIO_BIN") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "flashio"))
    ap.add_argument("--causal", choices=("false", "true", "any"), default="false")
    ap.add_argument("--readme", help="write the table between the file's <!-- peer-bytes --> markers")
    ap.add_argument("--check", action="store_true", help="with --readme: exit 1 when the file differs")
    a = ap.parse_args()
    if not os.path.isfile(a.flashio):
        sys.exit(f"peer_bytes_table: no flashio binary at {a.flashio} (--flashio or $FLASHIO_BIN)")
    for f in a.files:
        if not os.path.isfile(f):
            sys.exit(f"peer_bytes_table: no file {f}")
    text = table(a.files, a.flashio, a.causal)
    if not a.readme:
        sys.stdout.write(text)
        return 0
    return write_block(a.readme, "peer-bytes", text, a.check,
                       f"run scripts/peer_bytes_table.py --readme {a.readme} {' '.join(a.files)}")


if __name__ == "__main__":
    sys.exit(main())

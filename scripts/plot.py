#!/usr/bin/env python3
"""The papers' figures from flashio result files, as PNG and SVG.

    scripts/plot.py results/*.json --out results/figures [--flashio build/flashio]

Figures (one per setting: pass, head dim, heads, dtype, causal, masking, dropout, device):
  runtime-*       runtime vs N per method, log-log (FlashAttention Figure 3 / Tables 14-25)
  tflops-*        TFLOP/s vs N per method, log2 N (FlashAttention-2 Figures 4-7)
  speedup-standard-*  standard's time / the method's at the same point of the same file
                  (FlashAttention Figures 6-9)
  speedup-peers-* a peer's time / the method's at the same point on the same GPU, any file: the
                  peers are scripts/peers_sdpa.py's records (methods sdpa_*), one line per method
                  and peer
  gpus-*          with files from two or more GPUs: TFLOP/s vs N of every GPU in one figure per
                  setting (pass, head dim, ...) measured on two or more; colour by method, line
                  style by GPU
  memory-*        memory vs N per method (Table 26, Figure 3 right)
  blocksize-*     HBM bytes and runtime vs block size (Figure 2 middle): points whose tile was
                  forced (--block-r/--block-c), measured DRAM and SM<->L2 bytes where counted,
                  else the exact model's SM<->L2 bytes from `flashio analyze --json`
  sparsity-*      speedup over the dense kernel vs block sparsity (Figure 2 right): records
                  whose problem carries a block density
  traffic-*       measured vs predicted bytes at both levels (from `flashio analyze --json`)
A figure without data is skipped with a line on stderr. Needs matplotlib only
(Debian/Ubuntu: apt-get install python3-matplotlib).
"""
import argparse
import collections
import json
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(paths):
    docs = []
    for p in paths:
        with open(p) as f:
            docs.append((p, json.load(f)))
    return docs


def ok_records(docs):
    for path, doc in docs:
        for r in doc.get("records", []):
            if r.get("status") == "ok":
                yield path, doc, r


def device_of(doc):
    return doc.get("device", {}).get("name", "?")


def setting_of_problem(r):
    p = r["problem"]
    s = f'{r["pass"]} d{p["head_dim"]} h{p["heads"]} {p["dtype"]}'
    if p.get("causal"):
        s += " causal"
    if p.get("padding", "none") != "none":
        s += " masked"
    if p.get("dropout", 0) > 0:
        s += f' drop{p["dropout"]}'
    return s


def setting(doc, r):
    return setting_of_problem(r) + " " + device_of(doc)


def is_peer(r):
    return r["method"].startswith("sdpa_")


def point_key(r):
    """The record's point without its method: the name after the first '/'."""
    return r["name"].split("/", 1)[1]


def median_s(r):
    t = (r.get("time") or {}).get("median_s")
    return t if t and t > 0 else None


def tflops(r):
    t = median_s(r)
    return r.get("flops", 0) / t / 1e12 if t and r.get("flops") else None


def slug(s):
    return "".join(c if c.isalnum() else "-" for c in s).strip("-").lower()


def method_label(r):
    p = r["problem"]
    m = r["method"]
    if p.get("block_r", 0) or p.get("block_c", 0):
        m += f' ({p.get("block_r", 0)}x{p.get("block_c", 0)})'
    if p.get("mma"):  # a forced tensor-core path (--mma): its own line beside the method's default
        m += f' [{p["mma"]}]'
    return m


def save(fig, out, name, formats):
    os.makedirs(out, exist_ok=True)
    for ext in formats:
        fig.savefig(os.path.join(out, f"{name}.{ext}"), bbox_inches="tight")
    plt.close(fig)
    print(os.path.join(out, name), file=sys.stderr)


def total_memory(r):
    m = r.get("memory")
    if not m:
        return None
    if "total_bytes" in m:
        return m["total_bytes"]
    return m.get("inputs_bytes", 0) + m.get("outputs_bytes", 0) + m.get("workspace_bytes", 0)


def by_n_plot(docs, out, formats, kind):
    groups = collections.defaultdict(lambda: collections.defaultdict(dict))
    for _, doc, r in ok_records(docs):
        if kind == "runtime":
            v = r.get("time", {}).get("median_s")
            v = v * 1e3 if v else None
        else:
            v = total_memory(r)
            v = v / 1e6 if v else None
        if v:
            groups[setting(doc, r)][method_label(r)][r["problem"]["seqlen_q"]] = v
    if not groups:
        print(f"{kind}: no data", file=sys.stderr)
    for s, methods in groups.items():
        fig, ax = plt.subplots(figsize=(6, 4))
        for m, pts in sorted(methods.items()):
            xs = sorted(pts)
            ax.plot(xs, [pts[x] for x in xs], marker="o", label=m)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length N")
        ax.set_ylabel("runtime (ms)" if kind == "runtime" else "memory (MB)")
        ax.set_title(s, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, out, f"{kind}-{slug(s)}", formats)


def lines_vs_n(out, formats, name, groups, ylabel, title_prefix, reference=None, styles=None):
    """One figure per group: {group: {label: {N: value}}}, log2 N, linear y from 0."""
    for s, series in groups.items():
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, pts in sorted(series.items()):
            xs = sorted(pts)
            kw = styles(label) if styles else {}
            ax.plot(xs, [pts[x] for x in xs], marker="o", label=label, **kw)
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        if reference is not None:
            ax.axhline(reference, color="gray", linestyle=":", linewidth=1)
        ax.set_xlabel("sequence length N")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{title_prefix}: {s}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the axes, off the lines
        save(fig, out, f"{name}-{slug(s)}", formats)


def tflops_plot(docs, out, formats):
    groups = collections.defaultdict(lambda: collections.defaultdict(dict))
    for _, doc, r in ok_records(docs):
        v = tflops(r)
        if v:
            groups[setting(doc, r)][method_label(r)][r["problem"]["seqlen_q"]] = v
    if not groups:
        print("tflops: no timed records", file=sys.stderr)
    lines_vs_n(out, formats, "tflops", groups, "TFLOP/s", "TFLOP/s")


def speedup_standard_plot(docs, out, formats):
    groups = collections.defaultdict(lambda: collections.defaultdict(dict))
    for path, doc in docs:
        standard = {point_key(r): median_s(r) for r in doc.get("records", [])
                    if r.get("status") == "ok" and r["method"] == "standard" and median_s(r)}
        for r in doc.get("records", []):
            t = median_s(r) if r.get("status") == "ok" else None
            if not t or r["method"] == "standard" or point_key(r) not in standard:
                continue
            groups[setting(doc, r)][method_label(r)][r["problem"]["seqlen_q"]] = standard[point_key(r)] / t
    if not groups:
        print("speedup-standard: no record with a standard record at its point in its file", file=sys.stderr)
    lines_vs_n(out, formats, "speedup-standard", groups, "speedup over standard", "Speedup over standard", 1.0)


def speedup_peers_plot(docs, out, formats):
    peers = collections.defaultdict(dict)  # (GPU, point) -> {peer: time}; the first file's where two have it
    for _, doc, r in ok_records(docs):
        if is_peer(r) and median_s(r):
            peers[(device_of(doc), point_key(r))].setdefault(r["method"], median_s(r))
    groups = collections.defaultdict(lambda: collections.defaultdict(dict))
    for _, doc, r in ok_records(docs):
        t = median_s(r)
        if not t or is_peer(r) or r["method"] == "standard":
            continue
        for peer, pt in peers.get((device_of(doc), point_key(r)), {}).items():
            groups[setting(doc, r)][f"{method_label(r)} over {peer}"][r["problem"]["seqlen_q"]] = pt / t
    if not groups:
        print("speedup-peers: no peer records (scripts/peers_sdpa.py, sdpa_*) at flashio's points on the same GPU",
              file=sys.stderr)
    lines_vs_n(out, formats, "speedup-peers", groups, "speedup over the peer", "Speedup over peers", 1.0)


def gpus_plot(docs, out, formats):
    devices = sorted({device_of(doc) for _, doc in docs})
    if len(devices) < 2:
        print("gpus: the files come from one GPU: no cross-GPU figure", file=sys.stderr)
        return
    by_setting = collections.defaultdict(lambda: collections.defaultdict(dict))
    gpus_of = collections.defaultdict(set)
    for _, doc, r in ok_records(docs):
        v = tflops(r)
        if v:
            s = setting_of_problem(r)
            by_setting[s][(method_label(r), device_of(doc))][r["problem"]["seqlen_q"]] = v
            gpus_of[s].add(device_of(doc))
    groups = {s: {f"{m} — {g}": pts for (m, g), pts in series.items()}
              for s, series in by_setting.items() if len(gpus_of[s]) > 1}
    if not groups:
        print("gpus: no setting measured on two or more GPUs", file=sys.stderr)
        return
    methods = sorted({label.split(" — ")[0] for series in groups.values() for label in series})
    colours = {m: f"C{i % 10}" for i, m in enumerate(methods)}
    dashes = ["-", "--", ":", "-."]

    def style(label):
        m, g = label.rsplit(" — ", 1)
        return {"color": colours[m], "linestyle": dashes[devices.index(g) % len(dashes)]}

    lines_vs_n(out, formats, "gpus", groups, "TFLOP/s", "TFLOP/s across GPUs", styles=style)


def analyze_json(flashio, paths):
    if not flashio:
        return None
    res = subprocess.run([flashio, "analyze", "--json", *paths], capture_output=True, text=True)
    if res.returncode not in (0, 3):  # 3: a verdict does not hold (docs/hostile-input.md, exit status)
        print(f"flashio analyze failed: {res.stderr.strip()}", file=sys.stderr)
        return None
    return json.loads(res.stdout)


def analysis_by_name(analysis):
    out = {}
    for f in (analysis or {}).get("files", []):
        for r in f.get("records", []):
            out[(f["path"], r["name"])] = r
    return out


def blocksize_plot(docs, out, formats, analysis):
    an = analysis_by_name(analysis)
    groups = collections.defaultdict(list)
    for path, doc, r in ok_records(docs):
        p = r["problem"]
        if not (p.get("block_r", 0) or p.get("block_c", 0)):
            continue
        tiles = r.get("tiles", {})
        x = tiles.get("block_c") if r["method"] == "flash1" else tiles.get("block_r")
        c = r.get("counters", {})
        b = c.get("bytes", {}) if c.get("status") == "ok" else {}
        dram = b.get("dram_read", 0) + b.get("dram_write", 0) if "dram_read" in b else None
        sm = sum(b.get(k, 0) for k in ("l2_read", "l2_write", "l2_red", "l2_atom")) if "l2_read" in b else None
        model = an.get((path, r["name"]), {}).get("sm_l2_model", {}).get("total")
        key = setting(doc, r) + f' n{p["seqlen_q"]} {r["method"]}'
        groups[key].append((x, r.get("time", {}).get("median_s", 0) * 1e3, dram, sm, model))
    if not groups:
        print("blocksize: no records with a forced tile (run with --block-c/--block-r)", file=sys.stderr)
    for s, pts in groups.items():
        pts.sort()
        fig, ax = plt.subplots(figsize=(6, 4))
        xs = [p[0] for p in pts]
        for idx, label in ((2, "DRAM measured"), (3, "SM<->L2 measured"), (4, "SM<->L2 model")):
            if all(p[idx] is not None for p in pts):
                ax.plot(xs, [p[idx] / 1e9 for p in pts], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("block size (Bc for flash1, Br for flash2)")
        ax.set_ylabel("bytes (GB)")
        ax2 = ax.twinx()
        ax2.plot(xs, [p[1] for p in pts], marker="s", color="black", linestyle="--", label="runtime")
        ax2.set_ylabel("runtime (ms)")
        ax.set_title("Figure 2 (middle): " + s, fontsize=9)
        lines = ax.get_legend_handles_labels()
        lines2 = ax2.get_legend_handles_labels()
        ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=8)
        save(fig, out, f"blocksize-{slug(s)}", formats)


def sparsity_plot(docs, out, formats):
    dense = {}
    sparse = collections.defaultdict(list)
    for _, doc, r in ok_records(docs):
        p = r["problem"]
        t = r.get("time", {}).get("median_s")
        if not t:
            continue
        key = (setting(doc, r), p["seqlen_q"])
        density = p.get("density")
        if density is None and r["method"] in ("flash1", "flash2"):
            dense[key] = t
        elif density is not None:
            sparse[key].append((1.0 - density, t))
    series = collections.defaultdict(list)
    for key, pts in sparse.items():
        if key in dense:
            for s, t in pts:
                series[key[0] + f" n{key[1]}"].append((s, dense[key] / t))
    if not series:
        print("sparsity: no block-sparse records with a dense counterpart", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xlabel("sparsity (fraction of blocks skipped)")
    ax.set_ylabel("speedup over dense")
    ax.set_title("Figure 2 (right)", fontsize=9)
    ax.legend(fontsize=7)
    save(fig, out, "sparsity", formats)


def traffic_plot(out, formats, analysis):
    pts = {"SM<->L2": [], "DRAM": []}
    for f in (analysis or {}).get("files", []):
        for r in f.get("records", []):
            meas = r.get("measured") or {}
            if meas.get("sm_l2") and r.get("sm_l2_model"):
                pts["SM<->L2"].append((r["sm_l2_model"]["total"], meas["sm_l2"]))
            if meas.get("dram") and r.get("dram_model"):
                pts["DRAM"].append((r["dram_model"]["predicted"], meas["dram"]))
    if not pts["SM<->L2"] and not pts["DRAM"]:
        print("traffic: no counted records (or no --flashio to run the model)", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(5, 5))
    lo, hi = float("inf"), 0.0
    for label, p in pts.items():
        if p:
            ax.scatter([x for x, _ in p], [y for _, y in p], label=label, s=14)
            lo = min(lo, *[min(x, y) for x, y in p])
            hi = max(hi, *[max(x, y) for x, y in p])
    ax.plot([lo, hi], [lo, hi], color="gray", linestyle=":", label="measured = model")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted bytes")
    ax.set_ylabel("measured bytes")
    ax.set_title("Measured vs predicted traffic", fontsize=9)
    ax.legend(fontsize=8)
    save(fig, out, "traffic", formats)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="flashio result files")
    ap.add_argument("--out", default="results/figures", help="output folder (default results/figures)")
    ap.add_argument("--flashio", default=None, help="the flashio binary, for model bytes (flashio analyze --json)")
    ap.add_argument("--formats", default="png,svg", help="comma-separated (default png,svg)")
    a = ap.parse_args(argv)
    docs = load(a.files)
    formats = a.formats.split(",")
    analysis = analyze_json(a.flashio, a.files)
    by_n_plot(docs, a.out, formats, "runtime")
    by_n_plot(docs, a.out, formats, "memory")
    tflops_plot(docs, a.out, formats)
    speedup_standard_plot(docs, a.out, formats)
    speedup_peers_plot(docs, a.out, formats)
    gpus_plot(docs, a.out, formats)
    blocksize_plot(docs, a.out, formats, analysis)
    sparsity_plot(docs, a.out, formats)
    traffic_plot(a.out, formats, analysis)
    return 0


if __name__ == "__main__":
    sys.exit(main())

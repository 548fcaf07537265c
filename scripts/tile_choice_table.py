#!/usr/bin/env python3
"""One method's forced tiles against a peer, from several runs of each: per (d, mask, tile) the
peer's best median time over ours (best of the runs), a column per N. Run with the result files
of each tile (`flashio run ... --block-r R --block-c C`) and the peer's (scripts/peers_sdpa.py),
e.g. kernels/flash3/NOTES.md's table:
  scripts/tile_choice_table.py --method flash3 --peer sdpa_cudnn results/crosscheck/issue16-wide-tiles/tile-choice/*.json
Records of other methods are ignored; a tile's row needs its records to carry `tiles`."""
import argparse
import json
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--method", required=True)
    ap.add_argument("--peer", required=True)
    a = ap.parse_args()
    ours, peer = defaultdict(list), defaultdict(list)
    for f in a.files:
        for r in json.load(open(f))["records"]:
            if r["status"] != "ok":
                continue
            p = r["problem"]
            at = (p["head_dim"], p["causal"])
            if r["method"] == a.method:
                ours[(at, f'{r["tiles"]["block_r"]} × {r["tiles"]["block_c"]}', p["seqlen_q"])].append(r["time"]["median_s"])
            elif r["method"] == a.peer:
                peer[(at, p["seqlen_q"])].append(r["time"]["median_s"])
    ns = sorted({k[2] for k in ours})
    rows = sorted({(k[0], k[1]) for k in ours}, key=lambda x: (x[0], x[1] != "128 × 128", x[1]))
    print("| d | mask | tile | " + " | ".join(str(n) for n in ns) + " |")
    print("|---|---|---|" + "---|" * len(ns))
    for (d, causal), tile in rows:
        cells = []
        for n in ns:
            o, q = ours.get(((d, causal), tile, n)), peer.get(((d, causal), n))
            cells.append(f"{min(q) / min(o):.2f}" if o and q else "")
        print(f"| {d} | {'causal' if causal else 'none'} | {tile} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

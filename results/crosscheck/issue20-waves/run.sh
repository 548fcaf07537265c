#!/usr/bin/env bash
# Does wave quantisation cost flash_decode time? batch 32 (256 blocks on 132 SMs: 1.94 waves) against 33 (264: 2 waves) and 64/66, cuDNN beside.
set -u
xz -dc .gpu/ab.tar.xz | tar xf -
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/log.txt
pts=(--heads 32 --kv-heads 8 --head-dim 128 --seqlen 1 --seqlen-k 8192,32768 --batch 32,33,64,66)
mkdir -p w
for rep in 1 2; do
  build/flashio_before run --method flash_decode "${pts[@]}" --counters off --reps 100 -q --out w/fd-$rep.json >> $OUT/log.txt 2>&1
  python3 scripts/peers_sdpa.py --flashio build/flashio_before --backend cudnn "${pts[@]}" --reps 100 -q --out w/sdpa-$rep.json >> $OUT/log.txt 2>&1
done
python3 - >> $OUT/log.txt <<'PY'
import json, glob
t = {}
for f in sorted(glob.glob("w/*.json")):
    for r in json.load(open(f))["records"]:
        if r["status"] != "ok": print(f, r["name"], r["status"]); continue
        p = r["problem"]; key = (p["seqlen_k"], p["batch"])
        t.setdefault(key, {}).setdefault(r["method"], []).append(r["time"]["median_s"] * 1e6)
        t[key]["splits"] = r.get("tiles", {}).get("splits")
for k in sorted(t):
    row = t[k]; a = min(row["flash_decode"]); c = min(row.get("sdpa_cudnn", [float("nan")]))
    print(f"nk {k[0]:6d} b {k[1]:3d} splits {row['splits']}: flash_decode {a:8.1f} us ({a/k[1]:6.2f}/seq)  cudnn {c:8.1f} us ({c/k[1]:6.2f}/seq)  cudnn/ours {c/a:.3f}")
PY
tar cf $OUT/w.tar w

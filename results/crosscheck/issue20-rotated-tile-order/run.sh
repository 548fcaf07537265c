#!/usr/bin/env bash
# flash_decode rotated tile order (per block: after; per warp: v3): decode tests, A/B with cuDNN beside.
set -u
xz -dc .gpu/ab.tar.xz | tar xf -
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/log.txt
{ build/tests/flashio_gpu_tests --gtest_filter="*FlashDecode*" 2>&1 | tail -4; } >> $OUT/log.txt 2>&1
pts=(--heads 32 --kv-heads 8 --head-dim 128 --seqlen 1 --seqlen-k 8192,32768 --batch 8,32)
mkdir -p ab
for rep in 1 2; do
  for side in before after v3; do
    bin=build/flashio_before; [ $side = after ] && bin=build/flashio; [ $side = v3 ] && bin=build/flashio_v3
    $bin run --method flash_decode "${pts[@]}" --kv-layout contiguous,paged:64 --counters off --reps 100 -q --out ab/$side-$rep.json >> $OUT/log.txt 2>&1
  done
  python3 scripts/peers_sdpa.py --flashio build/flashio --backend cudnn,flash "${pts[@]}" --kv-layout contiguous --reps 100 -q --out ab/sdpa-$rep.json >> $OUT/log.txt 2>&1
done
python3 - >> $OUT/log.txt <<'PY'
import json, glob
t = {}
for f in sorted(glob.glob("ab/*-[12].json")):
    side = f.split("/")[1].split("-")[0]
    for r in json.load(open(f))["records"]:
        if r["status"] != "ok": print(f, r["name"], r["status"]); continue
        p = r["problem"]; key = (p["batch"], p["seqlen_k"], p.get("kv_layout", "contiguous"))
        m = side if side != "sdpa" else r["method"]
        t.setdefault(key, {}).setdefault(m, []).append(r["time"]["median_s"] * 1e6)
for k in sorted(t):
    row = t[k]; a = row.get("after"); b = row.get("before"); c = row.get("sdpa_cudnn")
    s = " ".join(f"{m}={','.join(f'{x:.1f}' for x in v)}" for m, v in sorted(row.items()))
    extra = ""
    if a and b: extra += f" after/before={min(a)/min(b):.3f}"
    if row.get("v3") and b: extra += f" v3/before={min(row['v3'])/min(b):.3f}"
    if a and c: extra += f" cudnn/after={min(c)/min(a):.3f} cudnn/before={min(c)/min(b):.3f}"
    print(k, s, extra)
PY
tar cf $OUT/ab.tar ab

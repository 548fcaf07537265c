#!/usr/bin/env bash
# The spread of the b 1, N 16384 points (d 128, non-causal, FA-2 setting): flash3 and cuDNN's SDPA,
# forward and fwd+bwd, five times each, alternated, H100.
set -uo pipefail
tar xJf .gpu/ab.tar.xz
nvidia-smi -L
mkdir -p $OUT/spread
for i in 1 2 3 4 5; do
  build/flashio run --method flash3 --seqlen 16384 --batch 1 --heads 16 --head-dim 128 --pass fwd,fwdbwd --counters off --reps 30 --warmup 5 -q --out $OUT/spread/flash3-$i.json > /dev/null
  python3 scripts/peers_sdpa.py --backend cudnn --seqlen 16384 --batch 1 --heads 16 --head-dim 128 --pass fwd,fwdbwd --out $OUT/spread/cudnn-$i.json > /dev/null 2>&1 || echo "peers rc=$?"
done
python3 - $OUT/spread <<'PY'
import json, sys, glob
d = sys.argv[1]
for side in ("flash3", "cudnn"):
    for f in sorted(glob.glob(f"{d}/{side}-*.json")):
        recs = json.load(open(f))["records"]
        print(side, f.split("/")[-1], " ".join(f"{r['name'].split('/')[1]} {r['time']['median_s']*1e3:.3f}" for r in recs if r.get("time")))
PY

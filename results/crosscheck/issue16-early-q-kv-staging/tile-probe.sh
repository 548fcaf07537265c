#!/usr/bin/env bash
# Tile choice after 4a1fd02 (one-Q-buffer tiles free Q early): the default tiles against 128 x 176 (d 128)
# and 192 x 128 (d 64) where the length rule does not pick them, alternated twice.
set -uo pipefail
tar xJf .gpu/ab.tar.xz
nvidia-smi -L
cat > /tmp/s.json <<'JSON'
{"description": "tile probe", "sweeps": [
  {"method": "flash3", "seqlen": [512, 1024, 2048, 4096, 8192], "head_dim": [128], "causal": [false, true], "pass": ["fwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash3", "block_c": 176, "seqlen": [512, 1024, 2048, 4096], "head_dim": [128], "causal": [false, true], "pass": ["fwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash3", "seqlen": [1024, 2048, 4096, 8192], "head_dim": [64], "causal": [false, true], "pass": ["fwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash3", "block_r": 192, "seqlen": [1024, 2048, 4096], "head_dim": [64], "causal": [false, true], "pass": ["fwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash3", "seqlen": [512, 1024, 2048], "head_dim": [256], "causal": [false, true], "pass": ["fwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash3", "block_c": 80, "seqlen": [512, 1024], "head_dim": [256], "causal": [false, true], "pass": ["fwd"], "tokens": 16384, "model_dim": 2048}]}
JSON
for rep in 1 2; do build/flashio run --sweep /tmp/s.json --reps 20 --warmup 3 --counters off -q --out $OUT/probe-$rep.json > /dev/null; done
python3 - $OUT/probe-1.json $OUT/probe-2.json <<'PY'
import json, sys
best = {}
for f in sys.argv[1:]:
    for r in json.load(open(f))["records"]:
        if r["status"] != "ok": print(r["name"], r["status"], r.get("reason")); continue
        t = r["time"]["median_ms"]
        best[r["name"]] = min(best.get(r["name"], 9e9), t)
for n, t in sorted(best.items()): print(f"{n:70s} {t:.4f}")
PY

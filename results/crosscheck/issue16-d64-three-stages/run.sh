#!/usr/bin/env bash
# flash3 forward, d 64: three K/V ring stages (after) against two (before, 4fea7d8), alternated twice.
set -uo pipefail
tar xJf .gpu/ab.tar.xz
nvidia-smi -L
cat > /tmp/sweep.json <<'JSON'
{"description": "flash3 forward d 64: three K/V stages",
 "sweeps": [
  {"method": "flash3", "seqlen": [512, 1024, 2048, 4096, 8192, 16384], "head_dim": [64],
   "causal": [false, true], "pass": ["fwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash3", "seqlen": [1, 17, 1013, 4097], "head_dim": [64], "causal": [false, true],
   "pass": ["fwd"], "batch": 2, "heads": 3}]}
JSON
scripts/ab_run.sh build/flashio_before build/flashio $OUT/ab /tmp/sweep.json
python3 scripts/ab_table.py --before $OUT/ab/before-1.json $OUT/ab/before-2.json --after $OUT/ab/after-1.json $OUT/ab/after-2.json > $OUT/ab.md
cat $OUT/ab.md
for f in $OUT/ab/*.json; do python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], {s: sum(r['status']==s for r in d['records']) for s in ('ok','error','skipped')})" $f; done

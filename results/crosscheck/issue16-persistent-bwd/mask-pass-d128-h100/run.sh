#!/usr/bin/env bash
# d 128 causal backward: the mask by a pass setting masked scores to -inf, only where a tile can mask (after)
# against 765d1df (before); correctness first (the flash3 backward tests need the test binary: the
# before/after sweep's check runs the float64 comparison on every point instead).
set -uo pipefail
tar xJf .gpu/ab.tar.xz
nvidia-smi -L
cat > /tmp/sweep.json <<'JSON'
{"description": "flash3 backward: d 128 causal mask by a pass before the loop, where a tile can mask (d 64 unchanged)",
 "sweeps": [
  {"method": "flash3", "seqlen": [2048, 4096, 8192, 16384], "head_dim": [64, 128],
   "causal": [false, true], "pass": ["bwd", "fwdbwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash3", "seqlen": [1, 17, 1013, 4097], "head_dim": [128], "causal": [false, true],
   "pass": ["bwd"], "batch": 2, "heads": 3}]}
JSON
scripts/ab_run.sh build/flashio_before build/flashio_after $OUT/ab /tmp/sweep.json
python3 scripts/ab_table.py --before $OUT/ab/before-1.json $OUT/ab/before-2.json --after $OUT/ab/after-1.json $OUT/ab/after-2.json
for f in $OUT/ab/*.json; do python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], {s: sum(r['status']==s for r in d['records']) for s in ('ok','error','skipped')})" $f; done

#!/usr/bin/env bash
set -uo pipefail
tar xJf .gpu/ab.tar.xz
nvidia-smi -L
cat > /tmp/s3-sweep.json <<'JSON'
{"description": "flash3 backward ring: 2 vs 3 stages at d 64 (d 128 unchanged: the noise control)",
 "sweeps": [
  {"method": "flash3", "seqlen": [2048, 4096, 8192, 16384], "head_dim": [64, 128],
   "causal": [false, true], "pass": ["bwd", "fwdbwd"], "tokens": 16384, "model_dim": 2048}]}
JSON
scripts/ab_run.sh build/flashio_s2 build/flashio_s3 $OUT/ab /tmp/s3-sweep.json
python3 scripts/ab_table.py --before $OUT/ab/before-1.json $OUT/ab/before-2.json --after $OUT/ab/after-1.json $OUT/ab/after-2.json

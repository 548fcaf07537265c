#!/usr/bin/env bash
# flash3 forward: Q freed after the item's last S, O stored from registers (after) against 83d1ed1 (before):
# the flash3 GPU tests first, then before/after alternated on the FA-2 setting's forward, odd sizes included.
set -uo pipefail
tar xJf .gpu/ab.tar.xz
nvidia-smi -L
build/tests/flashio_gpu_tests --gtest_filter='*Flash3*' --gtest_brief=1 > $OUT/flash3-tests.txt 2>&1; tail -4 $OUT/flash3-tests.txt
cat > /tmp/sweep.json <<'JSON'
{"description": "flash3 forward: Q buffer freed after the last S, O by whole 16-byte stores from registers",
 "sweeps": [
  {"method": "flash3", "seqlen": [512, 1024, 2048, 4096, 8192, 16384], "head_dim": [64, 128, 256],
   "causal": [false, true], "pass": ["fwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash3", "seqlen": [1, 17, 1013, 4097], "head_dim": [64, 128, 256], "causal": [false, true],
   "pass": ["fwd"], "batch": 2, "heads": 3}]}
JSON
scripts/ab_run.sh build/flashio_before build/flashio $OUT/ab /tmp/sweep.json
python3 scripts/ab_table.py --before $OUT/ab/before-1.json $OUT/ab/before-2.json --after $OUT/ab/after-1.json $OUT/ab/after-2.json
for f in $OUT/ab/*.json; do python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], {s: sum(r['status']==s for r in d['records']) for s in ('ok','error','skipped')}, [r['name'] for r in d['records'] if r['status']!='ok'][:5])" $f; done
# the committed files of this build: flash3's forward with its peers, and FA-3 Table 2's ablations
rm -rf /tmp/r; scripts/reproduce_results.sh /tmp/r flash3 2>&1 | tail -40
build/flashio run --method flash3,flash3_no_pingpong,flash3_no_overlap --seqlen 512,1024,2048,4096,8192,16384 --head-dim 128 --causal false,true --pass fwd --tokens 16384 --model-dim 2048 --reps 20 --warmup 3 --counters off -q --out /tmp/r/nvidia-h100-80gb-hbm3-flash3-ablations.json
tar czf $OUT/r.tgz -C /tmp r
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab

#!/usr/bin/env bash
# flash3 forward, one-Q-buffer tiles: Q freed after the last S, O staged in the last K/V slots (after) against
# in flight (after) against b5e3dc3 (before); flash3 tests first; then the flash3 file with peers.
set -uo pipefail
tar xJf .gpu/ab.tar.xz
nvidia-smi -L
build/tests/flashio_gpu_tests --gtest_filter='*Flash3*' --gtest_brief=1 > $OUT/flash3-tests.txt 2>&1; tail -2 $OUT/flash3-tests.txt
cat > /tmp/sweep.json <<'JSON'
{"description": "flash3 forward: O stored after the next item's first GEMM",
 "sweeps": [
  {"method": "flash3", "seqlen": [512, 1024, 2048, 4096, 8192, 16384], "head_dim": [64, 128, 256],
   "causal": [false, true], "pass": ["fwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash3", "block_c": 128, "seqlen": [2048, 4096, 8192, 16384], "head_dim": [128],
   "causal": [false, true], "pass": ["fwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash3", "seqlen": [1, 17, 1013, 4097], "head_dim": [64, 128, 256], "causal": [false, true],
   "pass": ["fwd"], "batch": 2, "heads": 3}]}
JSON
scripts/ab_run.sh build/flashio_before build/flashio $OUT/ab /tmp/sweep.json
python3 scripts/ab_table.py --before $OUT/ab/before-1.json $OUT/ab/before-2.json --after $OUT/ab/after-1.json $OUT/ab/after-2.json > $OUT/ab.md
tail -1 $OUT/ab.md
for f in $OUT/ab/*.json; do python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-1], {s: sum(r['status']==s for r in d['records']) for s in ('ok','error','skipped')})" $f; done
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $OUT/ab
rm -rf /tmp/r; scripts/reproduce_results.sh /tmp/r flash3 2>&1 | tail -30
tar czf $OUT/r.tgz -C /tmp r

#!/usr/bin/env bash
# Issue 16: ../p-before-dp-wait.patch beside the committed flash3 backward on one H100, alternated (before, after,
# before, after: scripts/ab_run.sh) in the FA-2 setting (d 64/128, causal off/on, N 1024-16384, pass bwd), with
# SDPA's cuDNN back-end after each round. build/flashio: the committed build (left on the warm machine by the call
# before); build-bo/flashio: the same revision with the patch applied (`ninja flashio`,
# `FLASHIO_BUNDLE_DIR=.gpubo scripts/gpu_bundle.sh pack flashio`, carried: one bundle per call fits). Every
# `flashio run` checks its output against the float64 reference (err/tol) before it times it.
set -u
OUT=$1
FLASHIO_BUNDLE_DIR=.gpubo FLASHIO_BUILD_DIR=build-bo bash scripts/gpu_bundle.sh unpack
nvidia-smi --query-gpu=name,serial --format=csv > $OUT/gpu.txt
cat > /tmp/bwd-ab.json <<'JSON'
{"description": "issue 16 A/B: flash3's backward, FA-2 setting, d 64/128, causal off/on",
 "sweeps": [{"method": "flash3", "seqlen": [1024, 2048, 4096, 8192, 16384], "head_dim": [64, 128],
   "causal": [false, true], "pass": "bwd", "tokens": 16384, "model_dim": 2048}]}
JSON
bash scripts/ab_run.sh build/flashio build-bo/flashio $OUT/ab /tmp/bwd-ab.json >> $OUT/gpu.txt 2>&1 || echo "ab_run failed" >> $OUT/gpu.txt
python3 scripts/ab_table.py --before $OUT/ab/before-{1,2}.json --after $OUT/ab/after-{1,2}.json > $OUT/ab.md 2>> $OUT/gpu.txt
python3 scripts/peers_sdpa.py --flashio build/flashio --seqlen 1024,2048,4096,8192,16384 --head-dim 64,128 --causal false,true \
  --pass bwd --backend cudnn --tokens 16384 --model-dim 2048 --reps 15 --warmup 3 -q --out $OUT/cudnn.json > /dev/null 2>> $OUT/gpu.txt \
  || echo "cudnn failed" >> $OUT/gpu.txt
for f in $OUT/ab/*.json; do grep -o '"status": *"[a-z]*"' $f | sort | uniq -c | sed "s|^|$(basename $f) |" >> $OUT/gpu.txt; done

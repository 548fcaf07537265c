#!/usr/bin/env bash
# Issue 19: do the timing group's committed DRAM bytes reproduce? The committed files' own commands, twice each, on one chip
set -u
OUT=$1
bash scripts/gpu_bundle.sh unpack
nvidia-smi --query-gpu=name,serial --format=csv > $OUT/gpu.txt
F=build/flashio
for r in 1 2; do
  $F run --method flash2 --mma mma.sync --batch 1 --heads 1 --reps 3 --warmup 1 -q --head-dim 128 --pass fwd --block-r 128 --block-c 32,64 --seqlen 65536,98304,131072,196608,262144 --out $OUT/drift-fwd-r$r.json > /dev/null 2>> $OUT/gpu.txt || echo "drift r$r failed" >> $OUT/gpu.txt
  $F run --method flash1 --pass bwd --batch 16 --heads 8 --head-dim 64 --seqlen 1536,2048,2560,3072 --dropout 0,0.1 --reps 5 --warmup 2 -q --out $OUT/flash1-bwd-2048-r$r.json > /dev/null 2>> $OUT/gpu.txt || echo "bwd r$r failed" >> $OUT/gpu.txt
done
for c in dram full dram full; do
  $F run --method flash2 --mma mma.sync --batch 1 --heads 1 --reps 1 --warmup 0 -q --head-dim 128 --pass fwd --block-r 128 --block-c 64 --seqlen 262144 --counters $c --out /tmp/p.json > /dev/null 2>&1
  python3 -c "import json;r=json.load(open('/tmp/p.json'))['records'][0]['counters']['bytes'];print('$c', r['dram_read'], r['dram_write'])" >> $OUT/gpu.txt
done

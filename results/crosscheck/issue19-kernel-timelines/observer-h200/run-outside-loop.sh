#!/usr/bin/env bash
# Issue 19: flash2's one-head long forward, the committed kernel and the timeline instance, on one chip
set -u
OUT=$1
bash scripts/gpu_bundle.sh unpack
nvidia-smi --query-gpu=name,serial --format=csv > $OUT/gpu.txt
F=build/flashio
mkdir -p /tmp/tl /tmp/res
A="--method flash2 --mma mma.sync --block-r 128 --block-c 64 --pass fwd --batch 1 --heads 1 --head-dim 128 --reps 1 --warmup 0 --counters dram -q"
for n in 262144 131072; do
  for r in 1 2; do
    $F run $A --seqlen $n --out /tmp/res/clean-f2-$n-r$r.json > /dev/null 2>&1 || echo "clean $n failed" >> $OUT/gpu.txt
    FLASHIO_TIMELINE=/tmp/tl/f2-$n-r$r $F run $A --seqlen $n --out /tmp/res/ct-f2-$n-r$r.json > /dev/null 2>&1 || echo "tl $n failed" >> $OUT/gpu.txt
  done
done
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/side_probe tests/gpu_sm_side_probe.cu && /tmp/side_probe 16.5 0 > /tmp/res/side.txt 2>&1
for f in /tmp/res/*.json; do python3 -c "import json;r=json.load(open('$f'))['records'][0]['counters']['bytes'];print('$f', r['dram_read']+r['dram_write'])" >> $OUT/gpu.txt; done
tar -C /tmp -cJf $OUT/tl.tar.xz tl res

#!/usr/bin/env bash
# Issue 19: flash1's backward and forward, the committed kernels and start/end timeline instances (stamps outside the loops), one chip
set -u
OUT=$1
bash scripts/gpu_bundle.sh unpack
nvidia-smi --query-gpu=name,serial --format=csv > $OUT/gpu.txt
F=build/flashio
mkdir -p /tmp/tl /tmp/res
for n in 1536 2048 2560; do
  A="--method flash1 --pass bwd --batch 16 --heads 8 --head-dim 64 --seqlen $n --reps 1 --warmup 0 --counters dram -q"
  for r in 1 2; do
    $F run $A --out /tmp/res/clean-bwd-$n-r$r.json > /dev/null 2>&1 || echo "clean bwd $n failed" >> $OUT/gpu.txt
    FLASHIO_TIMELINE=/tmp/tl/bwd-$n-r$r $F run $A --out /tmp/res/ct-bwd-$n-r$r.json > /dev/null 2>&1 || echo "tl bwd $n failed" >> $OUT/gpu.txt
  done
done
for n in 512 1024; do
  A="--method flash1 --pass fwd --batch 16 --heads 8 --head-dim 64 --seqlen $n --reps 1 --warmup 0 --counters dram -q"
  $F run $A --out /tmp/res/clean-fwd-$n-r1.json > /dev/null 2>&1 || echo "clean fwd $n failed" >> $OUT/gpu.txt
  FLASHIO_TIMELINE=/tmp/tl/fwd-$n-r1 $F run $A --out /tmp/res/ct-fwd-$n-r1.json > /dev/null 2>&1 || echo "tl fwd $n failed" >> $OUT/gpu.txt
done
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/side_probe tests/gpu_sm_side_probe.cu && /tmp/side_probe 16.5 0 > /tmp/res/side.txt 2>&1
for f in /tmp/res/*.json; do python3 -c "import json;r=json.load(open('$f'))['records'][0]['counters']['bytes'];print('$f', r['dram_read']+r['dram_write'])" >> $OUT/gpu.txt; done
tar -C /tmp -cJf $OUT/tl.tar.xz tl res

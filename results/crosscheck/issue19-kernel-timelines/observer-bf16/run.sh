#!/usr/bin/env bash
# Issue 19: the younger block's slowdown of the bf16 instantiation (and fp16 again), on an H200 and an H100: flash2's
# one-head long forward, the committed kernel and its start/end timeline instance in one binary
# (../observer-h200/instance-start-end-outside-loop.patch applied, `ninja flashio`, `FLASHIO_BUNDLE_DIR=.gputl scripts/gpu_bundle.sh pack flashio`, carried),
# on one chip (CASES, RUNS and NO_SIDES shorten the call); fp16 (the instantiation the constant is for) and bf16 (which has none yet).
set -u
OUT=$1
FLASHIO_BUNDLE_DIR=.gputl FLASHIO_BUILD_DIR=build-tl bash scripts/gpu_bundle.sh unpack
nvidia-smi --query-gpu=name,serial --format=csv > $OUT/gpu.txt
F=build-tl/flashio
mkdir -p /tmp/tl /tmp/res
A="--method flash2 --mma mma.sync --block-r 128 --block-c 64 --pass fwd --batch 1 --heads 1 --head-dim 128 --reps 1 --warmup 0 --counters dram -q"
for case in ${CASES:-fp16:262144 fp16:131072 bf16:262144 bf16:131072}; do
  dt=${case%:*} n=${case#*:} tag=f2se; [ $dt = bf16 ] && tag=f2se-bf16
  for r in $(seq 1 ${RUNS:-2}); do
    $F run $A --dtype $dt --seqlen $n --out /tmp/res/clean-$tag-$n-r$r.json > /dev/null 2>&1 || echo "clean $case failed" >> $OUT/gpu.txt
    FLASHIO_TIMELINE=/tmp/tl/$tag-$n-r$r $F run $A --dtype $dt --seqlen $n --out /tmp/res/ct-$tag-$n-r$r.json > /dev/null 2>&1 || echo "tl $case failed" >> $OUT/gpu.txt
  done
done
[ -z "${NO_SIDES:-}" ] && nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/side_probe tests/gpu_sm_side_probe.cu && /tmp/side_probe 16.5 0 > /tmp/res/side.txt 2>&1
for f in /tmp/res/*.json; do python3 -c "import json;r=json.load(open('$f'))['records'][0]['counters']['bytes'];print('$f', r['dram_read']+r['dram_write'])" >> $OUT/gpu.txt; done
tar -C /tmp -cJf $OUT/tl.tar.xz tl res

#!/usr/bin/env bash
# Issue 20: eight-warps.patch (../) beside the committed flash_decode on one H100, two rounds alternated, cuDNN
# (scripts/peers_sdpa.py --backend cudnn) after each round. build/flashio: the committed build (left on the warm
# machine by the call before); build-8w/flashio: the same revision with ../eight-warps.patch applied (`ninja
# flashio`, `FLASHIO_BUNDLE_DIR=.gpu8w scripts/gpu_bundle.sh pack flashio`, carried: one bundle per call fits).
set -u
OUT=$1
FLASHIO_BUNDLE_DIR=.gpu8w FLASHIO_BUILD_DIR=build-8w bash scripts/gpu_bundle.sh unpack
nvidia-smi --query-gpu=name,serial --format=csv > $OUT/gpu.txt
A="--method flash_decode --heads 32 --kv-heads 8 --head-dim 128 --seqlen 1 --seqlen-k 8192,32768 --batch 8,32 --counters off --reps 50 -q"
for rep in 1 2; do
  build/flashio run $A --kv-layout contiguous,paged:64 --out $OUT/w4-$rep.json > /dev/null 2>> $OUT/gpu.txt || echo "w4 $rep failed" >> $OUT/gpu.txt
  build-8w/flashio run $A --kv-layout contiguous,paged:64 --out $OUT/w8-$rep.json > /dev/null 2>> $OUT/gpu.txt || echo "w8 $rep failed" >> $OUT/gpu.txt
  python3 scripts/peers_sdpa.py --flashio build/flashio --backend cudnn --heads 32 --kv-heads 8 --head-dim 128 --seqlen 1 \
    --seqlen-k 8192,32768 --batch 8,32 --kv-layout contiguous --reps 50 -q --out $OUT/cudnn-$rep.json > /dev/null 2>> $OUT/gpu.txt || echo "cudnn $rep failed" >> $OUT/gpu.txt
done

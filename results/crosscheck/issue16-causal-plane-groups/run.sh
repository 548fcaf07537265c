#!/usr/bin/env bash
# The flash3 files at e9a8cef on this GPU: (H100 only) the A/B against b2af030 (1d8c2e1's kernels) and the ablations;
# the flash3, flash3bwd and oos stages of reproduce_results.sh; the whole GPU suite; (H100) the sanitizers.
set -u
gpu=$1
xz -dc .gpu/ab.tar.xz | tar xf -
nvidia-smi -L > $OUT/log.txt
if [ $gpu = h100 ]; then
  scripts/flash3_ab.sh build/flashio_before build/flashio /tmp/ab >> $OUT/log.txt 2>&1
  cp /tmp/ab/ab.md $OUT/ab.md
fi
rm -rf /tmp/r; mkdir -p /tmp/r
for s in flash3 flash3bwd oos; do echo "== $s $(date +%T)" >> $OUT/repro.txt; scripts/reproduce_results.sh /tmp/r $s >> $OUT/repro.txt 2>&1; done
if [ $gpu = h100 ]; then
  build/flashio run --method flash3,flash3_no_pingpong,flash3_no_overlap --seqlen 512,1024,2048,4096,8192,16384 --head-dim 128 --causal false,true --pass fwd --tokens 16384 --model-dim 2048 --reps 20 --warmup 3 --counters off -q --out /tmp/r/nvidia-h100-80gb-hbm3-flash3-ablations.json >> $OUT/repro.txt 2>&1
fi
tar czf $OUT/r.tgz -C /tmp r
echo "== suite $(date +%T)" >> $OUT/log.txt
timeout 200 build/tests/flashio_gpu_tests --gtest_brief=1 > /tmp/suite.txt 2>&1; echo "rc $?" >> /tmp/suite.txt
tail -6 /tmp/suite.txt > $OUT/gpu-tests.txt; grep -E "FAILED" /tmp/suite.txt | head -20 >> $OUT/gpu-tests.txt
if [ $gpu = h100 ]; then echo "== sanitize $(date +%T)" >> $OUT/log.txt; timeout 200 scripts/sanitize_flash3.sh $OUT/sanitize.txt; fi
echo "== end $(date +%T)" >> $OUT/log.txt

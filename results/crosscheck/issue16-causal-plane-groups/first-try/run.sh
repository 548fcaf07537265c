#!/usr/bin/env bash
# flash3 forward, causal: items in groups of planes, every plane's longest Q tile first (the backward's block order). Tests, A/B against b2af030, racecheck/synccheck.
set -u
xz -dc .gpu/ab.tar.xz | tar xf -
nvidia-smi -L > $OUT/log.txt
scripts/flash3_ab.sh build/flashio_before build/flashio /tmp/f3 >> $OUT/log.txt 2>&1
cp /tmp/f3/ab.md /tmp/f3/flash3-tests.txt $OUT/
tar czf $OUT/ab.tgz -C /tmp/f3 ab
race='*Flash3Forward*/n17_d128_fp16_causal:*Flash3Forward*/n1013_d64_bf16:*Flash3Forward*/n17_d256_bf16_causal:*Flash3Forward*/n1013_d256_fp16:*Flash3Forward*/n4097_d128_fp16:Flash3Test.EveryCompiledTile*'
for t in racecheck synccheck; do
  echo "== $t" >> $OUT/log.txt
  timeout 150 compute-sanitizer --tool $t build/tests/flashio_gpu_tests --gtest_filter="$race" --gtest_brief=1 2>&1 | grep -E "SUMMARY|PASSED|FAILED|rror" >> $OUT/log.txt
done

#!/usr/bin/env bash
# One call per GPU that adopts both measured-but-not-adopted changes on one build (both patches applied and committed:
# ../../issue16-bwd-overlap/p-before-dp-wait.patch and ../proper.patch; the flashio bundle carried, tests.sh's call
# before it on the same warm machine): ../../issue16-bwd-overlap/adopt/run.sh into OUT/b (TOOLS as there), run.sh
# into OUT/d, and on an H200 `scripts/reproduce_results.sh oos6` into OUT/o (its sixth out-of-sample set, run so far
# on the H100 only). Four or five files come back: b/gpu.txt, b/r.tar.xz, d/gpu.txt, d/d.tar.xz, o/o.tar.xz.
#   with-bwd.sh OUT
set -u
OUT=$1
here=results/crosscheck/issue20-eight-warps/adopt
mkdir -p $OUT/b $OUT/d $OUT/o
bash results/crosscheck/issue16-bwd-overlap/adopt/run.sh $OUT/b
bash $here/run.sh $OUT/d
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) mkdir -p /tmp/o && timeout 150 bash scripts/reproduce_results.sh /tmp/o oos6 > /tmp/o/oos6.txt 2>&1
          echo "oos6 rc $?" >> /tmp/o/oos6.txt; tar -C /tmp -cJf $OUT/o/o.tar.xz o ;;
esac

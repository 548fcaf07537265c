#!/usr/bin/env bash
# The GPU suite on the build that adopts ../proper.patch (and, in the same session, ../../issue16-bwd-overlap's
# p-before-dp-wait.patch): `scripts/gpu_bundle.sh pack flashio_gpu_tests flashio_profile_target libflashio_inject.so`,
# carry .gpu (or another FLASHIO_BUNDLE_DIR); its own call, before or after run.sh's (with-bwd.sh's). Writes
# OUT/gpu-tests-GPU-REV.txt (the suite's last lines and any failure) and OUT/sanitize-decode.txt (memcheck, racecheck
# and synccheck on the flash_decode tests; TOOLS= skips them, TOOLS=memcheck runs that one).   tests.sh OUT
set -u
OUT=$1
bash scripts/gpu_bundle.sh unpack
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H200*) gpu=h200 ;; *) gpu=h100 ;; esac
T=build/tests/flashio_gpu_tests
f=$OUT/gpu-tests-$gpu-$(cat ${FLASHIO_BUNDLE_DIR:-.gpu}/revision).txt
nvidia-smi --query-gpu=name,serial --format=csv > $f
timeout 200 $T --gtest_brief=1 > /tmp/suite.txt 2>&1; echo "rc $?" >> /tmp/suite.txt
tail -6 /tmp/suite.txt >> $f; grep -E "FAILED" /tmp/suite.txt | head -20 >> $f
for tool in ${TOOLS-memcheck racecheck synccheck}; do
  timeout 110 compute-sanitizer --tool $tool --error-exitcode 3 $T --gtest_brief=1 \
    --gtest_filter='*GpuFlashDecode.*:*GpuFlashDecodePaged.*:*GpuFlashDecodeVarlen.*' > /tmp/$tool.txt 2>&1
  echo "$tool rc $?: $(grep -E 'SUMMARY' /tmp/$tool.txt) $(grep -E 'tests? ran' /tmp/$tool.txt)" >> $OUT/sanitize-decode.txt
done

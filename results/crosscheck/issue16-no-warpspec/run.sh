#!/usr/bin/env bash
# The device calls behind this folder (H200), one per bundle (scripts/gpu_bundle.sh: a call carries
# 64 MiB at most):
#   run.sh bench OUT   FA-3 Table 2's ablations at d 128 (the FA-2 setting, forward, counters on),
#                      flash3_no_warpspec beside the others      (bundle: pack flashio)
#   run.sh tests OUT   the whole GPU suite, then scripts/sanitize_flash3.sh
#                      (bundle: pack flashio_gpu_tests flashio_profile_target libflashio_inject.so)
set -uo pipefail
cd "$(dirname "$0")/../../.."
mode=$1 out=$2
bash scripts/gpu_bundle.sh unpack
nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm,clocks.max.sm --format=csv >"$out/gpu-$mode.txt"
case $mode in
  bench)
    build/flashio run --method flash3,flash3_no_pingpong,flash3_no_overlap,flash3_no_warpspec \
      --seqlen 512,1024,2048,4096,8192,16384 --head-dim 128 --causal false,true --pass fwd --tokens 16384 \
      --model-dim 2048 --reps 20 --warmup 3 -q --out "$out/nvidia-h200-flash3-ablations.json" >"$out/ablations.txt" 2>&1
    echo "ablations rc $?"
    tail -3 "$out/ablations.txt"
    # compute-sanitizer on the new kernel through the CLI (the float64 check on the host): 160
    # work items on 132 blocks, both d 128 tiles, causal and not, GQA
    for tool in memcheck racecheck synccheck; do
      compute-sanitizer --tool $tool --error-exitcode 3 build/flashio run --method flash3_no_warpspec --seqlen 1013 \
        -b 2 --heads 10 --kv-heads 5 --head-dim 128 --causal false,true --block-c 0,176 --reps 1 --warmup 0 \
        --counters off --reference host -q --out /tmp/sanitize-$tool.json >/tmp/$tool.log 2>&1
      echo "$tool rc $?: $(grep -E 'SUMMARY' /tmp/$tool.log) $(grep -E '^ok ' /tmp/$tool.log)"
    done | tee "$out/sanitize-no-warpspec-cli.txt" ;;
  tests)
    { time build/tests/flashio_gpu_tests --gtest_brief=1; echo "rc $?"; } >"$out/gpu-tests.txt" 2>&1
    tail -5 "$out/gpu-tests.txt"
    scripts/sanitize_flash3.sh "$out/sanitize-flash3.txt"
    echo "sanitize rc $?"
    cat "$out/sanitize-flash3.txt" ;;
esac

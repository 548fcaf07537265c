#!/usr/bin/env bash
# Issue 19: each point's DRAM bytes measured several times, each run with the block timeline of the very launch
# the counters measured (README.md). The build: 8c4a66d with instrumentation.patch applied (git apply), `ninja
# flashio`, `scripts/gpu_bundle.sh pack flashio`; on the GPU machine: run.sh OUT (carry .gpu), then
# pack_timelines.py on the returned tl/ and res/. Only the counter pass's launch is of interest: with
# FLASHIO_TIMELINE set every instrumented launch waits for its kernel and writes its timeline (the last wins),
# so the times such a run records are not the kernels' times.
set -u
OUT=$1
bash scripts/gpu_bundle.sh unpack
nvidia-smi --query-gpu=name,serial --format=csv > $OUT/gpu.txt
F=build/flashio
mkdir -p /tmp/tl /tmp/res
run() {  # name, runs, args...
  local name=$1 runs=$2; shift 2
  for r in $(seq 1 $runs); do
    FLASHIO_TIMELINE=/tmp/tl/$name-r$r timeout 150 $F run "$@" --reps 1 --warmup 0 --counters dram -q --out /tmp/res/ct-$name-r$r.json > /tmp/res/ct-$name-r$r.log 2>&1 || echo "$name r$r failed" >> $OUT/gpu.txt
  done
}
run bwd-1536 4 --method flash1 --pass bwd --batch 16 --heads 8 --head-dim 64 --seqlen 1536
run bwd-2048 4 --method flash1 --pass bwd --batch 16 --heads 8 --head-dim 64 --seqlen 2048
run bwd-512 3 --method flash1 --pass bwd --batch 16 --heads 8 --head-dim 64 --seqlen 512
run fwd-512 3 --method flash1 --pass fwd --batch 16 --heads 8 --head-dim 64 --seqlen 512
run fwd-b4h6n3900 3 --method flash1 --pass fwd --batch 4 --heads 6 --head-dim 64 --seqlen 3900
run fwd-b1h7n7900 3 --method flash1 --pass fwd --batch 1 --heads 7 --head-dim 128 --seqlen 7900
run f2-131072 4 --method flash2 --mma mma.sync --block-r 128 --block-c 64 --pass fwd --batch 1 --heads 1 --head-dim 128 --seqlen 131072
run f2-262144 4 --method flash2 --mma mma.sync --block-r 128 --block-c 64 --pass fwd --batch 1 --heads 1 --head-dim 128 --seqlen 262144
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/side_probe tests/gpu_sm_side_probe.cu && /tmp/side_probe 16.5 0 > /tmp/res/side.txt 2>&1
tar -C /tmp -cJf $OUT/tl.tar.xz tl res

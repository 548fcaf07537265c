#!/usr/bin/env bash
# Experiment 1: the persistent flash3 backward: tests, then speed beside cuDNN (counters off).
set -uo pipefail
tar xJf .gpu/ab.tar.xz
nvidia-smi -L
B=build
$B/tests/flashio_gpu_tests --gtest_filter='*Flash3*:*flash3*' > $OUT/tests.txt 2>&1; tail -4 $OUT/tests.txt
grep -E "FAILED|Failure" $OUT/tests.txt | head -20
ax=(--seqlen 2048,4096,8192,16384 --head-dim 64,128 --causal false,true --pass bwd,fwdbwd --tokens 16384 --model-dim 2048 --reps 20 --warmup 3)
$B/flashio run -m flash3 "${ax[@]}" --counters off -q --out $OUT/q.json
python3 scripts/peers_sdpa.py --flashio $B/flashio "${ax[@]}" --backend cudnn -q --out $OUT/q-sdpa.json
python3 scripts/flash2_vs_sdpa.py $OUT/q.json $OUT/q-sdpa.json --method flash3 --peer sdpa_cudnn

#!/usr/bin/env bash
# Nsight Compute of the kernels of a4b7506 (flash3 forward) beside cuDNN at d 128, non-causal, N 2048 and 16384 (FA-2 setting), H100.
set -uo pipefail
tar xJf .gpu/ab.tar.xz
nvidia-smi -L
for n in 2048 16384; do N=$n scripts/flash3_ncu.sh /tmp/ncu/n$n 128 || echo "ncu n=$n rc=$?"; done
python3 scripts/ncu_stalls_table.py /tmp/ncu/n2048/*-d128.txt /tmp/ncu/n16384/*-d128.txt || true
for f in /tmp/ncu/n*/*.txt; do echo "== $f"; grep -E "Duration|Executed Instructions  |Issue Slots Busy|Compute \(SM\) Thr|Grid Size" $f | head -8; done
tar czf $OUT/ncu.tgz -C /tmp ncu

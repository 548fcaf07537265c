#!/usr/bin/env bash
# The L1 probe (issue 19): tests/gpu_l1_probe.cu under Nsight Compute — per block's stream size, the
# share of its global-load sectors L1 served (hits / sectors) when every block read-modify-writes
# its own fp32 slice 4 times, with flash1's shared-memory footprint (92,160 B per block, two blocks
# per SM) and with none (one block per SM).
#   scripts/l1_probe.sh [OUT_DIR]      (needs nvcc and ncu on PATH)
# FLASHIO_L1_CONFIGS ("BLOCKS_PER_SM SMEM_BYTES;...", default "2 92160;1 0") and FLASHIO_L1_KIBS (the
# per-block stream sizes) pick other launches, e.g. flash1's d 128 tile: "1 139264".
set -euo pipefail
out="${1:-out/l1-probe}"
mkdir -p "$out"
here="$(cd "$(dirname "$0")/.." && pwd)"
nvcc -O3 -std=c++17 -arch=sm_${FLASHIO_PROBE_ARCH:-90} -o "$out/l1_probe" "$here/tests/gpu_l1_probe.cu"
m=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum
printf "%8s %7s %7s %12s %12s %8s\n" "KiB/blk" "blk/SM" "smem" "ld sectors" "L1 hits" "hits"
IFS=';' read -ra configs <<< "${FLASHIO_L1_CONFIGS:-2 92160;1 0}"
for cfg in "${configs[@]}"; do
  set -- $cfg
  for kib in ${FLASHIO_L1_KIBS:-4 8 12 16 20 24 28 32 40 48 64 96 128 192}; do
    "$out/l1_probe" "$kib" "$1" "$2" 4 > /dev/null || continue
    ncu --clock-control none --metrics $m -k regex:probe_l1 --csv --print-units base \
      "$out/l1_probe" "$kib" "$1" "$2" 4 2>/dev/null | grep -E '^"0"' | awk -F'","' '{print $(NF-2), $NF}' | sed 's/[",]//g' |
      python3 -c "
import sys
v = {}
for line in sys.stdin:
    k, x = line.split()
    v[k] = float(x)
ld = v.get('l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum', 0); hit = v.get('l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum', 0)
print(f'{$kib:8} {$1:7} {$2:7} {ld:12.0f} {hit:12.0f} {hit / ld if ld else 0:8.3f}')"
  done
done | tee "$out/table.txt"
echo "expected when a block's slice stays in L1: hits = 3/4 of its sectors (4 passes, the first misses)"

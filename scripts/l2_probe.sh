#!/usr/bin/env bash
# The L2 probes (issue 19): tests/gpu_l2_probe.cu under Nsight Compute for a sweep of buffer
# sizes across the L2, every SM and one SM — per size the DRAM bytes of the second read pass
# (and, for writes, the dirty bytes written back by the next kernel) as a share of the buffer;
# what the shapes mean: the header of tests/gpu_l2_probe.cu — then tests/gpu_red_probe.cu, the
# time of fp32 reductions into one shared tile against a tile per block.
#
#   scripts/l2_probe.sh [OUT_DIR]        (default out/l2-probe; needs nvcc and ncu on PATH)
#   FLASHIO_PROBE_MODES="r w a m" and FLASHIO_PROBE_FRACS="0.125 … 2.0" (shares of the L2) narrow it;
#   FLASHIO_PROBE_BLOCKS="0 1" (0: 4 blocks per SM, 1: one block; another count: that many blocks).
#   FLASHIO_PROBE_TIMELINE_DIR=DIR: modes r, k, x, y and n also write each run's timeline (when each block asked for
#   each part of its slice, both passes: tests/gpu_l2_probe.cu) to DIR/timeline-MiB-blocks-mode.txt.
#   FLASHIO_PROBE_RED=0 skips the reduction probe.
#
# ncu runs with --cache-control none (no flush between the kernels: the probe's point) and
# --replay-mode application (each metric pass reruns the program, so the L2 state a kernel sees
# is the one the previous kernels left, never a replay's).
set -euo pipefail
out="${1:-out/l2-probe}"
mkdir -p "$out"
here="$(cd "$(dirname "$0")/.." && pwd)"
arch="${FLASHIO_PROBE_ARCH:-90}"
nvcc -O3 -std=c++17 -arch=sm_${arch} -o "$out/l2_probe" "$here/tests/gpu_l2_probe.cu"
nvcc -O3 -std=c++17 -arch=sm_${arch} -o "$out/red_probe" "$here/tests/gpu_red_probe.cu"
l2_mib=$("$out/l2_probe" 1 1 | sed -n 's/.*L2 \([0-9]*\) bytes.*/\1/p')
l2_mib=$((l2_mib / 1048576))
echo "L2: ${l2_mib} MiB"
metrics="dram__bytes_read.sum,dram__bytes_write.sum"
printf "%8s %7s %5s %12s %12s %10s\n" "MiB" "blocks" "mode" "pass DRAM rd" "next DRAM wr" "share"
for frac in ${FLASHIO_PROBE_FRACS:-0.125 0.25 0.375 0.45 0.5 0.55 0.625 0.75 0.875 0.95 1.0 1.05 1.25 1.5 2.0}; do
  mib=$(python3 -c "print(round($frac * $l2_mib, 2))")
  for blocks in ${FLASHIO_PROBE_BLOCKS:-0 1}; do  # 0: 4 blocks per SM, 1: one SM, N: N blocks
    for mode in ${FLASHIO_PROBE_MODES:-r w a m}; do  # d:US = mode d, a wait of US µs; c:F = mode c, F × L2 filled; n:R = mode n, R ranges; h:K = mode h, K KiB chunks (FLASHIO_PROBE_SIDES)
      spin=""; case "${mode%%:*}" in d | c | n | h) spin="${mode#*:}" ;; esac
      csv="$out/probe-${mib}-${blocks}-${mode/:/}.csv"
      if [ -n "${FLASHIO_PROBE_TIMELINE_DIR:-}" ]; then
        export FLASHIO_PROBE_TIMELINE="$FLASHIO_PROBE_TIMELINE_DIR/timeline-${mib}-${blocks}-${mode/:/}.txt"
      fi
      ncu --cache-control none --clock-control none --replay-mode application --print-units base --metrics "$metrics" \
        -k regex:'probe_' --csv --log-file "$csv" "$out/l2_probe" "$mib" "$blocks" "${mode%%:*}" $spin >/dev/null
      # Launch order: flush, then (r) read, read; (w) write, flush; (a) write, read; (m) rmw, rmw; (k, x, y) mix, mix; (z) buffer then half, twice; (n) ranges, ranges; (h) sides, sides;
      # (v) rmw, reversed rmw; (d) write, wait, flush; (c) write, partial flush, flush. The measured launch is the
      # 3rd; for d and c the 4th's DRAM writes follow (the dirty bytes still held after the wait or the fills).
      python3 - "$csv" "$mib" "$blocks" "${mode/:/}" <<'EOF'
import csv, sys
path, mib, blocks, mode = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = [r for r in csv.reader(l for l in open(path) if l.startswith('"'))]
head, rows = rows[0], rows[1:]
col = {n: i for i, n in enumerate(head)}
by_launch = {}
for r in rows:
    by_launch.setdefault(int(r[col["ID"]]), {})[r[col["Metric Name"]]] = float(r[col["Metric Value"]].replace(",", ""))
ids = sorted(by_launch)
third = by_launch[ids[2]]
rd, wr = third.get("dram__bytes_read.sum", 0), third.get("dram__bytes_write.sum", 0)
buf = mib * 1048576
share = (wr if mode == "w" or mode[0] in "dc" else rd) / buf
held = f" {by_launch[ids[3]].get('dram__bytes_write.sum', 0):12.0f}" if mode[0] in "dc" and len(ids) > 3 else ""
print(f"{mib:8.2f} {({'0': 'all', '1': 'one'}.get(blocks, blocks)):>7} {mode:>5} {rd:12.0f} {wr:12.0f} {share:10.3f}{held}")
EOF
    done
  done
done | tee "$out/table.txt"
echo "table: $out/table.txt (share: r = 2nd pass DRAM reads / buffer; w = dirty bytes written back / buffer;"
echo "  a = DRAM reads of the read after the write / buffer; m, v = 2nd read-modify-write's DRAM reads / buffer (v: in reverse);"
echo "  dUS = DRAM writes while the GPU waited US microseconds after the write / buffer, then the dirty bytes still held;"
echo "  cF = DRAM writes while F × L2 of other lines were read after the write / buffer, then the dirty bytes still held;"
echo "  k, x, y = the 2nd pass's DRAM reads / buffer over the buffer (k: read-modify-written, x, y: read) and a read one of half its size"
echo "  (y: the half right after the buffer in one allocation; z: not interleaved, each block's slice of the buffer, then of the half))"
echo "  nR = as r with R ranges per block (the buffer in R parts, each block its slice of each in turn)"
echo "  hK = as r with K KiB chunks dealt to the two L2 sides in turn (h0: every SM sweeps the buffer in order)"
# Reduction contention (tests/gpu_red_probe.cu): the same blocks adding into one shared dQ-sized
# tile, two per tile, or a tile each.
if [ "${FLASHIO_PROBE_RED:-1}" != 0 ]; then "$out/red_probe" | tee "$out/red.txt"; fi

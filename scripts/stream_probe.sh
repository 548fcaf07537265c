#!/usr/bin/env bash
# The stream probe (issue 20): tests/gpu_stream_probe.cu — K and V streamed by flash_decode's grid at
# GQA 32:8, d 128 (one block per (batch, K/V head), 4 warps, 16 keys each per 64-key tile, 4 stages),
# by load mechanism, without arithmetic: the DRAM rate each mechanism reaches.
#   scripts/stream_probe.sh [OUT_DIR]    (needs nvcc on PATH; sm_90a)
# FLASHIO_PROBE_SHAPES ("PLANES KEYS;...", default batch 32 × 8 K/V heads at 8k and 32k keys, batch 8 at 32k)
# and FLASHIO_PROBE_MODES pick other runs.
set -euo pipefail
out="${1:-out/stream-probe}"
mkdir -p "$out"
here="$(cd "$(dirname "$0")/.." && pwd)"
nvcc -O3 -std=c++17 -arch=sm_90a -I"$here" -o "$out/stream_probe" "$here/tests/gpu_stream_probe.cu"
IFS=';' read -ra shapes <<< "${FLASHIO_PROBE_SHAPES:-256 8192;256 32768;64 32768}"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git -C "$here" rev-parse HEAD 2>/dev/null || true; } |
  tee "$out/table.txt"
for round in 1 2; do
  for shape in "${shapes[@]}"; do
    for mode in ${FLASHIO_PROBE_MODES:-cpasync_ca cpasync_cg tma bulk ldg ca:4:4:interleaved ca:6:4:own ca:3:4:own \
      ca:2:4:own:100 ca:2:8:own ca:4:4:own:0:600 ca:4:4:own:0:1200 ca:2:8:own:0:600 ca:2:8:own:0:1200}; do
      "$out/stream_probe" "$mode" $shape 30 || echo "$mode $shape: failed"
    done
  done
done | tee -a "$out/table.txt"

#!/usr/bin/env bash
# Nsight Compute's view of flash3's forward beside cuDNN's (issue 16: what a missed speed target
# comes from): one launch of each at the FA-2 setting (fp16, batch·N = 16384, heads·d = 2048),
# N 4096 (N=... overrides), non-causal, for each head dim given, with the sections that show tensor-pipe use,
# issue slots, warp stalls (each reason's warps per issued instruction) and occupancy; clocks
# left alone. Writes OUT/{flash3,cudnn}-d{D}.txt.
#
#   scripts/flash3_ncu.sh OUT [D ...]        (default D: 64 128 256; N, FLASHIO_BIN, NCU, PYTHON)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/flash3_ncu.sh OUT [D ...]}
shift
dims=("$@")
[ ${#dims[@]} -gt 0 ] || dims=(64 128 256)
bin=${FLASHIO_BIN:-build/flashio}
ncu=${NCU:-ncu}
py=${PYTHON:-python3}
mkdir -p "$out"
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats
          --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats
          --section MemoryWorkloadAnalysis
          --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$')
n=${N:-4096}
for d in "${dims[@]}"; do
  b=$((16384 / n)) h=$((2048 / d))
  rm -f "$out/run-d$d.json"
  # flash3: the last of its launches (the check's, the warm-up's and the timed ones run before).
  "$ncu" --clock-control none "${sections[@]}" -k regex:flash3 --launch-skip 2 --launch-count 1 \
    "$bin" run --method flash3 --seqlen "$n" --head-dim "$d" --batch "$b" --heads "$h" --pass fwd \
    --counters off --reps 1 --warmup 1 -q --out "$out/run-d$d.json" >"$out/flash3-d$d.txt"
  "$ncu" --clock-control none "${sections[@]}" -k regex:fprop --launch-skip 1 --launch-count 1 \
    "$py" - "$b" "$h" "$n" "$d" >"$out/cudnn-d$d.txt" <<'PY'
import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
b, h, n, d = map(int, sys.argv[1:])
q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(2):
        F.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
PY
  echo "flash3_ncu: d $d: $out/flash3-d$d.txt, $out/cudnn-d$d.txt"
done

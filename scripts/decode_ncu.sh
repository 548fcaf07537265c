#!/usr/bin/env bash
# Nsight Compute's view of flash_decode beside cuDNN's decode kernel (issue 20: the last percent
# against cuDNN): one launch of each at GQA 32:8, d 128, one query, fp16, for each batch/context
# given, with the sections that show DRAM and L2 throughput, warp stalls (each reason's warps per
# issued instruction), issue slots and occupancy; clocks left alone. Writes
# OUT/{flash_decode,cudnn}-b{B}-n{N}.txt (scripts/ncu_stalls_table.py DIR --pair flash_decode,cudnn
# reads them).
#
#   scripts/decode_ncu.sh OUT [B:N ...]     (default 32:8192 32:32768; FLASHIO_BIN, NCU, PYTHON)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/decode_ncu.sh OUT [B:N ...]}
shift
points=("$@")
[ ${#points[@]} -gt 0 ] || points=(32:8192 32:32768)
bin=${FLASHIO_BIN:-build/flashio}
ncu=${NCU:-ncu}
py=${PYTHON:-python3}
mkdir -p "$out"
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section InstructionStats
          --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats
          --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,dram__bytes_read.sum.per_second,lts__t_sector_hit_rate.pct')
for pt in "${points[@]}"; do
  b=${pt%%:*} n=${pt##*:}
  rm -f "$out/run-b$b-n$n.json"
  # flash_decode: the third of its launches (after the check's and the warm-up's).
  "$ncu" --clock-control none "${sections[@]}" -k regex:flash_decode --launch-skip 2 --launch-count 1 \
    "$bin" run --method flash_decode --batch "$b" --heads 32 --kv-heads 8 --head-dim 128 --seqlen 1 --seqlen-k "$n" \
    --pass fwd --counters off --reps 1 --warmup 1 -q --out "$out/run-b$b-n$n.json" >"$out/flash_decode-b$b-n$n.txt"
  "$ncu" --clock-control none "${sections[@]}" -k regex:fprop --launch-skip 1 --launch-count 1 \
    "$py" - "$b" "$n" >"$out/cudnn-b$b-n$n.txt" <<'PY'
import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
b, n = map(int, sys.argv[1:])
q = torch.randn(b, 32, 1, 128, device="cuda", dtype=torch.float16)
k, v = (torch.randn(b, 8, n, 128, device="cuda", dtype=torch.float16) for _ in range(2))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(2):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
torch.cuda.synchronize()
PY
  echo "decode_ncu: b $b n $n: $out/flash_decode-b$b-n$n.txt, $out/cudnn-b$b-n$n.txt"
done

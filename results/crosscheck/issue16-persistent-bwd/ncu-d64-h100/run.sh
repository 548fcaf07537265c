#!/usr/bin/env bash
# Nsight Compute: flash3's backward and cuDNN's at d 64, N 4096, causal (FA-2 setting: b 4, h 32), H100.
set -uo pipefail
tar xJf .gpu/ab.tar.xz
nvidia-smi -L
mkdir -p /tmp/n
S=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$')
for c in true false; do
ncu --clock-control none "${S[@]}" -k regex:flash3_bwd_kernel --launch-skip 2 --launch-count 1 build/flashio run --method flash3 --seqlen 4096 --head-dim 64 --batch 4 --heads 32 --causal $c --pass bwd --counters off --reps 1 --warmup 1 -q --out /tmp/n/r-$c.json > /tmp/n/flash3-bwd-d64-causal-$c.txt 2>&1
cat > /tmp/n/c.py <<'PY'
import sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
b,h,n,d,causal=int(sys.argv[1]),int(sys.argv[2]),int(sys.argv[3]),int(sys.argv[4]),sys.argv[5]=="true"
q,k,v=(torch.randn(b,h,n,d,device="cuda",dtype=torch.float16,requires_grad=True) for _ in range(3))
do=torch.randn(b,h,n,d,device="cuda",dtype=torch.float16)
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(2):
        o=F.scaled_dot_product_attention(q,k,v,is_causal=causal); o.backward(do)
torch.cuda.synchronize()
PY
ncu --clock-control none "${S[@]}" -k regex:bprop --launch-skip 1 --launch-count 1 python3 /tmp/n/c.py 4 32 4096 64 $c > /tmp/n/cudnn-bwd-d64-causal-$c.txt 2>&1
done
grep -E "Duration|Compute \(SM\) Thr|Issue Slots Busy|Executed Ipc A|Executed Instructions  |Registers Per|Achieved Occ|Grid Size|Block Size|L2 Cache Thr|DRAM Thr|Tensor" /tmp/n/*.txt
cd /tmp && tar czf "$OUT/n.tgz" n

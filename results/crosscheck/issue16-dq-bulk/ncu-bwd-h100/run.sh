#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi -L
tar xJf .gpu/dec.tar.xz -C /tmp
mkdir -p /tmp/d /tmp/n
ax=(--heads 32 --kv-heads 8 --head-dim 128 --seqlen 1 --seqlen-k 8192,32768 --batch 8,32)
for round in 1 2 3; do
  for b in base skip; do
    /tmp/ab/flashio-$b run --method flash_decode "${ax[@]}" --kv-layout contiguous --counters off --reps 100 --out /tmp/d/$b-$round.json -q || echo "run $b failed"
    /tmp/ab/flashio-$b run --method flash_decode "${ax[@]}" --kv-layout paged:64 --counters off --reps 100 --out /tmp/d/p$b-$round.json -q || echo "run p$b failed"
  done
  python3 scripts/peers_sdpa.py --flashio /tmp/ab/flashio-base --backend cudnn "${ax[@]}" --kv-layout contiguous --reps 100 -q --out /tmp/d/cudnn-$round.json > /tmp/d/sdpa-$round.txt 2>&1 || { echo sdpa failed; tail -5 /tmp/d/sdpa-$round.txt; }
done
python3 - <<'PY'
import json,glob,collections
t=collections.defaultdict(list)
for f in sorted(glob.glob("/tmp/d/*.json")):
    who=f.split("/")[-1].split("-")[0]
    for r in json.load(open(f))["records"]:
        if r["status"]=="ok":
            p=r["problem"]; key=(p["batch"],p.get("seqlen_k"))
            t[(who,key)].append(r["time"]["median_s"]*1e6)
keys=sorted(set(k for _,k in t))
for k in keys:
    c=min(t[("cudnn",k)])
    line=f"{str(k):14s} cudnn {c:.1f}"
    for w in ["base","skip","pbase","pskip"]:
        v=t.get((w,k),[])
        if v: line+=f" | {w} {'/'.join(f'{x:.1f}' for x in v)} (cudnn/min {c/min(v):.3f})"
    print(line)
PY
# Nsight Compute: flash3 backward and cuDNN's at d 128, N 4096, non-causal (FA-2 setting).
S=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$')
for d in 128 64; do
h=$((2048/d))
ncu --clock-control none "${S[@]}" -k regex:flash3_bwd --launch-skip 2 --launch-count 1 /tmp/ab/flashio-base run --method flash3 --seqlen 4096 --head-dim $d --batch 4 --heads $h --pass bwd --counters off --reps 1 --warmup 1 -q --out /tmp/n/r$d.json > /tmp/n/flash3-bwd-d$d.txt 2>&1
cat > /tmp/n/c.py <<'PY'
import sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
b,h,n,d=map(int,sys.argv[1:])
q,k,v=(torch.randn(b,h,n,d,device="cuda",dtype=torch.float16,requires_grad=True) for _ in range(3))
do=torch.randn(b,h,n,d,device="cuda",dtype=torch.float16)
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(2):
        o=F.scaled_dot_product_attention(q,k,v); o.backward(do)
torch.cuda.synchronize()
PY
ncu --clock-control none --metrics gpu__time_duration.sum python3 /tmp/n/c.py 4 $h 4096 $d > /tmp/n/cudnn-list-d$d.txt 2>&1
ncu --clock-control none "${S[@]}" -k regex:bprop --launch-skip 1 --launch-count 1 python3 /tmp/n/c.py 4 $h 4096 $d > /tmp/n/cudnn-bwd-d$d.txt 2>&1
ncu --clock-control none --metrics gpu__time_duration.sum /tmp/ab/flashio-base run --method flash3 --seqlen 4096 --head-dim $d --batch 4 --heads $h --pass bwd --counters off --reps 1 --warmup 1 -q --out /tmp/n/r2$d.json > /tmp/n/flash3-list-d$d.txt 2>&1
done
grep -E "^  [a-zA-Z_].*\(|Duration|gpu__time_duration" /tmp/n/cudnn-list-d128.txt | tail -20
grep -E "Duration|Compute \(SM\) Thr|Issue Slots Busy|Executed Ipc A|Registers Per|Achieved Occ|L2 Cache Thr|DRAM Thr" /tmp/n/flash3-bwd-d128.txt /tmp/n/cudnn-bwd-d128.txt
cd /tmp && tar czf "$OUT/d.tgz" d n

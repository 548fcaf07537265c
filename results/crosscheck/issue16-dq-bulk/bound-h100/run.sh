#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi -L
tar xJf .gpu/bq.tar.xz -C /tmp
mkdir -p /tmp/d
ax=(--seqlen 2048,4096,8192,16384 --causal false,true --pass bwd --tokens 16384 --model-dim 2048 --head-dim 64,128)
export SCRATCH_NOCHECK=1
for round in 1 2; do
  R=(--reps 10 --warmup 3 -q --counters off)
  for v in base noatom nodq; do
    /tmp/ab/flashio-$v run --method flash3 "${ax[@]}" "${R[@]}" --out /tmp/d/$v-$round.json >/dev/null 2>&1 || echo "rc $v $?"
  done
  python3 scripts/peers_sdpa.py --flashio /tmp/ab/flashio-base "${ax[@]}" --backend cudnn --reps 10 --warmup 3 -q --out /tmp/d/cudnn-$round.json > /tmp/d/sdpa-$round.txt 2>&1 || { echo sdpa failed; tail -3 /tmp/d/sdpa-$round.txt; }
done
python3 - <<'PY'
import json,glob,collections
t=collections.defaultdict(list)
for f in sorted(glob.glob("/tmp/d/*.json")):
    who=f.split("/")[-1].split("-")[0]
    for r in json.load(open(f))["records"]:
        if r.get("time"):
            p=r["problem"]; t[(who,(p["head_dim"],p["causal"],p["seqlen_q"]))].append(r["time"]["median_s"]*1e6)
        else: print(who, r["name"], r["status"], r.get("reason","")[:100])
for k in sorted(set(k for _,k in t)):
    b=min(t[("base",k)]); a=min(t[("noatom",k)]); n=min(t[("nodq",k)]); c=min(t[("cudnn",k)])
    print(f"{str(k):22s} base {b:8.1f} noatom {a:8.1f} ({b/a:.3f}) nodq {n:8.1f} ({b/n:.3f}) cudnn {c:8.1f} cudnn/base {c/b:.3f} cudnn/noatom {c/a:.3f} cudnn/nodq {c/n:.3f}")
PY
cd /tmp && tar czf "$OUT/d.tgz" d

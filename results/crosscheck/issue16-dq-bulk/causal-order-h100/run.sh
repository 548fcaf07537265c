#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi -L
tar xJf .gpu/g.tar.xz -C /tmp
mkdir -p /tmp/d
ax=(--seqlen 2048,4096,8192,16384 --causal true,false --tokens 16384 --model-dim 2048 --head-dim 64,128 --pass bwd)
for round in 1 2; do
  R=(--reps 10 --warmup 3 -q --counters off)
  /tmp/ab2/flashio-base run --method flash3 "${ax[@]}" "${R[@]}" --out /tmp/d/base-$round.json >/dev/null 2>&1 || echo "rc base $?"
  for g in 2 4 8 1000; do
    SCRATCH_GROUP=$g /tmp/ab2/flashio-grp run --method flash3 "${ax[@]}" "${R[@]}" --out /tmp/d/g$g-$round.json >/dev/null 2>&1 || echo "rc g$g $?"
  done
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
    b=min(t[("base",k)])
    print(f"{str(k):22s} base {b:8.1f} " + " ".join(f"{w} {min(t[(w,k)]):8.1f} ({b/min(t[(w,k)]):.3f})" for w in ["g2","g4","g8","g1000"]))
PY

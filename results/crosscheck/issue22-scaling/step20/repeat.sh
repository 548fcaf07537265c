#!/usr/bin/env bash
# Two H200s: five alternated rounds (one GPU, both) of issue 22's 64-point sweep with the committed build.
set -uo pipefail
xz -dc .gpu/sc4.tar.xz | tar xf -
nvidia-smi --query-gpu=name --format=csv,noheader; nproc
build/flashio --version
mkdir -p /tmp/rep
args=(--method standard,flash2 --seqlen 1024,2048,4096,8192 --head-dim 64,128 --causal false,true --pass fwd,fwdbwd --counters off --reps 5 --warmup 2)
for r in 1 2 3 4 5; do for dev in 0 all; do
  build/flashio run "${args[@]}" -q --devices $dev --out /tmp/rep/$dev-$r.json >/dev/null 2>/tmp/rep/$dev-$r.err || { echo "FAILED $dev $r"; tail -3 /tmp/rep/$dev-$r.err; }
done; done
python3 - <<'PY' | tee /tmp/rep/rep.txt
import json, statistics as st
w = {"0": [], "all": []}
for r in range(1, 6):
    for dev in ("0", "all"):
        d = json.load(open(f"/tmp/rep/{dev}-{r}.json")); w[dev].append(d["wall_s"])
        print(f"{dev:3s} round {r}: wall {d['wall_s']:.3f} s, {len(d['records'])} records, {sum(bool(x['check'].get('passed')) for x in d['records'])} checks passed")
pairs = [a / b for a, b in zip(w["0"], w["all"])]
print(f"one GPU median {st.median(w['0']):.3f} s, two {st.median(w['all']):.3f} s, {st.median(w['0']) / st.median(w['all']):.3f}x (pairs {min(pairs):.3f}-{max(pairs):.3f}, median pair {st.median(pairs):.3f})")
PY
cp /tmp/rep/rep.txt $OUT/

#!/usr/bin/env bash
# Upper bound: the 64-point sweep with the host's float64 reference skipped (scratch env FLASHIO_SCRATCH_NOREF) vs as is.
set -uo pipefail
rounds=${ROUNDS:-4}
out=${OUT:-/tmp/ab}; mkdir -p "$out"
B=./.gpu/nr/flashio
args=(--method standard,flash2 --seqlen 1024,2048,4096,8192 --head-dim 64,128 --causal false,true --pass fwd,fwdbwd --counters off --reps 5 --warmup 2)
for r in $(seq 1 "$rounds"); do
  for v in base noref; do
    for dev in 0 all; do
      f="$out/$v-$dev-$r.json"
      if [ $v = noref ]; then export FLASHIO_SCRATCH_NOREF=1; else unset FLASHIO_SCRATCH_NOREF; fi
      $B run "${args[@]}" -q --devices "$dev" --out "$f" >/dev/null 2>"$out/$v-$dev-$r.err" || { echo "FAILED $v $dev $r"; tail -3 "$out/$v-$dev-$r.err"; }
    done
  done
done
unset FLASHIO_SCRATCH_NOREF
python3 - "$out" "$rounds" <<'PY'
import json, sys, statistics as st
out, rounds = sys.argv[1], int(sys.argv[2])
walls = {}
for r in range(1, rounds + 1):
    for v in ("base", "noref"):
        for dev in ("0", "all"):
            d = json.load(open(f"{out}/{v}-{dev}-{r}.json"))
            walls.setdefault((v, dev), []).append(d["wall_s"])
            gpus = {}
            for rec in d["records"]:
                g = gpus.setdefault(rec.get("device_index", 0), dict(busy=0, check=0, wait=0, timed=0))
                p = rec["phases_s"]; g["busy"] += p["total"]; g["check"] += p["check"]; g["timed"] += p["timed"]
                g["wait"] += p["inputs"] + p["reference"]
            per = "; ".join(f"GPU {k} busy {g['busy']:.3f} check {g['check']:.3f} timed {g['timed']:.3f} host-wait {g['wait']:.3f}" for k, g in sorted(gpus.items()))
            print(f"{v:5s} {dev:3s} run {r}: wall {d['wall_s']:.3f} s; {per}")
for v in ("base", "noref"):
    one, two = st.median(walls[(v, "0")]), st.median(walls[(v, "all")])
    pairs = [a / b for a, b in zip(walls[(v, "0")], walls[(v, "all")])]
    print(f"{v}: one GPU median {one:.3f} s, two {two:.3f} s, {one / two:.3f}x (pairs {min(pairs):.3f}-{max(pairs):.3f})")
PY

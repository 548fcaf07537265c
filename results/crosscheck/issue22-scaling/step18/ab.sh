#!/usr/bin/env bash
# A/B of the 64-point sweep: base and new binaries alternated, one GPU and all, ROUNDS rounds; prints walls and the
# per-GPU breakdown (as repeat-h200-*.txt), then the medians and ratios.
set -uo pipefail
rounds=${ROUNDS:-4}
out=${OUT:-/tmp/ab}; mkdir -p "$out"
args=(--method standard,flash2 --seqlen 1024,2048,4096,8192 --head-dim 64,128 --causal false,true --pass fwd,fwdbwd --counters off --reps 5 --warmup 2)
for r in $(seq 1 "$rounds"); do
  for v in base new; do
    for dev in 0 all; do
      f="$out/$v-$dev-$r.json"
      ./.gpu/$v/flashio run "${args[@]}" -q --devices "$dev" --out "$f" >/dev/null 2>"$out/$v-$dev-$r.err" || { echo "FAILED $v $dev $r"; cat "$out/$v-$dev-$r.err"; }
    done
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, sys, statistics as st
out, rounds = sys.argv[1], int(sys.argv[2])
walls = {}
for r in range(1, rounds + 1):
    for v in ("base", "new"):
        for dev in ("0", "all"):
            d = json.load(open(f"{out}/{v}-{dev}-{r}.json"))
            walls.setdefault((v, dev), []).append(d["wall_s"])
            gpus = {}
            for rec in d["records"]:
                g = gpus.setdefault(rec.get("device_index", 0), dict(first=1e9, busy=0, check=0, wait=0, other=0))
                p = rec["phases_s"]; g["first"] = min(g["first"], p["started"]); g["busy"] += p["total"]; g["check"] += p["check"]
                g["wait"] += p["inputs"] + p["reference"]
                g["other"] += p["total"] - sum(p.get(k, 0) for k in ("inputs", "reference", "plan", "check", "timed", "counters"))
            per = "; ".join(f"GPU {k} busy {g['busy']:.3f} check {g['check']:.3f} host-wait {g['wait']:.3f} other {g['other']:.3f}" for k, g in sorted(gpus.items()))
            print(f"{v:4s} {dev:3s} run {r}: wall {d['wall_s']:.3f} s; {per}")
for v in ("base", "new"):
    one, two = st.median(walls[(v, "0")]), st.median(walls[(v, "all")])
    pairs = [a / b for a, b in zip(walls[(v, "0")], walls[(v, "all")])]
    print(f"{v}: one GPU median {one:.3f} s, two {two:.3f} s, {one / two:.3f}x (pairs {min(pairs):.3f}-{max(pairs):.3f})")
PY
python3 - "$out"/*.json <<'PY'
import json, sys
def key(path):
    d = json.load(open(path)); out = []
    for r in d["records"]:
        c = r.get("check") or {}
        tensors = tuple(sorted((t, v.get("atol"), v.get("elements")) for t, v in (c.get("tensors") or {}).items()))
        out.append((r["name"], r["status"], c.get("passed"), c.get("rows_checked"), c.get("grad_scope"), tensors))
    return sorted(out, key=repr)
base = key(sys.argv[1])
bad = [p for p in sys.argv[2:] if key(p) != base]
print(f"ab: {len(sys.argv) - 1} files, {len(base)} points each; differing in names, statuses, checks or reference: {bad or 'none'}")
PY

#!/usr/bin/env bash
# Issue 22's scaling measurement: the same sweeps on one GPU (--devices 0) and on every GPU
# (--devices all), alternated (one, all, one, all) so that a drift of the machine shows in both,
# then checks that the one-GPU and all-GPU files hold the same points with the same statuses and
# check verdicts (scripts/phases_table.py prints where the time went and the speed-up).
#
#   scripts/scaling.sh OUT_DIR [sweep|figure4|both]     (default both)
#
#   sweep    the 64-point sweep of issue 22: standard and flash2, N 1024-8192, d 64/128, causal
#            off/on, fwd and fwd+bwd, --counters off --reps 5 --warmup 2
#   figure4  the fa2-figure4 preset (72 points, fwd+bwd) with counters (--counters full)
# FLASHIO_BIN overrides the binary (default build/flashio). Files: OUT_DIR/{sweep,figure4}-{0,all}-{1,2}.json.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/scaling.sh OUT_DIR [sweep|figure4|both]}"
what="${2:-both}"
bin="${FLASHIO_BIN:-build/flashio}"
mkdir -p "$out"

sweep_args=(--method standard,flash2 --seqlen 1024,2048,4096,8192 --head-dim 64,128 --causal false,true
            --pass fwd,fwdbwd --counters off --reps 5 --warmup 2)
figure4_args=(--preset fa2-figure4 --counters full)

measure() {  # name, then the run's arguments
  local name=$1; shift
  for rep in 1 2; do
    for devices in 0 all; do
      rm -f "$out/$name-$devices-$rep.json"
      "$bin" run "$@" -q --devices "$devices" --out "$out/$name-$devices-$rep.json" >/dev/null
      python3 - "$out/$name-$devices-$rep.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"scaling: {sys.argv[1]}: {len(d['records'])} records, wall {d['wall_s']:.1f} s")
PY
    done
  done
  # Same points, statuses and check verdicts on one GPU and on all of them.
  python3 - "$out/$name-0-1.json" "$out/$name-all-1.json" "$out/$name-0-2.json" "$out/$name-all-2.json" <<'PY'
import json, sys
def key(path):
    d = json.load(open(path))
    return [(r["name"], r["status"], (r.get("check") or {}).get("passed")) for r in d["records"]]
base = key(sys.argv[1])
for p in sys.argv[2:]:
    k = key(p)
    if sorted(k) != sorted(base):
        print(f"scaling: {p} differs from {sys.argv[1]} in names, statuses or checks")
        sys.exit(1)
print(f"scaling: the four files hold the same {len(base)} points, statuses and check verdicts")
PY
}

if [ "$what" = sweep ] || [ "$what" = both ]; then measure sweep "${sweep_args[@]}"; fi
if [ "$what" = figure4 ] || [ "$what" = both ]; then measure figure4 "${figure4_args[@]}"; fi

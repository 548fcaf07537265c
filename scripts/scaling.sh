#!/usr/bin/env bash
# Issue 22's scaling measurement: the same sweeps on one GPU (--devices 0) and on every GPU
# (--devices all), alternated (one, all, one, all) so that a drift of the machine shows in both,
# then checks that the one-GPU and all-GPU files hold the same points with the same statuses,
# check verdicts and reference (scripts/phases_table.py prints where the time went and the speed-up).
#
#   scripts/scaling.sh OUT_DIR [sweep|figure4|both]     (default both)
#
#   sweep    the 64-point sweep of issue 22: standard and flash2, N 1024-8192, d 64/128, causal
#            off/on, fwd and fwd+bwd, --counters off --reps 5 --warmup 2
#   figure4  the fa2-figure4 preset (72 points, fwd+bwd) with counters (--counters full)
# FLASHIO_BIN overrides the binary (default build/flashio). Files: OUT_DIR/{sweep,figure4}-{0,all}-{1,2}.json.
# SCALING_BASELINE=DIR also compares them with DIR/{sweep,figure4}-0-1.json (another build's files
# from the same kind of machine, e.g. results/crosscheck/issue22-scaling): the same checks and the
# same reference, to the last bit of each atol.
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
  # Same points, statuses and check verdicts on one GPU and on all of them, and the same reference:
  # the rows and tensors checked and each tensor's atol (a fraction of the float64 reference's RMS,
  # so equal to the last bit only when the reference is; dK/dV's also depend on the host's core count).
  local baseline=()
  if [ -n "${SCALING_BASELINE:-}" ] && [ -f "$SCALING_BASELINE/$name-0-1.json" ]; then baseline=("$SCALING_BASELINE/$name-0-1.json"); fi
  python3 - "$out/$name-0-1.json" "$out/$name-all-1.json" "$out/$name-0-2.json" "$out/$name-all-2.json" "${baseline[@]}" <<'PY'
import json, sys
def key(path):
    d = json.load(open(path))
    out = []
    for r in d["records"]:
        c = r.get("check") or {}
        tensors = tuple(sorted((t, v.get("atol"), v.get("elements")) for t, v in (c.get("tensors") or {}).items()))
        out.append((r["name"], r["status"], c.get("passed"), c.get("rows_checked"), c.get("grad_scope"), tensors))
    return out
base = key(sys.argv[1])
for p in sys.argv[2:]:
    k = key(p)
    if sorted(k, key=repr) != sorted(base, key=repr):
        bad = sorted(set(map(repr, k)) ^ set(map(repr, base)))[:2]
        print(f"scaling: {p} differs from {sys.argv[1]} in names, statuses, checks or reference: {bad}")
        sys.exit(1)
print(f"scaling: the {len(sys.argv) - 1} files hold the same {len(base)} points, statuses, check verdicts and reference")
PY
}

if [ "$what" = sweep ] || [ "$what" = both ]; then measure sweep "${sweep_args[@]}"; fi
if [ "$what" = figure4 ] || [ "$what" = both ]; then measure figure4 "${figure4_args[@]}"; fi

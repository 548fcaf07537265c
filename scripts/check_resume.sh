#!/usr/bin/env bash
# Checks "nothing lost" on the GPU machine: a preset run on every GPU (--devices all) that
# is killed with SIGKILL in the middle, resumed, interrupted with SIGINT, and resumed again
# gives the same records as one uninterrupted run — the same points, in the same order, with
# the same status, reason, problem, tiles, memory (but cuBLAS's library_bytes) and check verdict (times, TFLOP/s, counters, which
# GPU ran a point and the checks' error magnitudes are measurements and may differ).
#
#   scripts/check_resume.sh [OUT_DIR]
#
# Defaults: FLASHIO_PRESET=fa2-figure5, FLASHIO_ARGS="--seqlen 512,1024,2048 --reps 5 --warmup 1"
# (36 points: standard, flash1, flash2 × 3 N × d 64, 128 × causal off/on), FLASHIO_BIN=build/flashio.
# Exits 0 when the records match, 1 otherwise (with the differences).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-$(mktemp -d)}"
bin="${FLASHIO_BIN:-build/flashio}"
preset="${FLASHIO_PRESET:-fa2-figure5}"
read -r -a extra <<<"${FLASHIO_ARGS:---seqlen 512,1024,2048 --reps 5 --warmup 1}"
mkdir -p "$out"
rm -f "$out"/full.json "$out"/resumed.json "$out"/resumed.jsonl
run=("$bin" run --preset "$preset" "${extra[@]}" --devices all -q)
total=$("$bin" run --preset "$preset" "${extra[@]}" --dry-run 2>/dev/null | wc -l)
records_in() { [ -e "$1" ] && echo $(($(wc -l <"$1") - 1)) || echo 0; }  # journal lines after the header

# Waits until the journal $1 holds at least $2 records, or the process $3 has ended.
wait_for_records() {
  while [ "$(records_in "$1")" -lt "$2" ]; do
    kill -0 "$3" 2>/dev/null || { echo "check_resume: the run ended before it could be interrupted: use a larger sweep" >&2; exit 1; }
    sleep 0.2
  done
}

echo "1. uninterrupted: $total points -> $out/full.json"
"${run[@]}" --out "$out/full.json" >/dev/null

echo "2. the same run, killed with SIGKILL after $((total / 3)) records"
"${run[@]}" --out "$out/resumed.json" >/dev/null &
pid=$!
wait_for_records "$out/resumed.jsonl" $((total / 3)) "$pid"
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
[ ! -e "$out/resumed.json" ] || { echo "check_resume: a final file exists after SIGKILL" >&2; exit 1; }
echo "   journal holds $(records_in "$out/resumed.jsonl") records"

echo "3. resumed from the journal, interrupted with SIGINT after $((2 * total / 3)) records"
"${run[@]}" --resume "$out/resumed.jsonl" >/dev/null &
pid=$!
wait_for_records "$out/resumed.jsonl" $((2 * total / 3)) "$pid"
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || { echo "check_resume: SIGINT gave exit code $rc, not 130" >&2; exit 1; }
[ -e "$out/resumed.json" ] || { echo "check_resume: no result file after SIGINT" >&2; exit 1; }

echo "4. resumed from the result file written at SIGINT, to the end"
"${run[@]}" --resume "$out/resumed.json" >/dev/null

echo "5. comparing $out/full.json with $out/resumed.json"
python3 - "$out/full.json" "$out/resumed.json" <<'PY'
import json, sys
MEASURED = {"time", "tflops", "device_index", "counters", "phases_s"}  # measurements: may differ between runs
def comparable(r):
    c = {k: v for k, v in r.items() if k not in MEASURED}
    if "memory" in c:  # library_bytes is read with cudaMemGetInfo: ±one 2 MiB driver page
        c["memory"] = {k: v for k, v in c["memory"].items() if k != "library_bytes"}
    if "check" in c:  # the verdict and what was checked, not the error magnitudes
        c["check"] = {k: c["check"].get(k) for k in ("passed", "rows_checked", "rows_total", "scope", "grad_scope")}
    return c
a, b = (json.load(open(p))["records"] for p in sys.argv[1:3])
diffs = []
if [r["name"] for r in a] != [r["name"] for r in b]:
    diffs.append(f"point lists differ: {len(a)} vs {len(b)} records")
else:
    for ra, rb in zip(a, b):
        ca, cb = comparable(ra), comparable(rb)
        for key in sorted(set(ca) | set(cb)):
            if ca.get(key) != cb.get(key):
                diffs.append(f"{ra['name']}: {key}: {ca.get(key)} != {cb.get(key)}")
status = {}
for r in b:
    status[r["status"]] = status.get(r["status"], 0) + 1
devices = sorted({r["device_index"] for r in b})
print(f"   {len(b)} records ({', '.join(f'{v} {k}' for k, v in sorted(status.items()))}), run on GPUs {devices}")
if diffs:
    print("check_resume: the records differ:\n  " + "\n  ".join(diffs[:50]), file=sys.stderr)
    sys.exit(1)
print("   same records as the uninterrupted run")
PY

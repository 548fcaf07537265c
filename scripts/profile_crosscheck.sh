#!/usr/bin/env bash
# `flashio profile` on the GPU machine, checked three ways (issue 17):
#   (a) the GPU tests of flashio profile (tests/test_gpu_profile.cpp: a copy of known size, names,
#       ranges, exit codes, an abort);
#   (b) flashio profile --counters full on scripts/sdpa_tiny.py (PyTorch SDPA flash and cuDNN,
#       forward + backward, N 2048, d 64 and 128, fp16), one record per kernel launch, and the same
#       with --range, one record per SDPA call;
#   (c) Nsight Compute on the same script with the same metrics, clocks left alone;
#   (d) every byte count of (b) against (c), kernel by kernel: exit 1 if any differs by more than
#       1 % (counts under 1 MB on both sides are shown, not judged);
#   (e) with REPEAT=1, (b) and (c) once more and each instrument against itself (how far a count
#       is reproducible at all: DRAM writes depend on when L2 lines are evicted);
#   (f) with WRITEBACK=1, the DRAM counts summed over each SDPA call and the L2 flush after it
#       (sdpa_tiny.py --flush; both profilers with --cache-control none), so the writes are every line
#       the call dirtied however the L2 timed their eviction: flashio profile against ncu, and each
#       twice against itself (scripts/profile_crosscheck.py --segments).
# Both profilers treat the L2 alike: CACHE_CONTROL (default all) is passed to flashio profile's and
# to ncu's --cache-control. With `all` each kernel starts from an empty L2 (ncu flushes it; flashio
# profile runs a read-only pass over twice the L2: bench/measure/l2_clean.cu),
# so a kernel's DRAM writes no longer depend on what the kernels before it left dirty (09fd193's
# run, none on both sides, missed by up to 22 % that way).
# Binaries from the build (or scripts/gpu_bundle.sh unpack): build/flashio, build/libflashio_inject.so,
# build/tests/flashio_gpu_tests, build/tests/flashio_profile_target.
#
#   scripts/profile_crosscheck.sh OUTDIR       (FLASHIO_BUILD_DIR=build, NCU=ncu, PYTHON=python3,
#                                               CACHE_CONTROL=all|none, TOLERANCE=0.01, REPEAT=0|1,
#                                               WRITEBACK=0|1, ONLY_WRITEBACK=0|1: (f) alone)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${FLASHIO_BUILD_DIR:-build}
NCU=${NCU:-ncu}
PY=${PYTHON:-python3}
OUT=${1:?usage: scripts/profile_crosscheck.sh OUTDIR}
CACHE=${CACHE_CONTROL:-all}
mkdir -p "$OUT"
# The metrics of the counter set `full` that have a byte count (scripts/ncu_crosscheck.py's).
METRICS=$("$PY" -c 'import sys; sys.path.insert(0, "scripts"); from ncu_crosscheck import QUANTITIES; print(",".join(m for m, _ in QUANTITIES.values()))')

writeback() {
  echo "== (f) DRAM bytes per SDPA call and the flush after it (--cache-control none on both sides)"
  local k
  for k in 1 2; do
    "$BUILD/flashio" profile --counters dram --cache-control none --force --out "$OUT/wb-profile-$k.json" -- \
      "$PY" scripts/sdpa_tiny.py --flush
    "$NCU" --clock-control none --cache-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum --csv \
      --print-units base --log-file "$OUT/wb-ncu-$k.csv" "$PY" scripts/sdpa_tiny.py --flush
  done
  local pair st=0
  for pair in "wb-profile-1.json wb-ncu-1.csv wb-profile-vs-ncu.md" "wb-profile-2.json wb-ncu-2.csv wb-profile-vs-ncu-2.md" \
              "wb-ncu-2.csv wb-ncu-1.csv wb-ncu-vs-ncu.md" "wb-profile-2.json wb-profile-1.json wb-profile-vs-profile.md"; do
    set -- $pair
    "$PY" scripts/profile_crosscheck.py "$OUT/$1" "$OUT/$2" --segments reduce_kernel --tolerance "${TOLERANCE:-0.01}" \
      >"$OUT/$3" || st=1
    echo "$3: $(tail -1 "$OUT/$3")"
  done
  return $st
}
if [ "${ONLY_WRITEBACK:-0}" = 1 ]; then
  writeback
  exit $?
fi

echo "== (a) GPU tests of flashio profile"
"$BUILD/tests/flashio_gpu_tests" --gtest_filter='GpuProfile.*' 2>&1 | tee "$OUT/gpu_tests.txt"

echo "== (b) flashio profile on scripts/sdpa_tiny.py (--cache-control $CACHE)"
"$BUILD/flashio" profile --counters full --cache-control "$CACHE" --force --out "$OUT/profile.json" -- "$PY" scripts/sdpa_tiny.py
"$BUILD/flashio" profile --counters full --cache-control "$CACHE" --force --range '^sdpa_' --out "$OUT/profile-ranges.json" -- "$PY" scripts/sdpa_tiny.py
"$PY" - "$OUT/profile-ranges.json" <<'PYEOF'
import json, sys
p = json.load(open(sys.argv[1]))["profile"]
for r in p["records"]:
    c = r["counters"]
    b = c.get("bytes", {})
    print(f"{r['name']:<28} {c['status']:<11} kernels {len(c.get('kernels', []))}  "
          + "  ".join(f"{k} {v / 1e6:,.1f} MB" for k, v in b.items()))
names = [r["name"] for r in p["records"]]
want = [f"sdpa_{b}/fwdbwd/d:{d}" for b in ("flash", "cudnn") for d in (64, 128)]
sys.exit(0 if names == want else f"range records {names}, expected {want}")
PYEOF

echo "== (c) ncu on scripts/sdpa_tiny.py (--cache-control $CACHE)"
"$NCU" --clock-control none --cache-control "$CACHE" --metrics "$METRICS" --csv --print-units base \
  --log-file "$OUT/ncu.csv" "$PY" scripts/sdpa_tiny.py

echo "== (d) flashio profile against ncu, per kernel"
status=0
"$PY" scripts/profile_crosscheck.py "$OUT/profile.json" "$OUT/ncu.csv" --tolerance "${TOLERANCE:-0.01}" >"$OUT/profile-vs-ncu.md" || status=$?
tail -1 "$OUT/profile-vs-ncu.md"

if [ "${REPEAT:-0}" = 1 ]; then
  echo "== (e) each instrument again, and against itself"
  "$BUILD/flashio" profile --counters full --cache-control "$CACHE" --force --out "$OUT/profile-2.json" -- "$PY" scripts/sdpa_tiny.py
  "$NCU" --clock-control none --cache-control "$CACHE" --metrics "$METRICS" --csv --print-units base \
    --log-file "$OUT/ncu-2.csv" "$PY" scripts/sdpa_tiny.py
  for pair in "profile-2.json ncu-2.csv profile-vs-ncu-2.md" "ncu-2.csv ncu.csv ncu-vs-ncu.md" \
              "profile-2.json profile.json profile-vs-profile.md"; do
    set -- $pair
    "$PY" scripts/profile_crosscheck.py "$OUT/$1" "$OUT/$2" --tolerance "${TOLERANCE:-0.01}" >"$OUT/$3" || true
    echo "$3: $(tail -1 "$OUT/$3")"
  done
fi
if [ "${WRITEBACK:-0}" = 1 ]; then
  writeback || status=1
fi
exit $status

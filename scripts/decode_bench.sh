#!/usr/bin/env bash
# Issue 20 (decode) on a GPU machine: flash_decode's GPU tests, compute-sanitizer memcheck on
# them, the device-to-device copy bandwidth, and the decode benchmark (GQA 32:8, d 128, one query,
# batch 8 and 32, context 8k and 32k, contiguous and paged:64, counters at both levels), the SDPA
# back-ends on the same contiguous points in the same call (scripts/peers_sdpa.py, same run id),
# then the verdict on the issue's targets:
#   - flash_decode reaches >= 80 % of the measured copy bandwidth (GQA 32:8, d 128, context
#     >= 8k, batch >= 8), bandwidth = the compulsory bytes (K, V, Q read; O, L written) / the
#     median time; the counters' DRAM bytes / time are printed beside it;
#   - paged:64 within 10 % of contiguous (median times);
#   - flash_decode at least as fast as every SDPA back-end that runs the point (median times).
# Nothing is installed; the binaries come from the .gpu/ bundle (scripts/gpu_bundle.sh pack here,
# unpack there) or an existing build/.
#   scripts/decode_bench.sh OUT        (OUT: a new folder for the logs, JSON and tables)
# Exit status: 0 when the tests, memcheck and every target hold; 1 otherwise (the output says which).
set -uo pipefail
out="${1:?usage: scripts/decode_bench.sh OUT}"
cd "$(dirname "$0")/.."
. scripts/lib/gpu_checks.sh
bench_start decode_bench

# 1. The GPU tests of flash_decode (float64 check of every row, paged = contiguous bit for bit).
# 2. The same tests under compute-sanitizer memcheck (out-of-bounds and misaligned accesses,
# including the block table's pages and the zero-filled tails).
gpu_tests_and_memcheck '*FlashDecode*'

# 3. Copy bandwidth (cudaMemcpy D2D of 1 GiB, median of 20), before and after the benchmark.
"$build/flashio" device --copy-bandwidth --json >"$out/copy_before.json" || { note "copy bandwidth failed"; status=1; }

# 4. The benchmark (flash2 beside it: it skips the paged points, with the reason).
"$build/flashio" run --method flash_decode,flash2 --heads 32 --kv-heads 8 --head-dim 128 --seqlen 1 \
  --seqlen-k 8192,32768 --batch 8,32 --kv-layout contiguous,paged:64 --counters full --reps 50 \
  --out "$out/decode.json" --md "$out/decode.md" >"$out/run.txt" 2>&1 || { note "run failed ($out/run.txt)"; status=1; }
"$build/flashio" device --copy-bandwidth --json >"$out/copy_after.json" || { note "copy bandwidth failed"; status=1; }
# The SDPA back-ends on the contiguous points (paged ones: SDPA has no paged K/V), same run id,
# the revision of the flashio build that made decode.json.
read -r run_id revision < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["run_id"], d["build"]["git_revision"])' "$out/decode.json")
python3 scripts/peers_sdpa.py --flashio "$build/flashio" --backend flash,cudnn,efficient,math --heads 32 --kv-heads 8 \
  --head-dim 128 --seqlen 1 --seqlen-k 8192,32768 --batch 8,32 --kv-layout contiguous --reps 50 -q \
  --run-id "$run_id" --git-revision "$revision" --out "$out/decode-sdpa.json" >"$out/sdpa.txt" 2>&1 ||
  { note "peers_sdpa.py failed ($out/sdpa.txt)"; status=1; }

# 5. The verdict.
python3 - "$out" <<'PY' || status=1
import json, sys, os
out = sys.argv[1]
copies = [json.load(open(os.path.join(out, f)))["copy_bandwidth"] for f in ("copy_before.json", "copy_after.json")]
copy = max(c["bytes_per_s"] for c in copies)
recs = json.load(open(os.path.join(out, "decode.json")))["records"]
peak = json.load(open(os.path.join(out, "copy_before.json")))
print(f"copy bandwidth (cudaMemcpy D2D, 2 x 1 GiB / median): before {copies[0]['bytes_per_s']/1e9:.0f} GB/s, "
      f"after {copies[1]['bytes_per_s']/1e9:.0f} GB/s; judged against {copy/1e9:.0f} GB/s")
ok = True
times = {}
print(f"{'point':75s} {'ms':>8s} {'splits':>6s} {'eff GB/s':>9s} {'of copy':>8s} {'DRAM GB/s':>9s}")
for r in recs:
    if r["method"] != "flash_decode":
        if r["status"] != "ok": print(f"{r['name']:75s} {r['status']}: {r.get('reason', '')[:60]}")
        continue
    if r["status"] != "ok":
        print(f"{r['name']:75s} {r['status']}: {r.get('reason', '')}"); ok = False; continue
    t = r["time"]["median_s"]; bw = r["bandwidth"]
    eff = bw["compulsory_bytes"] / t
    dram = bw.get("achieved_bytes_per_s")
    p = r["problem"]
    times[(p["batch"], p["seqlen_k"], p.get("kv_layout", "contiguous"))] = t
    target = eff >= 0.8 * copy
    ok = ok and target
    print(f"{r['name']:75s} {t*1e3:8.4f} {r['tiles'].get('splits', 1):6d} {eff/1e9:9.0f} {eff/copy*100:7.1f}% "
          f"{(dram or 0)/1e9:9.0f}  {'ok' if target else 'BELOW 80 %'}")
for (b, nk, layout), t in sorted(times.items()):
    if layout == "contiguous": continue
    c = times.get((b, nk, "contiguous"))
    if c is None: continue
    within = t <= 1.10 * c
    ok = ok and within
    print(f"b {b} nk {nk}: {layout} / contiguous = {t / c:.3f}  {'ok' if within else 'MORE THAN 10 % SLOWER'}")
peers = os.path.join(out, "decode-sdpa.json")
if os.path.exists(peers):
    for r in json.load(open(peers))["records"]:
        p = r["problem"]
        ours = times.get((p["batch"], p["seqlen_k"], "contiguous"))
        if r["status"] != "ok":
            print(f"{r['name']:75s} {r['status']}: {r.get('reason', '')[:70]}"); continue
        if ours is None: continue
        ratio = r["time"]["median_s"] / ours
        faster = ratio >= 1.0
        ok = ok and faster
        print(f"b {p['batch']} nk {p['seqlen_k']}: {r['method']:15s} {r['time']['median_s']*1e6:9.1f} us, "
              f"flash_decode {ours*1e6:9.1f} us: {ratio:.3f}x  {'ok' if faster else 'SLOWER THAN THE PEER'}")
else:
    print("no SDPA file: the peer target is not judged"); ok = False
print("targets:", "MET" if ok else "NOT MET")
sys.exit(0 if ok else 1)
PY
[ $status -eq 0 ] && note "all held" || note "something failed: see above and $out/"
exit $status

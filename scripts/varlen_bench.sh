#!/usr/bin/env bash
# Issue 20 (variable lengths) on a GPU machine: the varlen GPU tests, compute-sanitizer memcheck
# on them, then the benchmark and the verdict on the issue's targets:
#   - packed varlen prefill reaches >= 0.9x the TFLOP/s of flash2 on a uniform batch of the same
#     total tokens at the mean length (varlen TFLOP/s count the real tokens' FLOPs only:
#     Σ 4·H·L²·d, halved when causal; the uniform batch's are the dense count of its shape);
#   - packed varlen finishes faster than the same sequences padded to the longest (median times).
# The points: the varlen-prefill preset (lengths uniform in 512-8192, packs of 16k and 64k tokens,
# d 64/128, causal off/on, packed and padded), and for each packed point the uniform batch
# b = its sequence count, n = round(total / count), the same heads, d and mask.
# Nothing is installed; the binaries come from the .gpu/ bundle (scripts/gpu_bundle.sh pack here,
# unpack there) or an existing build/.
#   scripts/varlen_bench.sh OUT        (OUT: a new folder for the logs, JSON and tables)
# Exit status: 0 when the tests, memcheck and every target hold; 1 otherwise (the output says which).
set -uo pipefail
out="${1:?usage: scripts/varlen_bench.sh OUT}"
cd "$(dirname "$0")/.."
. scripts/lib/gpu_checks.sh
bench_start varlen_bench
filter='*Varlen*'

# 1. The varlen GPU tests (float64 check of every real row on odd length sets with a 0-length
# sequence, fp16/bf16, causal, GQA, both instruction paths; packed = padded bit for bit; nothing
# written past the packed output).
# 2. The same tests under compute-sanitizer memcheck (a tile past a sequence's end, the packed
# tensors' last rows, a sequence of length 0).
gpu_tests_and_memcheck "$filter"

# 3. The varlen points (packed and padded).
"$build/flashio" run --preset varlen-prefill --reps 50 --out "$out/varlen.json" --md "$out/varlen.md" \
  >"$out/run_varlen.txt" 2>&1 || { note "varlen run failed ($out/run_varlen.txt)"; status=1; }

# 4. The uniform batches at the mean length, one sweep file from the packed records.
python3 - "$out" <<'PY' || { note "could not make the uniform sweep"; status=1; }
import json, sys, os
out = sys.argv[1]
recs = json.load(open(os.path.join(out, "varlen.json")))["records"]
sweeps = []
for r in recs:
    p = r["problem"]
    if p.get("varlen_layout") != "packed": continue
    lengths = p["seq_lengths"]
    sweeps.append({"method": "flash2", "pass": "fwd", "batch": len(lengths), "seqlen": round(sum(lengths) / len(lengths)),
                   "heads": p["heads"], "head_dim": p["head_dim"], "dtype": p["dtype"], "causal": p["causal"],
                   "seed": p["seed"]})
json.dump({"sweeps": sweeps}, open(os.path.join(out, "uniform_sweep.json"), "w"), indent=1)
PY
"$build/flashio" run --sweep "$out/uniform_sweep.json" --reps 50 --out "$out/uniform.json" --md "$out/uniform.md" \
  >"$out/run_uniform.txt" 2>&1 || { note "uniform run failed ($out/run_uniform.txt)"; status=1; }

# 5. The verdict.
python3 - "$out" <<'PY' || status=1
import json, sys, os
out = sys.argv[1]
def load(f):
    try: return json.load(open(os.path.join(out, f)))["records"]
    except Exception as e: print(f"cannot read {f}: {e}"); return []
varlen, uniform = load("varlen.json"), load("uniform.json")
def key(p): return (p["heads"], p["head_dim"], p["dtype"], p["causal"])
uni = {}
for r in uniform:
    p = r["problem"]
    uni[key(p) + (p["batch"], p["seqlen_q"])] = r
padded = {}
for r in varlen:
    p = r["problem"]
    if p.get("varlen_layout") == "padded": padded[key(p) + (tuple(p["seq_lengths"]),)] = r
ok, judged = True, 0
print(f"{'packed point':72s} {'seqs':>4s} {'tokens':>6s} {'TF/s':>6s} {'unif TF/s':>9s} {'ratio':>6s} "
      f"{'ms':>8s} {'padded ms':>9s} {'speedup':>7s}")
for r in varlen:
    p = r["problem"]
    if p.get("varlen_layout") != "packed": continue
    lengths = p["seq_lengths"]
    n, total = len(lengths), sum(lengths)
    u = uni.get(key(p) + (n, round(total / n)))
    pad = padded.get(key(p) + (tuple(lengths),))
    bad = [x["name"] + ": " + x["status"] + " " + x.get("reason", "")[:80] for x in (r, u, pad)
           if x is not None and x["status"] != "ok"]
    if u is None or pad is None or bad:
        print(f"{r['name']:72s} not judged: " + ("; ".join(bad) if bad else "its uniform or padded twin is missing"))
        ok = False
        continue
    judged += 1
    ratio = r["tflops"] / u["tflops"]
    t, tp = r["time"]["median_s"], pad["time"]["median_s"]
    hit = ratio >= 0.9 and t < tp
    ok = ok and hit
    print(f"{r['name']:72s} {n:4d} {total:6d} {r['tflops']:6.1f} {u['tflops']:9.1f} {ratio:6.3f} {t*1e3:8.3f} "
          f"{tp*1e3:9.3f} {tp/t:7.2f}  {'ok' if hit else 'MISSED (ratio >= 0.9 and faster than padded)'}")
    print(f"  ratio varlen/uniform TFLOP/s = {ratio:.3f} (target >= 0.9); padded/varlen time = {tp/t:.3f} "
          f"(target > 1); tiles {r['tiles'].get('block_r')}x{r['tiles'].get('block_c')} {r['tiles'].get('mma')}")
if judged == 0: ok = False
print(f"judged {judged} packed points")
print("targets:", "MET" if ok else "NOT MET")
sys.exit(0 if ok else 1)
PY
[ $status -eq 0 ] && note "all held" || note "something failed: see above and $out/"
exit $status

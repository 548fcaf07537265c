#!/usr/bin/env bash
# Block-sparse FlashAttention experiments (issue 5), on the GPU at hand.
# Usage: scripts/reproduce_blocksparse.sh OUT_DIR [fig2|tables|all]   (needs a build:
# scripts/build.sh; FLASHIO_BIN overrides the binary). About 1.5 min (fig2) + 2-3 min (tables) on an H100.
#
#   fig2    FlashAttention Figure 2 (right): N = 4096, d = 64, batch 16, 8 heads, fp16, random
#           block masks (128 × 128 blocks) of density s = 1.0 … 0.05, forward and fwd+bwd:
#           blocksparse_flash and blocksparse_standard against dense flash2 and standard
#           (pattern none). One run, one file; the
#           dense methods are `skipped` on sparse points and the sparse ones on dense points.
#           Beside it, in the same call, PyTorch's FlexAttention (scripts/peers_sdpa.py --backend
#           flex, the figure2-right preset's points: the dense problem and the same masks, which
#           flashio lists) into OUT_DIR/<gpu>-blocksparse-fig2-flex.json, same run id (needs
#           PyTorch >= 2.5 with a working torch.compile; FLASHIO_NO_PEERS=1 leaves it out; its
#           compilations add a few minutes). Then prints the speedup over dense flash2 next to 1/s,
#           with flex_attention's times.
#   tables  Block-sparse rows for FlashAttention Tables 14-26: batch 16, 8 heads, d = 64, fp16,
#           N = 1024, 16384, 65536 (three of the tables' N: the float64
#           reference checks dominate the run time, over 7 minutes on an H100 for all ten),
#           butterfly pattern (128 × 128 blocks), dropout 0 / 0.1 × key padding none /
#           random, passes fwd, bwd, fwd+bwd, 5 repetitions.
set -euo pipefail
out="${1:?usage: scripts/reproduce_blocksparse.sh OUT_DIR [fig2|tables|all]}"
what="${2:-all}"
cd "$(dirname "$0")/.."
bin="${FLASHIO_BIN:-build/flashio}"
mkdir -p "$out"
gpu=$("$bin" device --json | python3 -c 'import json,sys,re; print(re.sub("[^a-z0-9]+","-",json.load(sys.stdin)["name"].lower()).strip("-"))')

if [ "$what" = fig2 ] || [ "$what" = all ]; then
  "$bin" run --method flash2,standard,blocksparse_flash,blocksparse_standard --batch 16 --heads 8 --head-dim 64 \
    --seqlen 4096 --pattern none,random --density 1,0.8,0.6,0.5,0.4,0.3,0.2,0.15,0.1,0.05 --sparse-block 128 \
    --pass fwd,fwdbwd --reps 20 --warmup 3 -q --out "$out/$gpu-blocksparse-fig2.json"
  flex="$out/$gpu-blocksparse-fig2-flex.json"
  if [ "${FLASHIO_NO_PEERS:-0}" != 1 ]; then
    run_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$out/$gpu-blocksparse-fig2.json")
    rev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["build"]["git_revision"])' "$out/$gpu-blocksparse-fig2.json")
    python3 scripts/peers_sdpa.py --flashio "$bin" --preset figure2-right --backend flex --reps 20 --warmup 3 -q \
      --run-id "$run_id" --git-revision "$rev" --out "$flex"
  fi
  python3 - "$out/$gpu-blocksparse-fig2.json" "$flex" <<'PY'
import json, os, sys
recs = json.load(open(sys.argv[1]))["records"]
run_id = json.load(open(sys.argv[1]))["run_id"]
if os.path.exists(sys.argv[2]) and json.load(open(sys.argv[2]))["run_id"] == run_id:  # this run's, not a stale one
    recs += json.load(open(sys.argv[2]))["records"]
t = {}
for r in recs:
    if r["status"] != "ok":
        continue
    pr = r["problem"]
    s = pr.get("density", 1.0) if "pattern" in pr else None
    t[(r["method"], r["pass"], s)] = r["time"]["median_s"]
print("Figure 2 (right), N = 4096, d = 64, batch 16, 8 heads; times in ms, speedup over dense flash2")
print("(flex: flex_attention, compiled, on the same mask; dense: its time on the dense problem)")
print(f"{'pass':7} {'s':>6} {'flash2':>8} {'bs_flash':>9} {'bs_std':>8} {'flex':>8} {'speedup':>8} {'1/s':>6} "
      f"{'1/s / speedup':>13}")
fmt = lambda x: f"{x*1e3:8.3f}" if x else "       -"
for pas in ("fwd", "fwdbwd"):
    dense = t.get(("flash2", pas, None))
    print(f"{pas:7} {'dense':>6} {fmt(dense)} {'':9} {'':8} {fmt(t.get(('flex_attention', pas, None)))}")
    dens = sorted({k[2] for k in t if k[2] is not None and k[1] == pas}, reverse=True)
    for s in dens:
        f = t.get(("blocksparse_flash", pas, s))
        st = t.get(("blocksparse_standard", pas, s))
        fx = t.get(("flex_attention", pas, s))
        sp = dense / f if dense and f else float("nan")
        ratio = (1 / s) / sp if sp == sp else float("nan")
        flag = "" if s < 0.1 else ("  ok" if ratio <= 1.5 and ratio >= 1 / 1.5 else "  OUTSIDE 1.5x")
        print(f"{pas:7} {s:6.3f} {fmt(dense)} {fmt(f)} {fmt(st)} {fmt(fx)} {sp:8.2f} {1/s:6.2f} {ratio:13.2f}{flag}")
PY
fi

if [ "$what" = tables ] || [ "$what" = all ]; then
  "$bin" run --method blocksparse_flash,blocksparse_standard --batch 16 --heads 8 --head-dim 64 \
    --seqlen 1024,16384,65536 --pattern butterfly --sparse-block 128 \
    --dropout 0,0.1 --padding none,random --pass fwd,bwd,fwdbwd --reps 5 --warmup 1 -q \
    --out "$out/$gpu-blocksparse-tables.json"
fi

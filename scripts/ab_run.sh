#!/usr/bin/env bash
# Before/after timing of two builds on the GPU at hand, alternated (before, after, before, after)
# so that clock drift and the GPU's warming hit both sides (scripts/ab_table.py makes the table).
#   scripts/ab_run.sh BEFORE_FLASHIO AFTER_FLASHIO OUT_DIR [SWEEP_FILE]
# Default sweep: FlashAttention-2's setting (fp16, batch·N = 16384, heads·d = 2048, d 64/128, causal
# off/on, N 512-16384, fwd and fwd+bwd) for flash2 (its default kernels: wgmma on Hopper), flash2's
# mma.sync kernels and flash1, and block-sparse at FlashAttention's Figure 2 (right) shape;
# --reps 15 --warmup 3 --counters off. Files: OUT_DIR/{before,after}-{1,2}.json.
set -euo pipefail
before="${1:?usage: scripts/ab_run.sh BEFORE AFTER OUT_DIR [SWEEP]}"
after="${2:?}"
out="${3:?}"
sweep="${4:-}"
mkdir -p "$out"
if [ -z "$sweep" ]; then
  sweep="$out/ab-sweep.json"
  cat >"$sweep" <<'JSON'
{"description": "issue 15 A/B: FA-2 setting for flash2 (default kernels), flash2 --mma mma.sync and flash1; block-sparse at Figure 2 (right)",
 "sweeps": [
  {"method": ["flash2", "flash1"], "seqlen": [512, 1024, 2048, 4096, 8192, 16384], "head_dim": [64, 128],
   "causal": [false, true], "pass": ["fwd", "fwdbwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash2", "mma": "mma.sync", "seqlen": [512, 1024, 2048, 4096, 8192, 16384], "head_dim": [64, 128],
   "causal": [false, true], "pass": ["fwd", "fwdbwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "blocksparse_flash", "pass": ["fwd", "fwdbwd"], "batch": 16, "heads": 8, "seqlen": 4096, "head_dim": 64,
   "pattern": "random", "density": [1, 0.5, 0.2, 0.05], "sparse_block": 128}]}
JSON
fi
for rep in 1 2; do
  for side in before after; do
    bin=$before; [ "$side" = after ] && bin=$after
    rm -f "$out/$side-$rep.json"
    "$bin" run --sweep "$sweep" --reps 15 --warmup 3 --counters off -q --out "$out/$side-$rep.json" >/dev/null
    echo "ab_run: $side run $rep done"
  done
done

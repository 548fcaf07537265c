#!/usr/bin/env bash
# Regenerates the committed result files on the GPU at hand, with the commands they were
# made with. Usage: scripts/reproduce_results.sh OUT_DIR [fa2|fa1|all] (needs a build:
# scripts/build.sh; FLASHIO_BIN overrides the binary). PyTorch is needed for the peers.
#
#   fa2  FlashAttention-2's benchmark sweep (fp16, batch·N = 16384, heads·d = 2048,
#        d = 64, 128, causal off/on, N = 512 … 16384), forward and fwd+bwd, for standard and
#        flash2 (its default kernels — wgmma on a Hopper GPU — and, in the same file, its
#        mma.sync kernels), and PyTorch SDPA's four back-ends on the same points in the same
#        run (one run id in both files).
#   d256 The same setting at d = 256 (8 heads; N = 512 … 16384, causal off/on), forward,
#        backward and fwd+bwd: flash2 (mma.sync; its d = 256 backward splits dK, dV over two
#        warps per 16-key slice) and SDPA's flash, cuDNN and efficient back-ends, one run id.
#   flash3  FlashAttention-3's comparison (the FA-2 setting, forward, d = 64, 128, 256, causal
#        off/on, N = 512 … 16384): flash3 and flash2, and SDPA's cuDNN and flash back-ends on the
#        same points in the same run (one run id); the table of ratios printed at the end.
#   flash3bwd  flash3's backward in the same setting (d = 64, 128; passes bwd and fwd+bwd):
#        flash3 and flash2, SDPA's cuDNN and flash back-ends in the same run, and the ratios.
#   ablations  FlashAttention-3's Table 2 in the same setting (d = 128, forward): flash3 and its
#        ablations without ping-pong, intra-warpgroup overlap and warp specialisation, with
#        counters, and each ablation's ratios to flash3.
#   fa1  FlashAttention's benchmark setting (batch 16, 8 heads, d = 64, fp16,
#        N = 128 … 16384) for standard, standard_fused and flash1 in the four configurations of its
#        Tables 14-25 (plain, dropout 0.1, key padding, both), passes fwd, bwd, fwd+bwd.
#   memory  FlashAttention's Table 26 setting (batch 16, 8 heads, d = 64, fp16,
#        N = 128 … 65536, fwd+bwd) for standard, flash1 and flash2: memory footprint (and
#        time, with few repetitions; standard runs out of memory at long N: `oom` records).
#   io   The IO-model measurements: FlashAttention's Figure 2 left (standard vs flash1,
#        batch 64, 16 heads, N = 1024, d = 64, fwd+bwd) and middle (flash1 forward with the
#        key block Bc swept), and the DRAM-level sweep (flash2, batch 1, one head, d = 128,
#        N = 1k … 256k, fwd and fwd+bwd) where one head's K+V outgrows the L2.
#   drift  The two-level DRAM model's tests (analysis/README.md): flash2's mma.sync forward
#        at 128 × 32 and 128 × 64 (blocks per SM from the recorded resources) and 64 × 64,
#        d = 128, and 128 × 64 at d = 64, batch 1, one head, N = 64k … 512k; flash1's split
#        backward around N = 2048.
#   oos  The DRAM model's out-of-sample set (issue 19): shapes chosen after the model, none of
#        them a committed experiment's — odd batch and head counts, N not a power of two, GQA
#        5:1, d = 64, 128, 256, causal off/on, Nq ≠ Nk — for flash1, flash2 (default kernels) and
#        flash3, forward and fwd+bwd, with counters. Judged by `flashio analyze`, reported apart
#        (docs/io-model.md, "Out of sample").
#   oos2 A second out-of-sample set, chosen after the L2 simulation's writer's-copy rule (the
#        H200 L2 probe's read-modify-write mode): flash1, whose fp32 O (and unsplit dQ
#        accumulator) is read-modify-written at every K/V tile, at shapes whose O stream spans
#        0.2-0.7 of the L2 (d 64 and 128, causal off/on, fwd and fwd+bwd), and flash2's
#        deterministic backward (its dQ accumulator read-modify-written), with counters.
#   oos3 A third out-of-sample set, chosen after the SM↔L2 model's L1 term (flash1's O, ℓ, m
#        re-reads served by L1): flash1's forward where blocks own few Q tiles, at every compiled
#        head dim (d 32, 64, 96, 128: other shared memory, another L1 beside it), causal off/on.
#   oos4 A fourth out-of-sample set, chosen after the L2 simulation's soft dirty rule (a cap,
#        victims from the oldest quarter of the dirty bytes, a cleaning band below the cap):
#        flash1 with its fp32 O at 0.38, 0.43, 0.45 and 0.55 of the H200's L2 (d 64 and 128;
#        in the band, at the cap, past it), causal off/on, fwd and fwd+bwd, and flash2's
#        deterministic backward with its dQ accumulator at 0.46 of it.
#   oos5 A fifth out-of-sample set, chosen after the simulation's measured issue order of flash2's
#        mma.sync 128 x 64 forward at d 128 (an SM's younger block at 1/1.14 of the older's rate):
#        that kernel at other long one-to-four-head shapes, and beside it what the rule leaves out
#        (the same tile in bf16 and causal).
#   oos6 A sixth out-of-sample set, chosen before the bf16 instantiation of that kernel had a
#        measured issue order: the same forward in bf16 at four long shapes (one to three heads).
# Every flashio run reads hardware counters after timing (--counters full, the default).
set -euo pipefail
out="${1:?usage: scripts/reproduce_results.sh OUT_DIR [fa2|d256|flash3|flash3bwd|ablations|fa1|memory|io|drift|oos|oos2|oos3|oos4|oos5|oos6|all]}"
what="${2:-all}"
cd "$(dirname "$0")/.."
bin="${FLASHIO_BIN:-build/flashio}"
mkdir -p "$out"
gpu=$("$bin" device --json | python3 -c 'import json,sys,re; print(re.sub("[^a-z0-9]+","-",json.load(sys.stdin)["name"].lower()).strip("-"))')

# A field of a result file: json_field FILE KEY [KEY ...] (nested keys).
json_field() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2:]: d=d[k]
print(d)' "$@"
}

# A sweep file, read from standard input, run into $out/$gpu-NAME.json (the file removed after).
#   run_sweep NAME RUN_ARGS...   <<'JSON' ... JSON
run_sweep() {
  local name=$1 sweep="$out/$1-sweep.json"
  shift
  cat >"$sweep"
  "$bin" run --sweep "$sweep" "$@" -q --out "$out/$gpu-$name.json"
  rm -f "$sweep"
}

# One experiment in FlashAttention-2's setting (16k tokens, model dim 2048, 20 repetitions after 3
# warm-ups): METHODS on the axes into $out/$gpu-NAME.json, then SDPA's BACKENDS on the same points
# under that run's id and revision ($out/$gpu-NAME-sdpa.json); with a TABLE method, its ratios to
# the first back-end (scripts/flash2_vs_sdpa.py).
#   fa2_setting_with_peers NAME METHODS BACKENDS TABLE|"" AXES...
fa2_setting_with_peers() {
  local name=$1 methods=$2 backends=$3 table=$4
  shift 4
  local file="$out/$gpu-$name.json" peers="$out/$gpu-$name-sdpa.json"
  "$bin" run --method "$methods" "$@" --tokens 16384 --model-dim 2048 --reps 20 --warmup 3 -q --out "$file"
  python3 scripts/peers_sdpa.py --flashio "$bin" "$@" --backend "$backends" --tokens 16384 --model-dim 2048 \
    --reps 20 --warmup 3 -q --run-id "$(json_field "$file" run_id)" --git-revision "$(json_field "$file" build git_revision)" \
    --out "$peers"
  if [ -n "$table" ]; then
    python3 scripts/flash2_vs_sdpa.py "$file" "$peers" --method "$table" --peer "sdpa_${backends%%,*}"
  fi
}

if [ "$what" = fa2 ] || [ "$what" = all ]; then
  axes=(--seqlen 512,1024,2048,4096,8192,16384 --head-dim 64,128 --causal false,true --pass fwd,fwdbwd)
  # standard and flash2 (default kernels), then flash2's mma.sync kernels
  run_sweep fa2 --reps 20 --warmup 3 <<'JSON'
{"description": "FlashAttention-2 setting: standard and flash2, then flash2 --mma mma.sync",
 "sweeps": [
  {"method": ["standard", "flash2"], "seqlen": [512, 1024, 2048, 4096, 8192, 16384], "head_dim": [64, 128],
   "causal": [false, true], "pass": ["fwd", "fwdbwd"], "tokens": 16384, "model_dim": 2048},
  {"method": "flash2", "mma": "mma.sync", "seqlen": [512, 1024, 2048, 4096, 8192, 16384], "head_dim": [64, 128],
   "causal": [false, true], "pass": ["fwd", "fwdbwd"], "tokens": 16384, "model_dim": 2048}]}
JSON
  run_id=$(json_field "$out/$gpu-fa2.json" run_id)
  rev=$(json_field "$out/$gpu-fa2.json" build git_revision)
  python3 scripts/peers_sdpa.py --flashio "$bin" "${axes[@]}" --backend flash,cudnn,efficient --tokens 16384 --model-dim 2048 \
    --reps 20 --warmup 3 -q --run-id "$run_id" --git-revision "$rev" --out "$out/$gpu-fa2-sdpa.json"
  # The math back-end materializes S in fp32 and is slow: up to N = 4096 only.
  python3 scripts/peers_sdpa.py --flashio "$bin" --seqlen 512,1024,2048,4096 --head-dim 64,128 --causal false,true --pass fwd,fwdbwd \
    --backend math --tokens 16384 --model-dim 2048 --reps 5 --warmup 1 -q --run-id "$run_id" --git-revision "$rev" \
    --out "$out/$gpu-fa2-sdpa-math.json"
fi

if [ "$what" = d256 ] || [ "$what" = all ]; then
  fa2_setting_with_peers d256 flash2 flash,cudnn,efficient "" \
    --seqlen 512,1024,2048,4096,8192,16384 --head-dim 256 --causal false,true --pass fwd,bwd,fwdbwd
fi

if [ "$what" = flash3 ] || [ "$what" = all ]; then
  fa2_setting_with_peers flash3 flash3,flash2 cudnn,flash flash3 \
    --seqlen 512,1024,2048,4096,8192,16384 --head-dim 64,128,256 --causal false,true --pass fwd
fi

if [ "$what" = flash3bwd ] || [ "$what" = all ]; then
  fa2_setting_with_peers flash3-bwd flash3,flash2 cudnn,flash flash3 \
    --seqlen 512,1024,2048,4096,8192,16384 --head-dim 64,128 --causal false,true --pass bwd,fwdbwd
fi

if [ "$what" = ablations ] || [ "$what" = all ]; then
  file="$out/$gpu-flash3-ablations.json" variants=(flash3_no_pingpong flash3_no_overlap flash3_no_warpspec)
  "$bin" run --method "flash3$(printf ',%s' "${variants[@]}")" \
    --seqlen 512,1024,2048,4096,8192,16384 --head-dim 128 --causal false,true --pass fwd --tokens 16384 \
    --model-dim 2048 --reps 20 --warmup 3 -q --out "$file"
  for variant in "${variants[@]}"; do
    python3 scripts/flash2_vs_sdpa.py "$file" "$file" --method "$variant" --peer flash3
  done
fi

if [ "$what" = fa1 ] || [ "$what" = all ]; then
  "$bin" run --method standard,standard_fused,flash1 --batch 16 --heads 8 --head-dim 64 \
    --seqlen 128,256,512,1024,2048,4096,8192,16384 --dropout 0,0.1 --padding none,random \
    --pass fwd,bwd,fwdbwd --reps 10 --warmup 2 -q --out "$out/$gpu-fa1.json"
fi

if [ "$what" = memory ] || [ "$what" = all ]; then
  "$bin" run --method standard,flash1,flash2 --batch 16 --heads 8 --head-dim 64 \
    --seqlen 128,256,512,1024,2048,4096,8192,16384,32768,65536 --pass fwdbwd --reps 3 --warmup 1 -q \
    --out "$out/$gpu-memory.json"
fi

if [ "$what" = io ] || [ "$what" = all ]; then
  "$bin" run --method standard,flash1 --batch 64 --heads 16 --seqlen 1024 --head-dim 64 --pass fwd,fwdbwd \
    --reps 20 --warmup 3 -q --out "$out/$gpu-figure2-left.json"
  "$bin" run --method flash1 --batch 64 --heads 16 --seqlen 1024 --head-dim 64 --pass fwd \
    --block-c 32,64,128,256 --reps 20 --warmup 3 -q --out "$out/$gpu-figure2-middle.json"
  "$bin" run --method flash2 --batch 1 --heads 1 --head-dim 128 \
    --seqlen 1024,2048,4096,8192,16384,32768,65536,131072,262144 --pass fwd,fwdbwd --reps 10 --warmup 2 -q \
    --out "$out/$gpu-dram-level.json"
fi

if [ "$what" = drift ] || [ "$what" = all ]; then
  r=(--method flash2 --mma mma.sync --batch 1 --heads 1 --reps 3 --warmup 1 -q)
  "$bin" run "${r[@]}" --head-dim 128 --pass fwd --block-r 128 --block-c 32,64 \
    --seqlen 65536,98304,131072,196608,262144 --out "$out/$gpu-dram-drift-fwd.json"
  "$bin" run "${r[@]}" --head-dim 128 --pass fwd --block-r 64 --block-c 64 --seqlen 65536,131072,196608,262144 \
    --out "$out/$gpu-dram-drift-fwd-64x64.json"
  "$bin" run "${r[@]}" --head-dim 64 --pass fwd --block-r 128 --block-c 64 --seqlen 131072,262144,393216,524288 \
    --out "$out/$gpu-dram-drift-fwd-d64.json"
  "$bin" run --method flash1 --pass bwd --batch 16 --heads 8 --head-dim 64 --seqlen 1536,2048,2560,3072 \
    --dropout 0,0.1 --reps 5 --warmup 2 -q --out "$out/$gpu-flash1-bwd-2048.json"
fi

if [ "$what" = oos ] || [ "$what" = all ]; then
  run_sweep dram-oos --reps 5 --warmup 2 <<'JSON'
{"description": "issue 19's out-of-sample DRAM set: shapes no committed experiment has, chosen after the model",
 "sweeps": [
  {"method": ["flash1", "flash2", "flash3"], "batch": 3, "heads": 12, "head_dim": 64, "seqlen": [3000, 12288],
   "causal": [false, true], "pass": ["fwd", "fwdbwd"]},
  {"method": ["flash2", "flash3"], "batch": 2, "heads": 20, "kv_heads": 4, "head_dim": 128,
   "seqlen": [2560, 10240, 40960], "causal": [false, true], "pass": ["fwd", "fwdbwd"]},
  {"method": ["flash2", "flash3"], "batch": 1, "heads": 6, "head_dim": 256, "seqlen": [5000, 20000],
   "causal": [false, true], "pass": ["fwd"]},
  {"method": ["flash2", "flash3"], "batch": 4, "heads": 16, "head_dim": 128, "seqlen": 1024, "seqlen_k": 16384,
   "pass": ["fwd", "fwdbwd"]}]}
JSON
fi

if [ "$what" = oos2 ] || [ "$what" = all ]; then
  run_sweep dram-oos2 --reps 5 --warmup 2 <<'JSON'
{"description": "issue 19's second out-of-sample DRAM set: read-modify-write streams, chosen after the writer's-copy rule",
 "sweeps": [
  {"method": "flash1", "batch": 2, "heads": 10, "head_dim": 64, "seqlen": 2600, "causal": [false, true], "pass": ["fwd", "fwdbwd"]},
  {"method": "flash1", "batch": 5, "heads": 7, "head_dim": 64, "seqlen": 3300, "causal": [false, true], "pass": ["fwd", "fwdbwd"]},
  {"method": "flash1", "batch": 2, "heads": 9, "head_dim": 64, "seqlen": 7000, "causal": [false, true], "pass": ["fwd", "fwdbwd"]},
  {"method": "flash1", "batch": 6, "heads": 5, "head_dim": 64, "seqlen": 5200, "causal": [false, true], "pass": ["fwd", "fwdbwd"]},
  {"method": "flash1", "batch": 3, "heads": 5, "head_dim": 128, "seqlen": 3300, "causal": [false, true], "pass": ["fwd", "fwdbwd"]},
  {"method": "flash2", "batch": 3, "heads": 10, "head_dim": 64, "seqlen": 3300, "causal": [false, true], "pass": "bwd",
   "deterministic": true}]}
JSON
fi

if [ "$what" = oos3 ] || [ "$what" = all ]; then
  run_sweep dram-oos3 --reps 5 --warmup 2 <<'JSON'
{"description": "issue 19's third out-of-sample set: flash1's forward where its O, l, m re-reads may hit L1, chosen after the L1 term",
 "sweeps": [
  {"method": "flash1", "batch": 1, "heads": 14, "head_dim": 32, "seqlen": 3500, "causal": [false, true], "pass": "fwd"},
  {"method": "flash1", "batch": 3, "heads": 4, "head_dim": 96, "seqlen": 2900, "causal": [false, true], "pass": "fwd"},
  {"method": "flash1", "batch": 2, "heads": 6, "head_dim": 128, "seqlen": 1800, "causal": [false, true], "pass": "fwd"},
  {"method": "flash1", "batch": 1, "heads": 9, "head_dim": 64, "seqlen": 6100, "causal": [false, true], "pass": "fwd"}]}
JSON
fi

if [ "$what" = oos5 ] || [ "$what" = all ]; then
  run_sweep dram-oos5 --reps 3 --warmup 1 <<'JSON'
{"description": "issue 19's fifth out-of-sample set: flash2's mma.sync 128 x 64 forward at d 128 on long passes of one to four heads, chosen after the measured issue order",
 "sweeps": [
  {"method": "flash2", "mma": "mma.sync", "block_r": 128, "block_c": 64, "head_dim": 128, "pass": "fwd", "batch": 1, "heads": 1,
   "seqlen": [163840, 229376]},
  {"method": "flash2", "mma": "mma.sync", "block_r": 128, "block_c": 64, "head_dim": 128, "pass": "fwd", "batch": 1, "heads": 2,
   "seqlen": 131072},
  {"method": "flash2", "mma": "mma.sync", "block_r": 128, "block_c": 64, "head_dim": 128, "pass": "fwd", "batch": 2, "heads": 1,
   "seqlen": 98304},
  {"method": "flash2", "mma": "mma.sync", "block_r": 128, "block_c": 64, "head_dim": 128, "pass": "fwd", "batch": 1, "heads": 4,
   "seqlen": 65536},
  {"method": "flash2", "mma": "mma.sync", "block_r": 128, "block_c": 64, "head_dim": 128, "pass": "fwd", "batch": 1, "heads": 1,
   "seqlen": 196608, "dtype": "bf16"},
  {"method": "flash2", "mma": "mma.sync", "block_r": 128, "block_c": 64, "head_dim": 128, "pass": "fwd", "batch": 1, "heads": 1,
   "seqlen": 262144, "causal": true}]}
JSON
fi

if [ "$what" = oos6 ] || [ "$what" = all ]; then
  run_sweep dram-oos6 --reps 3 --warmup 1 <<'JSON'
{"description": "issue 19's sixth out-of-sample set: flash2's mma.sync 128 x 64 forward at d 128 in bf16 on long passes of one to three heads, chosen before that instantiation's issue order was measured",
 "sweeps": [
  {"method": "flash2", "mma": "mma.sync", "block_r": 128, "block_c": 64, "head_dim": 128, "pass": "fwd", "dtype": "bf16",
   "batch": 1, "heads": 1, "seqlen": 262144},
  {"method": "flash2", "mma": "mma.sync", "block_r": 128, "block_c": 64, "head_dim": 128, "pass": "fwd", "dtype": "bf16",
   "batch": 1, "heads": 2, "seqlen": 163840},
  {"method": "flash2", "mma": "mma.sync", "block_r": 128, "block_c": 64, "head_dim": 128, "pass": "fwd", "dtype": "bf16",
   "batch": 2, "heads": 1, "seqlen": 131072},
  {"method": "flash2", "mma": "mma.sync", "block_r": 128, "block_c": 64, "head_dim": 128, "pass": "fwd", "dtype": "bf16",
   "batch": 1, "heads": 3, "seqlen": 98304}]}
JSON
fi

if [ "$what" = oos4 ] || [ "$what" = all ]; then
  run_sweep dram-oos4 --reps 5 --warmup 2 <<'JSON'
{"description": "issue 19's fourth out-of-sample set: dirty streams in the band, at the cap and past it, chosen after the soft dirty rule",
 "sweeps": [
  {"method": "flash1", "batch": 4, "heads": 6, "head_dim": 64, "seqlen": 3900, "causal": [false, true], "pass": ["fwd", "fwdbwd"]},
  {"method": "flash1", "batch": 2, "heads": 11, "head_dim": 64, "seqlen": 4800, "causal": [false, true], "pass": ["fwd", "fwdbwd"]},
  {"method": "flash1", "batch": 1, "heads": 7, "head_dim": 128, "seqlen": 7900, "causal": [false, true], "pass": ["fwd", "fwdbwd"]},
  {"method": "flash1", "batch": 2, "heads": 13, "head_dim": 128, "seqlen": 2600, "causal": [false, true], "pass": ["fwd", "fwdbwd"]},
  {"method": "flash2", "batch": 2, "heads": 8, "head_dim": 128, "seqlen": 3500, "causal": [false, true], "pass": "bwd",
   "deterministic": true}]}
JSON
fi

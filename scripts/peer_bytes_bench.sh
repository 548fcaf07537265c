#!/usr/bin/env bash
# Issue 17, part 4, on a GPU machine: the bytes each method moves per pass, at both levels, against
# the IO model, in FlashAttention-2's setting (fp16, batch·N = 16384 tokens, model dim 2048 so
# heads = 2048/d; d 64 and 128; N 1024 … 16384; not causal; forward and forward + backward):
#   1. flashio run: flash2 (its default kernels) and standard, --counters full;
#   2. scripts/peers_sdpa.py --counters full (under flashio profile): SDPA's flash, cuDNN and
#      efficient back-ends on the same points, one run id with step 1's file and its revision (the
#      device copy's git metadata is stale: --git-revision);
#   3. the same for SDPA's math back-end up to N 4096; its longer points are `skipped` records with
#      the reason (--max-seqlen): it materializes S and P, and N 8192/16384 would take much of the
#      run's time for no model to judge;
#   4. the same for FlexAttention (its own file: torch.compile compiles each problem's forward and
#      backward, the slowest step; PEER_BYTES_FLEX=0 leaves it out);
#   5. flashio analyze on the files (its verdicts and reasons) and scripts/peer_bytes_table.py (the
#      README's table: scripts/peer_bytes_table.py --readme README.md OUT/*-peer-bytes*.json).
# Repetitions are cut (--reps 10 --warmup 2): the table is about bytes, which the counter pass
# reads once per point; about 5 minutes of GPU time in all, most of it PyTorch's start-up and
# FlexAttention's compilations (each step's seconds are in OUT/summary.txt). Nothing is installed;
# the binaries come from the .gpu/ bundle (scripts/gpu_bundle.sh pack here, unpack there) or an
# existing build/.
#   scripts/peer_bytes_bench.sh OUT        (OUT: a new folder for the logs, JSON and tables)
# Exit status: 0 when every step ran (a verdict that does not hold is a result, not a failure);
# 1 otherwise (the output and OUT/summary.txt say which).
set -uo pipefail
out="${1:?usage: scripts/peer_bytes_bench.sh OUT}"
cd "$(dirname "$0")/.." || exit 1
. scripts/lib/gpu_checks.sh
bench_start peer_bytes_bench
bin="$build/flashio"
gpu=$("$bin" device --json | python3 -c 'import json,sys,re; print(re.sub("[^a-z0-9]+","-",json.load(sys.stdin)["name"].lower()).strip("-"))') ||
  { note "no GPU (flashio device failed)"; exit 1; }
axes=(--tokens 16384 --model-dim 2048 --seqlen 1024,2048,4096,8192,16384 --head-dim 64,128 --causal false
      --pass fwd,fwdbwd)
reps=(--reps 10 --warmup 2 -q)
own="$out/$gpu-peer-bytes.json" peers="$out/$gpu-peer-bytes-sdpa.json" math="$out/$gpu-peer-bytes-sdpa-math.json"
flex="$out/$gpu-peer-bytes-flex.json"
step() { note "$1: $(( SECONDS - t0 )) s"; t0=$SECONDS; }
t0=$SECONDS

# 1. flashio's own methods.
"$bin" run --method flash2,standard "${axes[@]}" --dry-run 2>&1 >/dev/null | tail -n 1
"$bin" run --method flash2,standard "${axes[@]}" "${reps[@]}" --counters full --out "$own" >"$out/run.txt" 2>&1 ||
  { note "flashio run failed ($out/run.txt)"; status=1; }
step "1. flashio run (flash2, standard)"
[ -f "$own" ] || { note "no $own: stopping"; exit 1; }
run_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$own")
rev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["build"]["git_revision"])' "$own")

# 2. The peers with counters, through flashio profile (peers_sdpa.py runs itself under it).
python3 scripts/peers_sdpa.py --flashio "$bin" "${axes[@]}" --backend flash,cudnn,efficient --counters full \
  "${reps[@]}" --run-id "$run_id" --git-revision "$rev" --out "$peers" >"$out/peers.txt" 2>&1 ||
  { note "peers_sdpa.py (flash, cudnn, efficient) failed ($out/peers.txt)"; status=1; }
step "2. peers_sdpa.py --counters full (flash, cudnn, efficient)"

# 3. SDPA's math back-end, up to N 4096.
python3 scripts/peers_sdpa.py --flashio "$bin" "${axes[@]}" --backend math --counters full "${reps[@]}" \
  --max-seqlen 4096 --max-seqlen-why "sdpa_math materializes S and P, N² elements per head: the bytes benchmark \
keeps to about 5 minutes of GPU time, and no model judges the math back-end" \
  --run-id "$run_id" --git-revision "$rev" --out "$math" >"$out/peers-math.txt" 2>&1 ||
  { note "peers_sdpa.py (math) failed ($out/peers-math.txt)"; status=1; }
step "3. peers_sdpa.py --counters full (math, N <= 4096)"

# 4. FlexAttention.
if [ "${PEER_BYTES_FLEX:-1}" != 0 ]; then
  python3 scripts/peers_sdpa.py --flashio "$bin" "${axes[@]}" --backend flex --counters full "${reps[@]}" \
    --run-id "$run_id" --git-revision "$rev" --out "$flex" >"$out/peers-flex.txt" 2>&1 ||
    { note "peers_sdpa.py (flex) failed ($out/peers-flex.txt)"; status=1; }
  step "4. peers_sdpa.py --counters full (flex)"
fi

# 5. The verdicts and the table.
files=()
for f in "$own" "$peers" "$math" "$flex"; do [ -f "$f" ] && files+=("$f"); done
"$bin" analyze "${files[@]}" >"$out/analyze.md" 2>&1
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 3 ] || { note "flashio analyze failed (exit $rc, $out/analyze.md)"; status=1; }
"$bin" analyze --json "${files[@]}" >"$out/analyze.json" 2>/dev/null
grep -E '^[0-9]+ verdicts' "$out/analyze.md" | while read -r line; do note "analyze: $line"; done
python3 scripts/peer_bytes_table.py --flashio "$bin" "${files[@]}" >"$out/table.md" ||
  { note "peer_bytes_table.py failed"; status=1; }
step "5. analyze and the table ($out/table.md)"
cat "$out/table.md"
if [ "$status" -eq 0 ]; then
  note "all steps ran: README.md's table is scripts/peer_bytes_table.py --readme README.md ${files[*]}"
else
  note "something failed: see above and $out/"
fi
exit "$status"

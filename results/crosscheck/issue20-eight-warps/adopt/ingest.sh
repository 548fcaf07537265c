#!/usr/bin/env bash
# After tests.sh and with-bwd.sh ran on a GPU (the build of branch adopt-bwd-decode, merged): the files they returned
# into results/ under the committed names, their logs beside the adoption scripts; then, once both GPUs are in, the
# pages made from results/.
#   ingest.sh files GPU DIR   GPU h100|h200; DIR the two calls' files (gpu-tests-*.txt, sanitize-decode.txt, b/, d/,
#                             o/ as the device tool returned them). Puts in results/: nvidia-GPU-flash3-bwd(-sdpa).json,
#                             -dram-oos.json, -decode(-sdpa).json, -llama3-8b-decode-varlen(-sdpa).json, on the H100
#                             -llama3-8b-decode.json and -llama3-70b-decode.json, on the H200 -dram-oos6.json; the
#                             logs into issue16-bwd-overlap/adopt/GPU-REV/ and issue20-eight-warps/adopt/GPU-REV/
#                             (JSON other than results xz'd). Prints each step's line of the calls' gpu.txt.
#   ingest.sh pages           README's flash3 table, the flash3 NOTES' tables (scripts/generated_blocks.py),
#                             docs/results.md, results/analyze-report.md (build/flashio of the merged tree), and the
#                             DRAM counts of docs/io-model.md (printed, to copy by hand).
# What stays by hand: the NOTES' figures in prose, the analyze pins of tests/test_analysis.cpp (the analysis tests
# name every pinned ratio that moved), results/README.md's revisions.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
here=results/crosscheck/issue20-eight-warps/adopt
case "${1:-}" in
files)
  gpu=$2 dir=$3
  t=$(mktemp -d)
  tar -C "$t" -xJf "$dir/b/r.tar.xz"
  tar -C "$t" -xJf "$dir/d/d.tar.xz"
  [ -f "$dir/o/o.tar.xz" ] && tar -C "$t" -xJf "$dir/o/o.tar.xz"
  rev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["build"]["git_revision"][:7])' "$t/d/decode/decode.json")
  slug=$(basename "$(ls "$t"/r/*-flash3-bwd.json)" -flash3-bwd.json)  # the device's name, as reproduce_results.sh writes it
  put() { [ -f "$1" ] || { echo "ingest: $1 missing" >&2; exit 1; }; cp "$1" "results/nvidia-$gpu-$2.json"; echo "results/nvidia-$gpu-$2.json"; }
  put "$t/r/$slug-flash3-bwd.json" flash3-bwd
  put "$t/r/$slug-flash3-bwd-sdpa.json" flash3-bwd-sdpa
  put "$t/r/$slug-dram-oos.json" dram-oos
  put "$t/d/decode/decode.json" decode
  put "$t/d/decode/decode-sdpa.json" decode-sdpa
  put "$t/d/llama3-8b-decode-varlen.json" llama3-8b-decode-varlen
  put "$t/d/llama3-8b-decode-varlen-sdpa.json" llama3-8b-decode-varlen-sdpa
  if [ "$gpu" = h100 ]; then
    put "$t/d/llama3-8b-decode.json" llama3-8b-decode
    put "$t/d/llama3-70b-decode.json" llama3-70b-decode
  else
    put "$t/o/$slug-dram-oos6.json" dram-oos6
  fi
  bwd=results/crosscheck/issue16-bwd-overlap/adopt/$gpu-$rev dec=$here/$gpu-$rev
  mkdir -p "$bwd" "$dec"
  cp "$t"/r/*.txt "$t"/r/*.log "$bwd/"
  cp "$dir/b/gpu.txt" "$bwd/gpu.txt"
  xz -c "$t/r/correctness.json" > "$bwd/correctness.json.xz"
  cp "$t"/d/*.txt "$dec/"
  cp "$dir/d/gpu.txt" "$dec/gpu.txt"
  cp -r "$t/d/decode" "$dec/decode-bench"
  rm -f "$dec"/decode-bench/decode*.json  # the results/ files
  for f in "$t"/d/correctness*.json; do xz -c "$f" > "$dec/$(basename "$f").xz"; done
  cp "$dir"/gpu-tests-*.txt "$dir/sanitize-decode.txt" "$dec/" 2>/dev/null || echo "ingest: no tests.sh files in $dir"
  [ -f "$t/o/oos6.txt" ] && cp "$t/o/oos6.txt" "$dec/"
  echo "== $bwd/gpu.txt"; cat "$bwd/gpu.txt"
  echo "== $dec/gpu.txt"; cat "$dec/gpu.txt"
  rm -rf "$t" ;;
pages)
  [ -x build/flashio ] || { echo "ingest: build/flashio missing (build the merged tree)" >&2; exit 1; }
  python3 scripts/flash3_table.py --readme README.md results/nvidia-h100 results/nvidia-h200
  python3 scripts/generated_blocks.py kernels/flash3/NOTES.md
  bash scripts/results_md.sh build/flashio docs/results.md
  { head -1 results/analyze-report.md; build/flashio analyze results/*.json; } > /tmp/analyze-report.md || true
  mv /tmp/analyze-report.md results/analyze-report.md
  /usr/bin/python3 scripts/dram_distribution.py --flashio build/flashio --misses results/*.json ;;
*)
  sed -n 2,15p "$0"; exit 2 ;;
esac

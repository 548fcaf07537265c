#!/usr/bin/env bash
# Writes docs/results.md from the committed result files, so that no figure in the docs is typed
# by hand: `flashio report` of each GPU's FlashAttention-2 setting with the PyTorch SDPA peers,
# and `flashio compare` of the H100 with the H200. The CTest results_md_is_current fails when the
# page differs from what this script makes of results/.
# Usage: scripts/results_md.sh [FLASHIO [OUT]]   (default: build/flashio, docs/results.md)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/flashio}"
out="${2:-docs/results.md}"
tmp="$out.tmp"
trap 'rm -f "$tmp"' EXIT

describe() {  # one line per file: its GPU, revision, date and command line
  python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    rev = (d.get("build") or {}).get("git_revision", "?")[:7]
    print(f"- [`{path}`](../{path}): {d['device'].get('name', '?')}, revision {rev}, {d.get('created', '?')}, "
          f"{len(d['records'])} records; `{d.get('command_line', '')}`")
PY
}

{
  echo "# Current results (generated)"
  echo
  echo "Written by \`scripts/results_md.sh\` from the files in \`results/\` (\`results/README.md\` lists"
  echo "them all); regenerate it after a file changes. The tables are \`flashio report\` and \`flashio"
  echo "compare\` output; \`flashio export\` gives the same records as CSV. Older runs and what they"
  echo "showed: [results-log.md](results-log.md)."
  for gpu in nvidia-h100 nvidia-h200; do
    echo
    echo "## $gpu: FlashAttention-2's setting, with PyTorch SDPA's back-ends"
    echo
    describe "results/$gpu-fa2.json" "results/$gpu-fa2-sdpa.json"
    echo
    "$bin" report "results/$gpu-fa2.json" "results/$gpu-fa2-sdpa.json"
  done
  echo
  echo "## nvidia-h100: FlashAttention-3's comparison (flash3, flash2, SDPA's cuDNN and flash back-ends)"
  echo
  describe results/nvidia-h100-flash3.json results/nvidia-h100-flash3-sdpa.json
  echo
  "$bin" report results/nvidia-h100-flash3.json results/nvidia-h100-flash3-sdpa.json
  for gpu in nvidia-h100 nvidia-h200; do
    [ -f "results/$gpu-decode.json" ] || continue
    echo
    echo "## $gpu: decode against a long K/V cache (flash_decode, flash2, SDPA's back-ends)"
    echo
    peers=()
    [ -f "results/$gpu-decode-sdpa.json" ] && peers=("results/$gpu-decode-sdpa.json")
    describe "results/$gpu-decode.json" "${peers[@]}"
    echo
    "$bin" report "results/$gpu-decode.json" "${peers[@]}"
  done
  if [ -f results/nvidia-h100-blocksparse-fig2-flex.json ]; then
    echo
    echo "## nvidia-h100: block-sparse FlashAttention against FlexAttention on the same blocks (Figure 2 right)"
    echo
    describe results/nvidia-h100-blocksparse-fig2.json results/nvidia-h100-blocksparse-fig2-flex.json
    echo
    "$bin" report results/nvidia-h100-blocksparse-fig2.json results/nvidia-h100-blocksparse-fig2-flex.json
  fi
  echo
  echo "## The H100 against the H200"
  echo
  "$bin" compare results/nvidia-h100-fa2.json results/nvidia-h200-fa2.json
} > "$tmp"
mv "$tmp" "$out"
trap - EXIT

#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, Debian's clang) of the result, journal and sweep readers and
# of the CLI, each for FLASHIO_FUZZ_SECONDS (default 60; CI), under ASan and UBSan. A crash, a
# sanitizer report, a leak, a timeout (> 10 s on one input) or an exit code outside 0-3 fails;
# the input that caused it is kept in ${dir}/findings/ (make it a case of tests/hostile/hostile.py).
# Longer, on demand: FLASHIO_FUZZ_SECONDS=3600 scripts/fuzz.sh [target ...]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir="${FLASHIO_BUILD_DIR:-build}-fuzz"
seconds="${FLASHIO_FUZZ_SECONDS:-60}"
targets=("$@")
((${#targets[@]})) || targets=(result_reader journal_reader sweep_reader cli)
scripts/sanitizer_build.sh "${targets[@]/#/fuzz_}"
mkdir -p "$dir/findings" "$dir/scratch"
status=0
for t in "${targets[@]}"; do
  corpus="$dir/corpus/$t"
  mkdir -p "$corpus"
  seeds="$root/tests/fuzz/corpus/$t"
  echo "== fuzz $t for ${seconds}s"
  # The CLI target writes only inside its working folder: a scratch folder, emptied each time.
  rm -rf "$dir/scratch/$t" && mkdir -p "$dir/scratch/$t"
  if ! (cd "$dir/scratch/$t" && "$root/$dir/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
          -max_len=65536 -artifact_prefix="$root/$dir/findings/$t-" "$root/$corpus" "$seeds" 2>&1 | tail -5); then
    status=1
  fi
done
if ls "$dir"/findings/* >/dev/null 2>&1; then
  echo "fuzz: findings in $dir/findings:"; ls "$dir"/findings; status=1
fi
[ $status -eq 0 ] && echo "fuzz: nothing found" || echo "fuzz: FAILED"
exit $status

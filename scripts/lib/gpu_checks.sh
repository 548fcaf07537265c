# Sourced by the GPU benchmark scripts (decode_bench.sh, varlen_bench.sh): their start and their
# first two steps.
#   bench_start NAME                 build= (FLASHIO_BUILD_DIR, else build; the .gpu/ bundle
# unpacked when the binaries are missing), "$out" made, status=0, and `note LINE`, which prints
# "NAME: LINE" and adds it to "$out"/summary.txt.
bench_start() {
  bench_name=$1
  build="${FLASHIO_BUILD_DIR:-build}"
  if [ ! -x "$build/flashio" ] || [ ! -x "$build/tests/flashio_gpu_tests" ]; then scripts/gpu_bundle.sh unpack; fi
  mkdir -p "$out"
  status=0
}
note() { echo "$bench_name: $*" | tee -a "$out/summary.txt"; }

#   gpu_tests_and_memcheck FILTER    runs "$build/tests/flashio_gpu_tests" on the tests FILTER
# selects, then the same under compute-sanitizer memcheck, logs in "$out"/gpu_tests.txt and
# memcheck.txt, a line for each through `note`, status=1 when either fails. FLASHIO_SKIP_GPU_TESTS=1: neither
# runs (a line says so) — for a call whose tests ran in a call of their own, with the test binary's bundle.
gpu_tests_and_memcheck() {
  local filter=$1 rc sanitizer
  if [ "${FLASHIO_SKIP_GPU_TESTS:-0}" = 1 ]; then
    note "GPU tests and memcheck ($filter): not run here (FLASHIO_SKIP_GPU_TESTS=1)"
    return
  fi
  "$build/tests/flashio_gpu_tests" --gtest_filter="$filter" >"$out/gpu_tests.txt" 2>&1
  rc=$?
  tail -n 3 "$out/gpu_tests.txt"
  [ $rc -eq 0 ] && note "GPU tests: passed" || { note "GPU tests: FAILED (rc $rc, $out/gpu_tests.txt)"; status=1; }
  sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  if [ -x "$sanitizer" ]; then
    "$sanitizer" --tool memcheck --error-exitcode 99 --print-limit 20 "$build/tests/flashio_gpu_tests" \
      --gtest_filter="$filter" >"$out/memcheck.txt" 2>&1
    rc=$?
    tail -n 3 "$out/memcheck.txt"
    [ $rc -eq 0 ] && note "memcheck: no errors" || { note "memcheck: FAILED (rc $rc, $out/memcheck.txt)"; status=1; }
  else
    note "memcheck: compute-sanitizer not found: NOT RUN"; status=1
  fi
}

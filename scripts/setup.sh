#!/usr/bin/env bash
# Installs what flashio needs to build, if it is missing, on Debian/Ubuntu: a C++17
# compiler, CMake >= 3.24 (checked: an older one is an error that says how to get a newer one),
# Ninja, nlohmann/json, CLI11, fmt, GoogleTest, Google Benchmark and valijson (the JSON Schema
# validator flashio checks its input files with). With --test (scripts/test.sh) also what only
# the tests need: Google Benchmark's tools (compare.py) with scipy, Chromium (headless: the HTML
# report's test), and Clang with its sanitizer and libFuzzer runtimes (the hostile-input suite
# and the fuzzers).
# The CUDA Toolkit (nvcc, cuBLAS, CUPTI) must already be installed: this script only
# checks for it. Safe to run again: installs nothing when everything is there.
#   scripts/setup.sh [--test]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(git cmake ninja-build g++ nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libbenchmark-dev python3)
if [ "${1:-}" = --test ]; then
  packages+=(libbenchmark-tools python3-scipy  # Google Benchmark's compare.py on flashio export
             chromium                          # headless, for tests/test_html_report.py
             clang libclang-rt-dev)            # scripts/fuzz.sh, scripts/hostile.sh
fi
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# CMake >= 3.24 (CMakeLists.txt's cmake_minimum_required): older distributions ship an older one.
cmake_version=$(cmake --version | head -1 | awk '{print $3}')
if ! printf '3.24\n%s\n' "$cmake_version" | sort -V -C; then
  echo "setup: CMake $cmake_version is older than 3.24; install a newer one, e.g. 'pip install \"cmake>=3.24\"'" \
       "(then put its bin/ first on PATH) or from Kitware's APT repository for Ubuntu" >&2
  exit 1
fi

# valijson is header-only, but Debian's libvalijson-dev depends on every library it has an adapter
# for (Qt, Poco, jsoncpp, ...: 96 packages on Debian 12). Where it is not installed, its package
# is unpacked into build-deps/valijson (ignored by git; CMake looks there), nothing else.
if [ ! -f /usr/include/valijson/validator.hpp ] && [ ! -f build-deps/valijson/usr/include/valijson/validator.hpp ]; then
  echo "setup: unpacking libvalijson-dev into build-deps/valijson"
  mkdir -p build-deps/valijson
  (cd build-deps && apt-get download libvalijson-dev >/dev/null 2>&1 && dpkg -x libvalijson-dev_*.deb valijson && rm -f libvalijson-dev_*.deb) || {
    echo "setup: could not fetch libvalijson-dev; install it (apt-get install libvalijson-dev)" >&2
    exit 1
  }
fi

nvcc="${CUDACXX:-}"
[ -n "$nvcc" ] || nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; }
if [ -z "$nvcc" ]; then
  echo "setup: the CUDA Toolkit (nvcc) was not found; install it, or set CUDACXX to nvcc's path" >&2
  exit 1
fi
echo "setup: ok ($("$nvcc" --version | tail -1))"

#!/usr/bin/env python3
"""Checks that #include lines run only downwards through flashio's layers (DESIGN.md, Layers).

    scripts/check_includes.py [ROOT]     check the tree at ROOT (default: the repository)
    scripts/check_includes.py --self-test

Layers, bottom to top; a file may include files of its own layer or a lower one:
  1    bench/core/        the vocabulary, plain C++
  1.5  bench/cuda/        the vocabulary's CUDA half (error check, device memory, GPU query)
  2    kernels/common/, baselines/common/      steps the methods share
  2.5  kernels/<method>/, baselines/<method>/  the methods; kernels/ and baselines/ never
                                              include each other
  3    analysis/          reads records; never CUDA
  4    bench/sweep/       the program: sweeps, presets, journal, tables
  5    bench/measure/, bench/registry/         measuring a point; the method list
  6    bench/cli/, bench/gbench/               the front ends
tests/ and scripts/ sit on top and are not checked. Besides the order, the plain layers
(bench/core, analysis, bench/sweep) must reach no CUDA header, even through other files, so
that they build without CUDA (FLASHIO_CUDA=OFF). Prints one line per violation; exit 1 if any.
"""
import os
import re
import sys
import tempfile

SOURCES = (".h", ".hpp", ".cpp", ".cu", ".cuh", ".in")
LAYERS = [  # longest prefix first
    ("bench/core/", 1.0), ("bench/cuda/", 1.5),
    ("kernels/common/", 2.0), ("baselines/common/", 2.0),
    ("kernels/", 2.5), ("baselines/", 2.5),
    ("analysis/", 3.0),
    ("bench/sweep/", 4.0),
    ("bench/measure/", 5.0), ("bench/registry/", 5.0),
    ("bench/cli/", 6.0), ("bench/gbench/", 6.0),
]
PLAIN = ("bench/core/", "analysis/", "bench/sweep/")
CUDA_SYSTEM = re.compile(r"^(cuda|cublas|cupti|nvtx|cooperative_groups|mma\.h|cuda_)")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(path):
    for prefix, layer in LAYERS:
        if path.startswith(prefix):
            return prefix, layer
    return None, None


def family(path):
    return "kernels" if path.startswith("kernels/") else "baselines" if path.startswith("baselines/") else None


def scan(root):
    """{relative path: [(kind, target, line number)]} for every source under the layer folders."""
    out = {}
    for top in ("bench", "kernels", "baselines", "analysis"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith(SOURCES):
                    continue
                full = os.path.join(d, f)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                incs = []
                with open(full, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if m:
                            incs.append((m.group(1), m.group(2), n))
                out[rel] = incs
    return out


def check(root):
    files = scan(root)
    problems = []
    for path, incs in sorted(files.items()):
        _, mine = layer_of(path)
        if mine is None:
            continue
        for kind, target, n in incs:
            if kind != '"':
                continue
            _, theirs = layer_of(target)
            if theirs is None:
                continue
            if theirs > mine:
                problems.append(f"{path}:{n}: includes {target}, a higher layer ({theirs} > {mine})")
            elif family(path) and family(target) and family(path) != family(target):
                problems.append(f"{path}:{n}: includes {target}: kernels/ and baselines/ do not include each other")

    # The plain layers reach no CUDA header, directly or through the files they include.
    def cuda_path(path, seen):
        if path in seen or path not in files:
            return None
        seen.add(path)
        if path.endswith((".cu", ".cuh")):
            return [path]
        for kind, target, _ in files[path]:
            if kind == "<" and CUDA_SYSTEM.match(target):
                return [path, f"<{target}>"]
            if kind == '"':
                sub = cuda_path(target, seen)
                if sub:
                    return [path] + sub
        return None

    for path in sorted(files):
        if path.startswith(PLAIN):
            chain = cuda_path(path, set())
            if chain:
                problems.append(f"{path}: plain C++ reaches CUDA: {' -> '.join(chain)}")
    return problems


def self_test():
    cases = {
        "upward": ({"bench/core/a.h": '#include "bench/sweep/b.h"\n', "bench/sweep/b.h": ""}, 1),
        "sideways": ({"kernels/x/a.h": '#include "baselines/y/b.h"\n', "baselines/y/b.h": ""}, 1),
        "cuda through a header": ({"analysis/a.cpp": '#include "kernels/x/k.h"\n',
                                   "kernels/x/k.h": "#include <cuda_runtime.h>\n"}, 1),
        "downward is fine": ({"bench/cli/a.cpp": '#include "analysis/b.h"\n#include "bench/core/c.h"\n',
                              "analysis/b.h": '#include "kernels/flash2/cfg.h"\n', "kernels/flash2/cfg.h": "",
                              "bench/core/c.h": ""}, 0),
    }
    failed = 0
    for name, (tree, want) in cases.items():
        with tempfile.TemporaryDirectory() as root:
            for rel, text in tree.items():
                os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
                with open(os.path.join(root, rel), "w") as fh:
                    fh.write(text)
            got = len(check(root))
        if got != want:
            print(f"self-test '{name}': {got} problems, expected {want}")
            failed += 1
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv):
    if argv[1:2] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = check(root)
    for p in problems:
        print(p)
    n = len(scan(root))
    print(f"check_includes: {n} files, {len(problems)} includes against the layers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

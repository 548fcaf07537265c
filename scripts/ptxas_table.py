#!/usr/bin/env python3
"""Registers and spills of every compiled forward kernel, per family, from ptxas.

There is no cuobjdump on the development machine, so each family's forward kernels are
instantiated in a stand-alone TU (the configuration lists of the build: *_configs.h, every
causal/dropout variant the launch code takes), compiled with the build's device flags
(CMakeLists.txt FLASHIO_CUDA_FLAGS, -O3, C++17) to a cubin with `-Xptxas -v`, and ptxas's
report is parsed into one row per kernel. Compile one family at a time (a family TU takes
minutes on two cores).

  scripts/ptxas_table.py [--family flash2|blocksparse|wgmma|flash1]... [--dtype fp16|bf16]...
                         [-o rows.tsv] [--compare before.tsv] [--markdown]

  -o FILE          write the rows (tab-separated: family dtype d tile variant regs spill_st
                   spill_ld) to FILE
  --compare FILE   print before/after for every kernel of FILE found again, mark worse ones
                   (more registers, or more spill stores or loads), and a summary; exit 1 if
                   any is worse
  --markdown       print the rows (or the comparison) as a markdown table
  --head-dim D     only head dim D (repeatable; while iterating)
  --sass FILE      also write, per kernel, a hash of its SASS (the cubin's .text.<kernel>
                   section) to FILE; two trees with equal hashes run the same machine code
  --ptx-ops DIR    also write, per kernel, the sequence of floating-point PTX instructions
                   (mma, ex2, fma, max, min, mul, add, sub, rcp, div, lg2, cvt/pack, selp on
                   floats) with operands stripped to DIR/<kernel>.ops, for comparing two trees
"""
import argparse
import hashlib
import os
import struct
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = ["-O3", "--use_fast_math", "-lineinfo", "--expt-relaxed-constexpr", "-std=c++17"]
DTYPES = {"fp16": "half", "bf16": "__nv_bfloat16"}
FAMILY_NAMES = {
    "flash2": "flash2 mma.sync",
    "blocksparse": "blocksparse (flash2 kSparse)",
    "wgmma": "flash2 wgmma",
    "flash1": "flash1 fwd",
}

# Each family: the header, the arch, and C++ that takes the address of every kernel the launch
# code can pick for element type T (forcing its instantiation), expanded from the build's lists.
TU = {
    "flash2": ("sm_90", """
#include "kernels/flash2/flash2_fwd_kernel.cuh"
namespace flashio::kernels {
template <typename T, int D, bool kSparse, size_t... I>
void take(std::index_sequence<I...>) {
  auto one = [](auto index) {
    constexpr TileShape s = Flash2FwdConfigs<D>::list[decltype(index)::value];
    using Tr = Flash2FwdTraits<T, D, s.block_r, s.block_c, s.warps, s.stages>;
    volatile void* k[] = {(void*)flash2_fwd_kernel<Tr, false, false, kSparse>, (void*)flash2_fwd_kernel<Tr, false, true, kSparse>,
                          (void*)flash2_fwd_kernel<Tr, true, false, kSparse>, (void*)flash2_fwd_kernel<Tr, true, true, kSparse>};
    (void)k;
  };
  (one(std::integral_constant<size_t, I>{}), ...);
}
#define TAKE(D) take<ELEMENT, D, false>(std::make_index_sequence<flash2_fwd_config_count<D>()>{});
void take_all() { FLASH2_HEAD_DIMS(TAKE) }
}
"""),
    "blocksparse": ("sm_90", """
#include "kernels/flash2/flash2_fwd_kernel.cuh"
#include "kernels/blocksparse/blocksparse_configs.h"
namespace flashio::kernels {
template <typename T, int D>
void take() {  // run_flash2_fwd<T, D, true>: the first tile of the list only
  constexpr TileShape s = Flash2FwdConfigs<D>::list[0];
  using Tr = Flash2FwdTraits<T, D, s.block_r, s.block_c, s.warps, s.stages>;
  volatile void* k[] = {(void*)flash2_fwd_kernel<Tr, false, false, true>, (void*)flash2_fwd_kernel<Tr, false, true, true>,
                        (void*)flash2_fwd_kernel<Tr, true, false, true>, (void*)flash2_fwd_kernel<Tr, true, true, true>};
  (void)k;
}
#define TAKE(D) take<ELEMENT, D>();
void take_all() { BLOCKSPARSE_HEAD_DIMS(TAKE) }
}
"""),
    "wgmma": ("sm_90a", """
#include "kernels/flash2/hopper/flash2_fwd_wgmma.cuh"
#include "kernels/flash2/hopper/flash2_fwd_wgmma_configs.h"
namespace flashio::kernels {
template <typename T, int D, size_t... I>
void take(std::index_sequence<I...>) {
  auto one = [](auto index) {
    constexpr TileShape s = Flash2FwdWgmmaConfigs<D>::list[decltype(index)::value];
    using Tr = Flash2FwdWgmmaTraits<T, D, s.block_r, s.block_c>;
    volatile void* k[] = {(void*)flash2_fwd_wgmma_kernel<Tr, false, false>, (void*)flash2_fwd_wgmma_kernel<Tr, true, false>};
    (void)k;
    if constexpr (flash2_wgmma_has_dropout(s)) {
      volatile void* kd[] = {(void*)flash2_fwd_wgmma_kernel<Tr, false, true>, (void*)flash2_fwd_wgmma_kernel<Tr, true, true>};
      (void)kd;
    }
  };
  (one(std::integral_constant<size_t, I>{}), ...);
}
#define TAKE(D) take<ELEMENT, D>(std::make_index_sequence<sizeof(Flash2FwdWgmmaConfigs<D>::list) / sizeof(TileShape)>{});
void take_all() { FLASH2_WGMMA_HEAD_DIMS(TAKE) }
}
"""),
    "flash1": ("sm_90", """
#include "kernels/flash1/flash1_kernels.cuh"
namespace flashio::kernels {
template <typename T, int D, size_t... I>
void take(std::index_sequence<I...>) {
  auto one = [](auto index) {
    constexpr TileShape s = Flash1FwdConfigs<D>::list[decltype(index)::value];
    using Tr = Flash2FwdTraits<T, D, s.block_r, s.block_c, s.warps, s.stages>;
    volatile void* k[] = {(void*)flash1_fwd_kernel<Tr, false, false>, (void*)flash1_fwd_kernel<Tr, false, true>,
                          (void*)flash1_fwd_kernel<Tr, true, false>, (void*)flash1_fwd_kernel<Tr, true, true>};
    (void)k;
  };
  (one(std::integral_constant<size_t, I>{}), ...);
}
#define TAKE(D) take<ELEMENT, D>(std::make_index_sequence<flash1_fwd_config_count<D>()>{});
void take_all() { FLASH1_HEAD_DIMS(TAKE) }
}
"""),
}

NAME_RE = re.compile(
    r"(flash2_fwd_kernel|flash1_fwd_kernel|flash2_fwd_wgmma_kernel)<flashio::kernels::Flash2Fwd(?:Wgmma)?Traits<"
    r"([^,]+), (\d+), (\d+), (\d+)(?:, \d+, \d+)?>, (true|false), (true|false)(?:, (true|false))?(?:, false)?>")


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def variant(causal, dropout):
    parts = [w for w, on in (("causal", causal), ("dropout", dropout)) if on]
    return ", ".join(parts) if parts else "—"


def text_hashes(cubin):
    """sha256 of every .text.<kernel> section of an ELF64 cubin, by kernel (mangled) name."""
    with open(cubin, "rb") as f:
        elf = f.read()
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_off = sections[shstrndx][4]
    out = {}
    for sh in sections:
        name = elf[names_off + sh[0]:elf.index(b"\0", names_off + sh[0])].decode()
        if name.startswith(".text."):
            out[name[len(".text."):]] = hashlib.sha256(elf[sh[4]:sh[4] + sh[5]]).hexdigest()[:16]
    return out


SASS = {}


def compile_family(family, dtype, ptx_dir=None, head_dims=None):
    arch, body = TU[family]
    if head_dims:  # while iterating: these head dims of the family's list only
        body = re.sub(r"void take_all\(\) \{ \w+\(TAKE\) \}",
                      "void take_all() { %s }" % " ".join("TAKE(%d)" % d for d in head_dims), body)
    src = '#include <utility>\n#define ELEMENT %s\n%s' % (DTYPES[dtype], body)
    with tempfile.TemporaryDirectory() as tmp:
        cu = os.path.join(tmp, "%s_%s.cu" % (family, dtype))
        with open(cu, "w") as f:
            f.write(src)
        cmd = ["nvcc", *FLAGS, "-arch=" + arch, "-I", ROOT, "-cubin", "-Xptxas", "-v", "-o",
               os.path.join(tmp, "out.cubin"), cu]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            raise SystemExit("nvcc failed for %s %s" % (family, dtype))
        hashes = text_hashes(os.path.join(tmp, "out.cubin"))
        if ptx_dir:
            ptx = os.path.join(tmp, "out.ptx")
            subprocess.run(["nvcc", *FLAGS, "-arch=" + arch, "-I", ROOT, "-ptx", "-o", ptx, cu], check=True)
            write_ptx_ops(ptx, ptx_dir, family, dtype)
    rows = []
    entry, mangled = None, []
    stats = {}
    for line in r.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            entry = m.group(1)
            mangled.append(entry)
            stats[entry] = [None, 0, 0]
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and entry:
            stats[entry][1], stats[entry][2] = int(m.group(1)), int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m and entry:
            stats[entry][0] = int(m.group(1))
    for name, dem in zip(mangled, demangle(mangled)):
        m = NAME_RE.search(dem)
        if not m:
            continue
        d, br, bc = m.group(3), m.group(4), m.group(5)
        causal, dropout = m.group(6) == "true", m.group(7) == "true"
        regs, st, ld = stats[name]
        row = (FAMILY_NAMES[family], dtype, int(d), "%s×%s" % (br, bc), variant(causal, dropout), regs, st, ld)
        rows.append(row)
        SASS[key(row)] = hashes.get(name, "-")
    return rows


FP_OPS = re.compile(r"^\s*(?:@%p\d+\s+)?((?:mma|wgmma|ex2|fma|max|min|mul|add|sub|rcp|div|lg2|cvt|selp|neg)\.[\w.]*)")


def write_ptx_ops(ptx, out_dir, family, dtype):
    """Floating-point instruction sequence per .entry, operands stripped."""
    os.makedirs(out_dir, exist_ok=True)
    name, ops = None, []
    with open(ptx) as f:
        for line in f:
            m = re.match(r"\.visible \.entry (\w+)\(", line) or re.match(r"\.entry (\w+)\(", line)
            if m:
                if name:
                    _dump(out_dir, name, ops)
                name, ops = m.group(1), []
                continue
            m = FP_OPS.match(line)
            if m and name and (".f" in m.group(1) or "mma" in m.group(1) or ".bf16" in m.group(1)):
                ops.append(m.group(1))
    if name:
        _dump(out_dir, name, ops)


def _dump(out_dir, name, ops):
    with open(os.path.join(out_dir, name[:200] + ".ops"), "w") as f:
        f.write("\n".join(ops) + "\n")


def key(row):
    return tuple(str(x) for x in row[:5])


def read_rows(path):
    rows = {}
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) == 8:
                rows[tuple(p[:5])] = tuple(int(x) for x in p[5:])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", action="append", choices=list(TU))
    ap.add_argument("--dtype", action="append", choices=list(DTYPES))
    ap.add_argument("-o", "--output")
    ap.add_argument("--compare")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--ptx-ops")
    ap.add_argument("--sass")
    ap.add_argument("--head-dim", type=int, action="append", help="only these head dims (while iterating)")
    a = ap.parse_args()
    rows = []
    for fam in a.family or list(TU):
        for dt in a.dtype or list(DTYPES):
            rows += compile_family(fam, dt, a.ptx_ops, a.head_dim)
    rows.sort(key=lambda r: (list(FAMILY_NAMES.values()).index(r[0]), r[1] == "bf16", r[2], r[3], r[4]))
    if a.sass:
        with open(a.sass, "w") as f:
            for r in rows:
                f.write("\t".join(key(r)) + "\t" + SASS[key(r)] + "\n")
    if a.output:
        with open(a.output, "w") as f:
            for r in rows:
                f.write("\t".join(str(x) for x in r) + "\n")
    if not a.compare:
        for r in rows:
            if a.markdown:
                print("| %s | %s | %d | %s | %s | %d, %d/%d |" % r)
            else:
                print("\t".join(str(x) for x in r))
        return 0
    before = read_rows(a.compare)
    better = equal = worse = 0
    for r in rows:
        b = before.get(key(r))
        now = tuple(r[5:])
        if b is None:
            status = "new"
        elif now[0] > b[0] or now[1] > b[1] or now[2] > b[2]:
            status, worse = "**worse**", worse + 1
        elif now == b:
            status, equal = "", equal + 1
        else:
            status, better = "better", better + 1
        bs = "%d, %d/%d" % b if b else "—"
        ns = "%d, %d/%d" % now
        if a.markdown:
            print("| %s | %s | %d | %s | %s | %s | %s %s |" % (*r[:5], bs, ns, status))
        else:
            print("\t".join(str(x) for x in r[:5]) + "\t" + bs + "\t" + ns + "\t" + status)
    print("kernels: %d better, %d equal, %d worse" % (better, equal, worse), file=sys.stderr)
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())

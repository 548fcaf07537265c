#!/usr/bin/env python3
"""The code bytes of each kernel in cubins: one line per .text.<kernel> section of an ELF64 cubin,
`file kernel bytes sha256-prefix`. Two builds of a kernel with equal lines have the same SASS,
byte for byte; this needs no disassembler (the build machine has nvcc and ptxas, no cuobjdump).

Make the cubins with the build's own flags plus -cubin, e.g. for flash_decode's instantiations:

  for f in build/generated/kernels/flash_decode_*.cu; do
    nvcc -I. -DFMT_HEADER_ONLY=1 -O3 -DNDEBUG --generate-code=arch=compute_90,code=sm_90 \\
      --use_fast_math -lineinfo --expt-relaxed-constexpr -std=c++17 -x cu -cubin "$f" \\
      -o /tmp/before/$(basename "$f" .cu).cubin
  done
  scripts/cubin_text_hashes.py /tmp/before/*.cubin > before.txt   # then the same after a change

A renamed template (a new template argument) changes the section's name, not its bytes: compare
the hashes of the instantiations that correspond.
"""
import hashlib
import struct
import sys


def text_sections(path: str):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit(f"{path}: not an ELF64 file (a cubin?)")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = sections[shstrndx][4]
    for name, _type, _flags, _addr, offset, size in sections:
        end = data.index(b"\0", names_at + name)
        section = data[names_at + name:end].decode()
        if section.startswith(".text."):
            yield section[len(".text."):], size, hashlib.sha256(data[offset:offset + size]).hexdigest()[:16]


def main(argv) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for path in argv:
        for kernel, size, digest in text_sections(path):
            print(path.split("/")[-1], kernel, size, digest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""A program whose kernels' DRAM writes are known without a model, for checking a profiler's L2
treatment (issue 17): each fill writes 16 MiB (64 MiB for the last two) through L2. From an empty
L2 (ncu --cache-control all, flashio profile --cache-control all) the 16 MiB fills write almost
nothing to DRAM during the kernel (the lines stay in L2), fresh memory or not; the 64 MiB fills,
more than the L2 holds, write most of theirs. Without the clean (--cache-control none) the lines
the fill before left dirty are written back during the next.

    build/flashio profile --counters full --out F.json -- python3 scripts/profile_fresh_writes.py
    ncu --cache-control all --metrics dram__bytes_write.sum python3 scripts/profile_fresh_writes.py
"""
import torch

torch.cuda.init()
n = 1 << 23  # 16 MiB of fp16
a = torch.empty(n, dtype=torch.float16, device="cuda"); a.fill_(1)      # 0: fresh memory
a.fill_(2)                                                                # 1: the same memory again
b = torch.empty(n, dtype=torch.float16, device="cuda"); b.fill_(1)      # 2: fresh
b.fill_(2)                                                                # 3: again
del a
c = torch.empty(n, dtype=torch.float16, device="cuda"); c.fill_(3)      # 4: a's block, reused by the allocator
d = torch.empty(4 * n, dtype=torch.float16, device="cuda"); d.fill_(1)  # 5: 64 MiB fresh
d.fill_(2)                                                                # 6: again
torch.cuda.synchronize()

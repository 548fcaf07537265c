#!/usr/bin/env python3
"""A tiny PyTorch program for scripts/profile_crosscheck.sh: SDPA forward + backward with the
flash and cuDNN back-ends, N = 2048, d = 64 and 128, fp16, each call inside an NVTX range
`sdpa_<backend>/fwdbwd/d:<d>`. It prints nothing but errors; run it under `flashio profile` or
`ncu` (CUDA is initialised before the first range, so an injected profiler sees every range).

    python3 scripts/sdpa_tiny.py [--batch 4] [--heads 16] [--seqlen 2048] [--flush]

--flush: a read-only pass over four times the L2 (a sum: PyTorch's reduce_kernel) right before and
right after each range, so everything a range's kernels dirty is written back by the time the
after-flush ends (scripts/profile_crosscheck.py --segments).
"""
import argparse
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seqlen", type=int, default=2048)
    ap.add_argument("--flush", action="store_true", help="an L2 flush before and after each range")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.cuda.init()
    torch.manual_seed(0)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush_buffer = torch.ones(4 * l2 // 4, device="cuda", dtype=torch.float32) if a.flush else None

    def flush():  # reads the buffer: evicts (and writes back) what the L2 holds, writes one scalar
        if flush_buffer is not None:
            flush_buffer.sum()

    for backend, name in ((SDPBackend.FLASH_ATTENTION, "flash"), (SDPBackend.CUDNN_ATTENTION, "cudnn")):
        for d in (64, 128):
            shape = (a.batch, a.heads, a.seqlen, d)
            q, k, v = (torch.randn(shape, device="cuda", dtype=torch.float16, requires_grad=True) for _ in range(3))
            do = torch.randn(shape, device="cuda", dtype=torch.float16)
            torch.cuda.synchronize()
            flush()
            with sdpa_kernel(backend):
                torch.cuda.nvtx.range_push(f"sdpa_{name}/fwdbwd/d:{d}")
                o = F.scaled_dot_product_attention(q, k, v)
                torch.autograd.grad(o, (q, k, v), grad_outputs=do)
                torch.cuda.nvtx.range_pop()
            flush()
            torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())

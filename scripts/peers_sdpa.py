#!/usr/bin/env python3
"""Peers: PyTorch's scaled_dot_product_attention, measured like the flashio suite.

What it measures
----------------
``torch.nn.functional.scaled_dot_product_attention`` with each of its CUDA back-ends,
forced one at a time with ``torch.nn.attention.sdpa_kernel``:

    flash      SDPBackend.FLASH_ATTENTION    -> method "sdpa_flash"
    cudnn      SDPBackend.CUDNN_ATTENTION    -> method "sdpa_cudnn"
    efficient  SDPBackend.EFFICIENT_ATTENTION -> method "sdpa_efficient"
    math       SDPBackend.MATH               -> method "sdpa_math"

on the points of a flashio sweep and with the suite's protocol, and writes a result file in
the suite's JSON schema (results/schema.json), so tables can show these peers beside the
suite's kernels. With ``--backend flex`` also PyTorch's FlexAttention:

    flex       torch.compile(flex_attention)     -> method "flex_attention"

(not in the default list). Flex runs key padding (a mask_mod kv_idx < key_lengths[b],
flashio's lengths; also a --seqlens point's padded twin, --varlen-as padded, the lengths as key
lengths: a varlen decode's, --seqlen-q, padded to the longest, named /padded; packed varlen
points are skipped by every back-end, unless paged: below), which SDPA's cudnn, efficient and math back-ends run with
a boolean attn_mask (below), and block-sparse patterns, which SDPA has not (a BlockMask made with
BlockMask.from_kv_blocks from the block mask flashio lists for the point in its dry run's
block_masks, so exactly the blocks blocksparse_flash runs; Flex's block 128, partial blocks
decided by the mask_mod), besides dense, causal (q_idx >= kv_idx, top-left), GQA/MQA
(enable_gqa) and Nq != Nk; the float64 reference applies the same mask (pattern, causal,
padding; a row that sees no key: O = 0, zero gradients). Compiled once per problem and grad
mode in an untimed call before memory, check and timing (dynamic=False; the recompile limit
raised, hitting it raises). Dropout and the other limits below are skipped with the reason;
what Flex or Inductor refuse at run time ("NYI", unsupported, no Triton config) is skipped with
torch's message. docs/sweeps.md has the details.

Where the points come from
--------------------------
flashio expands the sweep, once: the script runs ``flashio run --dry-run --json`` with the
sweep's options as given (``--preset``, ``--sweep`` and every axis of ``flashio run``:
--pass, --batch, --heads, --kv-heads, --seqlen, --seqlen-k, --head-dim, --dtype, --causal,
--padding, --dropout, --deterministic, --block-r, --block-c, --mma, --kv-layout, --seqlens,
--seqlen-q, --varlen-as, --pattern, --density, --sparse-block, --tokens, --model-dim, --seed, --sparse-window, --sparse-global; not
--method) and takes each (problem, pass) of the points it lists once, whatever flashio
methods they came with: problems in flashio's order, under each the back-ends, then the
passes. A record's name is flashio's with the method replaced (``sdpa_flash/fwd/b:4/h:16/
n:4096/d:64/fp16``), its problem object and FLOPs are flashio's as printed. The binary is
``--flashio PATH``, else $FLASHIO_BIN, else build/flashio in this repository; flashio's
bad-input line (exit 2) becomes this script's. A point the back-end cannot run as this
script drives it (unsupported_reason: block-sparse patterns; dropout, whose mask SDPA draws
itself so the output cannot be checked; key padding on the flash back-end, which takes no
attn_mask; packed varlen points; a paged K/V cache; a deterministic backward; forced tiles or
mma) is a ``skipped`` record with the reason, and nothing is run for it.

Key padding (--padding random; a --seqlens point's padded twin, its lengths the key lengths)
----------------------------------------------------------------------------------------------
cudnn, efficient and math get attn_mask = a boolean mask, True where sequence b's key j < L_b
(flashio's lengths), [B, 1, 1, Nk] broadcast over heads and queries; with a causal mask the
top-left causal part is folded in, [B, 1, Nq, Nk] (SDPA takes no is_causal beside a mask; more
than MAX_MASK_ELEMENTS is skipped with the size). Made once per problem before the checked call;
its bytes count among inputs_bytes. From torch's sdp_utils (main, as of 2.11): flash refuses any
attn_mask (check_for_attn_mask); cuDNN takes a 2-D or 4-D mask whose dimensions are each 1 or the
full size (check_attn_mask_shape); efficient needs its last-dimension stride 1; math takes any
broadcastable mask. A back-end that still refuses is ``skipped`` with torch's message. A sequence of length 0 has rows that see no
key: flashio's O = 0 there (zero gradients); a back-end whose O (dQ, dK, dV) on such a sequence
is not finite (softmax over -inf: NaN; the math back-end's _safe_softmax gives 0) is ``skipped``
after the checked call with that reason (empty_sequence_reason), a finite one is checked like
every row. FLOPs are flashio's: a padded twin's real keys only, --padding random every key.

GQA/MQA, Nq != Nk, decode
-------------------------
Points with kv_heads < heads (GQA/MQA) and with seqlen_k != seqlen_q (Nq < Nk: decode, Nq = 1..16
against Nk up to 128k; or Nq > Nk) run like the others. K and V are [B, Hkv, Nk, d]; SDPA is
called with enable_gqa=True when Hkv < H (PyTorch >= 2.5; an older torch gives a ``skipped``
record saying so), and query head h reads K/V head h // (H/Hkv), as in flashio and in torch
(repeat_interleave). Causal is top-left aligned, in flashio and here as in torch's is_causal:
query i sees keys j <= i, also when Nq != Nk, so a causal decode step (Nq = 1) sees key 0 only:
measure decode without --causal (flashio's flash_decode notes: bottom-right alignment, where
the one query sees every key, is the unmasked problem). Which back-ends run what is torch's
to say, and what one refuses becomes ``skipped`` with torch's message at run time. From
torch's sdp_utils.cpp (a recent main; the run decides): flash takes GQA/MQA and any Nq, Nk,
d <= 256, but no is_causal when Nq != Nk (FlashAttention >= 2.1 aligns that mask
bottom-right, so torch refuses it); cuDNN takes
GQA/MQA and Nq != Nk (top-left causal), but not Nk = 1, and d <= 128 (256 on sm90/sm100 with
a recent cuDNN); efficient takes GQA/MQA (older torch releases may refuse it) and top-left
causal; math takes everything (it repeats K/V per query head, so it may run out of memory:
``oom``). A paged K/V cache (flashio's kv_layout "paged:P") is a storage layout SDPA does not
have: skipped, rather than run contiguous under a name that says paged. Flex runs it (forward):
flashio's pages in a cache [1, Hkv, pages * P, d], a BlockMask of block P over each sequence's
physical pages and a mask_mod from physical to logical keys, as torch's PagedAttention builds
them (kv_page_table, flex_paged_blocks, flex_paged_mask_mod); a paged varlen decode too.

How to run (on a machine with a CUDA GPU and PyTorch >= 2.3, and a flashio build)
---------------------------------------------------------------------------------
    python3 scripts/peers_sdpa.py --tokens 16384 --model-dim 2048 \\
        --seqlen 512,1024 --head-dim 64,128 --out results/x.json
    python3 scripts/peers_sdpa.py --pass fwd,bwd,fwdbwd --causal false,true --out results/y.json
    python3 scripts/peers_sdpa.py --preset fa2-figure5 --backend flash,cudnn --out results/z.json
    python3 scripts/peers_sdpa.py --heads 32 --kv-heads 8 --head-dim 128 --seqlen 1 \\
        --seqlen-k 8192,32768 --batch 8,32 --out results/decode.json   # GQA decode
    python3 scripts/peers_sdpa.py --preset figure2-right --backend flex --out results/f.json  # block-sparse
    python3 scripts/peers_sdpa.py --dry-run            # list the points; needs no GPU, no torch

With no axes the sweep is flashio's default: 16384 tokens (batch = 16384/N), model dim
2048 (heads = 2048/d), N = 512, 1024, 2048, 4096, d = 64, 128, fp16, not causal, forward;
all four back-ends unless --backend. ``--run-id`` lets the file share its id with a flashio
file of the same run. Other options: --reps (30), --warmup (5), --device (0),
--no-l2-flush, --quiet; --max-seqlen N [--max-seqlen-why TEXT]: points longer than N are
``skipped`` records with that reason, nothing run (the caller's limit on time or memory, e.g.
for the math back-end, which materializes S and P). Bad input prints one line ``peers_sdpa: error: ...`` and exits 2
without writing anything (a missing flashio binary too); no torch, no GPU or a failed
start-up self-test exits 1; a failing point never stops the sweep (it becomes a record with
its status).

Protocol (as bench/measure/runner.cpp, bench/measure/timing.cpp, bench/measure/check.cpp)
-----------------------------------------------------------------
* Inputs: Q, K, V (and dO for backward passes) standard normal rounded to the dtype,
  contiguous, Q and dO [batch, heads, seqlen_q, head_dim], K and V [batch, kv_heads,
  seqlen_k, head_dim] (SDPA's (B, H, N, d)). They are
  generated on the GPU with the suite's own generator (bench/core/inputs.cpp: SplitMix64 per
  chunk of 2^18 elements, Box-Muller, double -> float -> fp16/bf16 round-to-nearest-even;
  streams 1, 2, 3, 4 for Q, K, V, dO), so both producers see the same values. A self-test
  at start-up compares the GPU generator with an exact Python emulation.
* Check before timing: the back-end's O (and for bwd and fwdbwd also dQ, dK, dV) is
  compared with a float64 reference computed with torch on the GPU. The (batch, head)
  pairs are those of bench/measure/check.cpp's rows_to_check: every pair when the reference costs
  at most 4e9 multiply-adds (scope "all rows"), else (0,0), (B-1,H-1) and two pseudo-random
  pairs drawn from SplitMix64(seed ^ 0xc0ffee) (scope "sampled rows"); all rows of the
  chosen pairs are compared (for dK and dV: the K/V heads those pairs read, all keys; with
  GQA the reference computes every query head of those K/V heads, since a K/V head's dK and
  dV sum its group; the cost that decides "all rows" is 2*B*H*Nq*Nk*d, as flashio's, and the
  reference works in blocks of at most 2^25 float64 scores and gathered K/V, so Nk = 128k
  needs no B*H*Nq*Nk buffer). Per element
  |out - ref| <= atol + rtol*|ref| with atol = f_atol * RMS(ref over the checked elements);
  f_atol/rtol = 1e-2/1e-2 for fp16, 8e-2/8e-2 for bf16 (tolerance_for), and for the
  gradients 2e-2/2e-2 and 2.5e-1/2.5e-1 (gradient_tolerance_for: dS = P*(dP-D)
  cancels). As bench/measure/check.cpp, the check object's max_abs_err, max_rel_err and
  worst_ratio are the worst over the tensors, atol/rtol are O's, "tensors" holds each
  tensor's figures (o, dq, dk, dv), backward passes add "grad_scope"; a NaN or infinity
  fails the check and nulls the error figures (the C++ writes NaN as null). SDPA does not
  return the LSE, so lse_checked is false. A failed check gives status "error", no timing.
* Timing: ``warmup`` untimed calls, then ``reps`` calls, each preceded (outside the timed
  region) by an L2 flush, with torch.cuda.Event(enable_timing=True) pairs recorded on the
  current stream around the call; one synchronize at the end. The flush is a READ-ONLY
  pass: torch.sum over a buffer of max(2 x L2, 8 MiB) bytes written once at start-up (a
  zero_/memset per repetition would leave dirty lines in L2). Stored in seconds: median,
  min, max, mean, sample standard deviation. The timed call includes whatever host work
  the call does (Python, dispatcher, autograd), as the suite's timing includes launches.
    fwd     one forward call (under torch.no_grad, inputs without requires_grad);
    bwd     one forward with autograd is run once, then torch.autograd.grad(O, (Q, K, V),
            dO, retain_graph=True) alone is timed; the gradients it returns are new tensors
            and are dropped outside the timed region (nothing accumulates into .grad);
    fwdbwd  forward + torch.autograd.grad together.
* Memory (measured once, on the checked call, with the caching allocator's counters):
  synchronize, before = torch.cuda.memory_allocated(), torch.cuda.reset_peak_memory_stats(),
  the call, synchronize, peak = torch.cuda.max_memory_allocated();
  workspace_bytes = max(0, peak - before - bytes of the tensors the call returns).
  For bwd the call is the backward alone (O and the saved tensors already exist before
  it), for fwdbwd it is forward + backward. inputs_bytes = Q + K + V (+ dO for backward
  passes); outputs_bytes = O (+ dQ, dK, dV for backward passes). Sizes are the tensors'
  nbytes; the allocator rounds blocks to 512 bytes, so workspace is exact to that grain,
  and it counts only memory that goes through PyTorch's allocator.
* Status: a back-end that refuses a point (RuntimeError "No available kernel..." or a
  similar "not supported" message) gives "skipped" with PyTorch's reason (the first line
  of the message, plus the back-end's own explanation warnings); torch.cuda.OutOfMemoryError
  gives "oom" (memory is freed and the sweep goes on); any other exception gives "error"
  with the message.

Counters (``--counters dram|full``; default off: peers without counters)
-----------------------------------------------------------------------
The same hardware counters as flashio's records, through ``flashio profile`` (CUPTI injected
into this process, bench/measure/inject.cpp). The script runs itself again under
``flashio profile --counters SET --cache-control none --range '^(sdpa_[a-z]+|flex_attention)/' -- python3
peers_sdpa.py ARGS`` (the inner run sees $FLASHIO_PROFILE_LOG). There, after a point's timing and
re-check, it makes one more call of the timed sequence, after the L2 flush, inside an NVTX range
named like the record: the one counter pass, as flashio run's (bench/measure/runner.cpp,
collect_counters): the L2 is flushed once before the pass, not before each of its kernels (hence
--cache-control none), so DRAM bytes mean the same as in flashio's own records. Only the kernels
inside those ranges are replayed and counted, the timed repetitions run unprofiled. The outer run
then copies each range record's ``counters`` into the peer record of that name
(merge_profile_counters) and rewrites --out; the program's exit code is passed through. Each
record's ``counters.kernels`` lists the pass's kernels — the demangled name with its template
arguments, launches, and the first launch's grid and block (``resources``) — from which ``flashio
analyze`` reads the peer's FA-2 tiles (analysis/models/peers.cpp). Run by
hand under ``flashio profile --range '^(sdpa_[a-z]+|flex_attention)/'``, the inner script leaves ``not_collected`` with
the reason and the merge is the caller's.

The module imports torch only inside functions, so tests/test_peers_sdpa.py can test the
points (against the flashio binary), argument parsing and record building without torch or
a GPU.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import math
import os
import re
import secrets
import struct
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence

PROG = "peers_sdpa"
PRODUCER = "scripts/peers_sdpa.py"
SCHEMA = "flashio/result"
SCHEMA_VERSION = 1

EXIT_RUNTIME = 1
EXIT_BAD_INPUT = 2

# Back-end name on the command line -> SDPBackend member; the method is "sdpa_" + name.
BACKENDS = {
    "flash": "FLASH_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
    "math": "MATH",
}
# FlexAttention (torch.nn.attention.flex_attention, compiled): `--backend flex`, method "flex_attention".
FLEX = "flex"
FLEX_METHOD = "flex_attention"
FLEX_BLOCK = 128  # Flex's BlockMask block (its default, _DEFAULT_SPARSE_BLOCK_SIZE): Q_BLOCK = KV_BLOCK
ALL_BACKENDS = tuple(BACKENDS) + (FLEX,)  # --backend's choices; the default is the four SDPA back-ends
DTYPES = ("fp16", "bf16")

DEFAULT_SEED = 0x5EED  # bench/sweep/sweep.h SweepSpec::seed (Problem's default here)

# Correctness (bench/measure/check.cpp): atol as a fraction of the reference RMS, and rtol.
TOLERANCE = {"fp16": (1e-2, 1e-2), "bf16": (8e-2, 8e-2)}
GRAD_TOLERANCE = {"fp16": (2e-2, 2e-2), "bf16": (2.5e-1, 2.5e-1)}  # dQ, dK, dV: gradient_tolerance_for
CHECK_BUDGET_MACS = 4e9            # bench/measure/runner.h check_budget_macs
# The largest causal key-padding attn_mask [B, 1, Nq, Nk] made (booleans; the efficient back-end
# converts it to the dtype, 2 bytes each): a larger point is skipped with the reason.
MAX_MASK_ELEMENTS = 1 << 28
REFERENCE_BLOCK_ELEMENTS = 1 << 25  # float64 scores, or K/V gathered, per reference block (256 MiB)

# Messages by which a back-end refuses a point (rather than failing on it).
_REFUSAL_PATTERNS = (
    "no available kernel",
    "not supported",
    "no valid execution plan",
)

# ... and by which flex_attention (or Inductor compiling it) says it cannot run a point, whatever
# the exception's type.
_FLEX_REFUSAL_PATTERNS = (
    "nyi",
    "unsupported",
    "no valid triton configs",
    "out of resource",
)

# Out-of-memory reported by a library (cuBLAS, cuDNN) as a plain RuntimeError.
_OOM_PATTERNS = ("out of memory", "alloc_failed")

_MASK64 = (1 << 64) - 1


class BadInput(Exception):
    """Bad command-line input: one line on stderr and exit 2."""


class RuntimeFailure(Exception):
    """The run cannot go on (no torch, no GPU, ...): one line on stderr and exit 1."""


# --------------------------------------------------------------------------------------
# Points: flashio's own expansion (`flashio run --dry-run --json`), re-labelled per back-end
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """What the GPU side needs of a point's problem: dense, no padding, no dropout, K/V
    contiguous (the points the peers can run; see unsupported_reason). Q (and dO) are
    [batch, heads, seqlen, head_dim], K and V [batch, kv_heads, seqlen_k, head_dim]; query
    head h reads K/V head h // (heads / kv_heads) (GQA/MQA when kv_heads < heads, as flashio
    and torch's enable_gqa). kv_heads and seqlen_k given as 0 mean heads and seqlen, as
    flashio's Problem::kvh() and nk(). The record's problem object is flashio's, verbatim
    (Point.problem_json)."""
    batch: int
    heads: int
    seqlen: int  # Nq
    head_dim: int
    dtype: str = "fp16"
    causal: bool = False
    seed: int = DEFAULT_SEED
    kv_heads: int = 0  # Hkv; 0 = heads
    seqlen_k: int = 0  # Nk; 0 = seqlen
    padding: bool = False  # key padding "random": sequence b sees keys j < key_lengths(p)[b]
    # A varlen point's padded twin (varlen_layout "padded"): its lengths, the key lengths of the
    # key-padding mask (key_lengths); () otherwise.
    seq_lengths: tuple = ()
    # Block sparsity: the mask flashio makes for the point (`block_masks` of its dry run), one
    # string of '0'/'1' per row of sparse_block x sparse_block element blocks; () = dense.
    block_mask: tuple = ()
    sparse_block: int = 0
    # A paged K/V cache (flashio's kv_layout "paged:P"): P keys a page; 0 = contiguous.
    kv_page: int = 0
    # A varlen point stored packed (varlen_layout "packed"), not its padded twin: with kv_page, a
    # paged varlen decode, each sequence only its own pages (flashio's Problem::paged_varlen).
    varlen_packed: bool = False

    def __post_init__(self) -> None:
        if self.kv_heads <= 0:
            object.__setattr__(self, "kv_heads", self.heads)
        if self.seqlen_k <= 0:
            object.__setattr__(self, "seqlen_k", self.seqlen)
        if self.block_mask:
            rows, cols = -(-self.seqlen // max(1, self.sparse_block)), -(-self.seqlen_k // max(1, self.sparse_block))
            if self.sparse_block < 1 or len(self.block_mask) != rows or any(
                    len(r) != cols or r.strip("01") for r in self.block_mask):
                raise ValueError(f"block mask is not {rows} x {cols} blocks of '0'/'1' (sparse block "
                                 f"{self.sparse_block}, Nq {self.seqlen}, Nk {self.seqlen_k})")

    @property
    def softmax_scale(self) -> float:
        return 1.0 / math.sqrt(float(self.head_dim))

    @property
    def group(self) -> int:
        """Query heads per K/V head (1 = MHA; heads = MQA)."""
        return self.heads // self.kv_heads

    def q_elements(self) -> int:
        """Elements of Q (and dO, O, dQ): B*H*Nq*d."""
        return self.batch * self.heads * self.seqlen * self.head_dim

    def kv_elements(self) -> int:
        """Elements of K (and V, dK, dV): B*Hkv*Nk*d."""
        return self.batch * self.kv_heads * self.seqlen_k * self.head_dim

    @property
    def sparse(self) -> bool:
        return bool(self.block_mask)

    @staticmethod
    def from_json(pj: dict, block_mask: Sequence[str] = ()) -> "Problem":
        """flashio's problem object; block_mask: the rows flashio listed for it (sparse only)."""
        return Problem(batch=int(pj["batch"]), heads=int(pj["heads"]), seqlen=int(pj["seqlen_q"]),
                       head_dim=int(pj["head_dim"]), dtype=str(pj["dtype"]), causal=bool(pj["causal"]),
                       seed=int(pj["seed"]), kv_heads=int(pj.get("kv_heads", 0) or 0),
                       seqlen_k=int(pj.get("seqlen_k", 0) or 0), padding=pj.get("padding", "none") == "random",
                       seq_lengths=tuple(int(n) for n in pj.get("seq_lengths", ())) if "seqlens" in pj else (),
                       block_mask=tuple(block_mask), sparse_block=int(pj.get("sparse_block", 0)) if block_mask else 0,
                       kv_page=_kv_page_of(str(pj.get("kv_layout", "contiguous"))),
                       varlen_packed="seqlens" in pj and pj.get("varlen_layout", "packed") == "packed")

    @property
    def key_padded(self) -> bool:
        """Keys past a per-sequence length are masked: --padding random, or a varlen point's
        padded twin (flashio's Problem::key_padded)."""
        return self.padding or bool(self.seq_lengths)


def _kv_page_of(layout: str) -> int:
    """P of flashio's kv_layout "paged:P"; 0 for "contiguous"."""
    return int(layout[len("paged:"):]) if layout.startswith("paged:") else 0


def method_name(backend: str) -> str:
    return FLEX_METHOD if backend == FLEX else "sdpa_" + backend


def is_sparse(pj: dict) -> bool:
    return pj.get("pattern") not in (None, "", "none")


def unsupported_reason(backend: str, pass_: str, pj: dict, has_mask: bool = False) -> str:
    """Why this back-end (as this script drives it) cannot run the problem `pj` (flashio's
    problem JSON), or "" when it can. Decided without torch or a GPU; each becomes a
    `skipped` record with this reason. Limits of SDPA itself say so; the others are limits
    of this script (it checks every output against its float64 reference before timing, so
    it runs only what that reference and its inputs reproduce). has_mask: flashio listed the
    point's block mask (`block_masks` of its dry run), which flex needs for a pattern."""
    if backend == FLEX:
        return _flex_unsupported_reason(pass_, pj, has_mask)
    if is_sparse(pj):
        return "SDPA has no block-sparse attention (pattern " + str(pj["pattern"]) + ")"
    if float(pj.get("dropout", 0.0)) > 0.0:
        return ("dropout: SDPA draws its own dropout mask, which the float64 reference cannot reproduce, "
                "so the output cannot be checked (and an unchecked point is not timed)")
    if pj.get("kv_layout", "contiguous") != "contiguous":
        return ("paged K/V cache (kv_layout " + str(pj["kv_layout"]) + "): SDPA takes contiguous K/V only, and a "
                "point named paged is not run contiguous under that name")
    if "seqlens" in pj and pj.get("varlen_layout", "packed") != "padded":
        return ("packed variable lengths (seqlens " + str(pj["seqlens"]) + "): SDPA takes [B, H, N, d], and a point "
                "named packed is not run padded under that name; its padded twin (--varlen-as padded) runs with the "
                "lengths as a key-padding attn_mask" + (" (not on the flash back-end: it takes no attn_mask)"
                                                          if backend == "flash" else ""))
    if pj.get("padding", "none") != "none" or "seqlens" in pj:  # key padding, or a varlen point's padded twin
        what = ("key padding" if "seqlens" not in pj else
                "variable lengths (seqlens " + str(pj["seqlens"]) + ", padded): key padding")
        if backend == "flash":
            return what + ": SDPA's flash back-end takes no attn_mask"
        if pj.get("causal") and _causal_mask_elements(pj) > MAX_MASK_ELEMENTS:
            return (what + " with a causal mask: the attn_mask would be [B, 1, Nq, Nk] = " +
                    f"{_causal_mask_elements(pj)} booleans (more than peers_sdpa.py's {MAX_MASK_ELEMENTS}; "
                    "SDPA takes no is_causal beside an attn_mask)")
    if pj.get("deterministic") and pass_ != "fwd":
        return "deterministic backward: peers_sdpa.py does not ask SDPA for one"
    if int(pj.get("block_r", 0)) or int(pj.get("block_c", 0)):
        return "forced tiles (block_r, block_c): SDPA chooses its own"
    if pj.get("mma"):
        return "forced tensor-core instruction (mma " + str(pj["mma"]) + "): SDPA chooses its own"
    if not math.isclose(float(pj.get("softmax_scale", 0.0)), 1.0 / math.sqrt(float(pj["head_dim"])), rel_tol=1e-12):
        return "softmax scale other than 1/sqrt(d): peers_sdpa.py uses 1/sqrt(d)"
    return ""


def _causal_mask_elements(pj: dict) -> int:
    """Elements of a causal key-padding attn_mask [B, 1, Nq, Nk] of flashio's problem `pj`."""
    nq = int(pj["seqlen_q"])
    return int(pj["batch"]) * nq * (int(pj.get("seqlen_k", 0) or 0) or nq)


def _flex_unsupported_reason(pass_: str, pj: dict, has_mask: bool) -> str:
    """unsupported_reason() of flex: dense, causal, key padding, GQA/MQA, Nq != Nk and
    block-sparse patterns (flashio's mask) run; the rest is skipped with the reason."""
    if is_sparse(pj) and not has_mask:
        return ("block-sparse pattern " + str(pj["pattern"]) + ": flashio listed no block mask for it (a flashio "
                "older than `block_masks` in `run --dry-run --json`, or a pattern it cannot make)")
    if float(pj.get("dropout", 0.0)) > 0.0:
        return ("dropout: flex_attention has no dropout (and a mask torch drew could not be checked against the "
                "float64 reference, so the point could not be timed)")
    if pj.get("kv_layout", "contiguous") != "contiguous" and pass_ != "fwd":
        return ("paged K/V cache (kv_layout " + str(pj["kv_layout"]) + "): peers_sdpa.py runs flex_attention on "
                "pages forward only (a KV cache is read by inference, which has no backward)")
    if "seqlens" in pj and pj.get("varlen_layout", "packed") != "padded" and pj.get("kv_layout", "contiguous") == "contiguous":
        return ("packed variable lengths (seqlens " + str(pj["seqlens"]) + "): flex_attention takes [B, H, N, d], and "
                "a point named packed is not run padded under that name; its padded twin (--varlen-as padded) runs "
                "with the lengths as key padding (and paged, its pages run as flashio lays them out)")
    if pj.get("deterministic") and pass_ != "fwd":
        return "deterministic backward: flex_attention has no deterministic-backward mode"
    if int(pj.get("block_r", 0)) or int(pj.get("block_c", 0)):
        return "forced tiles (block_r, block_c): flex_attention (Inductor's kernel) chooses its own"
    if pj.get("mma"):
        return "forced tensor-core instruction (mma " + str(pj["mma"]) + "): flex_attention chooses its own"
    if not math.isclose(float(pj.get("softmax_scale", 0.0)), 1.0 / math.sqrt(float(pj["head_dim"])), rel_tol=1e-12):
        return "softmax scale other than 1/sqrt(d): peers_sdpa.py uses 1/sqrt(d)"
    return ""


@dataclass(frozen=True)
class Point:
    """One peer point: flashio's point (problem, pass, FLOPs) with the back-end as method."""
    backend: str
    pass_: str
    problem_name: str  # flashio's name without method/pass: b:4/h:16/n:4096/d:64/fp16[/causal]...
    problem_json: dict  # flashio's problem object, as its records write it
    flops: float        # flashio's FLOPs of (problem, pass)
    skip: str = ""      # unsupported_reason(): non-empty = a `skipped` record, nothing run
    block_mask: tuple = ()  # flashio's block mask of a sparse problem (its dry run's block_masks)

    @property
    def method(self) -> str:
        return method_name(self.backend)

    @property
    def problem(self) -> Problem:
        return Problem.from_json(self.problem_json, self.block_mask)

    def name(self) -> str:
        """point_name(): method/pass/problem-name."""
        return f"{self.method}/{self.pass_}/{self.problem_name}"


def peer_points(doc: dict, backends: Sequence[str]) -> list:
    """The peer points of a `flashio run --dry-run --json` document: each (problem, pass) of
    flashio's points once (whatever flashio methods it came with), problems in flashio's
    order, and under each problem the back-ends, then its passes (as flashio orders methods,
    then passes). Names, problem objects and FLOPs are flashio's, and so is a sparse
    problem's block mask (the document's block_masks, keyed by problem name)."""
    masks = doc.get("block_masks") or {}
    if not isinstance(masks, dict):
        raise RuntimeFailure("flashio's block_masks is not an object")
    problems: dict = {}  # problem name -> (problem json, {pass: flops}) in first-seen order
    for pt in doc.get("points", []):
        prefix = f"{pt['method']}/{pt['pass']}/"
        if not pt["name"].startswith(prefix):
            raise RuntimeFailure(f"flashio point '{pt['name']}' does not start with '{prefix}'")
        pname = pt["name"][len(prefix):]
        pj, passes = problems.setdefault(pname, (pt["problem"], {}))
        passes.setdefault(pt["pass"], float(pt["flops"]))
    points = []
    for pname, (pj, passes) in problems.items():
        mask = tuple(masks.get(pname, ())) if is_sparse(pj) else ()
        if mask:
            try:
                Problem.from_json(pj, mask)
            except ValueError as e:
                raise RuntimeFailure(f"flashio's block mask of {pname}: {e}") from None
        for be in backends:
            for ps, f in passes.items():
                points.append(Point(be, ps, pname, pj, f, unsupported_reason(be, ps, pj, bool(mask)), mask))
    return points


def beyond_max_seqlen(pt: Point, max_seqlen: int, why: Optional[str]) -> Point:
    """--max-seqlen: a point whose queries or keys are longer is `skipped` with the reason (a reason of
    its own, if it has one, comes first)."""
    n = max(int(pt.problem_json.get("seqlen_q", 0)), int(pt.problem_json.get("seqlen_k", 0) or 0))
    if pt.skip or n <= max_seqlen:
        return pt
    reason = f"N = {n} is above --max-seqlen {max_seqlen}: not run" + (f" ({why})" if why else "")
    return dataclasses.replace(pt, skip=reason)


# --------------------------------------------------------------------------------------
# Command line: the sweep's axes go to flashio as given (bench/cli/commands.cpp)
# --------------------------------------------------------------------------------------

# flashio run's axes, passed through: (option, short aliases, takes a list, help).
FLASHIO_AXES = (
    ("--pass", (), True, "fwd, bwd, fwdbwd (default: fwd)"),
    ("--batch", ("-b",), True, "batch sizes (overrides --tokens)"),
    ("--heads", (), True, "query heads (overrides --model-dim)"),
    ("--kv-heads", (), True, "K/V heads (GQA/MQA: fewer than --heads, dividing it; run with enable_gqa)"),
    ("--seqlen", ("-n",), True, "sequence lengths N"),
    ("--seqlen-k", (), True, "key sequence lengths (default: = N; decode: -n 1 --seqlen-k 32768)"),
    ("--head-dim", ("-d",), True, "head dimensions d"),
    ("--dtype", (), True, "fp16, bf16"),
    ("--causal", (), True, "causal mask: false, true (or both: false,true)"),
    ("--padding", (), True, "key padding: none, random (random: SDPA's cudnn, efficient and math run it with an "
                            "attn_mask, its flash back-end skips it; flex runs it)"),
    ("--dropout", (), True, "dropout probabilities (> 0: skipped, SDPA and flex)"),
    ("--deterministic", (), True, "bitwise-reproducible backward: false, true (true: backward skipped)"),
    ("--block-r", (), True, "forced tile rows (> 0: skipped)"),
    ("--block-c", (), True, "forced tile columns (> 0: skipped)"),
    ("--mma", (), True, "forced tensor-core instruction (other than auto: skipped)"),
    ("--kv-layout", (), True, "K/V cache layout: contiguous, paged:P (paged: skipped; needs a flashio with it)"),
    ("--seqlens", (), True, "variable lengths: uniform:A-B, file:PATH (packed: skipped; needs a flashio with it)"),
    ("--seqlen-q", (), True, "varlen decode: queries per sequence of --seqlens points (the lengths are key lengths)"),
    ("--varlen-as", (), True, "layout of --seqlens points: packed (skipped), padded (the lengths as key padding: "
                              "an attn_mask on SDPA's cudnn, efficient and math, not flash; flex runs it)"),
    ("--pattern", (), True, "block-sparse patterns (other than none: SDPA skips them, flex runs flashio's mask)"),
    ("--density", (), True, "random pattern densities"),
    ("--sparse-block", (), True, "pattern block sizes"),
    ("--tokens", (), False, "batch = tokens / N (FlashAttention-2's setting: 16384)"),
    ("--model-dim", (), False, "heads = model-dim / d (FlashAttention-2's setting: 2048)"),
    ("--seed", (), False, f"input seed (default {DEFAULT_SEED})"),
    ("--sparse-window", (), False, "local pattern: window"),
    ("--sparse-global", (), False, "local pattern: global blocks"),
    ("--preset", (), False, "a paper's experiment (flashio presets lists them); axes given override it"),
    ("--sweep", (), False, "a flashio sweep file (docs/sweeps.md); axes given override it"),
)


def _dest(opt: str) -> str:
    return "axis_" + opt[2:].replace("-", "_")


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line and exit 2 (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise BadInput(message)


def _make_parser() -> _Parser:
    p = _Parser(
        prog=PROG,
        allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Measure torch SDPA back-ends (flash, cudnn, efficient, math) on the points of a flashio "
        "sweep (`flashio run --dry-run --json` with the same axes) and with its protocol; write a flashio "
        "result file.",
        epilog="The sweep's axes, --preset and --sweep are flashio run's: flashio expands them (names,\n"
        "problems, FLOPs) and each of its (problem, pass) pairs is run once per back-end. With no\n"
        "axes: flashio's default sweep (16384 tokens, model dim 2048, N = 512..4096, d = 64, 128,\n"
        "fp16, forward). Points a back-end cannot run become `skipped` records with the reason.",
    )
    p.add_argument("--backend", action="append", default=[], metavar="LIST",
                   help="flash, cudnn, efficient, math (SDPA; default: these four), flex (FlexAttention, compiled)")
    for opt, aliases, is_list, text in FLASHIO_AXES:
        if is_list:
            p.add_argument(opt, *aliases, dest=_dest(opt), action="append", default=[], metavar="LIST", help=text)
        else:
            p.add_argument(opt, *aliases, dest=_dest(opt), help=text)
    p.add_argument("--flashio", help="the flashio binary that expands the sweep (default: $FLASHIO_BIN, else "
                                     "build/flashio in the repository)")
    p.add_argument("--reps", default="30", help="timed repetitions per point (median reported)")
    p.add_argument("--warmup", default="5", help="untimed calls before timing")
    p.add_argument("--no-l2-flush", action="store_true", help="do not clean L2 before each repetition")
    p.add_argument("--out", "-o", help="result file (required unless --dry-run)")
    p.add_argument("--run-id", help="run id to write (default: a new random one)")
    p.add_argument("--git-revision",
                   help="the source revision to record (default: `git rev-parse HEAD` here); reproduce_results.sh "
                        "passes the flashio file's, since a copied checkout can carry a stale .git")
    p.add_argument("--device", default="0", help="GPU index")
    p.add_argument("--dry-run", action="store_true", help="list the points and exit (no GPU, no torch)")
    p.add_argument("--quiet", "-q", action="store_true", help="no per-point progress on stderr")
    p.add_argument("--counters", default="off",
                   help="hardware counters through `flashio profile`: off (default), dram, full")
    p.add_argument("--max-seqlen", help="points with a sequence (queries or keys) longer than this are `skipped` "
                                        "records, nothing run: the caller's limit on time or memory")
    p.add_argument("--max-seqlen-why", help="with --max-seqlen: why, appended to those records' reason")
    return p


_INT_RE = re.compile(r"^[+-]?[0-9]+$")


def _parse_int(opt: str, s: str, minimum: Optional[int] = None) -> int:
    s = s.strip()
    if not _INT_RE.match(s):
        raise BadInput(f"--{opt}: '{s}' is not an integer")
    v = int(s)
    if v >= 1 << 63 or v < -(1 << 63):
        raise BadInput(f"--{opt}: '{s}' is out of range")
    if minimum is not None and v < minimum:
        raise BadInput(f"--{opt}: {v} is below the minimum {minimum}")
    return v


def _split(opt: str, values: Sequence[str]) -> list:
    out = []
    for v in values:
        for item in v.split(","):
            item = item.strip()
            if not item:
                raise BadInput(f"--{opt}: empty value")
            out.append(item)
    return out


def _parse_backend(s: str) -> str:
    l = s.lower()
    if l == FLEX_METHOD:
        l = FLEX
    if l.startswith("sdpa_"):
        l = l[len("sdpa_"):]
    if l not in ALL_BACKENDS:
        raise BadInput(f"--backend: unknown back-end '{s}' (known: {', '.join(ALL_BACKENDS)})")
    return l


def _dedupe(seq: Iterable) -> list:
    out = []
    for x in seq:
        if x not in out:
            out.append(x)
    return out


def default_flashio() -> str:
    """$FLASHIO_BIN (as scripts/reproduce_results.sh), else build/flashio in this repository."""
    env = os.environ.get("FLASHIO_BIN")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "flashio")


def flashio_axes_args(a: argparse.Namespace) -> list:
    """The axes given, as flashio run options (--opt=value, so a value may start with '-')."""
    args = []
    for opt, _, is_list, _ in FLASHIO_AXES:
        v = getattr(a, _dest(opt))
        if is_list and v:
            args.append(f"{opt}={','.join(_split(opt[2:], v))}")
        elif not is_list and v is not None:
            if not v.strip():
                raise BadInput(f"{opt}: empty value")
            args.append(f"{opt}={v}")
    return args


def flashio_points(flashio: str, axes_args: Sequence[str]) -> dict:
    """`flashio run --dry-run --json AXES`: the sweep's points as flashio runs them. flashio's
    bad-input line (exit 2) becomes ours; any other failure is a runtime failure."""
    if not (os.path.isfile(flashio) and os.access(flashio, os.X_OK)):
        raise BadInput(f"--flashio: no flashio binary at '{flashio}' "
                       "(build it: scripts/build.sh; or give --flashio PATH)")
    cmd = [flashio, "run", "--dry-run", "--json"] + list(axes_args)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as e:
        raise RuntimeFailure(f"cannot run {flashio}: {_first_line(str(e))}") from None
    if r.returncode == EXIT_BAD_INPUT:
        msg = _first_line(r.stderr) or "bad input"
        raise BadInput(msg[len("flashio: error: "):] if msg.startswith("flashio: error: ") else msg)
    if r.returncode != 0:
        raise RuntimeFailure(f"{' '.join(cmd)} failed (exit {r.returncode}): {_first_line(r.stderr)}")
    try:
        doc = json.loads(r.stdout)
    except ValueError as e:
        raise RuntimeFailure(f"{' '.join(cmd)} did not print JSON ({e}); is {flashio} older than --dry-run --json?")
    if not isinstance(doc, dict) or doc.get("schema") != "flashio/points":
        raise RuntimeFailure(f"{' '.join(cmd)} printed no flashio/points document")
    return doc


@dataclass
class Config:
    points: list
    reps: int
    warmup: int
    device: int
    flush_l2: bool
    out: Optional[str]
    run_id: Optional[str]
    dry_run: bool
    quiet: bool
    git_revision: Optional[str] = None
    counters: str = "off"  # off, dram, full
    flashio: str = ""      # the flashio binary (flashio profile runs this script for the counters)


def parse_config(argv: Sequence[str]) -> Config:
    """Options -> Config; raises BadInput on the first bad value (before any GPU work). The
    points come from flashio (flashio_points), which checks the axes."""
    a = _make_parser().parse_args(list(argv))
    backends = _dedupe(_parse_backend(s) for s in _split("backend", a.backend)) if a.backend else list(BACKENDS)
    reps = _parse_int("reps", a.reps)
    if reps < 1:
        raise BadInput("--reps must be >= 1")
    warmup = _parse_int("warmup", a.warmup)
    if warmup < 0:
        raise BadInput("--warmup must be >= 0")
    device = _parse_int("device", a.device, 0)
    if a.run_id is not None and not a.run_id.strip():
        raise BadInput("--run-id: empty value")
    if not a.dry_run and not a.out:
        raise BadInput("--out is required")
    max_seqlen = _parse_int("max-seqlen", a.max_seqlen, 1) if a.max_seqlen is not None else None
    if a.max_seqlen_why is not None and max_seqlen is None:
        raise BadInput("--max-seqlen-why needs --max-seqlen")
    doc = flashio_points(a.flashio or default_flashio(), flashio_axes_args(a))
    points = peer_points(doc, backends)
    if max_seqlen is not None:
        points = [beyond_max_seqlen(p, max_seqlen, a.max_seqlen_why) for p in points]
    if a.counters not in COUNTER_SETS:
        raise BadInput(f"--counters: '{a.counters}' is not one of {', '.join(COUNTER_SETS)}")
    return Config(points=points, reps=reps, warmup=warmup, device=device, flush_l2=not a.no_l2_flush,
                  out=a.out, run_id=a.run_id, dry_run=a.dry_run, quiet=a.quiet, git_revision=a.git_revision,
                  counters=a.counters, flashio=a.flashio or default_flashio())


def check_writable(path: str) -> None:
    """Fails early (bad input) when the output file cannot be created; leaves nothing behind."""
    d = os.path.dirname(path) or "."
    if not os.path.isdir(d):
        raise BadInput(f"--out: directory '{d}' does not exist")
    if os.path.isdir(path):
        raise BadInput(f"--out: '{path}' is a directory")
    probe = path + ".tmp"
    try:
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError:
        raise BadInput(f"--out: cannot write '{path}'") from None


def join_command_line(args: Sequence[str]) -> str:
    """As join_command_line() in bench/cli/commands.cpp."""
    return " ".join(a if not any(c in a for c in " \t'\"") else "'" + a + "'" for a in args)


# --------------------------------------------------------------------------------------
# Inputs: the suite's generator (bench/core/inputs.cpp, bench/core/rng.h), written once for Python
# ints (signed 64-bit wrap emulated) and torch int64 tensors (which wrap natively).
# --------------------------------------------------------------------------------------

_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_CHUNK_BITS = 18  # kChunk = 2^18 elements per independently seeded chunk


def _to_signed64(x: int) -> int:
    x &= _MASK64
    return x - (1 << 64) if x >> 63 else x


def _srl(z, s: int):
    """Logical right shift of a two's-complement int64 (Python's and torch's >> are arithmetic)."""
    return (z >> s) & ((1 << (64 - s)) - 1)


def _normal_core(idx, seed: int, stream: int, wrap: Callable, to_double: Callable,
                 log: Callable, sqrt: Callable, cos: Callable):
    """The float64 normal of element `idx` of fill_normal(seed, stream): SplitMix64 seeded
    with seed*golden ^ stream<<48 ^ chunk; element k of a chunk uses draws 2k+1 and 2k+2
    (state_n = seed_c + n*golden); Box-Muller with u1 = 1 - uniform, u2 = uniform."""
    g = _to_signed64(_GOLDEN)
    base = _to_signed64(((seed * _GOLDEN) & _MASK64) ^ (stream << 48))
    chunk = idx >> _CHUNK_BITS
    k = idx & ((1 << _CHUNK_BITS) - 1)
    seed_c = chunk ^ base

    def mix(z):
        z = wrap((z ^ _srl(z, 30)) * _to_signed64(_MIX1))
        z = wrap((z ^ _srl(z, 27)) * _to_signed64(_MIX2))
        return z ^ _srl(z, 31)

    def uniform(n):
        z = mix(wrap(seed_c + wrap(n * g)))
        return to_double(_srl(z, 11)) * (2.0 ** -53)

    u1 = 1.0 - uniform(2 * k + 1)
    u2 = uniform(2 * k + 2)
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2)


def _round_f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_to_bits16(x: float, dtype: str) -> int:
    """float -> fp16/bf16 bit pattern, round to nearest even (bench/core/dtype.h)."""
    if dtype == "fp16":
        return struct.unpack("<H", struct.pack("<e", x))[0]
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def reference_input_bits(dtype: str, seed: int, stream: int, index: int) -> int:
    """Element `index` of the suite's input tensor `stream`, as the 16-bit word fill_normal
    stores; pure Python (the self-test's and the unit test's ground truth)."""
    v = _normal_core(index, seed, stream, _to_signed64, float, math.log, math.sqrt, math.cos)
    return f32_to_bits16(_round_f32(v), dtype)


def make_input(torch, n_elements: int, dtype: str, seed: int, stream: int, device,
               slab: int = 1 << 22):
    """A flat tensor of fill_normal(dtype, seed, stream) values, generated on the GPU."""
    tdtype = _torch_dtype(torch, dtype)
    out = torch.empty(n_elements, dtype=tdtype, device=device)
    for s0 in range(0, n_elements, slab):
        s1 = min(n_elements, s0 + slab)
        idx = torch.arange(s0, s1, dtype=torch.int64, device=device)
        v = _normal_core(idx, seed, stream, lambda t: t, lambda t: t.to(torch.float64),
                         torch.log, torch.sqrt, torch.cos)
        out[s0:s1] = v.to(torch.float32).to(tdtype)
    return out


def _self_test_generator(torch, device) -> None:
    """The GPU generator must reproduce the exact Python emulation (int64 wrap-around,
    shifts, rounding): a few indices across chunk boundaries, both dtypes."""
    idx = [0, 1, 2, 3, 1000, (1 << 18) - 1, 1 << 18, (1 << 18) + 1, 5_000_003]
    for dtype in DTYPES:
        for seed, stream in ((DEFAULT_SEED, 1), ((1 << 64) - 1, 4)):
            t = make_input(torch, idx[-1] + 1, dtype, seed, stream, device)
            got = [int(x) & 0xFFFF for x in t.view(torch.int16)[idx].tolist()]
            want = [reference_input_bits(dtype, seed, stream, i) for i in idx]
            if got != want:
                raise RuntimeFailure(f"input generator self-test failed ({dtype}, seed {seed}, stream {stream}): "
                                     f"GPU {got} vs exact {want}")


def _torch_dtype(torch, dtype: str):
    return torch.float16 if dtype == "fp16" else torch.bfloat16


# --------------------------------------------------------------------------------------
# Correctness: which (batch, head) pairs, and the tolerance rule (bench/measure/check.cpp)
# --------------------------------------------------------------------------------------


class SplitMix64:
    def __init__(self, seed: int):
        self.state = seed & _MASK64

    def next(self) -> int:
        self.state = (self.state + _GOLDEN) & _MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
        z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
        return z ^ (z >> 31)


def key_lengths(p: Problem) -> list:
    """Valid keys per sequence, as bench/core/problem.cpp key_lengths(): Nk each, or with key
    padding "random" lo + SplitMix64(seed ^ 0x9ad0).next() % (Nk - lo + 1), lo = max(1, Nk - 20),
    per sequence in turn (FlashAttention's benchmark: lengths uniform in [N - 20, N]); a varlen
    point's padded twin: its sequence lengths."""
    if p.seq_lengths:
        return list(p.seq_lengths)
    if not p.padding:
        return [p.seqlen_k] * p.batch
    rng = SplitMix64(p.seed ^ 0x9AD0)
    lo = max(1, p.seqlen_k - 20)
    return [lo + rng.next() % (p.seqlen_k - lo + 1) for _ in range(p.batch)]


@dataclass(frozen=True)
class FlexBlocks:
    """A FlexAttention BlockMask's arrays (BlockMask.from_kv_blocks), as nested lists:
    kv_num[b][r] partial blocks of Q block row r (those whose elements mask_mod must decide) at
    kv_idx[b][r][:kv_num[b][r]], and full_num/full_idx the full ones (every element allowed:
    mask_mod skipped); b over the sequences (one entry, broadcast, without key padding). A row's
    listed columns come first, increasing, then the others, increasing: the order of Flex's own
    _dense_to_ordered (a stable descending argsort), so the lists are what create_block_mask
    would make of the same 0/1 blocks. block: Flex's block (Q and KV); mask_pattern: whether
    mask_mod must also look the pattern up (a Flex block spans pattern blocks: sparse_block is
    no multiple of it)."""
    kv_num: list
    kv_idx: list
    full_num: list
    full_idx: list
    block: int
    mask_pattern: bool


def _ordered(rows: Sequence[Sequence[int]], cols: int) -> tuple:
    """(counts, indices) of per-row column lists: each list, then the unlisted columns."""
    num, idx = [], []
    for listed in rows:
        rest = set(listed)
        num.append(len(listed))
        idx.append(list(listed) + [c for c in range(cols) if c not in rest])
    return num, idx


def flex_blocks(p: Problem, block: int = FLEX_BLOCK) -> FlexBlocks:
    """The blocks of Flex's BlockMask for the point: Flex block (r, c) covers queries [r0, r1)
    and keys [c0, c1) (r0 = r*block, r1 = min(r0 + block, Nq), likewise c); an element (i, j)
    is allowed iff the pattern block (i // Bs, j // Bs) is 1 (dense: always), and when causal
    j <= i, and with key padding j < key_lengths[b]: flashio's mask (bench/core/reference.cpp).
    The block is full when every element of it is allowed (pattern blocks all 1, c1 - 1 <= r0,
    c1 <= L), left out when the conditions exclude it (a pattern block all 0, c0 > r1 - 1,
    c0 >= L; since causal and padding both only bound j from above, the conjunction of the
    three is exact when Bs is a multiple of the Flex block), and partial otherwise (mask_mod
    decides each element, so a block kept in doubt is never wrong, only slower). Flex's kernel
    masks the tail of a length that is no multiple of the block itself (seq_lengths)."""
    nq, nk = p.seqlen, p.seqlen_k
    R, C = -(-nq // block), -(-nk // block)
    bs = p.sparse_block
    mask_pattern = p.sparse and bs % block != 0

    def pattern(r0: int, r1: int, c0: int, c1: int) -> tuple:  # (any 1, all 1) over the pattern blocks met
        if not p.sparse:
            return True, True
        cells = [row[c0 // bs:(c1 - 1) // bs + 1] for row in p.block_mask[r0 // bs:(r1 - 1) // bs + 1]]
        return any("1" in x for x in cells), all("0" not in x for x in cells)

    pat = [[pattern(r * block, min(nq, (r + 1) * block), c * block, min(nk, (c + 1) * block)) for c in range(C)]
           for r in range(R)]
    lengths = key_lengths(p) if p.key_padded else [nk]
    by_length: dict = {}
    kv_num, kv_idx, full_num, full_idx = [], [], [], []
    for L in lengths:
        if L not in by_length:
            part_rows, full_rows = [], []
            for r in range(R):
                r0, r1 = r * block, min(nq, (r + 1) * block)
                part, full = [], []
                for c in range(C):
                    c0, c1 = c * block, min(nk, (c + 1) * block)
                    p_any, p_all = pat[r][c]
                    if not (p_any and (not p.causal or c0 <= r1 - 1) and c0 < L):
                        continue
                    if p_all and (not p.causal or c1 - 1 <= r0) and c1 <= L:
                        full.append(c)
                    else:
                        part.append(c)
                part_rows.append(part)
                full_rows.append(full)
            by_length[L] = (_ordered(part_rows, C), _ordered(full_rows, C))
        (pn, pi), (fn, fi) = by_length[L]
        kv_num.append(pn)
        kv_idx.append(pi)
        full_num.append(fn)
        full_idx.append(fi)
    return FlexBlocks(kv_num, kv_idx, full_num, full_idx, block, mask_pattern)


@dataclass(frozen=True)
class KvPages:
    """flashio's paged K/V layout (bench/core/problem.cpp kv_pages_of): `pages` physical pages of
    P keys; table[b][j] the physical page of sequence b's logical page j, or -1 past the
    sequence's pages (a paged varlen decode: sequence b has only ceil(L_b / P) of its own)."""
    page: int
    pages: int
    table: list


def kv_page_table(p: Problem) -> KvPages:
    """kv_pages_of: a Fisher-Yates shuffle of the physical pages by SplitMix64(seed ^ 0x9a6e5),
    dealt to the sequences' logical pages in order (the same pages flashio's kernels read)."""
    P = p.kv_page
    per_seq = -(-p.seqlen_k // P)
    used = [-(-n // P) for n in p.seq_lengths] if p.varlen_packed else [per_seq] * p.batch
    pages = sum(used)
    perm = list(range(pages))
    rng = SplitMix64(p.seed ^ 0x9A6E5)
    for i in range(pages - 1, 0, -1):
        j = rng.next() % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    table, nxt = [], 0
    for b in range(p.batch):
        table.append(perm[nxt:nxt + used[b]] + [-1] * (per_seq - used[b]))
        nxt += used[b]
    return KvPages(P, pages, table)


def flex_paged_blocks(p: Problem, kv: KvPages) -> FlexBlocks:
    """flex_blocks() of the logical problem with Flex's block = the page, each logical KV block
    replaced by its physical page (what PagedAttention.convert_logical_block_mask does), every
    row then listing the pages it does not use, increasing, up to kv.pages columns: the BlockMask
    of a flex_attention over the cache [1, Hkv, pages * P, d]. The blocks are those of the
    problem with every sequence's keys padded to whole pages and its real keys as key lengths
    (key_lengths: Nk, the padding's, or the varlen lengths): a page the keys end in is partial
    (Flex masks the tail of its own sequence length, which is the cache's here)."""
    per_seq = -(-p.seqlen_k // kv.page)
    whole_pages = dataclasses.replace(p, seqlen_k=per_seq * kv.page, seq_lengths=tuple(key_lengths(p)), padding=False)
    fb = flex_blocks(whole_pages, block=kv.page)

    def physical(nums, idxs, b):
        rows = []
        for n, idx in zip(nums, idxs):
            listed = [kv.table[b][c] for c in idx[:n]]
            taken = set(listed)
            rows.append(listed + [x for x in range(kv.pages) if x not in taken])
        return rows

    pick = (lambda lists, b: lists[b] if len(lists) == p.batch else lists[0])
    return FlexBlocks([pick(fb.kv_num, b) for b in range(p.batch)],
                      [physical(pick(fb.kv_num, b), pick(fb.kv_idx, b), b) for b in range(p.batch)],
                      [pick(fb.full_num, b) for b in range(p.batch)],
                      [physical(pick(fb.full_num, b), pick(fb.full_idx, b), b) for b in range(p.batch)],
                      kv.page, fb.mask_pattern)


def check_pairs(p: Problem, budget_macs: float = CHECK_BUDGET_MACS) -> tuple:
    """(pairs, scope): the (batch, query head) pairs of rows_to_check(), sorted and unique.
    All pairs when the reference of all rows (2*rows*Nk*d, bench/core/reference.cpp
    reference_cost) costs at most budget_macs, else (0,0), (B-1,H-1) and two pairs drawn from
    SplitMix64(seed ^ 0xc0ffee), b then h."""
    total_rows = p.batch * p.heads * p.seqlen
    if 2.0 * total_rows * p.seqlen_k * p.head_dim <= budget_macs:
        return [(b, h) for b in range(p.batch) for h in range(p.heads)], "all rows"
    rng = SplitMix64(p.seed ^ 0xC0FFEE)
    pairs = {(0, 0), (p.batch - 1, p.heads - 1)}
    for _ in range(2):
        b = rng.next() % p.batch
        h = rng.next() % p.heads
        pairs.add((b, h))
    return sorted(pairs), "sampled rows"


@dataclass(frozen=True)
class ReferenceHeads:
    """Which heads the float64 reference computes, for the checked (batch, query head) pairs.
    q_pairs: the query heads it computes O (and dQ) for, sorted: the checked pairs, and with
    gradients also every query head of their K/V heads, since dK and dV of a K/V head are sums
    over its group of query heads (as bench/measure/problem_data.cpp query_heads);
    kv_heads: the (batch, K/V head) pairs the checked pairs read, sorted (dK and dV are
    compared on these, all keys); kv_index[i]: the position in kv_heads of the K/V head that
    q_pairs[i] reads (h // group); checked[j]: the position in q_pairs of pairs[j]."""
    q_pairs: tuple
    kv_heads: tuple
    kv_index: tuple
    checked: tuple


def reference_heads(p: Problem, pairs: Sequence, with_grad: bool) -> ReferenceHeads:
    g = p.group
    kv = sorted({(b, h // g) for b, h in pairs})
    q = set(pairs)
    if with_grad:
        q.update((b, hk * g + j) for b, hk in kv for j in range(g))
    q_pairs = sorted(q)
    kv_pos = {x: i for i, x in enumerate(kv)}
    q_pos = {x: i for i, x in enumerate(q_pairs)}
    return ReferenceHeads(q_pairs=tuple(q_pairs), kv_heads=tuple(kv),
                          kv_index=tuple(kv_pos[(b, h // g)] for b, h in q_pairs),
                          checked=tuple(q_pos[x] for x in pairs))


def tolerance_for(dtype: str, gradient: bool = False) -> tuple:
    """(atol as a fraction of the reference RMS, rtol)."""
    return (GRAD_TOLERANCE if gradient else TOLERANCE)[dtype]


def make_check(tensor_stats: Sequence[dict], rows_checked: int, rows_total: int, scope: str,
               grad_scope: Optional[str] = None) -> dict:
    """The record's check object from per-tensor comparisons, as bench/measure/check.cpp add_tensor():
    tensor_stats are dicts {name, max_abs_err, max_rel_err, worst_ratio, atol, rtol,
    elements, finite}, O ("o") first. The overall max_abs_err, max_rel_err and worst_ratio
    are the worst over the tensors (null when any tensor saw a NaN or an infinity); atol and
    rtol are O's; passed iff every tensor is finite with worst_ratio <= 1. The per-tensor
    figures go to "tensors" (keyed o, dq, dk, dv); backward passes add "grad_scope"."""
    finite = all(t["finite"] for t in tensor_stats)

    def worst(key: str) -> Optional[float]:
        return max(float(t[key]) for t in tensor_stats) if finite else None

    o = tensor_stats[0]
    check = {
        "passed": bool(finite and all(t["worst_ratio"] <= 1.0 for t in tensor_stats)),
        "max_abs_err": worst("max_abs_err"),
        "max_rel_err": worst("max_rel_err"),
        "worst_ratio": worst("worst_ratio"),
        "atol": float(o["atol"]),
        "rtol": float(o["rtol"]),
        "rows_checked": int(rows_checked),
        "rows_total": int(rows_total),
        "lse_checked": False,
        "scope": scope,
    }
    if grad_scope:
        check["grad_scope"] = grad_scope
    check["tensors"] = {
        t["name"]: {
            "max_abs_err": float(t["max_abs_err"]) if t["finite"] else None,
            "max_rel_err": float(t["max_rel_err"]) if t["finite"] else None,
            "worst_ratio": float(t["worst_ratio"]) if t["finite"] else None,
            "atol": float(t["atol"]),
            "rtol": float(t["rtol"]),
            "elements": int(t["elements"]),
        }
        for t in tensor_stats
    }
    return check


def check_failure_reason(check: dict) -> str:
    """As bench/measure/runner.cpp: the failing tensors and their |err|/tol."""
    worst = ""
    for name, t in check.get("tensors", {}).items():
        r = t["worst_ratio"]
        if r is None or r > 1.0:
            worst += f" {name}: " + ("nan" if r is None else f"{r:.3g}")
    return f"correctness check failed (|err|/tol per tensor:{worst}); not timed"


def grad_scope_text(scope: str, kv_heads: int, all_kv_heads: int) -> str:
    """bench/measure/runner.cpp's grad_scope wording for what this script checks: dQ on the rows of
    the checked (batch, head) pairs, dK and dV on the K/V heads those pairs read (all keys):
    kv_heads of the B*Hkv (with GQA/MQA fewer than the pairs: a group shares one)."""
    return f"dq: {'all' if scope == 'all rows' else 'sampled'} rows; dk, dv: {kv_heads} of {all_kv_heads} K/V heads"


# --------------------------------------------------------------------------------------
# Timing statistics (bench/measure/timing.cpp summarize)
# --------------------------------------------------------------------------------------


def summarize(seconds: Sequence[float], warmup: int, flushed: bool, clock: str = "cuda_events") -> dict:
    samples = [float(x) for x in seconds]  # in the order run: time.samples_s
    s = sorted(samples)
    n = len(s)
    if n == 0:
        raise ValueError("no samples")
    median = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    mean = sum(s) / n
    var = sum((x - mean) ** 2 for x in s)
    return {
        "median_s": median,
        "min_s": s[0],
        "max_s": s[-1],
        "mean_s": mean,
        "stddev_s": math.sqrt(var / (n - 1)) if n > 1 else 0.0,
        "reps": n,
        "warmup": int(warmup),
        "l2_flushed": bool(flushed),
        "clock": clock,
        "samples_s": samples,
    }


# --------------------------------------------------------------------------------------
# Records and the result file (bench/core/record.cpp to_json)
# --------------------------------------------------------------------------------------

COUNTERS_NOT_COLLECTED = {"status": "not_collected", "reason": "peers are measured without counters"}
COUNTER_SETS = ("off", "dram", "full")
# The inner run under flashio profile: the counters are in the profile's range records.
COUNTERS_IN_PROFILE = {"status": "not_collected",
                       "reason": "the counter pass ran under flashio profile: its range record named like this "
                                 "record holds the counters (merge_profile_counters)"}
# The NVTX ranges of the counter passes: every record name starts with its method (sdpa_*, flex_attention).
PROFILE_RANGE = "^(sdpa_[a-z]+|" + FLEX_METHOD + ")/"


def build_record(pt: Point, device_index: int, status: str, reason: Optional[str] = None,
                 check: Optional[dict] = None, time: Optional[dict] = None,
                 memory: Optional[dict] = None) -> dict:
    """One record as the schema wants it. `reason` is dropped when empty (as the C++);
    tflops is added when there is a time; tiles are omitted (SDPA does not expose them)."""
    if status not in ("ok", "skipped", "oom", "error"):
        raise ValueError(f"bad status {status!r}")
    f = pt.flops
    r: dict = {
        "name": pt.name(),
        "method": pt.method,
        "pass": pt.pass_,
        "problem": dict(pt.problem_json),
        "status": status,
        "device_index": int(device_index),
        "flops": f,
    }
    if reason:
        r["reason"] = reason
    if check is not None:
        r["check"] = check
    if time is not None:
        r["time"] = time
        if time["median_s"] > 0:
            r["tflops"] = f / time["median_s"] / 1e12
    if memory is not None:
        r["memory"] = {k: int(memory[k]) for k in ("inputs_bytes", "outputs_bytes", "workspace_bytes")}
    r["counters"] = dict(COUNTERS_NOT_COLLECTED)
    return r


def build_result_file(run_id: str, created: str, command_line: str, build: dict, device: dict,
                      records: list) -> dict:
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "created": created,
        "producer": PRODUCER,
        "command_line": command_line,
        "build": build,
        "device": device,
        "records": records,
    }


def _json_safe(x: Any) -> Any:
    """NaN and infinities become null, as nlohmann writes them (JSON has neither)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def write_result_file(doc: dict, path: str) -> None:
    """Atomic: write path.tmp, fsync, os.replace onto path."""
    tmp = path + ".tmp"
    text = json.dumps(_json_safe(doc), indent=1, allow_nan=False) + "\n"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def utc_timestamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id() -> str:
    return secrets.token_hex(8)


def format_time(s: float) -> str:
    """bench/sweep/table.cpp format_time."""
    if s >= 1.0:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.1f} us"


def format_table(records: Sequence[dict]) -> str:
    w = max([5] + [len(r["name"]) for r in records])
    lines = [f"{'point':<{w}}  {'status':>7}  {'median ms':>10}  {'TFLOP/s':>8}  {'err/tol':>8}  note"]
    for r in records:
        med = f"{r['time']['median_s'] * 1e3:.3f}" if "time" in r else "-"
        tf = f"{r['tflops']:.1f}" if "tflops" in r else "-"
        wr = r.get("check", {}).get("worst_ratio") if "check" in r else None
        err = f"{wr:.3f}" if isinstance(wr, float) else ("nan" if "check" in r else "-")
        note = r.get("reason", "")
        if len(note) > 90:
            note = note[:87] + "..."
        lines.append(f"{r['name']:<{w}}  {r['status']:>7}  {med:>10}  {tf:>8}  {err:>8}  {note}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------
# Failures: skipped / oom / error
# --------------------------------------------------------------------------------------


def _first_line(msg: str) -> str:
    for line in str(msg).splitlines():
        line = line.strip()
        if line:
            return line
    return ""


def _clean_warning(msg: str) -> str:
    """First line of a TORCH_WARN, without its '(Triggered internally at ...)' suffix."""
    line = _first_line(msg)
    line = re.sub(r"\s*\(Triggered internally at [^)]*\)\.?\s*$", "", line)
    return line.strip()


def classify_failure(exc: BaseException, warning_messages: Sequence[str] = (),
                     oom_type: Optional[type] = None, flex: bool = False) -> tuple:
    """(status, reason) of an exception raised while measuring a point.
    OutOfMemoryError -> oom; a refusal ("No available kernel", "not supported", ...,
    NotImplementedError) -> skipped with the first line of the message and the back-end's
    explanation warnings; anything else -> error with the message. flex: also any exception
    whose message says flex_attention (or Inductor compiling it) cannot run the point
    (_FLEX_REFUSAL_PATTERNS: "NYI", "unsupported", no Triton config that fits, ...): torch
    raises those as ValueError, AssertionError or wrapped in a compiler error."""
    msg = _first_line(str(exc)) or type(exc).__name__
    low = str(exc).lower()
    if ((oom_type is not None and isinstance(exc, oom_type)) or type(exc).__name__ == "OutOfMemoryError"
            or (isinstance(exc, RuntimeError) and any(p in low for p in _OOM_PATTERNS))):
        return "oom", msg
    if isinstance(exc, NotImplementedError) or (
            isinstance(exc, RuntimeError) and any(p in low for p in _REFUSAL_PATTERNS)) or (
            flex and any(p in low for p in _REFUSAL_PATTERNS + _FLEX_REFUSAL_PATTERNS)):
        why = ""
        for w in _dedupe(w for w in (_clean_warning(m) for m in warning_messages) if w):
            # "X kernel not used because:" heads the lines that explain it
            why += (" " if why.endswith(":") else "; " if why else "") + w
        reason = msg + (f" ({why})" if why else "")
        if len(reason) > 600:
            reason = reason[:597] + "..."
        return "skipped", reason
    full = str(exc).strip().replace("\n", " | ")
    if len(full) > 600:
        full = full[:597] + "..."
    return "error", f"{type(exc).__name__}: {full}" if full else type(exc).__name__


# --------------------------------------------------------------------------------------
# GPU side (torch imported here only)
# --------------------------------------------------------------------------------------


class L2Flusher:
    """Evicts L2 by READING a buffer of max(2 x L2, 8 MiB) bytes (torch.sum into a 0-d
    tensor: only the reduction's few bytes are written), as bench/cuda/device_util.cu. The
    buffer is written once, at construction, never per repetition."""

    def __init__(self, torch, l2_bytes: int, device):
        nbytes = max(2 * int(l2_bytes), 8 << 20)
        n = (nbytes + 15) // 16 * 4  # float32 elements, 16-byte multiple
        self.torch = torch
        self.buf = torch.ones(n, dtype=torch.float32, device=device)
        self.sink = torch.empty((), dtype=torch.float32, device=device)
        torch.cuda.synchronize(device)

    def flush(self) -> None:
        self.torch.sum(self.buf, 0, out=self.sink)


def time_gpu(torch, call: Callable[[], Any], warmup: int, reps: int, flusher: Optional[L2Flusher]) -> dict:
    """bench/measure/timing.cpp time_gpu: warm-up, then per repetition flush (untimed) and CUDA
    events around the call on the current stream; one synchronize at the end."""
    for _ in range(warmup):
        call()
    stream = torch.cuda.current_stream()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if flusher is not None:
            flusher.flush()
        starts[i].record(stream)
        call()
        stops[i].record(stream)
    stream.synchronize()
    seconds = [starts[i].elapsed_time(stops[i]) * 1e-3 for i in range(reps)]
    return summarize(seconds, warmup, flusher is not None, "cuda_events")


def _nbytes(*tensors) -> int:
    return sum(int(t.numel()) * int(t.element_size()) for t in tensors)


def measure_memory(torch, call: Callable[[], Any], device, inputs_bytes: int, extra_outputs_bytes: int = 0) -> tuple:
    """(result of call, memory dict): peak allocator bytes during the call beyond what was
    allocated before it and beyond the tensors it returns."""
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    result = call()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    tensors = result if isinstance(result, (tuple, list)) else (result,)
    returned = _nbytes(*[t for t in tensors if t is not None])
    mem = {
        "inputs_bytes": inputs_bytes,
        "outputs_bytes": returned + extra_outputs_bytes,
        "workspace_bytes": max(0, peak - before - returned),
    }
    return result, mem


class ProblemData:
    """Inputs and reference values of one problem, kept while consecutive points share it.
    Q (and dO) [B, H, Nq, d] from streams 1 (and 4), K and V [B, Hkv, Nk, d] from streams 2
    and 3: the same bits as flashio's tensors of the same problem (each a flat stream of its
    own element count, as bench/measure/problem_data.cpp generate)."""

    def __init__(self, torch, p: Problem, device):
        self.torch, self.p, self.device = torch, p, device
        q_shape = (p.batch, p.heads, p.seqlen, p.head_dim)
        kv_shape = (p.batch, p.kv_heads, p.seqlen_k, p.head_dim)
        self.q = make_input(torch, p.q_elements(), p.dtype, p.seed, 1, device).view(q_shape)
        self.k = make_input(torch, p.kv_elements(), p.dtype, p.seed, 2, device).view(kv_shape)
        self.v = make_input(torch, p.kv_elements(), p.dtype, p.seed, 3, device).view(kv_shape)
        self.do = None
        # key padding: the keys of each sequence (int32, as flex's mask_mod reads them); block
        # sparsity: flashio's block mask (bool [R, C])
        self.key_lengths = (torch.tensor(key_lengths(p), dtype=torch.int32, device=device) if p.key_padded else None)
        self.sdpa_mask = None  # SDPA's key-padding attn_mask (sdpa_key_mask), made on first use
        self.block_mask = (torch.tensor([[ch == "1" for ch in row] for row in p.block_mask], dtype=torch.bool,
                                        device=device) if p.sparse else None)
        self.flex_mask = None  # flex's BlockMask of the problem (flex_call), made on first use
        self.paged = None  # a paged point's K/V cache for flex (paged_kv), made on first use
        self.pairs, self.scope = check_pairs(p)
        self.bi, self.hi = self._index(self.pairs)
        self.ref = None  # dict: heads (ReferenceHeads), o (and dq, dk, dv), float64

    def _index(self, pairs):
        t = self.torch
        return (t.tensor([b for b, _ in pairs], dtype=t.int64, device=self.device),
                t.tensor([h for _, h in pairs], dtype=t.int64, device=self.device))

    def paged_kv(self) -> tuple:
        """A paged point's (K cache, V cache, pages, physical-to-logical page map): the logical K
        and V moved into flashio's pages (kv_page_table), as flex_attention reads a paged cache
        (torch's PagedAttention): [1, Hkv, pages * P, d], the page's keys contiguous; slots no key
        fills are 0 (never visible: flex_paged_mask_mod). The map: int32 [B, pages], sequence b's
        logical page of each physical page, -1 for another sequence's."""
        if self.paged is None:
            t, p = self.torch, self.p
            kv = kv_page_table(p)
            P, per_seq = kv.page, -(-p.seqlen_k // kv.page)
            pairs = [(b, j, page) for b in range(p.batch) for j, page in enumerate(kv.table[b]) if page >= 0]
            bi, ji, pi = (t.tensor([x[i] for x in pairs], dtype=t.int64, device=self.device) for i in range(3))

            def cache(x):
                padded = t.nn.functional.pad(x, (0, 0, 0, per_seq * P - p.seqlen_k))
                slices = padded.view(p.batch, p.kv_heads, per_seq, P, p.head_dim).permute(0, 2, 1, 3, 4)
                c = t.zeros((kv.pages, p.kv_heads, P, p.head_dim), dtype=x.dtype, device=self.device)
                c[pi] = slices[bi, ji]
                return c.permute(1, 0, 2, 3).reshape(1, p.kv_heads, kv.pages * P, p.head_dim).contiguous()

            to_logical = t.full((p.batch, kv.pages), -1, dtype=t.int32, device=self.device)
            to_logical[bi, pi] = ji.to(t.int32)
            self.paged = (cache(self.k), cache(self.v), kv, to_logical)
        return self.paged

    def grad_output(self):
        if self.do is None:
            p = self.p
            self.do = make_input(self.torch, p.q_elements(), p.dtype, p.seed, 4, self.device).view(self.q.shape)
        return self.do

    def reference(self, with_grad: bool) -> dict:
        """float64 reference on the heads of reference_heads(): o and dq [len(q_pairs), Nq, d],
        dk and dv [len(kv_heads), Nk, d]; "checked" indexes the checked pairs' rows of o, dq."""
        if self.ref is None or (with_grad and "dq" not in self.ref):
            t = self.torch
            heads = reference_heads(self.p, self.pairs, with_grad)
            qb, qh = self._index(heads.q_pairs)
            kb, kh = self._index(heads.kv_heads)
            f64 = t.float64
            self.ref = None  # free the forward-only reference first
            ref = reference_attention(
                TorchOps(t), self.q[qb, qh].to(f64), self.k[kb, kh].to(f64), self.v[kb, kh].to(f64),
                t.tensor(heads.kv_index, dtype=t.int64, device=self.device),
                self.grad_output()[qb, qh].to(f64) if with_grad else None, self.p.softmax_scale, self.p.causal,
                key_len=self.key_lengths[qb] if self.key_lengths is not None else None,
                block_mask=self.block_mask, sparse_block=self.p.sparse_block)
            ref["heads"] = heads
            ref["checked"] = t.tensor(heads.checked, dtype=t.int64, device=self.device)
            self.ref = ref
        return self.ref

    def gather(self, t):
        """The checked (batch, query head) pairs of a [B, H, Nq, d] tensor, in float64."""
        return t[self.bi, self.hi].to(self.torch.float64)

    def gather_kv(self, t):
        """The reference's K/V heads of a [B, Hkv, Nk, d] tensor (dK, dV), in float64."""
        kb, kh = self._index(self.ref["heads"].kv_heads)
        return t[kb, kh].to(self.torch.float64)

    @property
    def rows_checked(self) -> int:
        return len(self.pairs) * self.p.seqlen


class TorchOps:
    """The array operations reference_attention() needs, on torch tensors (tests/
    test_peers_sdpa.py gives it the same on numpy arrays, to check it without torch)."""

    def __init__(self, torch):
        self.torch = torch

    def empty_like(self, x):
        return self.torch.empty_like(x)

    def zeros_like(self, x):
        return self.torch.zeros_like(x)

    def arange(self, start: int, stop: int, like):
        return self.torch.arange(start, stop, device=like.device)

    def take(self, x, index):  # x[index] along the first axis
        return x[index]

    def t(self, x):  # swap the last two axes
        return x.transpose(-2, -1)

    def mask_(self, s, mask):  # s[..., mask] = -inf, in place
        return s.masked_fill_(mask, float("-inf"))

    def softmax(self, s):  # along the last axis
        return self.torch.softmax(s, dim=-1)

    def softmax_or_zero(self, s):  # softmax along the last axis; a row of only -inf gives zeros
        t = self.torch
        m = s.amax(dim=-1, keepdim=True)
        e = t.exp(s - t.where(t.isfinite(m), m, t.zeros_like(m)))
        z = e.sum(dim=-1, keepdim=True)
        return e / t.where(z > 0, z, t.ones_like(z))

    def rowsum(self, x):  # along the last axis, kept
        return x.sum(dim=-1, keepdim=True)

    def index_add_(self, x, index, y):  # x[index[i]] += y[i], repeated indices summed
        x.index_add_(0, index, y)


def reference_blocks(nq: int, nk: int, d: int, block_elements: int = REFERENCE_BLOCK_ELEMENTS) -> tuple:
    """(query rows, query heads) per block of reference_attention(): the scores of a block
    (heads x rows x Nk) and the K or V gathered for it (heads x Nk x d) stay within
    block_elements float64 elements (or one row of one head, if that alone is more)."""
    rows = max(1, min(nq, block_elements // max(1, nk)))
    return rows, max(1, block_elements // (max(rows, d) * max(1, nk)))


def reference_attention(ops, q, k, v, kv_index, do, scale: float, causal: bool,
                        block_elements: int = REFERENCE_BLOCK_ELEMENTS, key_len=None, block_mask=None,
                        sparse_block: int = 0) -> dict:
    """float64 softmax(scale*QK^T + mask)V for P query heads q [P, Nq, d] against G K/V heads
    k, v [G, Nk, d], query head i reading K/V head kv_index[i] (GQA: several query heads share
    one); with dO [P, Nq, d] also the exact gradients: D = rowsum(dO*O), dS = P*(dO V^T - D),
    dQ = scale dS K, dK = scale dS^T Q, dV = P^T dO, dK and dV of a K/V head summed over the
    query heads that read it. Computed in blocks of query rows and of query heads, so that
    neither the scores (rows x Nk) nor the K/V gathered for a block (d x Nk per head) pass
    block_elements float64 elements, whatever Nk (decode: Nq = 1 against Nk = 128k). Causal is
    top-left aligned, as flashio's reference and torch's is_causal: key j is visible to query
    i iff j <= i, also when Nq != Nk (so query 0 sees key 0 only, and with Nq > Nk the rows
    i >= Nk - 1 see every key): every row sees key 0, none is empty. `ops`: TorchOps.
    Key padding: key_len [P] (an array of ops), the keys query head i's sequence has: key j is
    visible iff j < key_len[i] (a length of 0, a varlen point's padded twin: no key). Block sparsity: block_mask [R, C] (a boolean array of ops), over
    sparse_block x sparse_block element blocks: (i, j) is visible only where
    block_mask[i // sparse_block, j // sparse_block]; a row that then sees no key has O = 0 and
    zero gradients (bench/core/reference.cpp)."""
    P, N, d = q.shape
    Nk = k.shape[1]
    rows, pchunk = reference_blocks(N, Nk, d, block_elements)
    o = ops.empty_like(q)
    grads = do is not None
    if grads:
        dq, dk, dv = ops.empty_like(q), ops.zeros_like(k), ops.zeros_like(v)
    cols = ops.arange(0, Nk, q)
    col_blocks = cols // sparse_block if block_mask is not None else None
    for p0 in range(0, P, pchunk):
        p1 = min(P, p0 + pchunk)
        idx = kv_index[p0:p1]
        qc, kc, vc = q[p0:p1], ops.take(k, idx), ops.take(v, idx)
        if grads:
            dkc, dvc = ops.zeros_like(kc), ops.zeros_like(vc)
        for r0 in range(0, N, rows):
            r1 = min(N, r0 + rows)
            s = (qc[:, r0:r1] @ ops.t(kc)) * scale
            if causal and r0 < Nk - 1:  # rows from Nk - 1 on see every key
                s = ops.mask_(s, cols[None, :] > ops.arange(r0, r1, q)[:, None])
            if key_len is not None:
                s = ops.mask_(s, cols[None, None, :] >= key_len[p0:p1, None, None])
            if block_mask is not None:
                row_blocks = ops.arange(r0, r1, q) // sparse_block
                s = ops.mask_(s, ~block_mask[row_blocks[:, None], col_blocks[None, :]])
            if block_mask is not None or key_len is not None:
                pr = ops.softmax_or_zero(s)  # a row whose blocks are all 0, or of a length 0 (varlen), sees no key
            else:
                pr = ops.softmax(s)
            del s
            ob = pr @ vc
            o[p0:p1, r0:r1] = ob
            if grads:
                dob = do[p0:p1, r0:r1]
                ds = pr * (dob @ ops.t(vc) - ops.rowsum(dob * ob))
                dq[p0:p1, r0:r1] = (ds @ kc) * scale
                dkc += (ops.t(ds) @ qc[:, r0:r1]) * scale
                dvc += ops.t(pr) @ dob
                del ds
            del pr
        if grads:
            ops.index_add_(dk, idx, dkc)
            ops.index_add_(dv, idx, dvc)
            del dkc, dvc
        del kc, vc
    out = {"o": o}
    if grads:
        out.update(dq=dq, dk=dk, dv=dv)
    return out


def compare_tensor(torch, name: str, got, ref, atol_rms: float, rtol: float) -> dict:
    """bench/measure/check.cpp compare_tensor on one tensor, in float64 on the GPU: atol =
    atol_rms * max(RMS(ref), 1e-6); max |err|, max |err|/max(|ref|, 1e-6), max |err|/(atol +
    rtol*|ref|); a NaN or an infinity in either makes the tensor non-finite (it fails)."""
    got = got.to(torch.float64)
    finite = bool(torch.isfinite(got).all().item()) and bool(torch.isfinite(ref).all().item())
    rms = math.sqrt(float((ref * ref).mean().item())) if ref.numel() and finite else 0.0
    atol = atol_rms * max(rms, 1e-6)
    stats = {"name": name, "atol": atol, "rtol": rtol, "finite": finite, "elements": int(ref.numel()),
             "max_abs_err": math.nan, "max_rel_err": math.nan, "worst_ratio": math.nan}
    if finite:
        stats.update(max_abs_err=0.0, max_rel_err=0.0, worst_ratio=0.0)
    if finite and ref.numel():
        err = (got - ref).abs()
        aref = ref.abs()
        stats["max_abs_err"] = float(err.max().item())
        stats["max_rel_err"] = float((err / aref.clamp_min(1e-6)).max().item())
        stats["worst_ratio"] = float((err / (atol + rtol * aref)).max().item())
    return stats


def run_check(torch, data: ProblemData, o, grads=None) -> dict:
    """The check object for O and dQ of the checked (batch, query head) pairs, and dK, dV of
    the K/V heads they read."""
    p = data.p
    ref = data.reference(with_grad=grads is not None)
    a, r = tolerance_for(p.dtype)
    rows = ref["checked"]
    stats = [compare_tensor(torch, "o", data.gather(o), ref["o"][rows], a, r)]
    grad_scope = None
    if grads is not None:
        ga, gr = tolerance_for(p.dtype, gradient=True)
        dq, dk, dv = grads
        stats.append(compare_tensor(torch, "dq", data.gather(dq), ref["dq"][rows], ga, gr))
        stats.append(compare_tensor(torch, "dk", data.gather_kv(dk), ref["dk"], ga, gr))
        stats.append(compare_tensor(torch, "dv", data.gather_kv(dv), ref["dv"], ga, gr))
        grad_scope = grad_scope_text(data.scope, len(ref["heads"].kv_heads), p.batch * p.kv_heads)
    return make_check(stats, data.rows_checked, p.batch * p.heads * p.seqlen, data.scope, grad_scope)


def flex_mask_mod(causal: bool, lengths=None, pattern=None, sparse_block: int = 0) -> Optional[Callable]:
    """Flex's mask_mod(b, h, q_idx, kv_idx) -> bool for the partial blocks of flex_blocks():
    causal (top-left, as flashio: q_idx >= kv_idx), key padding (kv_idx < lengths[b]; lengths
    int32 [B]) and, where a Flex block spans pattern blocks, the pattern (pattern bool [R, C]
    looked up at (q_idx // sparse_block, kv_idx // sparse_block)), all that apply; None (Flex's
    noop_mask) when none does. Plain tensor operations: Flex vmaps it and Inductor fuses it."""
    conds: list = []
    if causal:
        conds.append(lambda b, h, q, kv: q >= kv)
    if lengths is not None:
        conds.append(lambda b, h, q, kv: kv < lengths[b])
    if pattern is not None:
        conds.append(lambda b, h, q, kv: pattern[q // sparse_block, kv // sparse_block])
    if not conds:
        return None

    def mask_mod(b, h, q_idx, kv_idx):
        m = conds[0](b, h, q_idx, kv_idx)
        for c in conds[1:]:
            m = m & c(b, h, q_idx, kv_idx)
        return m

    return mask_mod


def flex_paged_mask_mod(causal: bool, lengths, to_logical, page: int) -> Callable:
    """mask_mod over a paged cache (flex_paged_blocks): physical key kv_idx is sequence b's
    logical key (to_logical[b, kv_idx // P] * P + kv_idx % P) when its page is b's, and visible
    when that key is below b's length (lengths int32 [B]) and, causal, not after the query (top-left)."""

    def mask_mod(b, h, q_idx, kv_idx):
        lp = to_logical[b, kv_idx // page]
        key = lp * page + kv_idx % page
        m = (lp >= 0) & (key < lengths[b])
        return m & (q_idx >= key) if causal else m

    return mask_mod


def flex_block_tensors(torch, fb: FlexBlocks, device) -> tuple:
    """(kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices): int32 tensors
    [B', 1, R] and [B', 1, R, C] (B' = 1, broadcast, without key padding; one head, broadcast)."""
    def t(x):
        return torch.tensor(x, dtype=torch.int32, device=device).unsqueeze(1).contiguous()

    return t(fb.kv_num), t(fb.kv_idx), t(fb.full_num), t(fb.full_idx)


def flex_block_mask(torch, data: ProblemData, device):
    """The point's BlockMask (BlockMask.from_kv_blocks): flex_blocks() of the problem, Flex's block
    FLEX_BLOCK, flex_mask_mod() for the partial blocks, seq_lengths (Nq, Nk)."""
    from torch.nn.attention.flex_attention import BlockMask

    p = data.p
    if p.kv_page:  # a paged cache: the pages flashio's kernels read
        _, _, kv, to_logical = data.paged_kv()
        fb = flex_paged_blocks(p, kv)
        lengths = torch.tensor(key_lengths(p), dtype=torch.int32, device=device)
        return BlockMask.from_kv_blocks(*flex_block_tensors(torch, fb, device), BLOCK_SIZE=fb.block,
                                        mask_mod=flex_paged_mask_mod(p.causal, lengths, to_logical, fb.block),
                                        seq_lengths=(p.seqlen, kv.pages * fb.block))
    fb = flex_blocks(p)
    kv_num, kv_idx, full_num, full_idx = flex_block_tensors(torch, fb, device)
    mask_mod = flex_mask_mod(p.causal, data.key_lengths, data.block_mask if fb.mask_pattern else None,
                             p.sparse_block)
    return BlockMask.from_kv_blocks(kv_num, kv_idx, full_num, full_idx, BLOCK_SIZE=fb.block, mask_mod=mask_mod,
                                    seq_lengths=(p.seqlen, p.seqlen_k))


_FLEX_COMPILED: list = []  # torch.compile(flex_attention), made once per process


def _flex_compiled(torch):
    """torch.compile(flex_attention, dynamic=False): kernels specialised to each point's shapes
    (Inductor's default configuration, no max-autotune). Each point (shape, mask_mod) is a
    recompilation: the recompile limit is raised, and hitting it raises
    (fail_on_recompile_limit_hit) rather than falling back to the unfused eager path. Donated
    buffers are off (the bwd pass's retain_graph)."""
    if not _FLEX_COMPILED:
        from torch.nn.attention.flex_attention import flex_attention
        import torch._dynamo.config
        import torch._functorch.config

        cfg = torch._dynamo.config
        for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                     "accumulated_cache_size_limit"):
            if hasattr(cfg, name):
                setattr(cfg, name, max(int(getattr(cfg, name)), 1 << 16))
        if hasattr(cfg, "fail_on_recompile_limit_hit"):
            cfg.fail_on_recompile_limit_hit = True
        # The bwd pass times autograd.grad(..., retain_graph=True) on one forward, again and again;
        # a backward compiled with donated buffers (the saved LSE reused in place) refuses that.
        if hasattr(torch._functorch.config, "donated_buffer"):
            torch._functorch.config.donated_buffer = False
        _FLEX_COMPILED.append(torch.compile(flex_attention, dynamic=False))
    return _FLEX_COMPILED[0]


def flex_call(torch, data: ProblemData, device) -> Callable:
    """attn(q, k, v) -> O: the compiled flex_attention with the point's BlockMask (made once per
    problem), scale 1/sqrt(d), enable_gqa when Hkv < H."""
    try:
        compiled = _flex_compiled(torch)
    except ImportError:
        raise NotImplementedError(f"this torch ({torch.__version__}) has no torch.nn.attention.flex_attention "
                                  "(PyTorch >= 2.5)") from None
    if data.flex_mask is None:
        data.flex_mask = flex_block_mask(torch, data, device)
    bm, scale, gqa = data.flex_mask, data.p.softmax_scale, data.p.kv_heads < data.p.heads

    def attn(q, k, v):
        return compiled(q, k, v, block_mask=bm, scale=scale, enable_gqa=gqa)

    return attn


def sdpa_key_mask(torch, p: Problem, lengths, device):
    """SDPA's boolean attn_mask of a key-padded point (True: attend): key j is visible to every
    query of sequence b iff j < lengths[b] (int32 [B], flashio's key_lengths), as [B, 1, 1, Nk]
    broadcast over heads and queries; causal folded in (SDPA takes no is_causal beside an
    attn_mask), top-left as flashio's (j <= i), as [B, 1, Nq, Nk]. A sequence of length 0 has
    rows with no True (every key masked: see empty_sequence_reason)."""
    cols = torch.arange(p.seqlen_k, device=device)
    keys = cols[None, :] < lengths.to(torch.int64)[:, None]  # [B, Nk]
    if not p.causal:
        return keys[:, None, None, :]
    rows = torch.arange(p.seqlen, device=device)
    return (keys[:, None, :] & (cols[None, None, :] <= rows[None, :, None]))[:, None]


def sdpa_function(torch, F, p: Problem, mask=None) -> Callable:
    """attn(q, k, v) -> O: F.scaled_dot_product_attention with scale 1/sqrt(d); is_causal, or with
    a key-padding mask (sdpa_key_mask) attn_mask=mask and the causal part in it; enable_gqa when
    Hkv < H (K, V [B, Hkv, Nk, d], query head h reads K/V head h // (H / Hkv): PyTorch >= 2.5)."""
    kwargs: dict = {"scale": p.softmax_scale}
    if mask is None:
        kwargs["is_causal"] = p.causal
    else:
        kwargs["attn_mask"] = mask
    if p.kv_heads != p.heads:
        kwargs["enable_gqa"] = True

    def sdpa(q, k, v):
        try:
            return F.scaled_dot_product_attention(q, k, v, **kwargs)
        except TypeError as e:
            if "enable_gqa" in kwargs and "enable_gqa" in str(e):
                raise NotImplementedError(f"this torch ({torch.__version__}) has no enable_gqa: GQA/MQA "
                                          "(kv_heads < heads) needs PyTorch >= 2.5") from None
            raise

    return sdpa


def empty_sequence_reason(torch, method: str, data: ProblemData, o, grads=None) -> str:
    """Why a key-padded SDPA point is skipped after its checked call, or "": where a sequence
    has length 0 (a varlen point's padded twin), its rows see no key — its attn_mask rows hold
    no True — and flashio defines O = 0 there, with zero gradients (bench/core/reference.cpp,
    the float64 reference here likewise). A back-end whose O (or dQ, dK, dV) on those sequences
    is not finite (a softmax over a row of -inf is NaN; the math back-end's _safe_softmax gives 0)
    computes something else there: skipped with that reason, not timed under flashio's name. A
    finite output is checked like every row (a non-zero one fails the check)."""
    if data.key_lengths is None:
        return ""
    empty = [b for b, n in enumerate(key_lengths(data.p)) if n == 0]
    if not empty:
        return ""
    index = torch.tensor(empty, dtype=torch.int64, device=o.device)
    named = [("O", o)] + (list(zip(("dQ", "dK", "dV"), grads)) if grads is not None else [])
    bad = [name for name, t in named if not bool(torch.isfinite(t[index]).all().item())]
    if not bad:
        return ""
    return (f"{method} gives non-finite {', '.join(bad)} for the sequence{'s' if len(empty) > 1 else ''} of length "
            f"0 (batch {', '.join(str(b) for b in empty)}: its attn_mask rows are all False, no key to attend); "
            "flashio's convention there is O = 0 with zero gradients, so the point is not checked or timed")


def measure_point(torch, pt: Point, data: ProblemData, cfg: Config, flusher: Optional[L2Flusher], device) -> dict:
    """Check, memory and timing of one point; returns the record's fields (status ok or
    a failed check). Exceptions propagate to the caller, which classifies them."""
    if pt.backend == FLEX:
        kv = data.paged_kv()[:2] if pt.problem.kv_page else None  # a paged point: the cache, its K/V
        return measure_attention(torch, pt, data, cfg, flusher, device, flex_call(torch, data, device), prime=True,
                                 kv=kv)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    p = pt.problem
    backend = getattr(SDPBackend, BACKENDS[pt.backend])
    mask = None
    if data.key_lengths is not None:  # key padding, a varlen point's padded twin: the attn_mask (made once)
        if data.sdpa_mask is None:
            data.sdpa_mask = sdpa_key_mask(torch, p, data.key_lengths, device)
        mask = data.sdpa_mask
    with sdpa_kernel(backend):
        return measure_attention(torch, pt, data, cfg, flusher, device, sdpa_function(torch, F, p, mask),
                                 prime=False, mask=mask)


def _prime(torch, attn: Callable, q, k, v, do, device) -> None:
    """One untimed call before anything is measured (flex: torch.compile compiles the forward,
    and for a backward pass the backward, here), and its outputs dropped."""
    if do is None:
        with torch.no_grad():
            attn(q, k, v)
    else:
        out = attn(q, k, v)
        torch.autograd.grad(out, (q, k, v), grad_outputs=do)
        del out
    torch.cuda.synchronize(device)


def measure_attention(torch, pt: Point, data: ProblemData, cfg: Config, flusher: Optional[L2Flusher], device,
                      attn: Callable, prime: bool, mask=None, kv=None) -> dict:
    """measure_point's protocol for attn(q, k, v) -> O: memory on the checked call, the check,
    then the timing. prime: one call first (compilation stays out of memory and timing). mask:
    SDPA's key-padding attn_mask, an input of the call (its bytes among the inputs'), whose
    sequences of length 0 are looked at first (empty_sequence_reason). kv: the K and V the call
    reads instead of data's (a paged cache; forward only)."""
    fields: dict = {}
    mask_bytes = _nbytes(mask) if mask is not None else 0
    if pt.pass_ == "fwd":
        q, (k, v) = data.q, kv if kv is not None else (data.k, data.v)
        if prime:
            _prime(torch, attn, q, k, v, None, device)
        with torch.no_grad():
            o, mem = measure_memory(torch, lambda: attn(q, k, v), device, _nbytes(q, k, v) + mask_bytes)
            fields["memory"] = mem
            why = empty_sequence_reason(torch, pt.method, data, o) if mask is not None else ""
            if why:  # not checked, not timed: a skipped record keeps no memory, as one skipped up front
                return {"status": "skipped", "reason": why}
            check = run_check(torch, data, o)
            fields["check"] = check
            del o
            if not check["passed"]:
                return dict(fields, status="error", reason=check_failure_reason(check))

            def call():
                attn(q, k, v)

            fields["time"] = time_gpu(torch, call, cfg.warmup, cfg.reps, flusher)
            if cfg.counters != "off":
                counter_pass(torch, pt.name(), call, flusher)
        return dict(fields, status="ok")

    do = data.grad_output()
    q = data.q.detach().requires_grad_()
    k = data.k.detach().requires_grad_()
    v = data.v.detach().requires_grad_()
    inputs = (q, k, v)
    in_bytes = _nbytes(q, k, v, do) + mask_bytes
    if prime:
        _prime(torch, attn, q, k, v, do, device)
    if pt.pass_ == "bwd":
        o = attn(q, k, v)  # the graph the timed backward runs on, again and again
        grads, mem = measure_memory(
            torch, lambda: torch.autograd.grad(o, inputs, grad_outputs=do, retain_graph=True),
            device, in_bytes, extra_outputs_bytes=_nbytes(o))

        def call():
            torch.autograd.grad(o, inputs, grad_outputs=do, retain_graph=True)
    else:
        def fwd_bwd():
            out = attn(q, k, v)
            return (out,) + tuple(torch.autograd.grad(out, inputs, grad_outputs=do))

        res, mem = measure_memory(torch, fwd_bwd, device, in_bytes)
        o, grads = res[0], res[1:]
        del res  # the checked tensors must not stay alive while timing

        def call():
            out = attn(q, k, v)
            torch.autograd.grad(out, inputs, grad_outputs=do)
    fields["memory"] = mem
    why = empty_sequence_reason(torch, pt.method, data, o.detach(), [g.detach() for g in grads]) if mask is not None else ""
    if why:
        return {"status": "skipped", "reason": why}
    check = run_check(torch, data, o.detach(), [g.detach() for g in grads])
    fields["check"] = check
    del grads
    if pt.pass_ == "fwdbwd":
        del o
    if not check["passed"]:
        return dict(fields, status="error", reason=check_failure_reason(check))
    fields["time"] = time_gpu(torch, call, cfg.warmup, cfg.reps, flusher)
    if cfg.counters != "off":
        counter_pass(torch, pt.name(), call, flusher)
    return dict(fields, status="ok")


def under_profile() -> bool:
    """Whether this process runs under `flashio profile` (its injection library logs to this file)."""
    return bool(os.environ.get("FLASHIO_PROFILE_LOG"))


def counter_pass(torch, name: str, call: Callable[[], Any], flusher: Optional["L2Flusher"]) -> None:
    """The one call flashio profile counts (as collect_counters in bench/measure/runner.cpp): L2
    flushed, then the call inside an NVTX range named like the record (the flush outside it)."""
    if flusher is not None:
        flusher.flush()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(name)
    try:
        call()
    finally:
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def merge_profile_counters(doc: dict, profile_doc: dict) -> int:
    """Copies each range record's counters of a `flashio profile` file into the record of the same
    name (the first range of that name); records with no range keep theirs, or, where they wait
    for it (COUNTERS_IN_PROFILE), say why there is none. Returns the records given counters."""
    prof = profile_doc.get("profile") or {}
    ranges: dict = {}
    for r in prof.get("records", []):
        if r.get("kind") == "range":
            ranges.setdefault(r["name"], r)
    why = "; ".join(prof.get("notes", [])) or "no kernel ran in its NVTX range"
    merged = 0
    for rec in doc["records"]:
        r = ranges.get(rec["name"])
        if r is not None:
            rec["counters"] = r["counters"]
            merged += 1
        elif rec.get("counters") == COUNTERS_IN_PROFILE:
            rec["counters"] = {"status": "unavailable", "reason": f"flashio profile recorded no range for it: {why}"}
    return merged


def run_under_profile(cfg: Config, argv: Sequence[str]) -> int:
    """This script again under `flashio profile`, then the counters merged into --out."""
    if not os.path.isfile(cfg.flashio):
        raise RuntimeFailure(f"--counters needs flashio profile: no flashio binary at {cfg.flashio}")
    out_dir = os.path.dirname(os.path.abspath(cfg.out))
    fd, profile_path = tempfile.mkstemp(prefix=".peers-profile-", suffix=".json", dir=out_dir)
    os.close(fd)
    try:
        # --cache-control none: the counter pass flushes L2 itself, once before the point's call
        # (counter_pass), as flashio run's does; the kernels of one pass then meet in L2 as they do
        # in use. flashio profile's default would clean it before every kernel of the pass.
        cmd = [cfg.flashio, "profile", "--counters", cfg.counters, "--cache-control", "none", "--range", PROFILE_RANGE,
               "--force", "--out", profile_path, "--", sys.executable, os.path.abspath(__file__)] + list(argv)
        rc = subprocess.run(cmd).returncode
        if os.path.getsize(profile_path) == 0 or not os.path.exists(cfg.out):
            return rc if rc != 0 else EXIT_RUNTIME
        with open(cfg.out, encoding="utf-8") as f:
            doc = json.load(f)
        with open(profile_path, encoding="utf-8") as f:
            profile_doc = json.load(f)
        merged = merge_profile_counters(doc, profile_doc)
        doc["command_line"] = join_command_line([sys.argv[0] if sys.argv and sys.argv[0] else PRODUCER] + list(argv))
        write_result_file(doc, cfg.out)
        print(f"{PROG}: counters ({cfg.counters}) of {merged} of {len(doc['records'])} records from flashio profile",
              file=sys.stderr)
        return rc
    finally:
        os.remove(profile_path)


def _git(args: Sequence[str]) -> Optional[str]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        r = subprocess.run(["git", "-C", root] + list(args), capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def build_info(torch, revision=None) -> dict:
    b: dict = {"torch_version": str(torch.__version__)}
    if torch.version.cuda:
        b["cuda_version"] = str(torch.version.cuda)
    try:
        v = torch.backends.cudnn.version()
        if v is not None:
            b["cudnn_version"] = int(v)
    except Exception:
        pass
    if revision:  # given by the caller (the flashio file of the same run): the tree's state is its to say
        b["git_revision"] = revision
        return b
    rev = _git(["rev-parse", "HEAD"])
    b["git_revision"] = rev.strip() if rev and rev.strip() else "unknown"
    if rev:
        st = _git(["status", "--porcelain", "--untracked-files=no"])
        if st is not None:
            b["git_dirty"] = bool(st.strip())
    return b


def _driver_version() -> Optional[int]:
    """cuDriverGetVersion from libcuda (same integer as cudaDriverGetVersion), or None."""
    try:
        import ctypes
        lib = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(v)) == 0:
            return int(v.value)
    except Exception:
        pass
    return None


def device_info(torch, index: int) -> dict:
    """Only what torch (or the driver) really reports; missing properties are left out."""
    pr = torch.cuda.get_device_properties(index)
    d: dict = {
        "index": index,
        "name": str(pr.name),
        "compute_capability": f"{pr.major}.{pr.minor}",
        "sm_count": int(pr.multi_processor_count),
    }

    def opt(key: str, attr: str) -> None:
        val = getattr(pr, attr, None)
        if isinstance(val, int) and not isinstance(val, bool) and val >= 0:
            d[key] = int(val)

    opt("smem_per_sm_bytes", "shared_memory_per_multiprocessor")
    opt("smem_per_block_optin_bytes", "shared_memory_per_block_optin")
    opt("l2_bytes", "L2_cache_size")
    opt("global_memory_bytes", "total_memory")
    opt("memory_clock_khz", "memory_clock_rate")
    opt("bus_width_bits", "memory_bus_width")
    opt("sm_clock_khz", "clock_rate")
    if d.get("memory_clock_khz", 0) > 0 and d.get("bus_width_bits", 0) > 0:
        # as DeviceInfo::peak_bandwidth_bytes_per_s: 2 (DDR) x clock x bus width
        d["peak_bandwidth_bytes_per_s"] = 2.0 * d["memory_clock_khz"] * 1e3 * d["bus_width_bits"] / 8.0
    drv = _driver_version()
    if drv is not None:
        d["driver_version"] = drv
    return d


def run(cfg: Config, argv: Sequence[str]) -> int:
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        raise RuntimeFailure(f"cannot import torch: {_first_line(str(e))}") from None
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: F401
    except Exception as e:  # noqa: BLE001
        raise RuntimeFailure(f"this torch ({torch.__version__}) has no torch.nn.attention.sdpa_kernel") from None
    if not torch.cuda.is_available():
        raise RuntimeFailure("no usable CUDA GPU (torch.cuda.is_available() is False)")
    n = torch.cuda.device_count()
    if cfg.device >= n:
        raise RuntimeFailure(f"GPU {cfg.device} does not exist (this machine has {n})")
    torch.cuda.set_device(cfg.device)
    device = torch.device("cuda", cfg.device)

    dev = device_info(torch, cfg.device)
    build = build_info(torch, cfg.git_revision)
    created = utc_timestamp()
    run_id = cfg.run_id or new_run_id()
    command_line = join_command_line([sys.argv[0] if sys.argv and sys.argv[0] else PRODUCER] + list(argv))

    _self_test_generator(torch, device)
    flusher = L2Flusher(torch, dev.get("l2_bytes", 0), device) if cfg.flush_l2 else None

    records: list = []
    data: Optional[ProblemData] = None
    poisoned = ""
    shown_warnings: set = set()
    total = len(cfg.points)
    for i, pt in enumerate(cfg.points):
        if pt.skip:  # known before any GPU work: the back-end (as driven here) cannot run it
            rec = build_record(pt, cfg.device, "skipped", pt.skip)
        elif poisoned:
            rec = build_record(pt, cfg.device, "error",
                               f"not run: the CUDA context was lost after an earlier error ({poisoned})")
        else:
            status, reason, fields, is_oom, fatal = "error", "", {}, False, False
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    if data is None or data.p != pt.problem:
                        data = None  # free the previous problem's tensors first
                        gc.collect()
                        data = ProblemData(torch, pt.problem, device)
                    fields = measure_point(torch, pt, data, cfg, flusher, device)
                    status, reason = fields.pop("status"), fields.pop("reason", "")
                except Exception as e:  # noqa: BLE001 - every failure becomes a record
                    status, reason = classify_failure(e, [str(w.message) for w in caught],
                                                      torch.cuda.OutOfMemoryError, flex=pt.backend == FLEX)
                    is_oom = status == "oom"
                    fatal = status == "error"
                    fields = {}  # a failed point keeps no partial check, time or memory
            if is_oom:
                gc.collect()
                torch.cuda.empty_cache()
            elif fatal:
                try:  # a sticky CUDA error makes every later call fail: say so once
                    torch.cuda.synchronize(device)
                except Exception as e:  # noqa: BLE001
                    poisoned = _first_line(str(e)) or type(e).__name__
                    data = None
            if status != "skipped":  # warnings of measured points go to stderr, once each
                for w in caught:
                    m = _clean_warning(str(w.message))
                    if m and m not in shown_warnings:
                        shown_warnings.add(m)
                        print(f"{PROG}: warning: {m}", file=sys.stderr)
            rec = build_record(pt, cfg.device, status, reason, fields.get("check"), fields.get("time"),
                               fields.get("memory"))
            if cfg.counters != "off" and status == "ok":
                rec["counters"] = dict(COUNTERS_IN_PROFILE)
        records.append(rec)
        if not cfg.quiet:
            what = format_time(rec["time"]["median_s"]) if "time" in rec else rec.get("reason", "")
            print(f"[{i + 1}/{total}] {rec['name']} {rec['status']} {what}", file=sys.stderr, flush=True)

    data = None
    doc = build_result_file(run_id, created, command_line, build, dev, records)
    write_result_file(doc, cfg.out)
    sys.stdout.write(format_table(records))
    print(f"torch {build['torch_version']} on {dev['name']} - {len(records)} points written to {cfg.out}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        cfg = parse_config(argv)
        if cfg.dry_run:
            for pt in cfg.points:
                print(f"{pt.name()}  skipped: {pt.skip}" if pt.skip else pt.name())
            skipped = sum(1 for pt in cfg.points if pt.skip)
            print(f"{len(cfg.points)} points" + (f" ({skipped} to be skipped)" if skipped else ""), file=sys.stderr)
            return 0
        check_writable(cfg.out)
    except BadInput as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        if cfg.counters != "off" and not under_profile():
            return run_under_profile(cfg, argv)
        return run(cfg, argv)
    except RuntimeFailure as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EXIT_RUNTIME


if __name__ == "__main__":
    sys.exit(main())

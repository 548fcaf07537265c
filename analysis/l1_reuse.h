// The SM↔L2 model's L1 term (issue 19): what an SM's L1 keeps of a thread block's own
// read-modify-write stream between two of its visits to the same rows. flash1's forward re-reads
// its fp32 O, ℓ, m with plain loads at every K/V tile (its Q, K, V come by cp.async.cg, past L1),
// and when a block's stream is short — many splits, or under a causal mask only the Q tiles at or
// below the K/V tile's diagonal — the re-read finds the rows still in L1 and never reaches the L2.
//
// Measured by the L1 probe (tests/gpu_l1_probe.cu, scripts/l1_probe.sh; H200,
// results/crosscheck/issue19-flash1-l1/): every block read-modify-writes its own fp32 slice four
// times beside the shared memory flash1's tiles take. What it showed:
// - The L1 left is 256 KiB less the shared-memory carve-out, and the driver sizes the carve-out for
//   the kernel's occupancy, not for the blocks a launch happens to place: one block of 92,160 B
//   keeps what two do (about 60 KiB of L1: the 196 KiB carve-out of two blocks), one of
//   139,264 B (one resident) about 92 KiB (164 KiB carve-out). GH100's carve-outs: 0, 8, 16, 32,
//   64, 100, 132, 164, 196, 228 KiB (kGh100SmemCarveouts).
// - A stream (every resident block's, together) up to about 0.8 of that L1 is kept whole; past it
//   the kept share falls over a soft edge to nothing at about 2× (kL1KeptCurves: the probe's
//   hits over the (passes − 1) / passes a slice that stays would hit).
// Measured on GH100 only: other chips get no L1 term (l1_reuse_of), and the model there counts
// every re-read at the L2 as before.
#pragma once

#include <cstdint>
#include <string>

namespace flashio::analysis {

struct L1Reuse {
  int64_t l1_bytes = 0;   // the SM's L1 beside the shared-memory carve-out; 0: no L1 term
  int blocks_per_sm = 1;  // the resident blocks whose streams share it (each assumed as long as this one's)
};

// The L1 a kernel's blocks share on `device_name`: 256 KiB less the smallest GH100 carve-out that
// holds `blocks_per_sm` × (`smem_per_block` + the 1 KiB the driver reserves per block); none
// ({}) on other chips or without the figures.
L1Reuse l1_reuse_of(const std::string& device_name, int64_t smem_per_block, int blocks_per_sm);

// The sectors of a re-read of `sectors` that reach the L2 when the block has streamed
// `window_bytes` of its own read-modify-write rows (these included) since it last touched them:
// all of them without an L1 term, else those the probe's curve (at the nearest measured L1 size,
// in stream / L1) says the L1 lost, rounded to whole sectors.
int64_t l1_missed_sectors(int64_t sectors, int64_t window_bytes, const L1Reuse& l1);

}  // namespace flashio::analysis

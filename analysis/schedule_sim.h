// A brute-force CPU walk of each fused kernel's tile loops — the same blocks, loops, warps and
// lanes as kernels/flash2/*.cuh and kernels/flash1/flash1_kernels.cuh, not the formula — that
// counts the 32-byte sectors every warp instruction touches at the SM↔L2 level. Its only use
// is to check analysis/io_model.h's closed forms (tests/test_analysis.cpp); it is slow
// (one step per 16-byte chunk) and meant for small shapes.
#pragma once
#include "analysis/io_model.h"

namespace flashio::analysis {

Traffic simulate_flash2_fwd(const Problem& p, const ModelTiles& t, const BlockMask& mask,
                            KvTileLoads loads = KvTileLoads::CutAtKeyLength);
Traffic simulate_flash2_bwd(const Problem& p, const ModelTiles& t, const BlockMask& mask, DqWidth dq = {});
Traffic simulate_flash1_fwd(const Problem& p, const ModelTiles& t, const L1Reuse& l1 = {});
Traffic simulate_flash1_bwd(const Problem& p, const ModelTiles& t, DqWidth dq = {});
// flash_decode's kernel (kernels/flash_decode/flash_decode_kernel.cuh) with the split count
// t.splits — the splits, their tickets and the last split's combine — its Q, K and V copies taking
// `copies` (the kernel's: CopyPath::ThroughL1).
Traffic simulate_flash_decode(const Problem& p, const ModelTiles& t, CopyPath copies);

// The whole pass: the point's model's simulator hook (analysis/models/, fused methods only).
Traffic simulate_sm_l2(const ModelPoint& m);

}  // namespace flashio::analysis

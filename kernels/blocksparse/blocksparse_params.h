// Host entry points of the block-sparse FlashAttention kernels (blocksparse_flash): flash2's
// forward and backward kernels compiled with kSparse (tile lists of the non-zero blocks; see
// the headers of kernels/flash2/flash2_{fwd,bwd}_kernel.cuh). Plain C++ for host code.
#pragma once
#include "kernels/flash2/flash2_params.h"

namespace flashio::kernels {

// Head dims with block-sparse kernels (compile time is bounded: two head dims, fp16 and bf16).
bool blocksparse_head_dim_compiled(int head_dim);

// The forward's one compiled tile for `head_dim` (flash2's first, fastest tile); false if none.
bool blocksparse_fwd_tile(int head_dim, KernelTile* out);

// Forward: params.sparse_ptr / sparse_idx are the row lists of the mask at `tile`'s Br × Bc.
void blocksparse_flash_fwd(const FwdParams& params, const KernelTile& tile, bool bf16, cudaStream_t stream);

// Backward: params.sparse_ptr / sparse_idx are the column lists of the mask at the backward's
// tile (flash2_bwd_tile).
void blocksparse_flash_bwd(const BwdParams& params, bool bf16, cudaStream_t stream);

}  // namespace flashio::kernels

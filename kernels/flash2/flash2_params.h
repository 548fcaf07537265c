// Host entry points of the flash2 kernels (mma.sync and, on Hopper, wgmma): their tile lists
// and launches. Plain C++ so host code can call them without CUDA headers.
#pragma once
#include <cstdint>

#include "kernels/common/attention_params.h"
#include "kernels/common/kernel_tile.h"
#include "kernels/flash2/hopper/flash2_fwd_wgmma_configs.h"

typedef struct CUstream_st* cudaStream_t;

namespace flashio::kernels {

// Tile configurations compiled for `head_dim`, in order of preference (fastest first).
// Returns the count written to `out` (at most `max`).
int flash2_fwd_tiles(int head_dim, KernelTile* out, int max);
// The default mma.sync forward tile on a GPU with `optin` bytes of shared memory per block: the
// first of the list that fits (flash2_fwd_pick in flash2_fwd_configs.h); false if none does.
bool flash2_fwd_tile_for(int head_dim, long long optin, KernelTile* out);

// Launches the forward kernel with tile `tile` (one of flash2_fwd_tiles(head_dim)).
// `bf16` selects the element type. Throws CudaError on a launch failure.
void flash2_fwd(const FwdParams& params, const KernelTile& tile, bool bf16, cudaStream_t stream);

// The backward's tile for `head_dim` (kernels/common/mma_bwd_configs.h) on a GPU with `smem_optin` bytes of
// shared memory per block: the first that fits, else the smallest (mma_bwd_pick). false if
// `head_dim` has none. flash2_bwd_tile: the first of the list (the only one below d = 256, and the
// one the block-sparse backward is compiled for).
bool flash2_bwd_tile_for(int head_dim, long long smem_optin, KernelTile* out);
bool flash2_bwd_tile(int head_dim, KernelTile* out);

// Backward with tile `tile` (one of kernels/common/mma_bwd_configs.h's for head_dim): preprocess (D, zero dQ
// accumulator), main kernel, dQ conversion.
void flash2_bwd(const BwdParams& params, const KernelTile& tile, bool bf16, cudaStream_t stream);

// ---- Hopper (sm_90a) kernels: kernels/flash2/hopper/ ---------------------------------------

// Shared memory of the wgmma forward: Q tile, two stages of K and V tiles (swizzle128, no
// padding), and 1024 bytes to align the first tile to the swizzle atom.
constexpr int flash2_fwd_wgmma_smem_bytes(int head_dim, int block_m, int block_n) {
  return (block_m + 4 * block_n) * head_dim * 2 + 1024;
}

// Whether this build has the wgmma kernels (CMAKE_CUDA_ARCHITECTURES names 90: they are built
// for sm_90a alongside); they run on compute capability 9.0 only.
bool flash2_wgmma_compiled();

// The wgmma forward's tile configurations for `head_dim` (those with a dropout variant when
// `dropout`), fastest first (0 if none: d ∉ {64, 128} or not compiled). Supports causal/padding
// masks, dropout and GQA, not block-sparse lists.
int flash2_fwd_wgmma_tiles(int head_dim, bool dropout, KernelTile* out, int max);
void flash2_fwd_wgmma(const FwdParams& params, const KernelTile& tile, bool bf16, cudaStream_t stream);

// Shared memory of the wgmma backward (Bc = 128 keys, Br = 64 queries): K and V tiles, two
// stages of Q and dO tiles, dSᵀ, two stages of L and D, and the 1024-byte alignment slack.
constexpr int flash2_bwd_wgmma_smem_bytes(int head_dim) {
  constexpr int bc = kFlash2BwdWgmmaTile.block_c, br = kFlash2BwdWgmmaTile.block_r;
  return 2 * bc * head_dim * 2 + 4 * br * head_dim * 2 + bc * br * 2 + 4 * br * 4 + 1024;
}

// The wgmma backward's tile for `head_dim` (false if none: d ∉ {64, 128} or not compiled);
// causal/padding masks, dropout and GQA, not the deterministic mode or block-sparse lists.
bool flash2_bwd_wgmma_tile(int head_dim, KernelTile* out);
// Preprocess (D, zero dQ accumulator), main kernel, dQ conversion.
void flash2_bwd_wgmma(const BwdParams& params, bool bf16, cudaStream_t stream);


}  // namespace flashio::kernels

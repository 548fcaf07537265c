// Arguments and host entry points of the flash1 kernels (plain C++, no CUDA headers).
#pragma once
#include "kernels/flash2/flash2_params.h"

namespace flashio::kernels {

// Forward: the flash2 argument block plus the HBM state Algorithm 1 keeps between outer
// iterations: O (fp32, as FlashAttention's own kernel accumulates it), ℓ and m.
struct Flash1FwdParams {
  FwdParams base;
  float* o_accum;  // [B, H, Nq, d]
  float* row_max;  // [B, H, Nq] m, in raw (unscaled) score units
  float* row_sum;  // [B, H, Nq] ℓ
  int splits;      // thread blocks per (batch, head): block z takes the Q tiles i ≡ z (mod splits)
};

// Backward: the flash2 argument block (dq_accum is read-modify-written, d_sum unused: D is
// computed in the loop as Algorithm 4 does) plus the forward's ℓ and m.
struct Flash1BwdParams {
  BwdParams base;
  const float* row_max;
  const float* row_sum;
  int splits;  // thread blocks per (batch, head): block z takes the K/V tiles j ≡ z (mod splits);
               // dQ by fp32 atomics when > 1, read-modify-write (Algorithm 4, line 21) when 1
};

// Compiled forward tiles for `head_dim` (block_m = Br, block_n = Bc). Returns the count.
int flash1_fwd_tiles(int head_dim, KernelTile* out, int max);
// The backward's tile for `head_dim` (Bc = Br = 64); false when none.
bool flash1_bwd_tile(int head_dim, KernelTile* out);
// The default forward tile on a GPU with `optin` bytes of shared memory per block: Algorithm 1's
// rule (flash1_fwd_pick in flash1_configs.h); false if no compiled tile fits it.
bool flash1_fwd_tile_for(int head_dim, long long optin, int element_bytes, KernelTile* out);

void flash1_fwd(const Flash1FwdParams& params, const KernelTile& tile, bool bf16, cudaStream_t stream);
void flash1_bwd(const Flash1BwdParams& params, bool bf16, cudaStream_t stream);

// Resident thread blocks per SM of the kernel these arguments would launch (the CUDA occupancy
// calculator: registers, shared memory, threads); chooses `splits`.
int flash1_fwd_blocks_per_sm(const Flash1FwdParams& params, const KernelTile& tile, bool bf16);
int flash1_bwd_blocks_per_sm(const Flash1BwdParams& params, bool bf16);

}  // namespace flashio::kernels

// Arguments of the flash2 kernels: plain C++ so host code can fill them without CUDA headers.
#pragma once
#include <cstdint>

typedef struct CUstream_st* cudaStream_t;

namespace flashio::kernels {

struct Flash2FwdParams {
  const void* q;  // [B, H, Nq, d]
  const void* k;  // [B, Hkv, Nk, d]
  const void* v;  // [B, Hkv, Nk, d]
  void* o;        // [B, H, Nq, d]
  float* lse;     // [B, H, Nq], natural log
  const int* key_lengths;  // [B] or null
  int batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim;
  float scale_log2;  // softmax scale · log2(e): scores live in base 2 inside the kernel
  bool causal;
  // Dropout (bench/core/philox.h): keep iff the 16-bit Philox value >= dropout_threshold (⌊p·2^16⌋).
  bool dropout;
  uint32_t dropout_threshold;
  float dropout_scale;  // 1 / (1 - p)
  uint64_t seed;
  // Block-sparse only (blocksparse_flash; ignored by the dense kernels): the non-zero K/V tiles
  // of Q tile i are sparse_idx[sparse_ptr[i] .. sparse_ptr[i+1]), increasing (bench/core/sparsity.h
  // by_rows of the mask at the forward's tile size).
  const int* sparse_ptr;  // [⌈Nq/Br⌉ + 1]
  const int* sparse_idx;  // [non-zero tiles]
};

struct Flash2BwdParams {
  const void* q;      // [B, H, Nq, d]
  const void* k;      // [B, Hkv, Nk, d]
  const void* v;      // [B, Hkv, Nk, d]
  const void* o;      // [B, H, Nq, d]
  const void* d_o;    // [B, H, Nq, d]
  const float* lse;   // [B, H, Nq] from the forward, natural log
  float* d_sum;       // [B, H, Nq] workspace: D = rowsum(dO ∘ O)
  float* dq_accum;    // [B, H, Nq, d] workspace: fp32 dQ, accumulated with atomics (or in turn)
  // Deterministic mode only: per (batch, query head, Q tile of the backward's Br) the count of
  // K/V tiles that have added their dQ contribution; zeroed by the launch. Null otherwise.
  int* dq_semaphore;  // [B, H, ⌈Nq/Br⌉]
  void* dq;           // [B, H, Nq, d]
  void* dk;           // [B, Hkv, Nk, d]
  void* dv;           // [B, Hkv, Nk, d]
  const int* key_lengths;
  int batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim;
  float scale;       // softmax scale
  float scale_log2;  // scale · log2(e)
  bool causal;
  bool dropout;
  uint32_t dropout_threshold;
  float dropout_scale;
  uint64_t seed;
  bool deterministic;  // dQ added by K/V tiles in order n = 0, 1, … (dq_semaphore), no atomics
  // Block-sparse only: the non-zero Q tiles of K/V tile j are sparse_idx[sparse_ptr[j] ..
  // sparse_ptr[j+1]), increasing (by_cols of the mask at the backward's tile size).
  const int* sparse_ptr;  // [⌈Nk/Bc⌉ + 1]
  const int* sparse_idx;
};

// One compiled tile configuration of the forward kernel.
struct Flash2Tile {
  int block_m;  // Br
  int block_n;  // Bc
  int warps;
  int stages;
  int smem_bytes;
  bool wgmma = false;  // Hopper warpgroup MMA with swizzled tiles (kernels/flash2/hopper/), else mma.sync
};

// Tile configurations compiled for `head_dim`, in order of preference (fastest first).
// Returns the count written to `out` (at most `max`).
int flash2_fwd_tiles(int head_dim, Flash2Tile* out, int max);
// The default mma.sync forward tile on a GPU with `optin` bytes of shared memory per block: the
// first of the list that fits (flash2_fwd_pick in flash2_fwd_configs.h); false if none does.
bool flash2_fwd_tile_for(int head_dim, long long optin, Flash2Tile* out);

// Launches the forward kernel with tile `tile` (one of flash2_fwd_tiles(head_dim)).
// `bf16` selects the element type. Throws CudaError on a launch failure.
void flash2_fwd(const Flash2FwdParams& params, const Flash2Tile& tile, bool bf16, cudaStream_t stream);

// The backward's tile for `head_dim` (flash2_bwd_config.h) on a GPU with `smem_optin` bytes of
// shared memory per block: the first that fits, else the smallest (flash2_bwd_pick). false if
// `head_dim` has none. flash2_bwd_tile: the first of the list (the only one below d = 256, and the
// one the block-sparse backward is compiled for).
bool flash2_bwd_tile_for(int head_dim, long long smem_optin, Flash2Tile* out);
bool flash2_bwd_tile(int head_dim, Flash2Tile* out);

// Backward with tile `tile` (one of flash2_bwd_config.h's for head_dim): preprocess (D, zero dQ
// accumulator), main kernel, dQ conversion.
void flash2_bwd(const Flash2BwdParams& params, const Flash2Tile& tile, bool bf16, cudaStream_t stream);

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
int flash2_fwd_wgmma_tiles(int head_dim, bool dropout, Flash2Tile* out, int max);
void flash2_fwd_wgmma(const Flash2FwdParams& params, const Flash2Tile& tile, bool bf16, cudaStream_t stream);

// Shared memory of the wgmma backward (Bc = 128 keys, Br = 64 queries): K and V tiles, two
// stages of Q and dO tiles, dSᵀ, two stages of L and D, and the 1024-byte alignment slack.
constexpr int flash2_bwd_wgmma_smem_bytes(int head_dim) {
  return 2 * 128 * head_dim * 2 + 4 * 64 * head_dim * 2 + 128 * 64 * 2 + 4 * 64 * 4 + 1024;
}

// The wgmma backward's tile for `head_dim` (false if none: d ∉ {64, 128} or not compiled);
// causal/padding masks, dropout and GQA, not the deterministic mode or block-sparse lists.
bool flash2_bwd_wgmma_tile(int head_dim, Flash2Tile* out);
// Preprocess (D, zero dQ accumulator), main kernel, dQ conversion.
void flash2_bwd_wgmma(const Flash2BwdParams& params, bool bf16, cudaStream_t stream);


}  // namespace flashio::kernels

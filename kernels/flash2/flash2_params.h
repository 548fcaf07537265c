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
};

// One compiled tile configuration of the forward kernel.
struct Flash2Tile {
  int block_m;  // Br
  int block_n;  // Bc
  int warps;
  int stages;
  int smem_bytes;
};

// Tile configurations compiled for `head_dim`, in order of preference (fastest first).
// Returns the count written to `out` (at most `max`).
int flash2_fwd_tiles(int head_dim, Flash2Tile* out, int max);

// Launches the forward kernel with tile `tile` (one of flash2_fwd_tiles(head_dim)).
// `bf16` selects the element type. Throws CudaError on a launch failure.
void flash2_fwd(const Flash2FwdParams& params, const Flash2Tile& tile, bool bf16, cudaStream_t stream);

}  // namespace flashio::kernels

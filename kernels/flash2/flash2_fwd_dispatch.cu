// The one dispatch point of flash2: run-time (element type, head dim) → template
// instantiation (two switches deep); the forward's tile choice is made inside.
#include <stdexcept>
#include <string>

#include "kernels/flash2/flash2_bwd_launch.cuh"
#include "kernels/flash2/flash2_fwd_launch.cuh"

namespace flashio::kernels {

#define FLASH2_HEAD_DIMS(X) X(32) X(64) X(96) X(128) X(256)

#define FLASH2_DECLARE(D)                                                                                   \
  extern template void run_flash2_fwd<half, D>(const Flash2FwdParams&, const Flash2Tile&, cudaStream_t);      \
  extern template void run_flash2_fwd<__nv_bfloat16, D>(const Flash2FwdParams&, const Flash2Tile&, cudaStream_t); \
  extern template void run_flash2_bwd<half, D>(const Flash2BwdParams&, const Flash2Tile&, cudaStream_t);       \
  extern template void run_flash2_bwd<__nv_bfloat16, D>(const Flash2BwdParams&, const Flash2Tile&, cudaStream_t);
FLASH2_HEAD_DIMS(FLASH2_DECLARE)

template <int D>
static int list_tiles(Flash2Tile* out, int max) {
  int n = 0;
  for (const auto& s : Flash2FwdConfigs<D>::list)
    if (n < max) out[n++] = {s.block_m, s.block_n, s.warps, s.stages, flash2_fwd_smem_bytes(D, s)};
  return n;
}

int flash2_fwd_tiles(int head_dim, Flash2Tile* out, int max) {
  switch (head_dim) {
#define FLASH2_TILES_CASE(D) \
  case D: return list_tiles<D>(out, max);
    FLASH2_HEAD_DIMS(FLASH2_TILES_CASE)
    default: return 0;
  }
}

template <typename T>
static void dispatch_head_dim(const Flash2FwdParams& p, const Flash2Tile& tile, cudaStream_t stream) {
  switch (p.head_dim) {
#define FLASH2_RUN_CASE(D)                     \
  case D:                                      \
    run_flash2_fwd<T, D>(p, tile, stream);     \
    return;
    FLASH2_HEAD_DIMS(FLASH2_RUN_CASE)
    default: throw std::invalid_argument("flash2: head dim " + std::to_string(p.head_dim) + " not compiled");
  }
}

void flash2_fwd(const Flash2FwdParams& p, const Flash2Tile& tile, bool bf16, cudaStream_t stream) {
  if (bf16) {
    dispatch_head_dim<__nv_bfloat16>(p, tile, stream);
  } else {
    dispatch_head_dim<half>(p, tile, stream);
  }
}

}  // namespace flashio::kernels

namespace flashio::kernels {

// Compiled with the kernels' flags in the kernels' library: its ptxVersion is theirs.
__global__ void fused_kernel_arch_probe() {}

FusedKernelArch fused_kernel_arch() {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, fused_kernel_arch_probe) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    return {};
  }
  return {attr.ptxVersion, attr.binaryVersion};
}

template <int D>
static Flash2Tile bwd_tile_of(Flash2BwdSpec s) {
  return {s.block_m, s.block_n, s.warps, 2, flash2_bwd_smem_bytes(D, s.block_n, s.block_m, s.warps)};
}

bool flash2_bwd_tile_for(int head_dim, long long smem_optin, Flash2Tile* out) {
  switch (head_dim) {
#define FLASH2_BWD_TILE_FOR_CASE(D)                              \
  case D: *out = bwd_tile_of<D>(flash2_bwd_pick<D>(smem_optin)); \
    return true;
    FLASH2_HEAD_DIMS(FLASH2_BWD_TILE_FOR_CASE)
    default: return false;
  }
}

bool flash2_bwd_tile(int head_dim, Flash2Tile* out) {
  switch (head_dim) {
#define FLASH2_BWD_TILE_CASE(D)                               \
  case D: *out = bwd_tile_of<D>(Flash2BwdConfigs<D>::list[0]); \
    return true;
    FLASH2_HEAD_DIMS(FLASH2_BWD_TILE_CASE)
    default: return false;
  }
}

template <typename T>
static void dispatch_bwd_head_dim(const Flash2BwdParams& p, const Flash2Tile& tile, cudaStream_t stream) {
  switch (p.head_dim) {
#define FLASH2_BWD_CASE(D)                 \
  case D:                                  \
    run_flash2_bwd<T, D>(p, tile, stream); \
    return;
    FLASH2_HEAD_DIMS(FLASH2_BWD_CASE)
    default: throw std::invalid_argument("flash2: head dim " + std::to_string(p.head_dim) + " not compiled");
  }
}

void flash2_bwd(const Flash2BwdParams& p, const Flash2Tile& tile, bool bf16, cudaStream_t stream) {
  if (bf16) {
    dispatch_bwd_head_dim<__nv_bfloat16>(p, tile, stream);
  } else {
    dispatch_bwd_head_dim<half>(p, tile, stream);
  }
}

}  // namespace flashio::kernels

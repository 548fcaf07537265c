// The one dispatch point of flash2: run-time (element type, head dim) → template
// instantiation (two switches deep). The tile lists are plain C++ (flash2_tiles.cpp).
#include <stdexcept>
#include <string>

#include "kernels/flash2/flash2_bwd_launch.cuh"
#include "kernels/flash2/flash2_fwd_launch.cuh"

namespace flashio::kernels {

#define FLASH2_DECLARE(D)                                                                                   \
  extern template void run_flash2_fwd<half, D>(const FwdParams&, const KernelTile&, cudaStream_t);      \
  extern template void run_flash2_fwd<__nv_bfloat16, D>(const FwdParams&, const KernelTile&, cudaStream_t); \
  extern template void run_flash2_bwd<half, D>(const BwdParams&, const KernelTile&, cudaStream_t);       \
  extern template void run_flash2_bwd<__nv_bfloat16, D>(const BwdParams&, const KernelTile&, cudaStream_t);
FLASH2_HEAD_DIMS(FLASH2_DECLARE)

template <typename T>
static void dispatch_head_dim(const FwdParams& p, const KernelTile& tile, cudaStream_t stream) {
  switch (p.head_dim) {
#define FLASH2_RUN_CASE(D)                     \
  case D:                                      \
    run_flash2_fwd<T, D>(p, tile, stream);     \
    return;
    FLASH2_HEAD_DIMS(FLASH2_RUN_CASE)
    default: throw std::invalid_argument("flash2: head dim " + std::to_string(p.head_dim) + " not compiled");
  }
}

void flash2_fwd(const FwdParams& p, const KernelTile& tile, bool bf16, cudaStream_t stream) {
  if (bf16) {
    dispatch_head_dim<__nv_bfloat16>(p, tile, stream);
  } else {
    dispatch_head_dim<half>(p, tile, stream);
  }
}

template <typename T>
static void dispatch_bwd_head_dim(const BwdParams& p, const KernelTile& tile, cudaStream_t stream) {
  switch (p.head_dim) {
#define FLASH2_BWD_CASE(D)                 \
  case D:                                  \
    run_flash2_bwd<T, D>(p, tile, stream); \
    return;
    FLASH2_HEAD_DIMS(FLASH2_BWD_CASE)
    default: throw std::invalid_argument("flash2: head dim " + std::to_string(p.head_dim) + " not compiled");
  }
}

void flash2_bwd(const BwdParams& p, const KernelTile& tile, bool bf16, cudaStream_t stream) {
  if (bf16) {
    dispatch_bwd_head_dim<__nv_bfloat16>(p, tile, stream);
  } else {
    dispatch_bwd_head_dim<half>(p, tile, stream);
  }
}

}  // namespace flashio::kernels

// The one dispatch point of the Hopper flash2 kernels: run-time (element type, head dim) →
// template instantiation. Built only when CMAKE_CUDA_ARCHITECTURES names 90 (for sm_90a);
// flash2_wgmma_absent.cpp stands in otherwise.
#include <stdexcept>
#include <string>

#include "kernels/flash2/hopper/flash2_wgmma_launch.cuh"

namespace flashio::kernels {


bool flash2_wgmma_compiled() { return true; }

template <typename T>
static void dispatch_wgmma(const FwdParams& p, const KernelTile& tile, cudaStream_t stream) {
  switch (p.head_dim) {
#define FLASH2_WGMMA_FWD_CASE(D) \
  case D: run_flash2_fwd_wgmma<T, D>(p, tile, stream); return;
    FLASH2_WGMMA_HEAD_DIMS(FLASH2_WGMMA_FWD_CASE)
    default: throw std::invalid_argument("flash2: no wgmma kernel for head dim " + std::to_string(p.head_dim));
  }
}

void flash2_fwd_wgmma(const FwdParams& p, const KernelTile& tile, bool bf16, cudaStream_t stream) {
  if (bf16) {
    dispatch_wgmma<__nv_bfloat16>(p, tile, stream);
  } else {
    dispatch_wgmma<half>(p, tile, stream);
  }
}

template <typename T>
static void dispatch_bwd_wgmma(const BwdParams& p, cudaStream_t stream) {
  switch (p.head_dim) {
#define FLASH2_WGMMA_BWD_CASE(D) \
  case D: run_flash2_bwd_wgmma<T, D>(p, stream); return;
    FLASH2_WGMMA_HEAD_DIMS(FLASH2_WGMMA_BWD_CASE)
    default: throw std::invalid_argument("flash2: no wgmma backward for head dim " + std::to_string(p.head_dim));
  }
}

void flash2_bwd_wgmma(const BwdParams& p, bool bf16, cudaStream_t stream) {
  if (bf16) {
    dispatch_bwd_wgmma<__nv_bfloat16>(p, stream);
  } else {
    dispatch_bwd_wgmma<half>(p, stream);
  }
}

}  // namespace flashio::kernels

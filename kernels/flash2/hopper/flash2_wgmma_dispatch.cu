// The one dispatch point of the Hopper flash2 kernels: run-time (element type, head dim) →
// template instantiation. Built only when CMAKE_CUDA_ARCHITECTURES names 90 (for sm_90a);
// flash2_wgmma_absent.cpp stands in otherwise.
#include <stdexcept>
#include <string>

#include "kernels/flash2/hopper/flash2_wgmma_launch.cuh"

namespace flashio::kernels {

extern template void run_flash2_fwd_wgmma<half, 64>(const Flash2FwdParams&, const Flash2Tile&, cudaStream_t);
extern template void run_flash2_fwd_wgmma<half, 128>(const Flash2FwdParams&, const Flash2Tile&, cudaStream_t);
extern template void run_flash2_fwd_wgmma<__nv_bfloat16, 64>(const Flash2FwdParams&, const Flash2Tile&, cudaStream_t);
extern template void run_flash2_fwd_wgmma<__nv_bfloat16, 128>(const Flash2FwdParams&, const Flash2Tile&, cudaStream_t);
extern template void run_flash2_bwd_wgmma<half, 64>(const Flash2BwdParams&, cudaStream_t);
extern template void run_flash2_bwd_wgmma<half, 128>(const Flash2BwdParams&, cudaStream_t);
extern template void run_flash2_bwd_wgmma<__nv_bfloat16, 64>(const Flash2BwdParams&, cudaStream_t);
extern template void run_flash2_bwd_wgmma<__nv_bfloat16, 128>(const Flash2BwdParams&, cudaStream_t);

bool flash2_wgmma_compiled() { return true; }

template <typename T>
static void dispatch_wgmma(const Flash2FwdParams& p, const Flash2Tile& tile, cudaStream_t stream) {
  switch (p.head_dim) {
    case 64: run_flash2_fwd_wgmma<T, 64>(p, tile, stream); return;
    case 128: run_flash2_fwd_wgmma<T, 128>(p, tile, stream); return;
    default: throw std::invalid_argument("flash2: no wgmma kernel for head dim " + std::to_string(p.head_dim));
  }
}

void flash2_fwd_wgmma(const Flash2FwdParams& p, const Flash2Tile& tile, bool bf16, cudaStream_t stream) {
  if (bf16) {
    dispatch_wgmma<__nv_bfloat16>(p, tile, stream);
  } else {
    dispatch_wgmma<half>(p, tile, stream);
  }
}

template <typename T>
static void dispatch_bwd_wgmma(const Flash2BwdParams& p, cudaStream_t stream) {
  switch (p.head_dim) {
    case 64: run_flash2_bwd_wgmma<T, 64>(p, stream); return;
    case 128: run_flash2_bwd_wgmma<T, 128>(p, stream); return;
    default: throw std::invalid_argument("flash2: no wgmma backward for head dim " + std::to_string(p.head_dim));
  }
}

void flash2_bwd_wgmma(const Flash2BwdParams& p, bool bf16, cudaStream_t stream) {
  if (bf16) {
    dispatch_bwd_wgmma<__nv_bfloat16>(p, stream);
  } else {
    dispatch_bwd_wgmma<half>(p, stream);
  }
}

}  // namespace flashio::kernels

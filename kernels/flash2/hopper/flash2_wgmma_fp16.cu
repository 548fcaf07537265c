// The Hopper flash2 kernels for fp16 (one file per element type, so they build in parallel);
// compiled for sm_90a only (CMakeLists.txt).
#include "kernels/flash2/hopper/flash2_wgmma_launch.cuh"

namespace flashio::kernels {
#define FLASH2_WGMMA_INSTANTIATE(D)                                                                    \
  template void run_flash2_fwd_wgmma<half, D>(const FwdParams&, const KernelTile&, cudaStream_t); \
  template void run_flash2_bwd_wgmma<half, D>(const BwdParams&, cudaStream_t);
FLASH2_WGMMA_HEAD_DIMS(FLASH2_WGMMA_INSTANTIATE)
}  // namespace flashio::kernels

// The Hopper flash2 kernels for bf16 (one file per element type, so they build in parallel);
// compiled for sm_90a only (CMakeLists.txt).
#include "kernels/flash2/hopper/flash2_wgmma_launch.cuh"

namespace flashio::kernels {
template void run_flash2_fwd_wgmma<__nv_bfloat16, 64>(const Flash2FwdParams&, const Flash2Tile&, cudaStream_t);
template void run_flash2_fwd_wgmma<__nv_bfloat16, 128>(const Flash2FwdParams&, const Flash2Tile&, cudaStream_t);
template void run_flash2_bwd_wgmma<__nv_bfloat16, 64>(const Flash2BwdParams&, cudaStream_t);
template void run_flash2_bwd_wgmma<__nv_bfloat16, 128>(const Flash2BwdParams&, cudaStream_t);
}  // namespace flashio::kernels

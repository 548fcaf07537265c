// Stands in for the Hopper flash2 kernels in a build whose CUDA architectures do not name 90:
// flash2_wgmma_compiled() says no, so flash2 runs its mma.sync kernels everywhere.
#include <stdexcept>

#include "kernels/flash2/flash2_params.h"

namespace flashio::kernels {

bool flash2_wgmma_compiled() { return false; }
void flash2_fwd_wgmma(const FwdParams&, const KernelTile&, bool, cudaStream_t) {
  throw std::logic_error("flash2: this build has no wgmma kernels (CMAKE_CUDA_ARCHITECTURES without 90)");
}
void flash2_bwd_wgmma(const BwdParams&, bool, cudaStream_t) {
  throw std::logic_error("flash2: this build has no wgmma kernels (CMAKE_CUDA_ARCHITECTURES without 90)");
}

}  // namespace flashio::kernels

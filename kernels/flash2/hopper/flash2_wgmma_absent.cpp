// Stands in for the Hopper flash2 kernels in a build whose CUDA architectures do not name 90:
// no wgmma tiles, so flash2 runs its mma.sync kernels everywhere.
#include <stdexcept>

#include "kernels/flash2/flash2_params.h"

namespace flashio::kernels {

bool flash2_wgmma_compiled() { return false; }
int flash2_fwd_wgmma_tiles(int, bool, Flash2Tile*, int) { return 0; }
void flash2_fwd_wgmma(const Flash2FwdParams&, const Flash2Tile&, bool, cudaStream_t) {
  throw std::logic_error("flash2: this build has no wgmma kernels (CMAKE_CUDA_ARCHITECTURES without 90)");
}
bool flash2_bwd_wgmma_tile(int, Flash2Tile*) { return false; }
void flash2_bwd_wgmma(const Flash2BwdParams&, bool, cudaStream_t) {
  throw std::logic_error("flash2: this build has no wgmma kernels (CMAKE_CUDA_ARCHITECTURES without 90)");
}

}  // namespace flashio::kernels

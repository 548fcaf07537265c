// Stands in for the flash3 kernels in a build whose CUDA architectures do not name 90:
// flash3_compiled() says no, and the method says why in its `skipped` records.
#include <stdexcept>

#include "kernels/flash3/flash3_params.h"

namespace flashio::kernels {

bool flash3_compiled() { return false; }
void flash3_schedule_init(int*, cudaStream_t) {
  throw std::logic_error("flash3: this build has no flash3 kernels (CMAKE_CUDA_ARCHITECTURES without 90)");
}
void flash3_fwd(const FwdParams&, const KernelTile&, Flash3Schedule, bool, int, int*, Flash3MapCache&, cudaStream_t) {
  throw std::logic_error("flash3: this build has no flash3 kernels (CMAKE_CUDA_ARCHITECTURES without 90)");
}

void flash3_bwd(const BwdParams&, const KernelTile&, bool, int, Flash3BwdMapCache&, cudaStream_t) {
  throw std::logic_error("flash3: this build has no flash3 kernels (CMAKE_CUDA_ARCHITECTURES without 90)");
}

}  // namespace flashio::kernels

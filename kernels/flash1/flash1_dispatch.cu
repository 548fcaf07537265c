// The one dispatch point of flash1: run-time (element type, head dim) → instantiation.
#include <stdexcept>
#include <string>

#include "kernels/flash1/flash1_launch.cuh"

namespace flashio::kernels {

#define FLASH1_DECLARE(D)                                                                                           \
  extern template int run_flash1_fwd<half, D>(const Flash1FwdParams&, const KernelTile&, cudaStream_t, bool);          \
  extern template int run_flash1_fwd<__nv_bfloat16, D>(const Flash1FwdParams&, const KernelTile&, cudaStream_t, bool); \
  extern template int run_flash1_bwd<half, D>(const Flash1BwdParams&, cudaStream_t, bool);                             \
  extern template int run_flash1_bwd<__nv_bfloat16, D>(const Flash1BwdParams&, cudaStream_t, bool);
FLASH1_HEAD_DIMS(FLASH1_DECLARE)

template <typename T>
static int fwd_head_dim(const Flash1FwdParams& p, const KernelTile& tile, cudaStream_t stream, bool occupancy_only) {
  switch (p.base.head_dim) {
#define FLASH1_FWD_CASE(D) \
  case D: return run_flash1_fwd<T, D>(p, tile, stream, occupancy_only);
    FLASH1_HEAD_DIMS(FLASH1_FWD_CASE)
    default: throw std::invalid_argument("flash1: head dim " + std::to_string(p.base.head_dim) + " not compiled");
  }
}

template <typename T>
static int bwd_head_dim(const Flash1BwdParams& p, cudaStream_t stream, bool occupancy_only) {
  switch (p.base.head_dim) {
#define FLASH1_BWD_CASE(D) \
  case D: return run_flash1_bwd<T, D>(p, stream, occupancy_only);
    FLASH1_HEAD_DIMS(FLASH1_BWD_CASE)
    default: throw std::invalid_argument("flash1: head dim " + std::to_string(p.base.head_dim) + " not compiled");
  }
}

void flash1_fwd(const Flash1FwdParams& p, const KernelTile& tile, bool bf16, cudaStream_t stream) {
  bf16 ? fwd_head_dim<__nv_bfloat16>(p, tile, stream, false) : fwd_head_dim<half>(p, tile, stream, false);
}

void flash1_bwd(const Flash1BwdParams& p, bool bf16, cudaStream_t stream) {
  bf16 ? bwd_head_dim<__nv_bfloat16>(p, stream, false) : bwd_head_dim<half>(p, stream, false);
}

int flash1_fwd_blocks_per_sm(const Flash1FwdParams& p, const KernelTile& tile, bool bf16) {
  return bf16 ? fwd_head_dim<__nv_bfloat16>(p, tile, nullptr, true) : fwd_head_dim<half>(p, tile, nullptr, true);
}

int flash1_bwd_blocks_per_sm(const Flash1BwdParams& p, bool bf16) {
  return bf16 ? bwd_head_dim<__nv_bfloat16>(p, nullptr, true) : bwd_head_dim<half>(p, nullptr, true);
}

}  // namespace flashio::kernels

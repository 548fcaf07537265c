// The dispatch point of blocksparse_flash: run-time (element type, head dim) → the kSparse
// instantiations of flash2's kernels (generated from blocksparse_instantiate.cu.in).
#include <stdexcept>
#include <string>

#include "kernels/blocksparse/blocksparse_configs.h"
#include "kernels/blocksparse/blocksparse_params.h"
#include "kernels/flash2/flash2_bwd_launch.cuh"
#include "kernels/flash2/flash2_fwd_launch.cuh"

namespace flashio::kernels {

#define BLOCKSPARSE_DECLARE(D)                                                                                 \
  extern template void run_flash2_fwd<half, D, true>(const FwdParams&, const KernelTile&, cudaStream_t); \
  extern template void run_flash2_fwd<__nv_bfloat16, D, true>(const FwdParams&, const KernelTile&,       \
                                                              cudaStream_t);                                   \
  extern template void run_flash2_bwd<half, D, true>(const BwdParams&, const KernelTile&, cudaStream_t); \
  extern template void run_flash2_bwd<__nv_bfloat16, D, true>(const BwdParams&, const KernelTile&, cudaStream_t);
BLOCKSPARSE_HEAD_DIMS(BLOCKSPARSE_DECLARE)

template <typename T>
static void fwd_head_dim(const FwdParams& p, const KernelTile& tile, cudaStream_t stream) {
  switch (p.head_dim) {
#define BLOCKSPARSE_FWD_CASE(D)                  \
  case D:                                        \
    run_flash2_fwd<T, D, true>(p, tile, stream); \
    return;
    BLOCKSPARSE_HEAD_DIMS(BLOCKSPARSE_FWD_CASE)
    default:
      throw std::invalid_argument("blocksparse_flash: head dim " + std::to_string(p.head_dim) + " not compiled");
  }
}

template <typename T>
static void bwd_head_dim(const BwdParams& p, cudaStream_t stream) {
  switch (p.head_dim) {
#define BLOCKSPARSE_BWD_CASE(D)                                 \
  case D: {                                                     \
    KernelTile tile{};                                          \
    flash2_bwd_tile(D, &tile); /* the first: the one compiled */ \
    run_flash2_bwd<T, D, true>(p, tile, stream);                \
    return;                                                     \
  }
    BLOCKSPARSE_HEAD_DIMS(BLOCKSPARSE_BWD_CASE)
    default:
      throw std::invalid_argument("blocksparse_flash: head dim " + std::to_string(p.head_dim) + " not compiled");
  }
}

void blocksparse_flash_fwd(const FwdParams& p, const KernelTile& tile, bool bf16, cudaStream_t stream) {
  if (!p.sparse_ptr || !p.sparse_idx) throw std::invalid_argument("blocksparse_flash: no tile lists");
  if (bf16) {
    fwd_head_dim<__nv_bfloat16>(p, tile, stream);
  } else {
    fwd_head_dim<half>(p, tile, stream);
  }
}

void blocksparse_flash_bwd(const BwdParams& p, bool bf16, cudaStream_t stream) {
  if (!p.sparse_ptr || !p.sparse_idx) throw std::invalid_argument("blocksparse_flash: no tile lists");
  if (bf16) {
    bwd_head_dim<__nv_bfloat16>(p, stream);
  } else {
    bwd_head_dim<half>(p, stream);
  }
}

}  // namespace flashio::kernels

// Launch of flash_decode for one (element type, head dim): the split kernel, causal or not, dense
// or varlen decode (cu_seqlens: K/V packed, or paged with a block table).
#pragma once
#include "bench/cuda/cuda_check.h"
#include "kernels/flash_decode/flash_decode_kernel.cuh"

namespace flashio::kernels {

template <typename Tr, DecodeKv kKv>
auto decode_kernel_of(bool causal) {
  return causal ? flash_decode_split_kernel<Tr, true, kKv> : flash_decode_split_kernel<Tr, false, kKv>;
}

template <typename T, int kHeadDim>
void run_flash_decode(const DecodeParams& p, cudaStream_t stream) {
  using Tr = FlashDecodeTraits<T, kHeadDim>;
  const dim3 grid(unsigned(p.splits), unsigned(p.kv_heads * p.row_tiles), unsigned(p.batch));
  auto kernel = !p.cu_seqlens   ? decode_kernel_of<Tr, DecodeKv::Dense>(p.causal)
                : p.block_table ? decode_kernel_of<Tr, DecodeKv::PagedVarlen>(p.causal)
                                : decode_kernel_of<Tr, DecodeKv::Packed>(p.causal);
  FLASHIO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  kernel<<<grid, Tr::kNThreads, Tr::kSmemBytes, stream>>>(p);
  FLASHIO_CHECK_LAUNCH();
}

}  // namespace flashio::kernels

#include "bench/cuda/device_util.h"

#include "bench/cuda/cuda_check.h"
#include "bench/cuda/l2_flush.cuh"

namespace flashio {

__global__ void l2_flush_kernel(const uint4* __restrict__ buf, size_t n, unsigned* sink, unsigned magic) {
  l2_flush_pass(buf, n, sink, magic);
}

void launch_l2_flush(const void* buf, size_t bytes, unsigned* sink, cudaStream_t stream) {
  const size_t n = bytes / sizeof(uint4);
  l2_flush_kernel<<<kL2FlushBlocks, kL2FlushThreads, 0, stream>>>(static_cast<const uint4*>(buf), n, sink, kL2FlushMagic);
  FLASHIO_CHECK_LAUNCH();
}

__global__ void gather_rows_kernel(const uint16_t* __restrict__ src, const int64_t* __restrict__ rows, int64_t nrows,
                                   int64_t row_words, uint16_t* __restrict__ dst) {
  const int64_t total = nrows * row_words;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x)
    dst[e] = src[rows[e / row_words] * row_words + e % row_words];
}

void launch_gather_rows(const uint16_t* src, const int64_t* rows, int64_t nrows, int64_t row_words, uint16_t* dst,
                        cudaStream_t stream) {
  if (nrows == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((nrows * row_words + kThreads - 1) / kThreads, 4096);
  gather_rows_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(src, rows, nrows, row_words, dst);
  FLASHIO_CHECK_LAUNCH();
}

}  // namespace flashio

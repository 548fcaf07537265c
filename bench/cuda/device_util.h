// Small device utilities the runner needs around measured launches.
#pragma once
#include <cstddef>
#include <cstdint>

typedef struct CUstream_st* cudaStream_t;

namespace flashio {

// Reads `bytes` of `buf` (16-byte aligned) once, writing nothing unless the data hold an
// impossible value: evicts the L2 without leaving dirty lines (a memset would; see
// DESIGN.md), so the next kernel starts from a clean cache. The pass itself is l2_flush.cuh's;
// `flashio profile` runs the same pass with the same launch (bench/measure/inject.cpp).
void launch_l2_flush(const void* buf, size_t bytes, unsigned* sink, cudaStream_t stream);
// Its buffer for an L2 of `l2_bytes`: twice the L2, at least 8 MiB, whole 16-byte loads.
inline size_t l2_flush_bytes(int64_t l2_bytes) {
  const int64_t b = 2 * l2_bytes > (int64_t(8) << 20) ? 2 * l2_bytes : int64_t(8) << 20;
  return size_t(b) & ~size_t(15);
}
// Its launch: blocks, threads per block, and the value the data never hold.
constexpr unsigned kL2FlushBlocks = 1024, kL2FlushThreads = 256, kL2FlushMagic = 0x9e3779b9u;

// dst[r] = src[rows[r]] for r < nrows, rows of `row_words` 16-bit words (a float is two):
// the checked rows of an output packed together on the GPU, so that the check copies them
// back with one copy instead of one per run of rows.
void launch_gather_rows(const uint16_t* src, const int64_t* rows, int64_t nrows, int64_t row_words, uint16_t* dst,
                        cudaStream_t stream);

}  // namespace flashio

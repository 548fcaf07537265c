// Small device utilities the runner needs around measured launches.
#pragma once
#include <cstddef>
#include <cstdint>

typedef struct CUstream_st* cudaStream_t;

namespace flashio {

// Reads `bytes` of `buf` (16-byte aligned) once, writing nothing unless the data hold an
// impossible value: evicts the L2 without leaving dirty lines (a memset would; see
// DESIGN.md), so the next kernel starts from a clean cache.
void launch_l2_flush(const void* buf, size_t bytes, unsigned* sink, cudaStream_t stream);

// dst[r] = src[rows[r]] for r < nrows, rows of `row_words` 16-bit words (a float is two):
// the checked rows of an output packed together on the GPU, so that the check copies them
// back with one copy instead of one per run of rows.
void launch_gather_rows(const uint16_t* src, const int64_t* rows, int64_t nrows, int64_t row_words, uint16_t* dst,
                        cudaStream_t stream);

}  // namespace flashio

// Small device utilities the runner needs around measured launches.
#pragma once
#include <cstddef>

typedef struct CUstream_st* cudaStream_t;

namespace flashio {

// Reads `bytes` of `buf` (16-byte aligned) once, writing nothing unless the data hold an
// impossible value: evicts the L2 without leaving dirty lines (a memset would; see
// DESIGN.md), so the next kernel starts from a clean cache.
void launch_l2_flush(const void* buf, size_t bytes, unsigned* sink, cudaStream_t stream);

}  // namespace flashio

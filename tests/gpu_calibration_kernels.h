// Kernels with known traffic, for calibrating the counter pass (tests/test_gpu_counters.cpp).
#pragma once
#include <cstddef>

typedef struct CUstream_st* cudaStream_t;

namespace flashio::testing_util {

// dst[i] = src[i] for `bytes` bytes (16-byte aligned): DRAM reads and writes `bytes` each
// once the buffers are much larger than L2.
void launch_calibration_copy(const void* src, void* dst, size_t bytes, cudaStream_t stream);

// Reads `bytes` of `buf` `times` times through L2 only (ld.global.cg, no L1 reuse):
// SM ← L2 traffic is times × bytes, DRAM traffic one read of `bytes` after a clean L2.
void launch_calibration_reread(const void* buf, size_t bytes, int times, unsigned* sink, cudaStream_t stream);

}  // namespace flashio::testing_util

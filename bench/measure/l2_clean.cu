// `flashio profile`'s L2 clean before each profiled launch (--cache-control all; inject.cpp): the
// suite's L2 flush pass (bench/cuda/l2_flush.cuh) as a kernel with a C name, and, from sm_80 on,
// a pass that drops the lines the flush left (`discard.global.L2`: invalidated, not written
// back), so the profiled kernel starts from an empty L2 as under Nsight Compute's flush rather
// than from one full of the flush buffer's clean lines. CMake compiles this file to PTX twice —
// for the oldest architecture the suite supports (the clean alone) and for sm_80 (both kernels) —
// and embeds the texts in libflashio_inject.so, which loads the one the GPU can run with
// cuModuleLoadData into the profiled program's context (the driver compiles it for the GPU at
// hand; the library links no CUDA runtime).
#include "bench/cuda/l2_flush.cuh"

extern "C" __global__ void flashio_l2_clean(const uint4* buf, size_t n, unsigned* sink, unsigned magic) {
  flashio::l2_flush_pass(buf, n, sink, magic);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// Drops the L2 lines of `buf`'s `lines` 128-byte lines (their contents become undefined).
extern "C" __global__ void flashio_l2_discard(const char* buf, size_t lines) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < lines; i += size_t(gridDim.x) * blockDim.x)
    asm volatile("discard.global.L2 [%0], 128;" ::"l"(buf + 128 * i) : "memory");
}
#endif

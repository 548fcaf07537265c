// FLASHIO_HOST_DEVICE marks the vocabulary's small functions that host code and CUDA kernels
// both call (the Philox mask, the input generator, the 16-bit conversions), so that the GPU
// computes exactly what the host does. Plain `inline` when no CUDA compiler reads the header.
#pragma once

#if defined(__CUDACC__)
#define FLASHIO_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FLASHIO_HOST_DEVICE inline
#endif

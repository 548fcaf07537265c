// FLASHIO_HOST_DEVICE: marks the small helpers that the fused kernels and the CPU tests share
// (online_softmax.h, masks.h). Under nvcc they are __host__ __device__ and always inlined (the
// kernels' register allocation must not see a call); a plain C++ compiler sees `inline`.
#pragma once

#if defined(__CUDACC__)
#define FLASHIO_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FLASHIO_HOST_DEVICE inline
#endif

// `#pragma unroll` for loops in FLASHIO_HOST_DEVICE helpers: nvcc unrolls them as the kernels'
// own loops (fragment indices must be compile-time constants to stay in registers); a host
// compiler sees nothing.
#if defined(__CUDACC__)
#define FLASHIO_UNROLL _Pragma("unroll")
#else
#define FLASHIO_UNROLL
#endif

// The L2 flush the standalone GPU probes share (tests/gpu_l2_probe.cu, tests/gpu_sm_side_probe.cu): a
// grid-stride read of a buffer larger than the L2 (3 × L2 in both), through L2 only (ld.global.cg), so
// that the L2 holds only clean lines of it afterwards.
#pragma once
#include <cuda_runtime.h>

__global__ void probe_flush(const int4* __restrict__ buf, size_t n, unsigned* sink) {
  int acc = 0;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const int4 v = __ldcg(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff) atomicAdd(sink, 1u);  // keeps the loads
}

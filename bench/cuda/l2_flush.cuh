// The L2 flush's body, in one place: a read-only pass over a buffer at least twice the L2 evicts
// it without leaving dirty lines (a memset would leave them, to be written back during the next
// kernel: DESIGN.md). Run by the suite's own flush (launch_l2_flush, device_util.cu) and by
// `flashio profile`'s clean before each profiled launch (bench/measure/l2_clean.cu, loaded as PTX
// into the profiled program).
#pragma once
#include <cstddef>

namespace flashio {

// Reads `n` uint4 of `buf` once (grid-stride), writing nothing unless the data hold an
// impossible value.
__device__ __forceinline__ void l2_flush_pass(const uint4* __restrict__ buf, size_t n, unsigned* sink,
                                              unsigned magic) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = __ldcg(buf + i);  // cache in L2 only: this is what we want to replace
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == magic) *sink = acc;  // a run-time comparison keeps the loads alive; a match is harmless
}

}  // namespace flashio

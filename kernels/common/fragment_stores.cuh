// Whole 16-byte global stores of accumulator rows (the C fragment layout of kernels/common/mma.cuh,
// which wgmma's accumulators share: g = lane/4 owns a row, t = lane%4 two columns of every 8):
//
//   store_global_16   one st.global.v4 of four words, kept whole
//   quad_transpose    a row's 4-byte pieces over a quad → one 16-byte chunk per thread
//
// Used by flash3's forward epilogue (O) and its dQ conversion.
#pragma once
#include <cstdint>

namespace flashio::kernels {

// One 16-byte global store of four words, kept whole: written as a uint4 assignment, nvcc split
// flash3's dQ conversion's first row into four 4-byte stores (its registers were not consecutive;
// SASS of 982e088), which wrote 1.30× dQ's bytes of L2 sectors.
__device__ __forceinline__ void store_global_16(void* dst, const uint32_t (&v)[4]) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
               : "memory");
}

// One row of four 8-column chunks of a C fragment, made whole: a quad's thread t holds w[k] =
// columns 8k + 2t, 8k + 2t + 1 of chunk k (k = 0..3); afterwards it holds chunk t, c[k] = columns
// 8t + 2k, 8t + 2k + 1 (thread k's w[t]), 16 contiguous bytes of 16-bit elements. Three shuffles
// within the quad: in round r thread t sends w[(t + r) % 4] and receives thread (t − r) % 4's.
__device__ __forceinline__ void quad_transpose(uint32_t (&c)[4], const uint32_t (&w)[4]) {
  const int lane = threadIdx.x % 32, t = lane % 4;
  auto pick = [&w](int i) { return i == 0 ? w[0] : i == 1 ? w[1] : i == 2 ? w[2] : w[3]; };
  const uint32_t own = pick(t);
#pragma unroll
  for (int k = 0; k < 4; ++k) c[k] = own;
#pragma unroll
  for (int r = 1; r < 4; ++r) {
    const int from = (t - r) & 3;
    const uint32_t v = __shfl_sync(0xffffffffu, pick((t + r) & 3), (lane & ~3) | from);
#pragma unroll
    for (int k = 0; k < 4; ++k) c[k] = k == from ? v : c[k];
  }
}

}  // namespace flashio::kernels

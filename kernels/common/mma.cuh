// Tensor-core and copy primitives in inline PTX, shared by the fused kernels.
//
//   ldmatrix_x4 / _trans   four 8x8 16-bit tiles from shared memory into fragments (sm_75+)
//   mma_16816              D(16x8, f32) += A(16x16, row) · B(16x8, col); fp16 or bf16
//                          sm_80+: one mma.m16n8k16; sm_75 (fp16 only): two mma.m16n8k8
//   cp_async_16            16-byte global→shared copy, zero-filled past the end (sm_80+:
//                          cp.async, bypassing L1; sm_75: a plain load and store)
//   cp_async_16_l1         the same through L1 (cp.async.ca): for a stream where L2→SM bytes
//                          decide the time (see its comment)
//   atomic_add2            two adjacent fp32 added atomically (the backward's dQ)
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), g = lane/4, t = lane%4:
//   A: a0 (g, 2t..2t+1)  a1 (g+8, 2t..)  a2 (g, 2t+8..)  a3 (g+8, 2t+8..)
//   B: b0 (k 2t..2t+1, n g)  b1 (k 2t+8.., n g)
//   C: c0,c1 (g, 2t..2t+1)  c2,c3 (g+8, 2t..2t+1)
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace flashio::kernels {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);

template <>
__device__ __forceinline__ void mma_16816<half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else  // sm_75: k16 = two k8 steps; A's k8 halves are (a0, a1) and (a2, a3)
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(b0));
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[2]), "r"(a[3]), "r"(b1));
#endif
}

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                         uint32_t b1) {
#if __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // bf16 tensor cores need sm_80: supports() refuses bf16 on older GPUs
#endif
}

// Two floats → one 32-bit register of two 16-bit values (low half = x).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float x, float y);
template <>
__device__ __forceinline__ uint32_t pack2<half>(float x, float y) {
  __half2 h = __floats2half2_rn(x, y);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float x, float y) {
  __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<uint32_t*>(&h);
}

// dst[0] += x0, dst[1] += x1 atomically (dst 8-byte aligned): one vector reduction on sm_90
// (`red.global.add.v2.f32`, one L2 sector per row and 8 columns of a warp), two scalar ones before.
// The backward kernels' dQ accumulation (flash1, flash2, flash3).
__device__ __forceinline__ void atomic_add2(float* dst, float x0, float x1) {
#if __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(dst), make_float2(x0, x1));
#else
  atomicAdd(dst, x0);
  atomicAdd(dst + 1, x1);
#endif
}

// 16-byte copy global→shared; when !valid, writes zeros and reads nothing.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool valid) {
#if __CUDA_ARCH__ >= 800
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(src_bytes));
#else
  *reinterpret_cast<uint4*>(smem) = valid ? *reinterpret_cast<const uint4*>(gmem) : make_uint4(0, 0, 0, 0);
#endif
}

// 16-byte copy global→shared through L1 (cp.async.ca); when !valid, writes zeros and reads
// nothing. Measured on the H100 (Nsight Compute, flash_decode, whose warp copies two 256-byte
// rows of K or V per instruction): the L1-bypassing form moved 1.5× the copied bytes from L2 to
// the SMs with padded shared rows (l1tex__m_xbar2l1tex_read_bytes; 2.0× with XOR-swizzled or
// unpadded rows), sectors of the same lines fetched again for the same instruction; through L1 the
// repeats hit L1 and L2→SM bytes equal the bytes copied. (flash2's wgmma loader, .cg into 128-byte
// swizzled panels, four 128-byte rows per instruction, measures 1.0×: the pattern matters too.)
__device__ __forceinline__ void cp_async_16_l1(void* smem, const void* gmem, bool valid) {
#if __CUDA_ARCH__ >= 800
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(src_bytes));
#else
  *reinterpret_cast<uint4*>(smem) = valid ? *reinterpret_cast<const uint4*>(gmem) : make_uint4(0, 0, 0, 0);
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// A C-fragment row is spread over the four lanes of a quad: the Reduce policy of
// kernels/common/online_softmax.h on the GPU.
struct QuadRowReduce {
  static __device__ __forceinline__ float max(float x) { return quad_max(x); }
  static __device__ __forceinline__ float sum(float x) { return quad_sum(x); }
};

}  // namespace flashio::kernels

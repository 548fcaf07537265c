// Hopper (sm_90a) warpgroup MMA: fences, shared-memory descriptors and the 128-byte-swizzled
// tile layout that wgmma reads, shared by the Hopper flash2 kernels (kernels/flash2/hopper/).
//
// Tile layout ("swizzle128"). A (rows × d) tile of 16-bit elements is stored as d/64 panels of
// 64 columns, one after another; panel p holds columns [64p, 64p + 64) of every row, one
// 128-byte line per row:
//
//     byte(r, c) = p·rows·128 + r·128 + ((c16 ^ (r % 8)) · 16) + (c % 8)·2,
//     p = c / 64, c16 = (c % 64) / 8 (the row's 16-byte chunk),
//
// with every panel 1024-byte aligned. This is PTX's 128-byte swizzle mode ("Shared Memory
// Matrix Layout"): the hardware applies the XOR to address bits [4:6] from bits [7:9], so the
// 8-row atoms must start at 1024-byte boundaries. No padding: a tile row is whole 32-byte
// sectors in global and in shared memory, and ldmatrix-free operands reach the tensor cores
// without bank conflicts.
//
// Descriptors (PTX "Matrix Descriptor Format"): start address, leading byte offset (LBO) and
// stride byte offset (SBO), each >> 4, and the swizzle mode in bits 62-63 (1 = 128-byte).
//   K-major operand (rows = M or N, the contraction runs along the 64-column panels: Q and K in
//   S = Q·Kᵀ): SBO = 1024 (the next 8 rows), LBO unused for swizzled K-major layouts; the k16
//   step s of a panel starts 32·(s % 4) bytes in, panel s / 4.
//   MN-major operand (transposed: the contraction runs down the rows, V in O = P·V): LBO = the
//   panel stride (the next 64 columns of N), SBO = 1024 (the next 8 rows of K); the k16 step s
//   starts 16 rows = 2048 bytes further down.
#pragma once
#include <cstdint>

#include "kernels/common/mma.cuh"
#include "kernels/common/wgmma_ops.cuh"

namespace flashio::kernels {

constexpr int kSwizzleRowBytes = 128;    // one 64-column panel row of 16-bit elements
constexpr int kSwizzleAtomBytes = 1024;  // 8 rows: the swizzle pattern's period
constexpr int kPanelColumns = 64;

// Byte offset of 16-byte chunk `chunk` (8 elements, columns 8·chunk …) of row `row` in a
// swizzle128 tile of `rows` rows.
__host__ __device__ constexpr int swizzle128_chunk_offset(int rows, int row, int chunk) {
  return (chunk / 8) * rows * kSwizzleRowBytes + row * kSwizzleRowBytes + (((chunk % 8) ^ (row % 8)) * 16);
}

// Shared-memory matrix descriptor with the 128-byte swizzle.
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(lbo_bytes >> 4) << 16) | (uint64_t(sbo_bytes >> 4) << 32) |
         (uint64_t(1) << 62);
}

// K-major descriptor of k16 step `k` for the rows starting at `tile` (a panel-0 row address
// that is a multiple of 8 rows into a tile of `rows` rows).
__device__ __forceinline__ uint64_t desc_kmajor(uint32_t tile, int rows, int k) {
  return smem_desc_sw128(tile + (k / 4) * rows * kSwizzleRowBytes + (k % 4) * 32, 16, kSwizzleAtomBytes);
}

// MN-major descriptor of k16 step `k` (rows 16k … 16k + 15) of a tile of `rows` rows.
__device__ __forceinline__ uint64_t desc_mnmajor(uint32_t tile, int rows, int k) {
  return smem_desc_sw128(tile + k * 16 * kSwizzleRowBytes, rows * kSwizzleRowBytes, kSwizzleAtomBytes);
}

// Orders this warpgroup's register writes before the wgmma that reads them (accumulators
// rescaled, A fragments packed).
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving reads or writes of accumulator registers across an
// in-flight wgmma: each register is an operand of an empty asm statement.
template <int R>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Makes this thread's generic-proxy shared-memory writes (cp.async, st.shared) visible to
// the async proxy that wgmma reads through; then a barrier publishes them to the warpgroup.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Copies rows [row0, row0 + R) of a (rows_valid, D) row-major global matrix into a swizzle128
// tile (R, D) with cp.async; rows past rows_valid are zero-filled and read nothing.
template <int R, int D, int kThreads, typename T>
__device__ __forceinline__ void load_tile_sw128(unsigned char* tile, const T* g, int row0, int rows_valid) {
  constexpr int kChunksPerRow = D / 8;
  constexpr int kChunks = R * kChunksPerRow;
  static_assert(D % kPanelColumns == 0, "whole 64-column panels");
#pragma unroll
  for (int c = threadIdx.x % kThreads; c < kChunks; c += kThreads) {
    const int r = c / kChunksPerRow, chunk = c % kChunksPerRow;
    const bool valid = row0 + r < rows_valid;
    const int64_t grow = valid ? row0 + r : 0;  // never form an address past the tensor
    cp_async_16(tile + swizzle128_chunk_offset(R, r, chunk), g + grow * D + chunk * 8, valid);
  }
}

}  // namespace flashio::kernels

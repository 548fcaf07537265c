// The L1 probe (issue 19): how much of a block's own fp32 stream, loaded with plain loads and stored
// back (flash1's running O, l, m between two K/V tiles), an SM's L1 keeps beside the shared memory
// its resident blocks take — what an L1 term in the SM<->L2 model would need.
//
// One run = `blocks_per_sm` blocks on every SM, each launched with `smem` bytes of dynamic shared
// memory it does not use (the launch reserves them: the carve-out flash1's tiles force, 92,160 B at
// d 64, two blocks per SM), each read-modify-writing its own slice of `kib` KiB `passes` times
// (ld.global, add, st.global: the instructions flash1_merge_rows issues). Nsight Compute
// (scripts/l1_probe.sh) reads the global loads' L1 lookups: hits / sectors = the share of re-reads
// L1 served. A stream that fits hits (passes - 1) / passes of its sectors; one that does not, none
// (LRU) or some (other policies).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "gpu_probe_check.h"

__global__ void probe_l1_rmw(float2* __restrict__ buf, size_t per_block, int passes) {
  float2* mine = buf + size_t(blockIdx.x) * per_block;
  for (int p = 0; p < passes; ++p) {
    for (size_t i = threadIdx.x; i < per_block; i += blockDim.x) {
      float2 v = mine[i];
      v.x += 1.f;
      mine[i] = v;
    }
    __syncthreads();
  }
}

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s KiB_per_block blocks_per_sm smem_bytes passes\n", argv[0]);
    return 2;
  }
  const double kib = std::atof(argv[1]);
  const int per_sm = std::atoi(argv[2]), smem = std::atoi(argv[3]), passes = std::atoi(argv[4]);
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  CHECK(cudaFuncSetAttribute(probe_l1_rmw, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int blocks = per_sm * prop.multiProcessorCount;
  const size_t per_block = size_t(kib * 1024) / sizeof(float2);
  float2* buf = nullptr;
  CHECK(cudaMalloc(&buf, per_block * blocks * sizeof(float2)));
  CHECK(cudaMemset(buf, 0, per_block * blocks * sizeof(float2)));
  probe_l1_rmw<<<blocks, 128, smem>>>(buf, per_block, passes);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int occ = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, probe_l1_rmw, 128, smem));
  std::printf("device %s; %d blocks (%d per SM asked, %d resident), %d B shared each, %.1f KiB per block, %d passes\n",
              prop.name, blocks, per_sm, occ, smem, kib, passes);
  return 0;
}

// The reduction-contention probe (issue 19, docs/io-model.md "Misses"): how long fp32 reductions
// into one L2 line take when many thread blocks add into the same tile at once, against the same
// blocks adding into tiles of their own. The L2 simulation steps blocks in lock-step, so every
// block of a backward wave adds into the same dQ tile in the same time unit; if the GPU
// serialises reductions per line, those blocks cannot stay in step (the hypothesis for the
// backward misses past the L2). This measures the cost the time model would need.
//
//   gpu_red_probe [blocks] [tile_kib] [iters]     (defaults: 2 per SM, 32 KiB = a 64 × 128 fp32 dQ tile, 200)
//
// Each block of 128 threads adds 1.0f into every float of its tile `iters` times with
// red.global.add.v2.f32 (atomicAdd on float2, sm_90) — the flash2 backward's dQ add — in one of
// three layouts: "shared" (every block the same tile), "private" (a tile per block), "pairs" (two
// blocks per tile, flash1's S = 2). Prints the time per layout and the reduction bytes per second;
// checks the sums.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpu_probe_check.h"

__global__ void add_tiles(float2* base, int tile_pairs, int blocks_per_tile, int iters) {
  float2* tile = base + size_t(blockIdx.x / blocks_per_tile) * tile_pairs;
  for (int it = 0; it < iters; ++it)
    for (int i = threadIdx.x; i < tile_pairs; i += blockDim.x) atomicAdd(tile + i, make_float2(1.f, 1.f));
}

int main(int argc, char** argv) {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int blocks = argc > 1 ? std::atoi(argv[1]) : 2 * prop.multiProcessorCount;
  const int tile_kib = argc > 2 ? std::atoi(argv[2]) : 32;
  const int iters = argc > 3 ? std::atoi(argv[3]) : 200;
  const int tile_pairs = tile_kib * 1024 / 8;
  float2* buf = nullptr;
  CHECK(cudaMalloc(&buf, size_t(blocks) * tile_pairs * sizeof(float2)));
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  std::printf("device %s, %d SMs; %d blocks of 128 threads, tile %d KiB, %d passes per block\n", prop.name,
              prop.multiProcessorCount, blocks, tile_kib, iters);
  std::printf("%8s %12s %16s %10s\n", "layout", "time (ms)", "red bytes / s", "sum ok");
  struct Layout {
    const char* name;
    int blocks_per_tile;
  };
  for (const Layout l : {Layout{"private", 1}, Layout{"pairs", 2}, Layout{"shared", blocks}}) {
    const int tiles = (blocks + l.blocks_per_tile - 1) / l.blocks_per_tile;
    CHECK(cudaMemset(buf, 0, size_t(tiles) * tile_pairs * sizeof(float2)));
    add_tiles<<<blocks, 128>>>(buf, tile_pairs, l.blocks_per_tile, 1);  // warm-up
    CHECK(cudaMemset(buf, 0, size_t(tiles) * tile_pairs * sizeof(float2)));
    CHECK(cudaEventRecord(t0));
    add_tiles<<<blocks, 128>>>(buf, tile_pairs, l.blocks_per_tile, iters);
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    std::vector<float2> first(tile_pairs);
    CHECK(cudaMemcpy(first.data(), buf, tile_pairs * sizeof(float2), cudaMemcpyDeviceToHost));
    const float want = float(iters) * float(std::min(l.blocks_per_tile, blocks));
    bool ok = true;
    for (const float2& v : first) ok = ok && v.x == want && v.y == want;
    const double bytes = double(blocks) * iters * tile_pairs * sizeof(float2);
    std::printf("%8s %12.3f %16.3e %10s\n", l.name, ms, bytes / (ms * 1e-3), ok ? "yes" : "NO");
  }
  return 0;
}

// The stream probe (issue 20): how fast can a decode-shaped grid stream K and V from DRAM into
// shared memory, by load mechanism — what flash_decode's last percent against cuDNN would need.
//
// The grid of flash_decode at GQA 32:8, d 128, one query (kernels/flash_decode/): one block of 4
// warps per (batch, K/V head) plane, one block per SM (the launch reserves the dynamic shared memory
// flash_decode's d 128 tile takes), every warp streaming its own 16 keys of every 64-key tile of K
// and of V through a ring of 4 stages, with no block-wide barrier. No arithmetic: each lane reads
// one word of each landed slice (a dependency on the copy), so the time is the stream's alone.
// Mechanisms (argv[1]):
//   cpasync_ca  16-byte cp.async.ca per lane (flash_decode's copies), padded 272-byte rows
//   cpasync_cg  the same past L1 (cp.async.cg)
//   tma         per warp one TMA tensor load per 64-column half of the K and V slices (16 rows × 128 B
//               boxes, 128-byte swizzle, an mbarrier per stage): 4 instructions per stage
//   bulk        per warp one 1-D bulk copy (cp.async.bulk) of each contiguous 4 KiB slice: 2 per stage
//   ldg         16-byte loads straight to registers, one stage's 16 per lane in flight, no shared memory
//   ca:S:W:own|interleaved[:SMEM_KIB[:SPIN]]  cp.async.ca with S stages and W warps per block (W·16-key
//               tiles), each warp its own slice or the warps' copies interleaved in 2 KiB runs, with
//               SMEM_KIB of shared memory per block (0: the ring's; more blocks per SM when it is
//               small) and SPIN cycles of busy wait per slice (the arithmetic a decode does on it)
// The L2 is cleaned before every launch by a read-only sweep, as flashio's timing does. Prints the
// median over the launches of the K + V bytes over the time (CUDA events).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_probe_check.h"
#include "kernels/common/tma.cuh"

using namespace flashio::kernels;

namespace {

constexpr int kD = 128, kRowBytes = kD * 2, kWarps = 4, kSliceRows = 16, kTileRows = kWarps * kSliceRows, kStages = 4;
constexpr int kMaxSmemBytes = 227 * 1024;  // the opt-in maximum per block on sm_90
constexpr int kSliceBytes = kSliceRows * kRowBytes;   // 4 KiB
constexpr int kPaddedRow = kRowBytes + 16;            // flash_decode's padded shared rows
constexpr int kStageBytes = 2 * kSliceRows * kPaddedRow;  // K and V slices of one warp, padded
constexpr int kSmemBytes = 160 * 1024;                // one block per SM, as flash_decode at d 128

enum Mode { CpAsyncCa, CpAsyncCg, Tma, Bulk, Ldg };

__device__ __forceinline__ void bulk_load(void* smem, const void* gmem, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_addr(smem)),
               "l"(gmem), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}

template <Mode kMode>
__global__ void __launch_bounds__(kWarps * 32) stream(const uint4* __restrict__ k, const uint4* __restrict__ v,
                                                     const __grid_constant__ CUtensorMap k_map,
                                                     const __grid_constant__ CUtensorMap v_map, int n,
                                                     unsigned* sink) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, plane = blockIdx.x, tiles = n / kTileRows;
  const size_t plane_rows = size_t(plane) * n;
  unsigned acc = 0;
  if constexpr (kMode == Ldg) {
    for (int t = 0; t < tiles; ++t) {
      const size_t row0 = plane_rows + size_t(t) * kTileRows + warp * kSliceRows;
      uint4 r[16];
#pragma unroll
      for (int c = 0; c < 8; ++c) {  // 256 chunks of 16 B per slice, 8 per lane, K then V
        r[c] = k[row0 * (kRowBytes / 16) + c * 32 + lane];
        r[8 + c] = v[row0 * (kRowBytes / 16) + c * 32 + lane];
      }
#pragma unroll
      for (int c = 0; c < 16; ++c) acc ^= r[c].x ^ r[c].w;
    }
  } else if constexpr (kMode == CpAsyncCa || kMode == CpAsyncCg) {
    unsigned char* ring = smem + warp * kStages * kStageBytes;
    auto issue = [&](int t) {
      if (t >= tiles) return cp_async_commit();
      unsigned char* st = ring + (t % kStages) * kStageBytes;
      const size_t row0 = plane_rows + size_t(t) * kTileRows + warp * kSliceRows;
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const int chunk = c * 32 + lane, row = chunk / 16, col = chunk % 16;
        const uint4* gk = k + (row0 + row) * (kRowBytes / 16) + col;
        const uint4* gv = v + (row0 + row) * (kRowBytes / 16) + col;
        if constexpr (kMode == CpAsyncCa) {
          cp_async_16_l1(st + row * kPaddedRow + col * 16, gk, true);
          cp_async_16_l1(st + (kSliceRows + row) * kPaddedRow + col * 16, gv, true);
        } else {
          cp_async_16(st + row * kPaddedRow + col * 16, gk, true);
          cp_async_16(st + (kSliceRows + row) * kPaddedRow + col * 16, gv, true);
        }
      }
      cp_async_commit();
    };
    for (int t = 0; t < kStages - 1; ++t) issue(t);
    for (int t = 0; t < tiles; ++t) {
      issue(t + kStages - 1);
      cp_async_wait<kStages - 1>();
      const unsigned char* st = ring + (t % kStages) * kStageBytes;
      acc ^= *reinterpret_cast<const unsigned*>(st + (lane / 16) * kPaddedRow + (lane % 16) * 16);
    }
  } else {  // Tma, Bulk: lane 0 issues, every lane waits on the stage's mbarrier
    uint64_t* bars = reinterpret_cast<uint64_t*>(smem + kSmemBytes - 64 * 8) + warp * kStages;
    unsigned char* ring = smem + warp * kStages * 2 * kSliceBytes;
    if (lane == 0)
      for (int s = 0; s < kStages; ++s) mbar_init(&bars[s], 1);
    fence_mbar_init();
    __syncwarp();
    auto issue = [&](int t) {
      if (t >= tiles || lane != 0) return;
      unsigned char* st = ring + (t % kStages) * 2 * kSliceBytes;
      uint64_t* bar = &bars[t % kStages];
      mbar_arrive_expect_tx(bar, 2 * kSliceBytes);
      const int row = t * kTileRows + warp * kSliceRows;
      if constexpr (kMode == Tma) {
        for (int half = 0; half < 2; ++half) {
          tma_load_3d(st + half * (kSliceBytes / 2), &k_map, bar, half * 64, row, plane);
          tma_load_3d(st + kSliceBytes + half * (kSliceBytes / 2), &v_map, bar, half * 64, row, plane);
        }
      } else {
        bulk_load(st, k + (plane_rows + row) * (kRowBytes / 16), kSliceBytes, bar);
        bulk_load(st + kSliceBytes, v + (plane_rows + row) * (kRowBytes / 16), kSliceBytes, bar);
      }
    };
    for (int t = 0; t < kStages; ++t) issue(t);
    for (int t = 0; t < tiles; ++t) {
      mbar_wait(&bars[t % kStages], (t / kStages) & 1);
      const unsigned char* st = ring + (t % kStages) * 2 * kSliceBytes;
      acc ^= *reinterpret_cast<const unsigned*>(st + lane * 128);
      __syncwarp();
      issue(t + kStages);
    }
  }
  if (acc == 0x12345678u) sink[0] = acc;  // keeps the loads
}

// flash_decode's copies (cp.async.ca, padded rows) with other stage counts, warps per block and
// copy patterns: `interleaved` — the block's warps together copy each 64-key tile's K and V as
// contiguous 2 KiB runs per instruction (warp w the w-th 512 bytes of each run) instead of each
// warp its own contiguous 4 KiB slice; every warp still waits only for its own copies.
template <int kStagesT, int kWarpsT, bool kInterleaved>
__global__ void __launch_bounds__(kWarpsT * 32) stream_ca(const uint4* __restrict__ k, const uint4* __restrict__ v,
                                                         int n, unsigned* sink, int spin) {
  extern __shared__ __align__(1024) unsigned char smem[];
  constexpr int kTile = kWarpsT * kSliceRows, kChunksPerTile = kTile * kRowBytes / 16;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, plane = blockIdx.x, tiles = n / kTile;
  const size_t plane_rows = size_t(plane) * n;
  unsigned acc = 0;
  unsigned char* ring = smem + warp * kStagesT * kStageBytes;
  auto issue = [&](int t) {
    if (t >= tiles) return cp_async_commit();
    unsigned char* st = ring + (t % kStagesT) * kStageBytes;
    const size_t tile0 = plane_rows + size_t(t) * kTile;
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      // the chunk of the tile this lane copies: its own slice's c-th run, or the block-wide runs'
      const int chunk = kInterleaved ? (c * kWarpsT + warp) * 32 + lane : warp * 256 + c * 32 + lane;
      const int row = chunk / 16, col = chunk % 16, srow = (c * 32 + lane) / 16;
      cp_async_16_l1(st + srow * kPaddedRow + col * 16, k + (tile0 + row) * (kRowBytes / 16) + col, true);
      cp_async_16_l1(st + (kSliceRows + srow) * kPaddedRow + col * 16, v + (tile0 + row) * (kRowBytes / 16) + col,
                     true);
    }
    cp_async_commit();
  };
  static_assert(kChunksPerTile == kWarpsT * 256, "a warp copies 256 chunks of each tile");
  for (int t = 0; t < kStagesT - 1; ++t) issue(t);
  for (int t = 0; t < tiles; ++t) {
    issue(t + kStagesT - 1);
    cp_async_wait<kStagesT - 1>();
    const unsigned char* st = ring + (t % kStagesT) * kStageBytes;
    acc ^= *reinterpret_cast<const unsigned*>(st + (lane / 16) * kPaddedRow + (lane % 16) * 16);
    if (spin > 0) {  // the slice's arithmetic, as a busy wait of `spin` cycles
      const long long until = clock64() + spin;
      while (clock64() < until) {
      }
    }
  }
  if (acc == 0x12345678u) sink[0] = acc;
}

// Cleans the L2 between launches with a read-only pass (as flashio's timing does: a memset would
// leave dirty lines for the next launch to write back).
__global__ void read_sweep(const uint4* __restrict__ p, size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    acc ^= p[i].x;
  if (acc == 0x12345678u) sink[0] = acc;
}

PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !fn) {
    std::fprintf(stderr, "no cuTensorMapEncodeTiled\n");
    std::exit(1);
  }
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
}

CUtensorMap map_of(const void* base, int n, int planes) {
  CUtensorMap m;
  const cuuint64_t dims[3] = {cuuint64_t(kD), cuuint64_t(n), cuuint64_t(planes)};
  const cuuint64_t strides[2] = {cuuint64_t(kRowBytes), cuuint64_t(n) * kRowBytes};
  const cuuint32_t box[3] = {64, kSliceRows, 1}, estr[3] = {1, 1, 1};
  if (encoder()(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, const_cast<void*>(base), dims, strides, box, estr,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
    std::exit(1);
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s cpasync_ca|cpasync_cg|tma|bulk|ldg|ca:STAGES:WARPS:own|interleaved[:SMEM_KIB[:SPIN_CYCLES]] PLANES KEYS "
                 "[launches]\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const int planes = std::atoi(argv[2]), n = std::atoi(argv[3]), launches = argc > 4 ? std::atoi(argv[4]) : 30;
  const size_t bytes = size_t(planes) * n * kRowBytes;
  uint4 *k = nullptr, *v = nullptr, *flush = nullptr;
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&k, bytes));
  CHECK(cudaMalloc(&v, bytes));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMemset(k, 1, bytes));
  CHECK(cudaMemset(v, 2, bytes));
  const size_t flush_bytes = 256u << 20;  // cleans the L2 between launches
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMemset(flush, 3, flush_bytes));
  const CUtensorMap km = map_of(k, n, planes), vm = map_of(v, n, planes);
  auto launch = [&] {
    auto go = [&](auto kernel) {
      CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
      kernel<<<planes, kWarps * 32, kSmemBytes>>>(k, v, km, vm, n, sink);
    };
    if (mode == "cpasync_ca") go(stream<CpAsyncCa>);
    else if (mode == "cpasync_cg") go(stream<CpAsyncCg>);
    else if (mode == "tma") go(stream<Tma>);
    else if (mode == "bulk") go(stream<Bulk>);
    else if (mode == "ldg") go(stream<Ldg>);
    else if (mode.rfind("ca:", 0) == 0) {
      int stages = 0, warps = 0, smem_kib = 0;
      char pattern[16] = {};
      int spin = 0;
      if (std::sscanf(mode.c_str(), "ca:%d:%d:%15[a-z]:%d:%d", &stages, &warps, pattern, &smem_kib, &spin) < 3) {
        std::fprintf(stderr, "bad mode %s\n", mode.c_str());
        std::exit(2);
      }
      const bool inter = std::string(pattern) == "interleaved";
      const int smem = smem_kib > 0 ? smem_kib * 1024 : std::max(warps * stages * kStageBytes, 1);
      auto go_ca = [&](auto kernel, int threads) {
        CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmemBytes));
        kernel<<<planes, threads, smem>>>(k, v, n, sink, spin);
      };
#define CA_CASE(S, W)                                                        \
  if (stages == S && warps == W) {                                           \
    if (inter) go_ca(stream_ca<S, W, true>, W * 32); else go_ca(stream_ca<S, W, false>, W * 32); \
    return;                                                                  \
  }
      CA_CASE(2, 4) CA_CASE(3, 4) CA_CASE(4, 4) CA_CASE(6, 4) CA_CASE(2, 8) CA_CASE(4, 8)
#undef CA_CASE
      std::fprintf(stderr, "no kernel for %s\n", mode.c_str());
      std::exit(2);
    } else {
      std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
      std::exit(2);
    }
  };
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int i = 0; i < launches + 3; ++i) {
    read_sweep<<<1024, 256>>>(flush, flush_bytes / 16, sink);
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaGetLastError());
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, a, b));
    if (i >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2] * 1e-3;
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%-11s %s planes %d keys %d: %.1f us, %.3f TB/s (K + V %.3f GB; min %.1f us)\n", mode.c_str(), prop.name,
              planes, n, med * 1e6, 2.0 * double(bytes) / med / 1e12, 2.0 * double(bytes) / 1e9, ms.front() * 1e3);
  return 0;
}

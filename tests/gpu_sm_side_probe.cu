// The SM side probe (issue 19): which L2 partition each SM reads through, measured by timing.
//
// The DRAM model's L2 simulation puts SM s on partition s mod 2 and deals a grid's blocks to SMs in
// turn (analysis/l2_sim.h); the L2 probe's timeline (tests/gpu_l2_probe.cu) shows the scheduler
// dealing blocks to SMs 124…131, 0, 16, 2, 18, … on an H200 — so which side an SM is on decides how
// evenly a small grid loads the two partitions. Two SMs each read a buffer of S twice (a flush of
// 3 × L2 first): a line homed on the far side is held twice (home, and the reader's near copy), so
// each reader's buffer occupies its own partition whole and the other half. Two readers on
// different sides fill each partition with 1.5 S; on the same side one partition holds 2 S and the
// other S. With S between a quarter and a third of the L2 the pair on one side overflows its
// partition (a cyclic stream under LRU: most of it from DRAM again) and the pair on two sides does
// not, so the second pass takes much longer on the same side. SM `ref` (0) is paired with every
// other SM; the second pass's time (the later of the two blocks, %globaltimer) per SM, and the
// split of the times at their widest gap, give each SM's side relative to SM `ref`.
//
// Launch: one block per SM (the shared memory a block asks for leaves room for one), every block
// reads %smid and only the pair's two read; the rest exit.
//   nvcc -O3 -std=c++17 -arch=sm_90 -o side_probe tests/gpu_sm_side_probe.cu && ./side_probe [MiB] [ref]
// Prints per SM: its side (A: SM ref's, B: the other), the second pass's µs, and the gap.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpu_probe_check.h"
#include "gpu_probe_flush.cuh"

__global__ void side_read(const int4* __restrict__ a, const int4* __restrict__ b, size_t n, unsigned sm_a,
                          unsigned sm_b, unsigned long long* ns, unsigned* sink) {
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  if (sm != sm_a && sm != sm_b) return;
  const int4* buf = sm == sm_a ? a : b;
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0) : : "memory");
  int acc = 0;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int4 v = __ldcg(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  __syncthreads();
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1) : : "memory");
  if (threadIdx.x == 0) ns[sm == sm_a ? 0 : 1] = t1 - t0;
  if (acc == 0x7fffffff) atomicAdd(sink, 1u);
}

int main(int argc, char** argv) {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const double l2_mib = double(prop.l2CacheSize) / 1048576.0;
  const double mib = argc > 1 ? std::atof(argv[1]) : 0.275 * l2_mib;  // between L2/4 and L2/3
  const unsigned ref = argc > 2 ? unsigned(std::atoi(argv[2])) : 0;
  const int sms = prop.multiProcessorCount;
  if (!(mib > 0) || int(ref) >= sms) {
    std::fprintf(stderr, "usage: %s [MiB > 0] [ref SM < %d]\n", argv[0], sms);
    return 2;
  }
  const size_t n = size_t(mib * 1048576.0) / 16, flush_n = size_t(prop.l2CacheSize) * 3 / 16;
  int4 *a = nullptr, *b = nullptr, *other = nullptr;
  unsigned* sink = nullptr;
  unsigned long long* ns = nullptr;
  CHECK(cudaMalloc(&a, n * 16));
  CHECK(cudaMalloc(&b, n * 16));
  CHECK(cudaMalloc(&other, flush_n * 16));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  CHECK(cudaMallocHost(&ns, 2 * sizeof(unsigned long long)));
  CHECK(cudaMemset(a, 1, n * 16));
  CHECK(cudaMemset(b, 2, n * 16));
  CHECK(cudaMemset(other, 3, flush_n * 16));
  // One block per SM: more than half of the shared memory an SM offers.
  const size_t smem = prop.sharedMemPerMultiprocessor / 2 + 1024;
  CHECK(cudaFuncSetAttribute(side_read, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  std::vector<double> us(size_t(sms), 0.0);
  for (int s = 0; s < sms; ++s) {
    if (unsigned(s) == ref) continue;
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {  // the least of three: a pass disturbed by something else is longer
      probe_flush<<<4 * sms, 256>>>(other, flush_n, sink);
      side_read<<<sms, 256, smem>>>(a, b, n, ref, unsigned(s), ns, sink);  // pass 1: from DRAM
      ns[0] = ns[1] = 0;
      side_read<<<sms, 256, smem>>>(a, b, n, ref, unsigned(s), ns, sink);  // pass 2: what the L2 kept
      CHECK(cudaDeviceSynchronize());
      if (!ns[0] || !ns[1]) {
        std::fprintf(stderr, "SM %d or %u ran no block of the pair (the launch did not cover every SM)\n", s, ref);
        return 1;
      }
      best = std::min(best, double(std::max(ns[0], ns[1])) * 1e-3);
    }
    us[size_t(s)] = best;
  }
  CHECK(cudaGetLastError());
  // The widest gap between consecutive sorted times splits the SMs into the slow pairs (same side as
  // ref) and the fast ones.
  std::vector<double> sorted;
  for (int s = 0; s < sms; ++s)
    if (unsigned(s) != ref) sorted.push_back(us[size_t(s)]);
  std::sort(sorted.begin(), sorted.end());
  size_t cut = 1;
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i] - sorted[i - 1] > sorted[cut] - sorted[cut - 1]) cut = i;
  const double split = 0.5 * (sorted[cut - 1] + sorted[cut]);
  std::printf("# %s, L2 %d bytes, %d SMs; two buffers of %.2f MiB, SM %u paired with each other SM\n", prop.name,
              prop.l2CacheSize, sms, mib, ref);
  std::printf(
      "# second pass (µs, the later block of the pair, least of 3): fast %.1f-%.1f, slow %.1f-%.1f; "
      "split at %.1f\n",
      sorted.front(), sorted[cut - 1], sorted[cut], sorted.back(), split);
  std::printf("# sm side us  (side A: SM %u's — the slow pairs; B: the other)\n", ref);
  std::printf("%d A -\n", int(ref));
  int a_count = 1;
  for (int s = 0; s < sms; ++s) {
    if (unsigned(s) == ref) continue;
    const bool same = us[size_t(s)] > split;
    a_count += same;
    std::printf("%d %c %.1f\n", s, same ? 'A' : 'B', us[size_t(s)]);
  }
  std::printf("# side A: %d SMs, side B: %d\n", a_count, sms - a_count);
  return 0;
}

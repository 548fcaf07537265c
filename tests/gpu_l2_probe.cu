// The L2 probe (issue 19): what the DRAM model's L2 simulation assumes (analysis/l2_sim.h) —
// capacity, two partitions holding a line read from both sides twice, least-recently-used
// replacement, dirty lines written back only when evicted — measured on the GPU.
//
// One run = one buffer of `MiB` mebibytes and a sequence of launches, each a kernel of its own,
// so that Nsight Compute (scripts/l2_probe.sh runs it with --cache-control none: no flush
// between kernels) reads each launch's DRAM bytes:
//   probe_flush   reads a separate buffer of 3 × L2 (the L2 holds only clean lines of it after)
//   probe_read    (pass 1) reads the buffer once: every line from DRAM
//   probe_read    (pass 2) reads it again: DRAM bytes = what pass 1 left that L2 lost
//   probe_write   (mode w only) overwrites the buffer, then probe_flush's read of the other
//                 buffer: its DRAM writes = the dirty bytes the L2 still held
//   mode a        (read after write) probe_write, then probe_read: its DRAM reads = the written
//                 lines the L2 no longer holds — a dirty line written back past the dirty limit
//                 either stays (clean: no read) or leaves with its write-back (read again)
//   mode m        (read-modify-write, as flash1's fp32 O accumulator) probe_rmw twice: the
//                 second's DRAM reads = the lines the first left that the L2 lost, its DRAM
//                 writes = the dirty lines written back while it ran
//   mode v        as m, the second pass in reverse order (each block from the end of its slice):
//                 a dirty limit that writes back the least recently written line of a full set
//                 spills only the excess then, where in a cyclic order it spills every line of
//                 such a set; a limit that picks its victims otherwise spills alike in both orders
//   mode d        (dirty lines left idle) probe_write, then probe_spin (one thread waits
//                 `spin_us` microseconds, touching nothing): its DRAM writes = the dirty lines the
//                 L2 wrote back on its own while nothing ran — a background cleaner below the
//                 dirty limit writes some back, a limit enforced only on allocation writes none
//   mode c        (clean fills beside dirty lines) probe_write, then probe_flush over the first
//                 `share` × L2 of the other buffer (lines long evicted: every one a clean fill, from
//                 every SM), then the whole flush: the partial read's DRAM writes = the dirty lines
//                 written back while clean lines were allocated — least-recently-used replacement
//                 evicts the older clean lines first and writes back nothing until the fills
//                 outgrow them; a cleaning triggered by allocation into a full partition writes
//                 back from the first fill — then the flush's DRAM writes, the dirty bytes still held
//   mode k        (two streams, as flash1's forward: its fp32 O read-modify-written and its Q read at
//                 every K/V tile) probe_mix twice over the buffer (read-modify-written) and a second
//                 buffer of half its size (read), each block its slices of both, interleaved: the
//                 second pass's DRAM reads and writes — against mode m of the same footprint
//   mode x        as k with the first buffer only read: two read streams, the same footprint
//   mode y        as x with the second buffer right after the first in one allocation (x: an allocation
//                 of its own, 2 MiB-aligned as the first): whether the two streams' placement in the
//                 address space (their lines in the same L2 sets) is what x loses early
//   mode z        as x, but each block reads its slice of the first buffer, then its slice of the second
//                 (not interleaved): whether it is the interleaving that x loses early to
//   mode n        (ranges) as r with the buffer cut into `ranges` equal parts, each block reading its slice
//                 of each part in turn: one buffer, `ranges` ranges per block (1: mode r)
//   mode h        (sides) the buffer in chunks of `chunk` KiB dealt to the two L2 sides in turn (chunk c to
//                 the SMs of side c mod 2, the side map from FLASHIO_PROBE_SIDES, tests/gpu_sm_side_probe.cu's
//                 output); each side's blocks take its 4 KiB units in order from a counter of their own, so a
//                 side reads only its chunks and the near copies it makes are of those; chunk 0: one counter
//                 for all (every SM sweeps the buffer in order, sides mixed): whether which lines a side
//                 reads — halves, or fine interleaving — changes what is lost
// With FLASHIO_PROBE_TIMELINE=FILE, modes r, k, x, y and n also stamp when each block starts each iteration of
// both passes and write the timeline to FILE (struct Timeline, below).
// `blocks`: 0 = 4 blocks per SM (every SM reads, both partitions), 1 = one block (one SM: one
// side). Loads are ld.global.cg (__ldcg: L2 only, no L1), 16 bytes per thread per iteration,
// addresses in order, block b taking the b-th contiguous slice (a cyclic stream, LRU's worst case).
//
// What each model predicts for pass 2's DRAM bytes / buffer bytes (S = buffer, C = L2):
//   LRU, one pool of C:                 0 for S ≤ C, 1 for S > C (a cliff)
//   LRU, two partitions, line held
//   on both sides when read from both:  0 for S ≤ C/2, 1 beyond (every SM) ; one SM: 0 to C/2,
//                                       ½ between C/2 and C (the far half stays home), 1 beyond
//   random / adaptive replacement:      a slope (≈ 1 − C/S) instead of a cliff
// Build and run: scripts/l2_probe.sh (one command, prints the table).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_probe_check.h"
#include "gpu_probe_flush.cuh"
#include "gpu_sm_sides.h"

// The timeline (FLASHIO_PROBE_TIMELINE=FILE; modes r, k, x, y and n): thread 0 of every block stamps %globaltimer
// before each iteration of its loop and after the last, and records the block's SM — when each block
// asked for each part of its slices, so that the L2's requests can be replayed in the order they were
// made (tests/test_l2_sim.cpp: is the every-SM ramp a replacement effect, or the blocks' timing?). The
// stamp's "memory" clobber keeps the block's loads on their side of it. stamps[block · (iters + 1) + it];
// the stamps are 8-byte stores of their own (a share of the footprint the replay counts).
struct Timeline {
  unsigned long long* stamps = nullptr;
  unsigned* smid = nullptr;
  int iters = 0;
};

__device__ __forceinline__ void stamp(const Timeline& tl, int it) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : : "memory");
  tl.stamps[size_t(blockIdx.x) * (tl.iters + 1) + it] = t;
}

__device__ __forceinline__ void record_sm(const Timeline& tl) {
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  tl.smid[blockIdx.x] = sm;
}

template <bool kStamp>
__global__ void probe_read(const int4* __restrict__ buf, size_t n, unsigned* sink, Timeline tl) {
  const size_t per_block = (n + gridDim.x - 1) / gridDim.x;
  const size_t from = size_t(blockIdx.x) * per_block, to = min(n, from + per_block);
  const bool stamps = kStamp && threadIdx.x == 0;
  if (stamps) record_sm(tl);
  int acc = 0, it = 0;
  for (size_t i = from + threadIdx.x; i < to; i += blockDim.x, ++it) {
    if (stamps) stamp(tl, it);
    const int4 v = __ldcg(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (stamps) stamp(tl, it);
  if (acc == 0x7fffffff) atomicAdd(sink, 1u);  // keeps the loads
}

__global__ void probe_write(int4* __restrict__ buf, size_t n) {
  const size_t per_block = (n + gridDim.x - 1) / gridDim.x;
  const size_t from = size_t(blockIdx.x) * per_block, to = min(n, from + per_block);
  for (size_t i = from + threadIdx.x; i < to; i += blockDim.x) __stcg(buf + i, make_int4(int(i), 1, 2, 3));
}

__global__ void probe_rmw(int4* __restrict__ buf, size_t n) {
  const size_t per_block = (n + gridDim.x - 1) / gridDim.x;
  const size_t from = size_t(blockIdx.x) * per_block, to = min(n, from + per_block);
  for (size_t i = from + threadIdx.x; i < to; i += blockDim.x) {
    int4 v = __ldcg(buf + i);
    v.x += 1;
    __stcg(buf + i, v);
  }
}

// probe_rmw with each block walking its slice from the end: the lines written last are written first.
__global__ void probe_rmw_reversed(int4* __restrict__ buf, size_t n) {
  const size_t per_block = (n + gridDim.x - 1) / gridDim.x;
  const size_t from = size_t(blockIdx.x) * per_block, to = min(n, from + per_block);
  if (from >= to) return;
  for (size_t k = threadIdx.x; k < to - from; k += blockDim.x) {
    const size_t i = to - 1 - k;
    int4 v = __ldcg(buf + i);
    v.x += 1;
    __stcg(buf + i, v);
  }
}

// Block b walks its slice of `a` (read-modify-written, or only read) and, every other element, its
// slice of `b` (read): two interleaved streams, `b` half the size of `a`.
// Mode z: block b reads its slice of `a`, then its slice of `b` (the same two buffers, not interleaved).
__global__ void probe_seq(const int4* __restrict__ a, size_t na, const int4* __restrict__ b, size_t nb,
                          unsigned* sink) {
  const size_t per_a = (na + gridDim.x - 1) / gridDim.x, per_b = (nb + gridDim.x - 1) / gridDim.x;
  const size_t from_a = size_t(blockIdx.x) * per_a, to_a = min(na, from_a + per_a);
  const size_t from_b = size_t(blockIdx.x) * per_b, to_b = min(nb, from_b + per_b);
  int acc = 0;
  for (size_t i = from_a + threadIdx.x; i < to_a; i += blockDim.x) {
    const int4 v = __ldcg(a + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  for (size_t j = from_b + threadIdx.x; j < to_b; j += blockDim.x) {
    const int4 w = __ldcg(b + j);
    acc ^= w.x ^ w.y ^ w.z ^ w.w;
  }
  if (acc == 0x7fffffff) atomicAdd(sink, 1u);
}

// Mode n: the buffer cut into `ranges` parts; block b reads its slice of part 0, then of part 1, ...
// (timeline: the iterations numbered on across the parts, each part's ⌈slice / blockDim⌉ of them).
template <bool kStamp>
__global__ void probe_ranges(const int4* __restrict__ buf, size_t n, int ranges, unsigned* sink, Timeline tl) {
  const size_t part = n / size_t(ranges), per = (part + gridDim.x - 1) / gridDim.x;
  const int part_iters = int((per + blockDim.x - 1) / blockDim.x);
  const bool stamps = kStamp && threadIdx.x == 0;
  if (stamps) record_sm(tl);
  int acc = 0;
  for (int r = 0; r < ranges; ++r) {
    const size_t from = size_t(r) * part + size_t(blockIdx.x) * per, to = min(size_t(r + 1) * part, from + per);
    int it = r * part_iters;
    for (size_t i = from + threadIdx.x; i < to; i += blockDim.x, ++it) {
      if (stamps) stamp(tl, it);
      const int4 v = __ldcg(buf + i);
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (stamps && r + 1 == ranges) stamp(tl, it);
  }
  if (acc == 0x7fffffff) atomicAdd(sink, 1u);
}

// Mode h: units of 4 KiB (the block's 256 threads × 16 bytes), taken in order per side.
__global__ void probe_sides(const int4* __restrict__ buf, size_t n, size_t chunk_units, const int* __restrict__ side_of,
                            unsigned long long* counters, unsigned* sink) {
  __shared__ unsigned long long unit;
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  const int side = chunk_units ? side_of[sm] : 0;
  const size_t units = (n + blockDim.x - 1) / blockDim.x;
  int acc = 0;
  for (;;) {
    if (threadIdx.x == 0) unit = atomicAdd(counters + side, 1ull);
    __syncthreads();
    const size_t u = unit;
    __syncthreads();
    // this side's u-th unit: chunk 2·(u / chunk_units) + side, unit u mod chunk_units of it
    const size_t global = chunk_units ? (2 * (u / chunk_units) + size_t(side)) * chunk_units + u % chunk_units : u;
    if (global >= units) break;
    const size_t i = global * blockDim.x + threadIdx.x;
    if (i < n) {
      const int4 v = __ldcg(buf + i);
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  if (acc == 0x7fffffff) atomicAdd(sink, 1u);
}

template <bool kStamp>
__global__ void probe_mix(int4* __restrict__ a, size_t na, const int4* __restrict__ b, size_t nb, bool rmw,
                          unsigned* sink, Timeline tl) {
  const size_t per_a = (na + gridDim.x - 1) / gridDim.x, per_b = (nb + gridDim.x - 1) / gridDim.x;
  const size_t from_a = size_t(blockIdx.x) * per_a, to_a = min(na, from_a + per_a);
  const size_t from_b = size_t(blockIdx.x) * per_b, to_b = min(nb, from_b + per_b);
  const bool stamps = kStamp && threadIdx.x == 0;
  if (stamps) record_sm(tl);
  int acc = 0, it = 0;
  for (size_t k = threadIdx.x; from_a + k < to_a; k += blockDim.x, ++it) {
    if (stamps) stamp(tl, it);
    int4 v = __ldcg(a + from_a + k);
    if (rmw) {
      v.x += 1;
      __stcg(a + from_a + k, v);
    } else {
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    const size_t row = k / blockDim.x, j = from_b + row / 2 * blockDim.x + threadIdx.x;
    if (row % 2 == 0 && j < to_b) {  // every other row of a: the next row of b
      const int4 w = __ldcg(b + j);
      acc ^= w.x ^ w.y ^ w.z ^ w.w;
    }
  }
  if (stamps) stamp(tl, it);
  if (acc == 0x7fffffff) atomicAdd(sink, 1u);
}

__global__ void probe_spin(unsigned long long ns) {
  unsigned long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MiB blocks [r|w|a|m|v|d [spin_us]|c [share]]   (blocks 0: 4 per SM; 1: one SM)\n",
                 argv[0]);
    return 2;
  }
  const double mib = std::atof(argv[1]);
  int blocks = std::atoi(argv[2]);
  const std::string mode = argc > 3 ? argv[3] : "r";
  if (mode != "r" && mode != "w" && mode != "a" && mode != "m" && mode != "v" && mode != "d" && mode != "c" &&
      mode != "k" && mode != "x" && mode != "y" && mode != "z" && mode != "n" && mode != "h") {
    std::fprintf(stderr, "unknown mode %s: r, w, a, m, v, d, c, k, x, y, z, n or h\n", mode.c_str());
    return 2;
  }
  const double spin_us = argc > 4 ? std::atof(argv[4]) : 100.0;
  const double fill_share = argc > 4 ? std::atof(argv[4]) : 0.1;
  const int ranges = argc > 4 ? std::atoi(argv[4]) : 2;
  const double chunk_kib = argc > 4 ? std::atof(argv[4]) : 0.0;  // mode h
  if (mode == "h" && !(chunk_kib >= 0 && std::fmod(chunk_kib, 4.0) == 0)) {
    std::fprintf(stderr, "mode h: the chunk must be a multiple of 4 KiB (0: no sides)\n");
    return 2;
  }
  if (mode == "n" && !(ranges >= 1 && ranges <= 64)) {
    std::fprintf(stderr, "mode n: the ranges per block must lie in [1, 64]\n");
    return 2;
  }
  if (mode == "c" && !(fill_share > 0 && fill_share <= 3)) {
    std::fprintf(stderr, "mode c: the share of the L2 to fill must lie in (0, 3]\n");
    return 2;
  }
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (blocks <= 0) blocks = 4 * prop.multiProcessorCount;
  const size_t bytes = size_t(mib * 1024 * 1024) / 16 * 16, n = bytes / 16;
  const size_t flush_bytes = size_t(prop.l2CacheSize) * 3, flush_n = flush_bytes / 16;
  int4 *buf = nullptr, *other = nullptr;
  unsigned* sink = nullptr;
  const size_t half_n = n / 2;  // modes k, x, y, z: the second stream, half the buffer
  CHECK(cudaMalloc(&buf, bytes + (mode == "y" ? half_n * 16 + 16 : 0)));
  CHECK(cudaMalloc(&other, flush_bytes));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  CHECK(cudaMemset(buf, 1, bytes));
  CHECK(cudaMemset(other, 2, flush_bytes));
  int4* half = nullptr;  // modes k, x, y, z (filled before the first flush)
  if (mode == "k" || mode == "x" || mode == "z") CHECK(cudaMalloc(&half, half_n * 16 + 16));
  if (mode == "y") half = buf + n;
  if (half) CHECK(cudaMemset(half, 3, half_n * 16 + 16));
  // The timeline (modes r, k, x, y and n): both passes' stamps and SMs, written to FLASHIO_PROBE_TIMELINE's file.
  const char* timeline = (mode == "r" || mode == "x" || mode == "y" || mode == "k" || mode == "n")
                             ? std::getenv("FLASHIO_PROBE_TIMELINE")
                             : nullptr;
  constexpr int kThreads = 256;
  Timeline passes[2];
  const size_t per_block = (n + blocks - 1) / blocks, per_part = (n / size_t(ranges) + blocks - 1) / blocks;
  const int iters = mode == "n" ? ranges * int((per_part + kThreads - 1) / kThreads)
                                : int((per_block + kThreads - 1) / kThreads);
  const size_t stamp_count = size_t(blocks) * (iters + 1);
  if (timeline)
    for (Timeline& tl : passes) {
      tl.iters = iters;
      CHECK(cudaMalloc(&tl.stamps, stamp_count * sizeof(unsigned long long)));
      CHECK(cudaMalloc(&tl.smid, blocks * sizeof(unsigned)));
      CHECK(cudaMemset(tl.stamps, 0, stamp_count * sizeof(unsigned long long)));
    }
  CHECK(cudaDeviceSynchronize());
  const int flush_blocks = 4 * prop.multiProcessorCount;
  probe_flush<<<flush_blocks, 256>>>(other, flush_n, sink);
  if (mode == "w") {
    probe_write<<<blocks, 256>>>(buf, n);
    probe_flush<<<flush_blocks, 256>>>(other, flush_n, sink);  // its DRAM writes: the dirty bytes held
  } else if (mode == "a") {
    probe_write<<<blocks, 256>>>(buf, n);
    probe_read<false><<<blocks, 256>>>(buf, n, sink, {});  // its DRAM reads: the written lines lost
  } else if (mode == "d") {
    probe_write<<<blocks, 256>>>(buf, n);
    probe_spin<<<1, 1>>>((unsigned long long)(spin_us * 1000.0));  // its DRAM writes: cleaned while idle
    probe_flush<<<flush_blocks, 256>>>(other, flush_n, sink);      // the dirty bytes still held
  } else if (mode == "c") {
    probe_write<<<blocks, 256>>>(buf, n);
    const size_t fill_n = std::min(flush_n, size_t(fill_share * double(prop.l2CacheSize)) / 16);
    probe_flush<<<flush_blocks, 256>>>(other, fill_n, sink);   // its DRAM writes: cleaned by clean fills
    probe_flush<<<flush_blocks, 256>>>(other, flush_n, sink);  // the dirty bytes still held
  } else if (mode == "k" || mode == "x" || mode == "y") {
    for (int pass = 0; pass < 2; ++pass)  // the second's DRAM reads and writes
      if (timeline)
        probe_mix<true><<<blocks, kThreads>>>(buf, n, half, half_n, mode == "k", sink, passes[pass]);
      else
        probe_mix<false><<<blocks, kThreads>>>(buf, n, half, half_n, mode == "k", sink, {});
  } else if (mode == "h") {
    std::vector<int> side(size_t(prop.multiProcessorCount), 0);
    if (chunk_kib > 0) {
      const char* path = std::getenv("FLASHIO_PROBE_SIDES");
      if (!path) {
        std::fprintf(stderr, "mode h: FLASHIO_PROBE_SIDES must name the side probe's output\n");
        return 2;
      }
      side = read_sm_sides(path, prop.multiProcessorCount);
      const int placed = int(side.size()) - int(std::count(side.begin(), side.end(), -1));
      if (placed != prop.multiProcessorCount) {
        std::fprintf(stderr, "mode h: %s places %d of %d SMs\n", path, placed, prop.multiProcessorCount);
        return 2;
      }
    }
    int* side_d = nullptr;
    unsigned long long* counters = nullptr;
    CHECK(cudaMalloc(&side_d, side.size() * sizeof(int)));
    CHECK(cudaMemcpy(side_d, side.data(), side.size() * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMalloc(&counters, 2 * sizeof(unsigned long long)));
    const size_t chunk_units = size_t(chunk_kib) / 4;
    for (int pass = 0; pass < 2; ++pass) {  // the second's DRAM reads
      CHECK(cudaMemset(counters, 0, 2 * sizeof(unsigned long long)));
      probe_sides<<<blocks, kThreads>>>(buf, n, chunk_units, side_d, counters, sink);
    }
  } else if (mode == "n") {
    for (int pass = 0; pass < 2; ++pass)  // the second's DRAM reads
      if (timeline)
        probe_ranges<true><<<blocks, kThreads>>>(buf, n, ranges, sink, passes[pass]);
      else
        probe_ranges<false><<<blocks, kThreads>>>(buf, n, ranges, sink, {});
  } else if (mode == "z") {
    probe_seq<<<blocks, kThreads>>>(buf, n, half, half_n, sink);
    probe_seq<<<blocks, kThreads>>>(buf, n, half, half_n, sink);  // its DRAM reads
  } else if (mode == "v") {
    probe_rmw<<<blocks, 256>>>(buf, n);
    probe_rmw_reversed<<<blocks, 256>>>(buf, n);  // its DRAM writes: written back in reverse order
  } else if (mode == "m") {
    probe_rmw<<<blocks, 256>>>(buf, n);
    probe_rmw<<<blocks, 256>>>(buf, n);  // its DRAM reads: lines lost; writes: written back
  } else {
    for (int pass = 0; pass < 2; ++pass)  // the second's DRAM reads: what the first left that L2 lost
      if (timeline)
        probe_read<true><<<blocks, kThreads>>>(buf, n, sink, passes[pass]);
      else
        probe_read<false><<<blocks, kThreads>>>(buf, n, sink, {});
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  if (timeline) {  // text: a header, then per pass and block its SM and stamps (ns: the first from the
                   // pass's first stamp, each next one as the difference to the one before)
    std::FILE* f = std::fopen(timeline, "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", timeline);
      return 1;
    }
    std::fprintf(f,
                 "# flashio L2-probe timeline (tests/gpu_l2_probe.cu, FLASHIO_PROBE_TIMELINE): %s, %.2f MiB, mode %s\n"
                 "# per pass and block: pass, block, SM, then thread 0's stamps in ns (before each iteration of its\n"
                 "# loop and after the last): the first from the pass's first stamp, each next the difference\n"
                 "timeline %d %d %d\n",
                 prop.name, mib, mode.c_str(), blocks, iters + 1, kThreads);
    std::vector<unsigned> sm(blocks);
    std::vector<unsigned long long> st(stamp_count);
    for (int pass = 0; pass < 2; ++pass) {
      CHECK(cudaMemcpy(sm.data(), passes[pass].smid, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
      CHECK(
          cudaMemcpy(st.data(), passes[pass].stamps, stamp_count * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      unsigned long long first = ~0ull;
      for (unsigned long long t : st)
        if (t) first = std::min(first, t);
      for (int b = 0; b < blocks; ++b) {
        std::fprintf(f, "%d %d %u", pass, b, sm[size_t(b)]);
        unsigned long long prev = first;
        for (int it = 0; it <= iters && st[size_t(b) * (iters + 1) + it]; ++it) {
          const unsigned long long t = st[size_t(b) * (iters + 1) + it];
          std::fprintf(f, " %llu", t - prev);
          prev = t;
        }
        std::fprintf(f, "\n");
      }
    }
    std::fclose(f);
  }
  std::printf("device %s, L2 %d bytes, %d SMs; buffer %zu bytes, %d blocks, mode %s\n", prop.name, prop.l2CacheSize,
              prop.multiProcessorCount, bytes, blocks, mode.c_str());
  return 0;
}

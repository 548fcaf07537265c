// flash3 backward: FlashAttention-3's backward (Shah et al., 2024, §3 and Appendix B.1) on
// Hopper (sm_90a): FlashAttention-2's backward (Algorithm 2 of FA-2) with the five products on
// wgmma, the loads issued by a producer warp with TMA, and the consumers on mbarriers.
//
// Launches (flash3_bwd_launch.cuh): flash2's preprocess (D = rowsum(dO∘O)) and the fp32 dQ
// accumulator zeroed, this main kernel, flash3's convert (dQ = scale·accumulator, below).
//
// Main kernel: one thread block per (K/V tile j of Bc = 128 keys, K/V head, batch), parallel over
// the key blocks; it keeps K_j, V_j in shared memory and dK_j, dV_j in registers, and streams the
// Q tiles i (Br = 64 rows: Q_i, dO_i, L_i, D_i) of every query head of its GQA group, heads outer,
// Q tiles inner. Causal: Q tiles entirely above the diagonal of key tile j are skipped; the mask
// is applied only on tiles crossing it or the key tail. Three warpgroups:
//
//  - Warpgroup 0, the producer (setmaxnreg down to kFlash3BwdProducerRegisters; warp 0 loads,
//    warp 1 is the dQ writer below, the other two exit). Lane 0 issues TMA loads
//    (cp.async.bulk.tensor.3d, 64-column boxes, the 128-byte swizzle) of K_j and V_j once, completing `kv_full` (every block, as flash2's), and
//    of Q_i, dO_i into a ring of `stages` slots, each with a full and an empty mbarrier. L_i and
//    D_i are read by the warp's lanes, one row each (L·log2 e, +inf for a row with no key or past
//    Nq: P = 0 there), stored into the slot, and every lane arrives on the slot's full barrier
//    (32 arrivals, lane 0's with the TMA bytes): the consumers' wait on it acquires those stores
//    as well as the TMA's bytes.
//  - Warpgroups 1, 2, the consumers (setmaxnreg up to kFlash3BwdConsumerRegisters), 64 keys each,
//    as kernels/flash2/hopper/flash2_bwd_wgmma.cuh's two warpgroups, with its steps
//    (kernels/common/wgmma_bwd.cuh). Per Q tile:
//      Sᵀ  = K_w·Q_iᵀ    wgmma m64n64k16, A = K_w, B = Q_i, both shared, K-major
//      dPᵀ = V_w·dO_iᵀ   likewise with V_w and dO_i
//      Pᵀ = exp2(Sᵀ·scale·log2 e − L), dSᵀ = Pᵀ∘(dPᵀ − D)   in registers
//      dV_w += Pᵀ·dO_i   wgmma m64n{d}k16, A = Pᵀ from registers, B = dO_i MN-major
//      dK_w += dSᵀ·Q_i   likewise with dSᵀ and Q_i
//      dQ_i += dS·K_j    A = dS read M-major from dSᵀ staged in shared memory, B = K_j MN-major;
//                        split between the consumers by columns (d/2 each), stored into the
//                        consumer's part of shared dQ tile it % 2 (flash3_dq_layout.h's order)
//    Once its products have completed, every consumer thread arrives on the slot's empty barrier
//    (256 arrivals free it for the producer: each thread releases its own reads of L, D).
//  - The dQ writer, warp 1 of warpgroup 0 (FA-3's): lane 0 adds each consumer's part of the
//    shared dQ tile into the fp32 accumulator with one bulk reduction (cp.reduce.async.bulk
//    .add.f32, done in L2), so the consumers issue no atomics; the accumulator keeps the shared
//    tile's order (kernels/flash3/flash3_dq_layout.h), which flash3's dQ conversion reads. Two
//    shared dQ tiles: the consumers store iteration it's while the writer still sends it − 1's
//    (with one, the consumers waited for the L2 to take each tile: H100, 0.93–1.02× the atomics'
//    time against 1.08–1.24× with two; kernels/flash3/NOTES.md).
//
// Synchronisation, per iteration `it` (slot s = it % stages, parity (it / stages) & 1):
//   producer: wait empty[s] (parity ^ 1: the first pass is free), store L/D, arrive on full[s]
//             (lane 0: arrive.expect_tx with the Q and dO bytes, then the TMA loads);
//   consumers: wait full[s]; products; dSᵀ into buffer it % 2; bar.sync 1 (256 consumer threads:
//             both halves of dSᵀ are written, and both consumers finished iteration it − 1, so the
//             dSᵀ buffer written next (it + 1) % 2 = (it − 1) % 2 has no reader left); dQ; wait
//             for every product; arrive on empty[s] (every thread); the part into dQ tile
//             b = it % 2 (its dq_empty[b][w] waited for at the iteration's start, parity
//             ((it / 2) & 1) ^ 1: the writer has read iteration it − 2's part out),
//             fence.proxy.async, arrive on dq_full[b][w] (128 arrivals);
//   dQ writer: per iteration and consumer w, wait dq_full[b][w] (parity (it / 2) & 1), bulk-reduce
//             the part, commit; then, once all but these newest groups are read out
//             (wait_group.read), arrive on iteration it − 1's dq_empty[(it − 1) % 2][·]; at the end,
//             wait for the reductions to complete.
//   epilogue: bar.sync 1 (every consumer's last dQ, which reads all of sK, has completed), dK·scale
//             and dV into the consumer's own rows of sK, sV, fence.proxy.async, bar.sync 2 + w
//             (its 128 threads), one thread issues TMA stores of its 64 rows (clipped at Nk).
// Every barrier is a bar.sync both sides execute or an mbarrier; no bar.arrive.
//
// IO per (batch, K/V head), G query heads per K/V head, Tc = ⌈Nk/Bc⌉: as flash2's wgmma
// backward — K, V read once, dK, dV written once; Q, dO read Tc·G times (TMA boxes: rows past Nq
// zero-filled, not read), L and D Tc·G times (32 rows per warp instruction), dQ's whole tile
// (rows past Nq too) reduced Tc·G times (analysis/models/flash3.cpp).
//
// Supported: fp16/bf16, d ∈ {64, 128}, causal (top-left) and key-padding masks, GQA/MQA, Nq ≠ Nk,
// any N. Not: dropout (flash3 has none), the deterministic mode.
//
// Run: build/flashio run --method flash3 --pass bwd --seqlen 4096 --head-dim 128   (an H100/H200)
#pragma once
#include <cuda.h>

#include <cmath>

#include "kernels/common/attention_params.h"
#include "kernels/common/tma.cuh"
#include "kernels/common/wgmma.cuh"
#include "kernels/common/wgmma_bwd.cuh"
#include "kernels/flash3/flash3_configs.h"
#include "kernels/flash3/flash3_dq_layout.h"
#include "kernels/flash3/flash3_fwd_kernel.cuh"  // RingSlot

namespace flashio::kernels {

// What a launch passes: tensor maps of Q, dO ([B·H, Nq, d], boxes of 64 columns × Br rows), K, V
// ([B·Hkv, Nk, d], 64 × Bc) and dK, dV (64 × 64: one consumer's rows), and flash2's arguments.
struct Flash3BwdArgs {
  CUtensorMap q, d_o, k, v, dk, dv;
  BwdParams p;
  int plane_group;  // causal: the planes dealt tile-major together (flash3_bwd_plane_group); 0: the grid's order
};

template <typename Element_, int kHeadDim_, int kBlockM_, int kBlockN_, int kStages_>
struct Flash3BwdTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;  // Br: queries per streamed Q tile
  static constexpr int kBlockN = kBlockN_;  // Bc: keys per thread block, 64 per consumer
  static constexpr int kStages = kStages_;  // Q/dO/L/D ring depth
  static constexpr int kConsumers = kBlockN / 64;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kConsumerThreads = 128 * kConsumers;
  static constexpr int kPanels = kHeadDim / kPanelColumns;
  static constexpr int kDqColumns = kHeadDim / kConsumers;  // N of each consumer's dQ
  static constexpr int kAccSt = kBlockM / 2;                // fp32 registers per thread of Sᵀ (and dPᵀ): (64, Br)
  static constexpr int kAccKV = kHeadDim / 2;               // of dK (and dV): (64, d)
  static constexpr int kAccDq = kDqColumns / 2;             // of dQ: (Br, d/2)
  static constexpr int kDqPartFloats = kBlockM * kDqColumns;  // a consumer's part of the dQ tile
  static constexpr int kDqPartBytes = kDqPartFloats * 4;
  static constexpr int kTileKVBytes = kBlockN * kHeadDim * 2;  // K_j or V_j: (Bc, d) swizzle128
  static constexpr int kTileQBytes = kBlockM * kHeadDim * 2;   // Q_i or dO_i, one slot: (Br, d)
  static constexpr int kTileDsBytes = kBlockN * kBlockM * 2;   // dSᵀ, one buffer: (Bc, Br)
  static constexpr int kRowsPerLane = kBlockM / 32;            // L, D rows per producer lane
  static constexpr int kSmemBytes = flash3_bwd_smem_bytes(kHeadDim, TileShape{kBlockM, kBlockN, 0, kStages});
  static constexpr int kFillArrivals = 32;  // the producer warp's lanes fill a slot
  // Every consumer thread arrives to free a slot: each releases its own plain reads of L, D (an
  // arrive releases the executing thread's accesses only; one lane per warp would leave the
  // other lanes' reads unordered before the producer's next stores, and racecheck says so).
  static constexpr int kReleaseArrivals = kConsumerThreads;
  // Named barriers: the consumers together (dSᵀ published; the epilogue), then one per consumer.
  static constexpr int kDsBarrier = 1;
  static constexpr int kEpilogueBarrier = 2;

  static_assert(kConsumers == 2, "two consumer warpgroups of 64 keys (the registers of setmaxnreg)");
  static_assert(kBlockM == kPanelColumns, "dSᵀ is one 64-column panel: dS is read M-major in one block");
  static_assert(kBlockM % 32 == 0, "whole L/D rows per producer lane");
  static_assert(kHeadDim % kPanelColumns == 0, "whole 64-column panels");
  static_assert(kPanelColumns % kDqColumns == 0 || kDqColumns % kPanelColumns == 0,
                "a consumer's dQ columns are whole panels or an aligned part of one");
  static_assert(kBlockN <= 256 && kBlockM <= 256, "a TMA box has at most 256 rows");
  static_assert(kSmemBytes == 2 * kTileKVBytes + 2 * kStages * kTileQBytes + 2 * kTileDsBytes +
                                  2 * kStages * kBlockM * 4 + 2 * kConsumers * kDqPartBytes + kFlash3SmemAlign,
                "host formula");
  static_assert(kBlockM == kFlash3DqTileRows && kDqColumns % 8 == 0, "the accumulator's tiles (flash3_dq_layout.h)");
  static_assert(kSmemBytes <= kFlash3SmemLimit, "Hopper's shared memory per block");
  static_assert(kTileQBytes % kSwizzleAtomBytes == 0 && kTileKVBytes % kSwizzleAtomBytes == 0 &&
                    kTileDsBytes % kSwizzleAtomBytes == 0,
                "every tile starts on a swizzle atom");
  static_assert(kEpilogueBarrier + kConsumers <= 16, "16 hardware barriers");
};

template <int kStages>
struct Flash3BwdBarriers {
  uint64_t kv_full;                        // K_j and V_j landed
  uint64_t full[kStages], empty[kStages];  // a Q/dO/L/D slot landed / every consumer is done with it
  uint64_t dq_full[2][2], dq_empty[2][2];  // [dQ tile][consumer]: its part stored / read out by the writer
};

// One thread block's shared tiles.
template <typename Tr>
struct Flash3BwdShared {
  unsigned char* k;   // (Bc, d) swizzle128
  unsigned char* v;   // (Bc, d)
  unsigned char* q;   // (stages, Br, d)
  unsigned char* dO;  // (stages, Br, d)
  unsigned char* ds;  // (2, Bc, Br): dSᵀ of the even and the odd iterations
  float* dq;          // (2, consumers, Br · d/2): dQ_i's parts, in the accumulator's order
  float* lse;         // (stages, Br): L·log2 e; +inf: no key seen or past Nq (P = 0)
  float* d;           // (stages, Br): D; 0 past Nq
  Flash3BwdBarriers<Tr::kStages>* bar;
};

// The block's K/V tile and the Q tiles it visits (flash2_bwd_wgmma.cuh's schedule): iteration
// `it` is query head hk·G + it / per_head, Q tile m_first + it % per_head.
struct Flash3BwdWork {
  int hk, b, group, nk, n0, m_first, per_head, iterations;
  __device__ __forceinline__ int head(int it) const { return hk * group + it / per_head; }
  __device__ __forceinline__ int m0(int it, int block_m) const { return (m_first + it % per_head) * block_m; }
};

// The block's (key tile, K/V head, batch): the grid's (blockIdx.x, y, z), or with plane_group the
// causal order of flash3_bwd_block over the linear block index.
template <typename Tr, bool kCausal>
__device__ __forceinline__ Flash3BwdWork flash3_bwd_work(const BwdParams& p, int plane_group) {
  Flash3BwdWork w;
  int tile = blockIdx.x;
  w.hk = blockIdx.y;
  w.b = blockIdx.z;
  if (kCausal && plane_group > 0) {
    const Flash3BwdBlock blk = flash3_bwd_block(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z),
                                                gridDim.x, gridDim.y * gridDim.z, plane_group);
    tile = blk.tile;
    w.hk = blk.plane % gridDim.y;
    w.b = blk.plane / gridDim.y;
  }
  w.group = p.heads / p.kv_heads;
  w.nk = p.key_lengths ? min(p.key_lengths[w.b], p.seqlen_k) : p.seqlen_k;
  w.n0 = tile * Tr::kBlockN;
  const int m_blocks = (p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM;
  // Causal: Q tiles whose last row is before the first key see none of it.
  w.m_first = kCausal ? min(w.n0 / Tr::kBlockM, m_blocks) : 0;
  w.per_head = w.n0 < w.nk ? m_blocks - w.m_first : 0;  // a block past the valid keys: dK = dV = 0
  w.iterations = w.group * w.per_head;
  return w;
}

// ---- Producer: warp 0. K_j and V_j are loaded by every block, also one past the valid keys or
// with no Q tile below the diagonal (its consumers wait for them and then write zeros): the loads
// flash2's kernel makes, so that the IO model is flash2's (analysis/models/flash3.cpp).
template <typename Tr>
__device__ __forceinline__ void flash3_bwd_produce(const Flash3BwdArgs& args, const Flash3BwdWork& w,
                                                   const Flash3BwdShared<Tr>& sh) {
  const BwdParams& p = args.p;
  Flash3BwdBarriers<Tr::kStages>& bar = *sh.bar;
  const int lane = threadIdx.x % 32;
  const bool leader = lane == 0;
  if (leader) {  // K_j, V_j: also for a block with no Q tile to visit (as flash2's kernel loads them)
    prefetch_tensor_map(&args.q);
    prefetch_tensor_map(&args.d_o);
    prefetch_tensor_map(&args.k);
    prefetch_tensor_map(&args.v);
    const int kv_plane = w.b * p.kv_heads + w.hk;
    mbar_arrive_expect_tx(&bar.kv_full, 2 * Tr::kTileKVBytes);
    for (int c = 0; c < Tr::kPanels; ++c) {
      tma_load_3d(sh.k + c * Tr::kBlockN * kSwizzleRowBytes, &args.k, &bar.kv_full, c * kPanelColumns, w.n0, kv_plane);
      tma_load_3d(sh.v + c * Tr::kBlockN * kSwizzleRowBytes, &args.v, &bar.kv_full, c * kPanelColumns, w.n0, kv_plane);
    }
  }
  for (int it = 0; it < w.iterations; ++it) {
    const int h = w.head(it), m0 = w.m0(it, Tr::kBlockM);
    const size_t row_off = (size_t(w.b) * p.heads + h) * p.seqlen_q;
    // L_i, D_i: one row per lane and instruction, read before the slot is free.
    float l2[Tr::kRowsPerLane], dsum[Tr::kRowsPerLane];
#pragma unroll
    for (int r = 0; r < Tr::kRowsPerLane; ++r) {
      const int i = m0 + 32 * r + lane;
      const float l = i < p.seqlen_q ? p.lse[row_off + i] : -INFINITY;
      l2[r] = l == -INFINITY ? INFINITY : l * kLog2e;  // no key seen: P = 0
      dsum[r] = i < p.seqlen_q ? p.d_sum[row_off + i] : 0.f;
    }
    const RingSlot slot = ring_slot<Tr::kStages>(it);
    mbar_wait(&bar.empty[slot.stage], slot.phase ^ 1);
#pragma unroll
    for (int r = 0; r < Tr::kRowsPerLane; ++r) {
      sh.lse[slot.stage * Tr::kBlockM + 32 * r + lane] = l2[r];
      sh.d[slot.stage * Tr::kBlockM + 32 * r + lane] = dsum[r];
    }
    if (leader) {
      mbar_arrive_expect_tx(&bar.full[slot.stage], 2 * Tr::kTileQBytes);
      const int q_plane = w.b * p.heads + h;
      unsigned char* q = sh.q + slot.stage * Tr::kTileQBytes;
      unsigned char* d_o = sh.dO + slot.stage * Tr::kTileQBytes;
      for (int c = 0; c < Tr::kPanels; ++c) {
        tma_load_3d(q + c * Tr::kBlockM * kSwizzleRowBytes, &args.q, &bar.full[slot.stage], c * kPanelColumns, m0,
                    q_plane);
        tma_load_3d(d_o + c * Tr::kBlockM * kSwizzleRowBytes, &args.d_o, &bar.full[slot.stage], c * kPanelColumns, m0,
                    q_plane);
      }
    } else {
      mbar_arrive(&bar.full[slot.stage]);
    }
  }
}

// ---- dQ writer: warp 1, lane 0. The consumers' parts of dQ_i added into the accumulator's tile.
template <typename Tr>
__device__ __forceinline__ void flash3_bwd_write_dq(const Flash3BwdArgs& args, const Flash3BwdWork& w,
                                                    const Flash3BwdShared<Tr>& sh) {
  const BwdParams& p = args.p;
  Flash3BwdBarriers<Tr::kStages>& bar = *sh.bar;
  const int64_t tiles = flash3_dq_tiles(p.seqlen_q);
  for (int it = 0; it < w.iterations; ++it) {
    const int64_t tile = (int64_t(w.b) * p.heads + w.head(it)) * tiles + w.m0(it, Tr::kBlockM) / Tr::kBlockM;
    float* dq = p.dq_accum + tile * (Tr::kBlockM * Tr::kHeadDim);
#pragma unroll
    for (int c = 0; c < Tr::kConsumers; ++c) {
      mbar_wait(&bar.dq_full[it & 1][c], (it >> 1) & 1);
      bulk_reduce_add_f32(dq + c * Tr::kDqPartFloats, sh.dq + ((it & 1) * Tr::kConsumers + c) * Tr::kDqPartFloats,
                          Tr::kDqPartBytes);
      tma_store_commit();
    }
    if (it > 0) {  // iteration it − 1's parts read out (this iteration's may still be read)
      tma_store_wait_read<Tr::kConsumers>();
#pragma unroll
      for (int c = 0; c < Tr::kConsumers; ++c) mbar_arrive(&bar.dq_empty[(it - 1) & 1][c]);
    }
  }
  tma_store_wait();
}

// ---- Consumers: warpgroup 1 + w owns keys [64w, 64w + 64) of the tile.
template <typename Tr, bool kCausal>
__device__ __forceinline__ void flash3_bwd_consume(const Flash3BwdArgs& args, const Flash3BwdWork& w,
                                                   const Flash3BwdShared<Tr>& sh) {
  using Steps = WgmmaBwdSteps<typename Tr::Element, Tr::kHeadDim, Tr::kBlockM, Tr::kBlockN>;
  const BwdParams& p = args.p;
  Flash3BwdBarriers<Tr::kStages>& bar = *sh.bar;
  const int wg = threadIdx.x / 128 - 1;
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int key_row = wg * 64 + warp * 16;  // this warp's first key in the tile

  float acc_dk[Tr::kAccKV];  // (this warpgroup's 64 keys, d), without the softmax scale
  float acc_dv[Tr::kAccKV];
#pragma unroll
  for (int i = 0; i < Tr::kAccKV; ++i) acc_dk[i] = acc_dv[i] = 0.f;

  const uint32_t k_rows = smem_addr(sh.k) + wg * 64 * kSwizzleRowBytes;  // this warpgroup's keys
  const uint32_t v_rows = smem_addr(sh.v) + wg * 64 * kSwizzleRowBytes;
  // Column c of the K tile starts (c / 64) panels and (c % 64)·2 bytes into a row.
  const int col0 = wg * Tr::kDqColumns;
  const uint32_t k_cols =
      smem_addr(sh.k) + (col0 / kPanelColumns) * Tr::kBlockN * kSwizzleRowBytes + (col0 % kPanelColumns) * 2;

  mbar_wait(&bar.kv_full, 0);  // before the epilogue writes into sK, sV too
  for (int it = 0; it < w.iterations; ++it) {
    const RingSlot slot = ring_slot<Tr::kStages>(it);
    const int h = w.head(it), m0 = w.m0(it, Tr::kBlockM);
    mbar_wait(&bar.full[slot.stage], slot.phase);
    mbar_wait(&bar.dq_empty[it & 1][wg], ((it >> 1) & 1) ^ 1);  // the writer has read iteration it − 2's part out
    const uint32_t q_tile = smem_addr(sh.q + slot.stage * Tr::kTileQBytes);
    const uint32_t do_tile = smem_addr(sh.dO + slot.stage * Tr::kTileQBytes);
    const float* sLses = sh.lse + slot.stage * Tr::kBlockM;
    const float* sDs = sh.d + slot.stage * Tr::kBlockM;
    unsigned char* const sdS = sh.ds + (it % 2) * Tr::kTileDsBytes;

    // Sᵀ, dPᵀ (lines 9, 13); Pᵀ, dSᵀ (lines 11, 15); dSᵀ to shared memory for dQ; dV, dK (lines
    // 12, 17) issued: kernels/common/wgmma_bwd.cuh, as flash2's wgmma backward.
    float acc_s[Tr::kAccSt], acc_dp[Tr::kAccSt];
    Steps::scores(acc_s, acc_dp, k_rows, v_rows, q_tile, do_tile);
    // Causal: the mask's compares only on the tiles that can mask (wgmma_bwd.cuh; H100: the
    // backward 1.20–1.24× faster at d 64, 1.21–1.25× at d 128; without the mask, where only a key
    // tail masks, the branch was 1.02–1.05× slower). d 64 branches between two copies of the loop;
    // d 128, short of registers for two, masks the scores in a pass before its one copy.
    if constexpr (kCausal && Tr::kHeadDim == 64)
      Steps::template probabilities_branched<kCausal, false>(acc_s, acc_dp, p, sLses, sDs, w.n0, w.nk, key_row, m0, w.b,
                                                             h, lane);
    else if constexpr (kCausal)
      Steps::template probabilities<kCausal, false, Steps::Mask::Pass>(acc_s, acc_dp, p, sLses, sDs, w.n0, w.nk,
                                                                        key_row, m0, w.b, h, lane);
    else
      Steps::template probabilities<kCausal, false>(acc_s, acc_dp, p, sLses, sDs, w.n0, w.nk, key_row, m0, w.b, h, lane);
    Steps::store_ds_t(sdS, acc_dp, key_row, g, t);
    Steps::issue_dkdv(acc_dv, acc_dk, acc_s, acc_dp, do_tile, q_tile);

    // dQ_i += dS·K_j (line 16), once both consumers' dSᵀ rows are in shared memory.
    fence_proxy_async_shared();
    named_barrier_sync(Tr::kDsBarrier, Tr::kConsumerThreads);
    float acc_dq[Tr::kAccDq];  // (Br queries, d/2 columns)
    Steps::template issue_dq<Tr::kDqColumns, Tr::kBlockN>(acc_dq, smem_addr(sdS), k_cols);
    wgmma_wait<0>();  // dV, dK and dQ: this warpgroup is done with the slot
    wgmma_fence_operands(acc_dq);
    wgmma_fence_operands(acc_dv);
    wgmma_fence_operands(acc_dk);
    mbar_arrive(&bar.empty[slot.stage]);  // every thread: its L, D reads are done

    // This warpgroup's part of dQ_i into the shared tile (the writer read the last part out
    // before the wait above), float4 j of this thread at ((j·4 + warp)·32 + lane)·4
    // (flash3_dq_layout.h).
    float4* part = reinterpret_cast<float4*>(sh.dq + ((it & 1) * Tr::kConsumers + wg) * Tr::kDqPartFloats);
#pragma unroll
    for (int j = 0; j < Tr::kAccDq / 4; ++j)
      part[(j * 4 + warp) * 32 + lane] = make_float4(acc_dq[4 * j], acc_dq[4 * j + 1], acc_dq[4 * j + 2], acc_dq[4 * j + 3]);
    fence_proxy_async_shared();  // the bulk reduction reads what this thread wrote
    mbar_arrive(&bar.dq_full[it & 1][wg]);
  }

  // Epilogue (line 21): dK_j = scale·acc_dk, dV_j = acc_dv into this warpgroup's rows of sK, sV,
  // once every consumer's last dQ (which reads all of sK) has completed; then TMA stores of its
  // 64 rows, clipped at Nk.
  named_barrier_sync(Tr::kDsBarrier, Tr::kConsumerThreads);
  Steps::stage_dkdv(sh.k, sh.v, acc_dk, acc_dv, p.scale, key_row + g, t);
  fence_proxy_async_shared();  // the TMA store reads what these threads wrote
  named_barrier_sync(Tr::kEpilogueBarrier + wg, 128);
  const int row0 = w.n0 + wg * 64;
  if (threadIdx.x % 128 == 0 && row0 < p.seqlen_k) {
    const int kv_plane = w.b * p.kv_heads + w.hk;
    for (int c = 0; c < Tr::kPanels; ++c) {
      const int off = c * Tr::kBlockN * kSwizzleRowBytes + wg * 64 * kSwizzleRowBytes;
      tma_store_3d(&args.dk, sh.k + off, c * kPanelColumns, row0, kv_plane);
      tma_store_3d(&args.dv, sh.v + off, c * kPanelColumns, row0, kv_plane);
    }
    tma_store_commit();
    tma_store_wait();
  }
}

template <typename Tr, bool kCausal>
__global__ void __launch_bounds__(Tr::kThreads, 1) flash3_bwd_kernel(const __grid_constant__ Flash3BwdArgs args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ Flash3BwdBarriers<Tr::kStages> bar;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Flash3BwdShared<Tr> sh;
  sh.k = smem_raw + (kFlash3SmemAlign - smem_addr(smem_raw) % kFlash3SmemAlign) % kFlash3SmemAlign;
  sh.v = sh.k + Tr::kTileKVBytes;
  sh.q = sh.v + Tr::kTileKVBytes;
  sh.dO = sh.q + Tr::kStages * Tr::kTileQBytes;
  sh.ds = sh.dO + Tr::kStages * Tr::kTileQBytes;
  sh.dq = reinterpret_cast<float*>(sh.ds + 2 * Tr::kTileDsBytes);
  sh.lse = sh.dq + 2 * Tr::kConsumers * Tr::kDqPartFloats;
  sh.d = sh.lse + Tr::kStages * Tr::kBlockM;
  sh.bar = &bar;
  const Flash3BwdWork w = flash3_bwd_work<Tr, kCausal>(args.p, args.plane_group);
  if (threadIdx.x == 0) {
    mbar_init(&bar.kv_full, 1);
    for (int s = 0; s < Tr::kStages; ++s) {
      mbar_init(&bar.full[s], Tr::kFillArrivals);
      mbar_init(&bar.empty[s], Tr::kReleaseArrivals);
    }
    for (int buf = 0; buf < 2; ++buf)
      for (int c = 0; c < Tr::kConsumers; ++c) {
        mbar_init(&bar.dq_full[buf][c], 128);  // every thread of consumer c stored its floats
        mbar_init(&bar.dq_empty[buf][c], 1);   // the writer's lane 0
      }
    fence_mbar_init();
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    warpgroup_reg_dealloc<kFlash3BwdProducerRegisters>();
    if (threadIdx.x < 32) flash3_bwd_produce<Tr>(args, w, sh);
    else if (threadIdx.x == 32) flash3_bwd_write_dq<Tr>(args, w, sh);
  } else {
    warpgroup_reg_alloc<kFlash3BwdConsumerRegisters>();
    flash3_bwd_consume<Tr, kCausal>(args, w, sh);
  }
#else
  __trap();  // compiled for sm_90a only (flash3_compiled() says whether it is)
#endif
}

// One 16-byte global store of four words, kept whole: written as a uint4 assignment, nvcc split
// the conversion's first row into four 4-byte stores (its registers were not consecutive; SASS of
// 982e088), which wrote 1.30× dQ's bytes of L2 sectors.
__device__ __forceinline__ void store_global_16(void* dst, const uint32_t (&v)[4]) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
               : "memory");
}

// dQ = scale·accumulator in the element type, [B, H, Nq, d], from the accumulator's tiles
// (flash3_dq_layout.h). One thread per pair of rows (r, r + 8) of a tile — the rows one lane of
// the consumers' accumulators holds — and 8 columns: four float4 of the tile, 64 contiguous bytes
// (columns 8j + 2t, t = 0..3, of both rows), two 16-byte stores. Pairs are numbered 8·warp + g
// (row r = 16·warp + g); a pair whose first row is past Nq has nothing to convert.
template <typename T, int kHeadDim>
__global__ void flash3_bwd_convert_dq_kernel(const BwdParams p) {
  constexpr int kDqColumns = kHeadDim / 2, kChunks = kHeadDim / 8, kPairs = kFlash3DqTileRows / 2;
  const int64_t tiles = flash3_dq_tiles(p.seqlen_q);
  const int64_t item = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (item >= int64_t(p.batch) * p.heads * tiles * kPairs * kChunks) return;
  const int c = int(item % kChunks) * 8, pair = int(item / kChunks % kPairs);
  const int64_t tile = item / kChunks / kPairs, plane = tile / tiles;
  const int r = 16 * (pair / 8) + pair % 8;
  const int64_t i = (tile % tiles) * kFlash3DqTileRows + r;  // the pair's first query row
  if (i >= p.seqlen_q) return;
  const float* at = p.dq_accum + tile * (int64_t(kFlash3DqTileRows) * kHeadDim) + flash3_dq_tile_offset(r, c, kDqColumns);
  uint32_t first[4], second[4];
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const float4 a = *reinterpret_cast<const float4*>(at + 4 * t);  // (r, c + 2t..), (r + 8, c + 2t..)
    first[t] = pack2<T>(a.x * p.scale, a.y * p.scale);
    second[t] = pack2<T>(a.z * p.scale, a.w * p.scale);
  }
  T* dq = static_cast<T*>(p.dq) + (plane * p.seqlen_q + i) * kHeadDim + c;
  store_global_16(dq, first);
  if (i + 8 < p.seqlen_q) store_global_16(dq + 8 * kHeadDim, second);
}

}  // namespace flashio::kernels

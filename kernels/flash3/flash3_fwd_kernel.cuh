// flash3 forward: FlashAttention-3 (Shah et al., 2024, Algorithms 1-2) on Hopper (sm_90a).
//
// The algorithm is FlashAttention-2's forward (one Q tile of Br rows per work item, K/V tiles
// streamed through shared memory, online softmax, 1/ℓ deferred to the end), scheduled the way
// FlashAttention-3 does it to keep the tensor cores busy:
//
//  - Warp specialisation. Warpgroup 0 is the producer: one of its threads issues TMA loads
//    (cp.async.bulk.tensor) of the Q tile and of K_j, V_j into a ring of `stages` shared-memory
//    slots, each completing an mbarrier (FA-3 Algorithm 1, lines 4-9). Warpgroups 1 … Br/64 are
//    consumers, 64 query rows each; they compute and release the slots (lines 11-20). The
//    producer gives its registers to the consumers (setmaxnreg: 24 against 240, or 160 with three
//    consumer warpgroups).
//  - Ping-pong (§3.1, "inter-warpgroup overlapping"). Named barriers give the consumer
//    warpgroups turns at issuing their GEMMs, so one warpgroup's softmax runs while the other's
//    GEMMs occupy the tensor cores.
//  - Intra-warpgroup overlap (§3.2, Algorithm 2). Within a warpgroup, S_j = Q·K_jᵀ is issued
//    together with O += P_{j-1}·V_{j-1}; softmax of S_j runs while the P·V product is in flight,
//    and O is rescaled once it lands.
//  - Persistent, with a dynamic tile scheduler. One thread block per SM; its producer takes the
//    next (Q tile, head, batch) work item from a global counter when it is ready to load one, so
//    blocks that drew short items (causal) draw more and the blocks working at one time stay on
//    neighbouring items: a head's Q tiles are consecutive (they share K/V in L2); under a causal
//    mask the heads go in groups, every head's longest Q tile first (flash3_fwd_plane_group). The
//    producer's leader decodes the item and hands it to the consumers through shared memory
//    between two mbarriers (full: its one arrival after the write; empty: every consumer thread's
//    arrival after its read, so each read is ordered before the next write); with two Q buffers
//    (where they fit) the next item's Q loads while the current one runs.
//  - O goes back through shared memory with a TMA store, which also clips the rows past Nq;
//    L = m + log ℓ is stored per row. With two Q buffers O is staged in the consumer's own rows of
//    the Q tile; with one, as FlashAttention-3, in the last K/V tile's slots, since every consumer
//    warp frees Q once the item's last S has landed (the next item's Q loads during the last P·V
//    and the epilogue). With two Q buffers the
//    consumer waits for the store to have read the buffer only once it has issued the next
//    item's first GEMM.
//
// The ablations of FA-3 Table 2 compile one of these out: ping-pong, the intra-warpgroup overlap,
// or warp specialisation (no producer warpgroup: the first consumer thread issues the same loads
// between its own GEMMs, Flash3InlineLoads).
//
// Per K/V tile and consumer warpgroup:
//   S = Q·K_jᵀ   wgmma m64n{Bc}k16, A = Q, B = K_j, both K-major in shared memory (swizzle128)
//   P = softmax  kernels/common/online_softmax.h (OnlineSoftmax::update_scores, rescale)
//   O += P·V_j   wgmma m64n{d}k16, A = P from registers, B = V_j MN-major in shared memory
//
// IO per (batch, head), e = element bytes, Tr = ⌈Nq/Br⌉: as flash2 — Q read once, K and V read
// Tr times (about half with causal), O and L written once; the TMA loads move whole tiles (the
// rows past the end are zero-filled, not read).
//
// Supported: fp16/bf16; d 64, 128, 256; causal (top-left aligned, as every flashio method) and
// key padding; GQA/MQA; Nq ≠ Nk; any N. No dropout (FlashAttention-3 has none).
//
// Run: build/flashio run --method flash3 --seqlen 4096 --head-dim 128   (an H100/H200)
#pragma once
#include <cuda.h>

#include <cmath>

#include "kernels/common/attention_params.h"
#include "kernels/common/masks.h"
#include "kernels/common/online_softmax.h"
#include "kernels/common/tma.cuh"
#include "kernels/common/wgmma.cuh"
#include "kernels/flash3/flash3_configs.h"

namespace flashio::kernels {

// What a launch passes: the tensor maps of Q, K, V ([B·H(kv), N, d] as 3-D maps, boxes of
// 64 columns × the tile's rows with the 128-byte swizzle) and O (boxes of 64 rows, one
// consumer warpgroup's share), the problem, and the work items.
struct Flash3FwdArgs {
  CUtensorMap q, k, v, o;
  FwdParams p;
  int m_blocks;   // Q tiles per (batch, head)
  int num_items;  // m_blocks · heads · batch
  int plane_group;  // causal: the items' planes in groups of this many (flash3_item)
  // The scheduler: [0] items taken beyond the first gridDim.x, [1] blocks finished; zero before
  // a launch, and zero again after it (the last block to finish resets them).
  int* schedule;
};

template <typename Element_, int kHeadDim_, int kBlockM_, int kBlockN_, int kStages_>
struct Flash3FwdTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;  // Br
  static constexpr int kBlockN = kBlockN_;  // Bc
  static constexpr int kStages = kStages_;  // K/V ring depth
  static constexpr int kConsumers = kBlockM / 64;  // consumer warpgroups, 64 rows each
  static constexpr int kConsumerThreads = 128 * kConsumers;
  static constexpr int kThreads = kConsumerThreads + 128;   // and the producer warpgroup
  static constexpr int kPanels = kHeadDim / kPanelColumns;  // 64-column panels of a tile row
  static constexpr int kAccS = kBlockN / 2;                 // fp32 S registers per thread: (64, Bc)
  static constexpr int kAccO = kHeadDim / 2;                // fp32 O registers per thread: (64, d)
  static constexpr int kTileQBytes = kBlockM * kHeadDim * 2;   // (Br, d) swizzle128
  static constexpr int kTileKVBytes = kBlockN * kHeadDim * 2;  // (Bc, d) swizzle128, one slot
  static constexpr int kQStages = flash3_q_stages(kHeadDim, TileShape{kBlockM, kBlockN, 0, kStages});
  static constexpr int kSmemBytes = flash3_fwd_smem_bytes(kHeadDim, TileShape{kBlockM, kBlockN, 0, kStages});
  static constexpr int kConsumerRegs = flash3_consumer_registers(kConsumers);
  static constexpr int kReleaseArrivals = 4 * kConsumers;  // one per consumer warp frees a K/V slot
  // Named barriers: 1 … kConsumers for the turns, then one per consumer for its epilogue, then
  // one for all consumers at an item's end.
  static constexpr int kTurnBarrier = 1;
  static constexpr int kEpilogueBarrier = 1 + kConsumers;
  static constexpr int kItemEndBarrier = 1 + 2 * kConsumers;
  static constexpr int kItemReaders = 128 * kConsumers;  // every consumer thread releases the work item's slot
  // Skip a warp's O rescale when none of its rows' max moved (alpha = 1): 128 multiplies per
  // thread and K/V tile saved at d 256, for a warp vote. Measured (H100, FA-2 setting, beside
  // the kernel without it, NOTES.md): 128 × 80 2–4 % faster from N 2048, 128 × 64 3–5 % slower
  // at N 1024; so the 128 × 80 tile only.
  static constexpr bool kSkipUnitRescale = kHeadDim == 256 && kBlockN == 80;

  static_assert(kBlockM % 64 == 0 && (kConsumers == 2 || kConsumers == 3), "two or three consumer warpgroups");
  static_assert(kHeadDim % kPanelColumns == 0 && kBlockN % 16 == 0, "64-column panels, k16 steps");
  static_assert(kBlockM <= 256 && kBlockN <= 256, "a TMA box has at most 256 rows");
  static_assert(kSmemBytes <= kFlash3SmemLimit, "Hopper's shared memory per block");
  static_assert(kTileQBytes % kSwizzleAtomBytes == 0 && kTileKVBytes % kSwizzleAtomBytes == 0,
                "every tile starts on a swizzle atom");
  static_assert(kItemEndBarrier < 16, "16 hardware barriers");
  static_assert(kConsumers * kConsumerRegs * 128 + 128 * flash3_producer_registers(kConsumers) <= 65536, "the SM's registers");
};

// One Q buffer, with intra-warpgroup overlap: Q is freed by every consumer warp once the item's
// last S has landed, and O is staged in the last K/V tile's slots (flash3_consume's epilogue).
template <typename Tr, bool kOverlap>
inline constexpr bool kFlash3EarlyQ = Tr::kQStages == 1 && kOverlap;

// A work item: (Q tile, head, batch).
struct Flash3Item {
  int m_block, h, b;
};

// The shared-memory barriers of one thread block, and the work item each Q buffer holds.
template <int kStages, int kQStages>
struct Flash3Barriers {
  uint64_t q_full[kQStages], q_empty[kQStages];  // the Q tile landed / it is read (kFlash3EarlyQ) or O is stored out of it
  uint64_t k_full[kStages], k_empty[kStages];
  uint64_t v_full[kStages], v_empty[kStages];
  uint64_t item_full, item_empty;  // `item`, `work` written by the producer / read by every consumer thread
  int item;                        // the next work item; −1: no more
  Flash3Item work;                 // what it is (flash3_item, decoded once, by the producer)
};

// Work item `item` → (Q tile, head, batch): a head's Q tiles are consecutive; causal: the
// (batch, head) planes in groups of `group` (flash3_fwd_plane_group), and within a group every
// plane's last (longest) Q tile first, then every plane's next, so the last items dealt are short.
template <bool kCausal>
__device__ __forceinline__ Flash3Item flash3_item(int item, int m_blocks, int heads, int planes, int group) {
  if constexpr (kCausal) {
    const Flash3BwdBlock blk = flash3_bwd_block(item, m_blocks, planes, group);
    return {m_blocks - 1 - blk.tile, blk.plane % heads, blk.plane / heads};
  }
  const int within = item % m_blocks, bh = item / m_blocks;
  return {within, bh % heads, bh / heads};
}

// The slot and phase of the i-th K/V tile (or Q tile) a thread block streams through a ring.
struct RingSlot {
  int stage, phase;
};
template <int kStages>
__device__ __forceinline__ RingSlot ring_slot(int i) {
  return {i % kStages, (i / kStages) & 1};
}

// The tile buffers and barriers of one thread block.
template <typename Tr>
struct Flash3Shared {
  unsigned char* q;  // (kQStages, Br, d) swizzle128
  unsigned char* k;  // (kStages, Bc, d)
  unsigned char* v;  // (kStages, Bc, d)
  Flash3Barriers<Tr::kStages, Tr::kQStages>* bar;
};

// Keys batch b sees.
__device__ __forceinline__ int flash3_key_count(const FwdParams& p, int b) {
  return p.key_lengths ? min(p.key_lengths[b], p.seqlen_k) : p.seqlen_k;
}

// ---- Producer (FA-3 Algorithm 1, lines 4-9): warp 0; its lane 0 issues every load. Per work
// item: the index to the consumers (item mbarriers), the first K tile, the Q tile into a free Q
// buffer, then V and the following K/V tiles into the ring as slots free up; then the next item
// from the scheduler. When none is left the consumers get item −1.
template <typename Tr, bool kCausal>
__device__ __forceinline__ void flash3_produce(const Flash3FwdArgs& args, const Flash3Shared<Tr>& sh) {
  const FwdParams& p = args.p;
  Flash3Barriers<Tr::kStages, Tr::kQStages>& bar = *sh.bar;
  const bool leader = threadIdx.x == 0;
  if (leader) {
    prefetch_tensor_map(&args.q);
    prefetch_tensor_map(&args.k);
    prefetch_tensor_map(&args.v);
    prefetch_tensor_map(&args.o);
  }
  int kv = 0;  // K/V tiles loaded so far
  int item = blockIdx.x;
  for (int round = 0;; ++round) {
    const bool done = item >= args.num_items;
    Flash3Item w{};  // the leader's
    if (leader) {
      if (!done) w = flash3_item<kCausal>(item, args.m_blocks, p.heads, args.num_items / args.m_blocks, args.plane_group);
      mbar_wait(&bar.item_empty, (round & 1) ^ 1);  // every consumer thread read the last one
      bar.item = done ? -1 : item;
      bar.work = w;
      mbar_arrive(&bar.item_full);  // release: the writes before the consumers' acquiring wait
    }
    if (done) break;
    if (leader) {
      const RingSlot qs = ring_slot<Tr::kQStages>(round);
      const int kv_plane = w.b * p.kv_heads + w.h / (p.heads / p.kv_heads);
      const KvTileRange tiles = SequenceMask<kCausal>{flash3_key_count(p, w.b)}.kv_tiles(
          w.m_block, (w.m_block + 1) * Tr::kBlockM, Tr::kBlockN);
      auto load_kv = [&](unsigned char* ring, uint64_t* full, uint64_t* empty, const CUtensorMap* map, int i, int n) {
        const RingSlot slot = ring_slot<Tr::kStages>(i);
        mbar_wait(&empty[slot.stage], slot.phase ^ 1);
        mbar_arrive_expect_tx(&full[slot.stage], Tr::kTileKVBytes);
        unsigned char* dst = ring + slot.stage * Tr::kTileKVBytes;
        for (int c = 0; c < Tr::kPanels; ++c)
          tma_load_3d(dst + c * Tr::kBlockN * kSwizzleRowBytes, map, &full[slot.stage], c * kPanelColumns,
                      n * Tr::kBlockN, kv_plane);
      };
      // K of the first tile before Q: it may start while the consumers still write O out.
      if (tiles.count > 0) load_kv(sh.k, bar.k_full, bar.k_empty, &args.k, kv, tiles(0));
      mbar_wait(&bar.q_empty[qs.stage], qs.phase ^ 1);
      mbar_arrive_expect_tx(&bar.q_full[qs.stage], Tr::kTileQBytes);
      unsigned char* q = sh.q + qs.stage * Tr::kTileQBytes;
      for (int c = 0; c < Tr::kPanels; ++c)
        tma_load_3d(q + c * Tr::kBlockM * kSwizzleRowBytes, &args.q, &bar.q_full[qs.stage], c * kPanelColumns,
                    w.m_block * Tr::kBlockM, w.b * p.heads + w.h);
      if (tiles.count > 0) load_kv(sh.v, bar.v_full, bar.v_empty, &args.v, kv, tiles(0));
      for (int it = 1; it < tiles.count; ++it) {
        load_kv(sh.k, bar.k_full, bar.k_empty, &args.k, kv + it, tiles(it));
        load_kv(sh.v, bar.v_full, bar.v_empty, &args.v, kv + it, tiles(it));
      }
      kv += tiles.count;
      item = atomicAdd(&args.schedule[0], 1) + int(gridDim.x);  // the next item nobody has taken
    }
    item = __shfl_sync(0xffffffffu, item, 0);
  }
  // The last block out resets the scheduler for the next launch (every block has taken its
  // last item by the time it counts itself finished).
  if (leader && atomicAdd(&args.schedule[1], 1) == int(gridDim.x) - 1) {
    args.schedule[0] = 0;
    args.schedule[1] = 0;
  }
}

// ---- Without warp specialisation (FA-3 Table 2's ablation): no producer warpgroup. The first
// consumer thread issues the producer's loads itself, in the producer's order (per work item:
// the hand-over, K_0, Q, V_0, then K_i, V_i), between its own GEMMs: each load as soon as its
// slot is free when it polls (after issuing its GEMMs), and at the latest when a consumer is
// about to wait for it. It waits only for slots whose readers (the other consumer included) are
// past them without needing anything more from it, so the consumers cannot deadlock. Whatever this
// thread does delays its whole warpgroup at the next wgmma: of four placements measured (NOTES.md,
// "Without warp specialisation"), this one, with the fewest polls, was the fastest.
template <typename Tr, bool kCausal>
struct Flash3InlineLoads {
  const Flash3FwdArgs& args;
  const Flash3Shared<Tr>& sh;
  int round = 0;          // the work item whose loads come next (its hand-over round)
  int pos = 0;            // its next load: 0 the hand-over, 1 K_0, 2 Q, 3 V_0, then K_i at 2i + 2, V_i at 2i + 3
  int kv = 0;             // K/V tiles of the items before it
  bool finished = false;  // every item handed over, and −1 after them
  Flash3Item w{};
  KvTileRange tiles{0};

  static __device__ __forceinline__ int k_pos(int i) { return i == 0 ? 1 : 2 * i + 2; }
  static __device__ __forceinline__ int v_pos(int i) { return 2 * i + 3; }

  // Issues every load up to and including load `p` of item `r`, waiting for slots as needed.
  // Both act in the block's first thread only.
  __device__ __forceinline__ void ensure(int r, int p) {
    if (threadIdx.x != 0) return;
    while (!finished && (round < r || (round == r && pos <= p))) step(true);
  }
  // Issues the loads whose slots are free now.
  __device__ __forceinline__ void poll() {
    if (threadIdx.x != 0) return;
    while (step(false)) {
    }
  }

  // The next load, if `wait` or its slot is free; whether it was issued.
  __device__ __forceinline__ bool step(bool wait) {
    if (finished) return false;
    Flash3Barriers<Tr::kStages, Tr::kQStages>& bar = *sh.bar;
    const FwdParams& p = args.p;
    auto slot_free = [&](uint64_t* b, int parity) {
      if (!wait) return mbar_test(b, parity);
      mbar_wait(b, parity);
      return true;
    };
    if (pos == 0) {  // the next item, handed over to the consumers
      if (!slot_free(&bar.item_empty, (round & 1) ^ 1)) return false;
      const int item = round == 0 ? int(blockIdx.x) : atomicAdd(&args.schedule[0], 1) + int(gridDim.x);
      finished = item >= args.num_items;
      if (!finished) {
        w = flash3_item<kCausal>(item, args.m_blocks, p.heads, args.num_items / args.m_blocks, args.plane_group);
        tiles = SequenceMask<kCausal>{flash3_key_count(p, w.b)}.kv_tiles(w.m_block, (w.m_block + 1) * Tr::kBlockM,
                                                                         Tr::kBlockN);
      }
      bar.item = finished ? -1 : item;
      bar.work = w;
      mbar_arrive(&bar.item_full);
      pos = tiles.count > 0 ? 1 : 2;
      // Every item taken: the last block out resets the scheduler (as the producer does).
      if (finished && atomicAdd(&args.schedule[1], 1) == int(gridDim.x) - 1) {
        args.schedule[0] = 0;
        args.schedule[1] = 0;
      }
      return true;
    }
    if (pos == 2) {  // Q into its buffer
      const RingSlot qs = ring_slot<Tr::kQStages>(round);
      if (!slot_free(&bar.q_empty[qs.stage], qs.phase ^ 1)) return false;
      mbar_arrive_expect_tx(&bar.q_full[qs.stage], Tr::kTileQBytes);
      unsigned char* q = sh.q + qs.stage * Tr::kTileQBytes;
      for (int c = 0; c < Tr::kPanels; ++c)
        tma_load_3d(q + c * Tr::kBlockM * kSwizzleRowBytes, &args.q, &bar.q_full[qs.stage], c * kPanelColumns,
                    w.m_block * Tr::kBlockM, w.b * p.heads + w.h);
    } else {  // K_i or V_i into the ring
      const bool is_k = pos == 1 || pos % 2 == 0;
      const int i = pos == 1 ? 0 : (pos - 2) / 2;
      const RingSlot slot = ring_slot<Tr::kStages>(kv + i);
      uint64_t* empty = is_k ? bar.k_empty : bar.v_empty;
      uint64_t* full = is_k ? bar.k_full : bar.v_full;
      if (!slot_free(&empty[slot.stage], slot.phase ^ 1)) return false;
      mbar_arrive_expect_tx(&full[slot.stage], Tr::kTileKVBytes);
      unsigned char* dst = (is_k ? sh.k : sh.v) + slot.stage * Tr::kTileKVBytes;
      const int kv_plane = w.b * p.kv_heads + w.h / (p.heads / p.kv_heads);
      for (int c = 0; c < Tr::kPanels; ++c)
        tma_load_3d(dst + c * Tr::kBlockN * kSwizzleRowBytes, is_k ? &args.k : &args.v, &full[slot.stage],
                    c * kPanelColumns, tiles(i) * Tr::kBlockN, kv_plane);
    }
    ++pos;
    if (pos > (tiles.count > 0 ? v_pos(tiles.count - 1) : 2)) {  // the item's last load: on to the next
      kv += tiles.count;
      ++round;
      pos = 0;
    }
    return true;
  }
};

// What a warp-specialised block's consumers hold instead: nothing.
struct Flash3NoInlineLoads {};

// ---- Consumers (FA-3 Algorithm 1, lines 11-20): 64 query rows per warpgroup.
// kSpecialised: warpgroup 0 produces; otherwise the consumers' first thread loads (Flash3InlineLoads).
template <typename Tr, bool kCausal, bool kPingPong, bool kOverlap, bool kSpecialised>
__device__ __forceinline__ void flash3_consume(const Flash3FwdArgs& args, const Flash3Shared<Tr>& sh) {
  static_assert(kSpecialised || (kPingPong && kOverlap), "the ablation without warp specialisation only");
  using T = typename Tr::Element;
  const FwdParams& p = args.p;
  Flash3Barriers<Tr::kStages, Tr::kQStages>& bar = *sh.bar;
  unsigned char* const sK = sh.k;
  unsigned char* const sV = sh.v;
  const int c = threadIdx.x / 128 - (kSpecialised ? 1 : 0);  // this consumer
  const int warp = (threadIdx.x % 128) / 32;  // warp within the warpgroup: rows 16·warp …
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  uint32_t q_tile = 0;  // this warpgroup's 64 rows of the current Q buffer

  // Turns at the tensor cores: consumer c waits for its own barrier, and when it has issued its
  // GEMMs lets the next consumer go. The last consumer opens the first turn.
  auto turn_begin = [&] {
    if constexpr (kPingPong) named_barrier_sync(Tr::kTurnBarrier + c, 256);
  };
  auto turn_end = [&] {
    if constexpr (kPingPong) named_barrier_arrive(Tr::kTurnBarrier + (c + 1) % Tr::kConsumers, 256);
  };
  if (c == Tr::kConsumers - 1) turn_end();
  // A K or V slot is free once every consumer warp's GEMMs reading it have completed.
  auto release = [&](uint64_t* empty, int stage) {
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[stage]);
  };
  // One Q buffer (with intra-warpgroup overlap), as FlashAttention-3: each warp frees Q once the
  // item's last S = Q·Kᵀ has landed, so the producer loads the next item's Q during the last P·V
  // and the epilogue; O is staged in the last K/V tile's slots instead (consumer 0's rows in K's,
  // consumer 1's in V's), which go back to the producer once their TMA stores have read them.
  constexpr bool kEarlyQ = kFlash3EarlyQ<Tr, kOverlap>;
  static_assert(!kEarlyQ || Tr::kConsumers == 2, "a K and a V slot for two consumers' O");
  // S = Q·K_jᵀ (line 13) from slot `stage`: (64, Bc) per warpgroup.
  auto issue_qk = [&](float(&acc_s)[Tr::kAccS], int stage) {
    const uint32_t k_tile = smem_addr(sK + stage * Tr::kTileKVBytes);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Tr::kHeadDim / 16; ++kk)
      Wgmma<T, Tr::kBlockN>::template ss<0, 0>(acc_s, desc_kmajor(q_tile, Tr::kBlockM, kk),
                                                desc_kmajor(k_tile, Tr::kBlockN, kk), kk > 0);
    wgmma_commit();
  };
  // O += P·V_j (line 18) from slot `stage`, P in A fragments.
  auto issue_pv = [&](float(&acc_o)[Tr::kAccO], const uint32_t(&a_p)[Tr::kBlockN / 16][4], int stage) {
    const uint32_t v_tile = smem_addr(sV + stage * Tr::kTileKVBytes);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Tr::kBlockN / 16; ++kk)
      Wgmma<T, Tr::kHeadDim>::template rs<1>(acc_o, a_p[kk], desc_mnmajor(v_tile, Tr::kBlockN, kk), 1);
    wgmma_commit();
  };
  // P (fp32 in the S accumulators) as 16-bit A fragments.
  auto pack_p = [&](uint32_t(&a_p)[Tr::kBlockN / 16][4], const float(&acc_s)[Tr::kAccS]) {
#pragma unroll
    for (int kk = 0; kk < Tr::kBlockN / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) a_p[kk][r] = pack2<T>(acc_s[8 * kk + 2 * r], acc_s[8 * kk + 2 * r + 1]);
  };

  // Where the last item's O was staged — with two Q buffers its Q buffer, with kEarlyQ the last
  // K/V tile's slots — goes back to the producer once the O store has read it, which this
  // warpgroup's first thread waits for only after it has issued the next item's first GEMM (the
  // tensor cores busy meanwhile). −1: none pending (a single Q buffer that staged O is waited for
  // in the epilogue: the next Q needs it back first).
  int store_pending = -1;
  auto free_stored = [&] {
    if (store_pending >= 0 && threadIdx.x % 128 == 0) {
      tma_store_wait_read();
      if constexpr (kEarlyQ) {
        for (int a = 0; a < 4; ++a) {  // the arrivals of this warpgroup's four warps
          mbar_arrive(&bar.k_empty[store_pending]);
          mbar_arrive(&bar.v_empty[store_pending]);
        }
      } else {
        mbar_arrive(&bar.q_empty[store_pending]);
      }
    }
    store_pending = -1;
  };

  // Without a producer: the first thread's loads (ensure: up to the one about to be waited for;
  // poll: those whose slots are free, after each turn at the tensor cores). Nothing at all with
  // one, so that the warp-specialised kernels compile as they did before the ablation.
  [[maybe_unused]] auto loads = [&] {
    if constexpr (kSpecialised) {
      return Flash3NoInlineLoads{};
    } else {
      return Flash3InlineLoads<Tr, kCausal>{args, sh};
    }
  }();
  if constexpr (!kSpecialised) {
    if (threadIdx.x == 0) {
      prefetch_tensor_map(&args.q);
      prefetch_tensor_map(&args.k);
      prefetch_tensor_map(&args.v);
      prefetch_tensor_map(&args.o);
    }
  }

  int kv = 0;
  for (int round = 0;; ++round) {
    if constexpr (!kSpecialised) loads.ensure(round, 0);
    mbar_wait(&bar.item_full, round & 1);
    const int item = bar.item;
    const Flash3Item w = bar.work;
    mbar_arrive(&bar.item_empty);  // each thread releases its own reads (one arrival per warp would not)
    if (item < 0) break;  // no work left
    const RingSlot qs = ring_slot<Tr::kQStages>(round);
    if constexpr (!kSpecialised) loads.ensure(round, 2);  // Q (and K_0)
    mbar_wait(&bar.q_full[qs.stage], qs.phase);
    unsigned char* const sQ = sh.q + qs.stage * Tr::kTileQBytes;
    q_tile = smem_addr(sQ) + c * 64 * kSwizzleRowBytes;
    const int row0 = w.m_block * Tr::kBlockM + c * 64;  // this warpgroup's first query row
    const int warp_row = row0 + warp * 16;              // this warp's first row
    const SequenceMask<kCausal> mask{flash3_key_count(p, w.b)};
    const KvTileRange tiles = mask.kv_tiles(w.m_block, (w.m_block + 1) * Tr::kBlockM, Tr::kBlockN);
    // Hides the scores of tile n this warp's rows may not see (the tail, the diagonal).
    auto apply_mask = [&](float(&acc_s)[Tr::kAccS], int n) {
      if (mask.partial(warp_row, n * Tr::kBlockN, Tr::kBlockN)) mask.apply(acc_s, warp_row + g, n * Tr::kBlockN, 2 * t);
    };

    OnlineSoftmax softmax;
    softmax.init();
    float acc_o[Tr::kAccO];  // (64, d): rows g, g + 8 of each warp's 16
#pragma unroll
    for (int i = 0; i < Tr::kAccO; ++i) acc_o[i] = 0.f;

    int last_stage = 0;  // the ring slot of the item's last K/V tile
    if (tiles.count > 0) {
      float acc_s[Tr::kAccS];                // S, then P in fp32: (64, Bc)
      uint32_t a_p[Tr::kBlockN / 16][4];     // P in 16-bit A fragments
      float alpha[2];
      RingSlot slot = ring_slot<Tr::kStages>(kv);
      if constexpr (kOverlap) {
        // The first tile alone: S_0, softmax, P_0.
        mbar_wait(&bar.k_full[slot.stage], slot.phase);
        turn_begin();
        issue_qk(acc_s, slot.stage);
        turn_end();
        if constexpr (!kSpecialised) loads.poll();
        free_stored();
        wgmma_wait<0>();
        wgmma_fence_operands(acc_s);
        if (kEarlyQ && tiles.count == 1) {
          release(bar.q_empty, qs.stage);  // K_0 is the last tile: its slot stages O
        } else {
          release(bar.k_empty, slot.stage);
        }
        apply_mask(acc_s, tiles(0));
        softmax.update_scores<QuadRowReduce>(acc_s, p.scale_log2, alpha);  // O is 0: no rescale
        pack_p(a_p, acc_s);
        // Then S_j issued with P_{j-1}·V_{j-1}; softmax of S_j while P·V runs (Algorithm 2).
        for (int it = 1; it < tiles.count; ++it) {
          const RingSlot prev = slot;
          slot = ring_slot<Tr::kStages>(kv + it);
          if constexpr (!kSpecialised) loads.ensure(round, loads.k_pos(it));  // K_it (and V_{it-1} before it)
          mbar_wait(&bar.k_full[slot.stage], slot.phase);
          turn_begin();
          issue_qk(acc_s, slot.stage);
          mbar_wait(&bar.v_full[prev.stage], prev.phase);
          issue_pv(acc_o, a_p, prev.stage);
          turn_end();
          if constexpr (!kSpecialised) loads.poll();
          wgmma_wait<1>();  // S_j
          wgmma_fence_operands(acc_s);
          if (kEarlyQ && it == tiles.count - 1) {
            release(bar.q_empty, qs.stage);  // the last S: Q is done with
          } else {
            release(bar.k_empty, slot.stage);
          }
          apply_mask(acc_s, tiles(it));
          softmax.update_scores<QuadRowReduce>(acc_s, p.scale_log2, alpha);
          wgmma_wait<0>();  // P_{j-1}·V_{j-1}
          wgmma_fence_operands(acc_o);
          release(bar.v_empty, prev.stage);
          // A warp whose rows all kept their max has alpha = 1 everywhere: its rescale would
          // multiply by one, so skipping it changes no bit (Tr::kSkipUnitRescale).
          if (!Tr::kSkipUnitRescale || !__all_sync(0xffffffffu, alpha[0] == 1.f && alpha[1] == 1.f))
            OnlineSoftmax::rescale(acc_o, alpha);
          pack_p(a_p, acc_s);
        }
        // The last P·V.
        if constexpr (!kSpecialised) loads.ensure(round, loads.v_pos(tiles.count - 1));
        mbar_wait(&bar.v_full[slot.stage], slot.phase);
        turn_begin();
        issue_pv(acc_o, a_p, slot.stage);
        turn_end();
        if constexpr (!kSpecialised) loads.poll();
        wgmma_wait<0>();
        wgmma_fence_operands(acc_o);
        if constexpr (!kEarlyQ) release(bar.v_empty, slot.stage);
      } else {
        // One tile at a time: S_j, softmax (O rescaled at once), O += P_j·V_j.
        for (int it = 0; it < tiles.count; ++it) {
          slot = ring_slot<Tr::kStages>(kv + it);
          mbar_wait(&bar.k_full[slot.stage], slot.phase);
          turn_begin();
          issue_qk(acc_s, slot.stage);
          turn_end();
          if (it == 0) free_stored();
          wgmma_wait<0>();
          wgmma_fence_operands(acc_s);
          release(bar.k_empty, slot.stage);
          apply_mask(acc_s, tiles(it));
          softmax.update<QuadRowReduce>(acc_s, acc_o, p.scale_log2);
          pack_p(a_p, acc_s);
          mbar_wait(&bar.v_full[slot.stage], slot.phase);
          turn_begin();
          issue_pv(acc_o, a_p, slot.stage);
          turn_end();
          wgmma_wait<0>();
          wgmma_fence_operands(acc_o);
          release(bar.v_empty, slot.stage);
        }
      }
      last_stage = slot.stage;
      kv += tiles.count;
    }

    free_stored();  // an item without keys issued no GEMM

    // Epilogue (line 22): O / ℓ staged in shared memory, one TMA store per 64-column panel, and
    // L = τ·m + ln ℓ per row. Where: with kEarlyQ in the last K/V tile's slots (consumer 0's rows
    // in K's, consumer 1's in V's: panels of 64 rows), once every consumer's last GEMMs have read
    // them; otherwise in this warpgroup's rows of sQ (panels of Br rows, from row c·64: its own Q
    // rows, which only its own GEMMs read, so the barrier of its four warps suffices).
    const bool in_kv = kEarlyQ && tiles.count > 0;
    if (in_kv) {
      named_barrier_sync(Tr::kItemEndBarrier, 128 * Tr::kConsumers);
    } else {
      named_barrier_sync(Tr::kEpilogueBarrier + c, 128);
    }
    unsigned char* const sO = in_kv ? (c == 0 ? sK : sV) + last_stage * Tr::kTileKVBytes : sQ;  // swizzle128
    const int panel_rows = in_kv ? 64 : Tr::kBlockM;
    const int first_row = in_kv ? 0 : c * 64;  // this warpgroup's first row in a panel
    float* lse = p.lse + (int64_t(w.b) * p.heads + w.h) * p.seqlen_q;
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
      const float l = softmax.total<QuadRowReduce>(hr);
      const float inv = OnlineSoftmax::output_scale<false>(l, 1.f);
      const int r = warp * 16 + g + 8 * hr;  // row of this warpgroup's 64
#pragma unroll
      for (int j = 0; j < Tr::kHeadDim / 8; ++j)
        *reinterpret_cast<uint32_t*>(sO + swizzle128_chunk_offset(panel_rows, first_row + r, j) + 4 * t) =
            pack2<T>(acc_o[4 * j + 2 * hr] * inv, acc_o[4 * j + 2 * hr + 1] * inv);
      const int row = row0 + r;
      if (t == 0 && row < p.seqlen_q) lse[row] = softmax.lse(hr, l, p.scale_log2);
    }
    fence_proxy_async_shared();  // the TMA store reads what these threads wrote
    named_barrier_sync(Tr::kEpilogueBarrier + c, 128);
    if (threadIdx.x % 128 == 0) {
      for (int cc = 0; cc < Tr::kPanels; ++cc)
        tma_store_3d(&args.o, sO + (cc * panel_rows + first_row) * kSwizzleRowBytes, cc * kPanelColumns, row0,
                     w.b * p.heads + w.h);
      tma_store_commit();
      if (!in_kv && Tr::kQStages == 1) {  // the producer may load the next Q tile into it
        tma_store_wait_read();
        for (int a = 0; a < (kEarlyQ ? 4 : 1); ++a) mbar_arrive(&bar.q_empty[qs.stage]);  // kEarlyQ: one per warp
      }
    }
    store_pending = in_kv ? last_stage : Tr::kQStages > 1 ? qs.stage : -1;  // freed by free_stored
  }
  if (threadIdx.x % 128 == 0) tma_store_wait();
}

// The threads of a block: the consumer warpgroups, and the producer's when specialised.
template <typename Tr, bool kSpecialised>
inline constexpr int kFlash3FwdThreads = kSpecialised ? Tr::kThreads : Tr::kConsumerThreads;

// kPingPong: consumer warpgroups take turns at the tensor cores (named barriers); kOverlap:
// S_{j+1} = Q·K_{j+1}ᵀ issued with O += P_j·V_j, softmax between; kSpecialised: a producer
// warpgroup loads. All on is FlashAttention-3; the others are the ablations of FA-3 Table 2.
// Warpgroup 0 produces, the others consume; each role is one branch, so the register
// reallocation applies to it. Without a producer every warpgroup consumes, at the registers
// the launch gives (no reallocation).
template <typename Tr, bool kCausal, bool kPingPong, bool kOverlap, bool kSpecialised>
__global__ void __launch_bounds__(kFlash3FwdThreads<Tr, kSpecialised>, 1)
    flash3_fwd_kernel(const __grid_constant__ Flash3FwdArgs args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ Flash3Barriers<Tr::kStages, Tr::kQStages> bar;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Flash3Shared<Tr> sh;
  sh.q = smem_raw + (kFlash3SmemAlign - smem_addr(smem_raw) % kFlash3SmemAlign) % kFlash3SmemAlign;
  sh.k = sh.q + Tr::kQStages * Tr::kTileQBytes;
  sh.v = sh.k + Tr::kStages * Tr::kTileKVBytes;
  sh.bar = &bar;
  if (threadIdx.x == 0) {
    for (int s = 0; s < Tr::kQStages; ++s) {
      mbar_init(&bar.q_full[s], 1);
      mbar_init(&bar.q_empty[s], kFlash3EarlyQ<Tr, kOverlap> ? 4 * Tr::kConsumers : Tr::kConsumers);  // warps or warpgroups
    }
    for (int s = 0; s < Tr::kStages; ++s) {
      mbar_init(&bar.k_full[s], 1);
      mbar_init(&bar.v_full[s], 1);
      mbar_init(&bar.k_empty[s], Tr::kReleaseArrivals);
      mbar_init(&bar.v_empty[s], Tr::kReleaseArrivals);
    }
    mbar_init(&bar.item_full, 1);
    mbar_init(&bar.item_empty, Tr::kItemReaders);
    fence_mbar_init();
  }
  __syncthreads();
  if constexpr (!kSpecialised) {
    flash3_consume<Tr, kCausal, kPingPong, kOverlap, false>(args, sh);
  } else if (threadIdx.x < 128) {
    warpgroup_reg_dealloc<flash3_producer_registers(Tr::kConsumers)>();
    if (threadIdx.x < 32) flash3_produce<Tr, kCausal>(args, sh);
  } else {
    warpgroup_reg_alloc<Tr::kConsumerRegs>();
    flash3_consume<Tr, kCausal, kPingPong, kOverlap, true>(args, sh);
  }
#else
  __trap();  // compiled for sm_90a only (flash3_compiled() says whether it is)
#endif
}

}  // namespace flashio::kernels

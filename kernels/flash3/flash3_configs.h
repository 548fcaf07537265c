// flash3's one table: the head dims it is compiled for, its forward tiles per head dim and what
// a tile costs in shared memory. Plain C++: read by the instantiations (CMake expands
// FLASH3_HEAD_DIMS), the dispatch, the method's info() and tile choice, and analysis/models/.
//
// A tile is Br query rows × Bc key rows. Br = 64 rows per consumer warpgroup; one more
// warpgroup (the producer) issues the TMA loads, so warps = 4 · (Br/64 + 1). `stages` is the
// depth of the K/V ring in shared memory.
#pragma once
#include <optional>

#include "bench/core/tile_shape.h"

// The head dims with flash3 kernels: the one list.
#define FLASH3_HEAD_DIMS(X) X(64) X(128) X(256)
// The head dims with a flash3 backward (wgmma, dK and dV of a consumer warpgroup's 64 keys in
// registers: 2 · d/2 fp32 per thread, 256 at d = 256, more than a thread's 240). d 256's
// backward points are `skipped` with that reason.
#define FLASH3_BWD_HEAD_DIMS(X) X(64) X(128)
// The head dims with the forward's ablations (FA-3 Table 2) compiled: d 128, to keep the build short.
#define FLASH3_ABLATION_HEAD_DIMS(X) X(128)

namespace flashio::kernels {

constexpr int kFlash3SmemAlign = 1024;  // the 128-byte swizzle's atom: tiles start on it

constexpr int kFlash3SmemLimit = 227 * 1024;  // Hopper's shared memory per block

// Q tile buffers: two where they fit beside the K/V rings (the producer loads the next work item's
// Q while the consumers finish the current one), else one.
constexpr int flash3_q_stages(int head_dim, TileShape t) {
  const int kv = 2 * t.stages * t.block_c * head_dim * 2, q = t.block_r * head_dim * 2;
  return 2 * q + kv + kFlash3SmemAlign <= kFlash3SmemLimit ? 2 : 1;
}

// Dynamic shared memory of a forward tile: the Q buffers (Br, d), the K and V rings (stages ×
// (Bc, d) each), 16-bit elements, plus the slack that aligns the first tile to the swizzle atom.
constexpr int flash3_fwd_smem_bytes(int head_dim, TileShape t) {
  return flash3_q_stages(head_dim, t) * t.block_r * head_dim * 2 + 2 * t.stages * t.block_c * head_dim * 2 +
         kFlash3SmemAlign;
}

// Registers per thread after the producer gives its share to the consumers (setmaxnreg):
// 65536 per SM, one thread block per SM. Two consumer warpgroups: 40 + 2·232 (per 128 threads);
// three: 32 + 3·160 = 512, all of them (FlashAttention-3's split).
constexpr int flash3_consumer_registers(int consumer_warpgroups) { return consumer_warpgroups == 2 ? 232 : 160; }
constexpr int flash3_producer_registers(int consumer_warpgroups) { return consumer_warpgroups == 2 ? 40 : 32; }

// The shortest sequence a tile is picked for: keys without a mask, keys under a causal one.
struct Flash3TileFrom {
  int keys, causal_keys;
};

// Tiles per head dim, in order of preference, each with the shortest sequence it is picked for
// (`from`, index by index): the first that suits a problem's length and fits the GPU's shared
// memory runs (flash3_fwd_pick). FlashAttention-3's larger tiles pay on long sequences only:
// their longer pipeline start per work item, a causal diagonal's larger masked share and, at
// d 256, Bc 80's cut last tile (N 512: 7 tiles of 80 for 8 of 64) cost more below (H100, FA-2
// setting, against cuDNN: kernels/flash3/NOTES.md, "Why the length rule").
template <int kHeadDim>
struct Flash3FwdConfigs;
template <>
struct Flash3FwdConfigs<64> {
  // 192 × 128 (FA-3's: three consumer warpgroups) spills 60 (causal 72) bytes per thread in ptxas
  // at 160 registers; still the fastest from 2048 keys. 128 × 192 (two consumers) was slower
  // than it and 192 × 112 (no spill) too (NOTES.md): not listed.
  static constexpr TileShape list[] = {{192, 128, 16, 2}, {128, 128, 12, 2}};
  static constexpr Flash3TileFrom from[] = {{2048, 8192}, {0, 0}};
};
template <>
struct Flash3FwdConfigs<128> {
  // 128 × 176 (FA-3's Bc) spills 12 (causal 32) bytes per thread, outside the K/V loop.
  static constexpr TileShape list[] = {{128, 176, 12, 2}, {128, 128, 12, 2}};
  static constexpr Flash3TileFrom from[] = {{2048, 8192}, {0, 0}};
};
template <>
struct Flash3FwdConfigs<256> {
  // Bc = 80 as FlashAttention-3 (one Q buffer: 225 KB) from 1024 keys (2048 causal); Bc = 64
  // below, where less shared memory is offered, and with --block-c 64.
  static constexpr TileShape list[] = {{128, 80, 12, 2}, {128, 64, 12, 2}};
  static constexpr Flash3TileFrom from[] = {{1024, 2048}, {0, 0}};
};

// The backward's tile per head dim: Bc = 128 keys per thread block (two consumer warpgroups of
// 64 keys, each keeping its dK and dV in registers), Q tiles of Br = 64 rows streamed through a
// ring of `stages` slots (Q_i, dO_i, L_i, D_i), warps = 4 · 3 (producer + two consumers).
constexpr TileShape kFlash3BwdTile = {64, 128, 12, 2};

// Registers per thread of the backward's warpgroups (setmaxnreg). The kernel is launched with
// 384 threads at 168 registers (64512 in all), so the producer's and the two consumers' budgets
// must sum to at most 3 · 168: 40 + 2 · 232 = 504. The producer warpgroup holds the loads and the
// dQ writer: at 24 (consumers 240) it spilled 20-72 bytes (ptxas -v, nvcc 13.0); at 40 the d 64
// kernels spill nothing and the d 128 non-causal one 12 bytes (the consumers at 232).
constexpr int kFlash3BwdProducerRegisters = 40;
constexpr int kFlash3BwdConsumerRegisters = 232;
static_assert(kFlash3BwdProducerRegisters + 2 * kFlash3BwdConsumerRegisters <= 3 * 168,
              "setmaxnreg: the registers the block was launched with");

// The backward's block order under a causal mask. Block j of a (batch, K/V head) plane visits the
// Q tiles from the diagonal of key tile j on, so a plane's first tiles are its heaviest; in the
// grid's own order (tiles fastest) the last planes' heaviest blocks start last and trail. So the
// planes are dealt in groups of G, tile-major within a group — every plane's tile 0, then every
// plane's tile 1, ... — with G = 2·SMs / key tiles (about two waves of blocks per group, whose
// planes' Q, dO and dQ tiles L2 holds together), at least 1 and at most 8. H100, FA-2 setting
// (kernels/flash3/NOTES.md): 1.01–1.06× the grid's order at N 2048–16384 causal, no change
// without the mask (kept off there); all planes at once (no groups) was 0.66–1.04×.
constexpr int flash3_bwd_plane_group(long long key_tiles, int sm_count) {
  const long long g = key_tiles > 0 ? 2LL * sm_count / key_tiles : 1;
  return g < 1 ? 1 : g > 8 ? 8 : int(g);
}
// The (key tile, plane) of block `linear` (0 .. tiles·planes − 1) in that order.
struct Flash3BwdBlock {
  int tile, plane;
};
constexpr Flash3BwdBlock flash3_bwd_block(int linear, int tiles, int planes, int group) {
  const int first = linear / (group * tiles) * group;  // the group's first plane
  const int size = group < planes - first ? group : planes - first;
  const int within = linear - first * tiles;
  return {within / size, first + within % size};
}

// The forward's work items under a causal mask (flash3_item, kernels/flash3/flash3_fwd_kernel.cuh):
// the (batch, head) planes in groups of G, and within a group every plane's last (longest) Q tile
// first, then every plane's next — the backward's order (flash3_bwd_block) over Q tiles, G as the
// backward's for m_blocks tiles — so that the items the scheduler deals last are short ones, not a
// plane's longest; from 16 Q tiles (N 2048 at Br 128). Below, where every item is short, one plane
// at a time, longest first (G = 1). H100, FA-2 setting (kernels/flash3/NOTES.md, "Causal work
// order"): causal d 128 and 256 at N 2048-8192 0.92-0.98 of the time of one plane at a time.
// Without the mask every item is as long as the next: one plane at a time (G = 1).
constexpr int flash3_fwd_plane_group(long long m_blocks, int sm_count, bool causal) {
  return causal && m_blocks >= 16 ? flash3_bwd_plane_group(m_blocks, sm_count) : 1;
}
// Dynamic shared memory of the backward: K_j and V_j (Bc, d); `stages` slots of Q_i and dO_i
// (Br, d) and of L_i, D_i (Br fp32 each); dSᵀ (Bc, Br) twice (one iteration writes one while the
// other warpgroup's dQ may still read the last); two fp32 dQ tiles (Br, d), the consumers storing
// one while the dQ writer adds the other into the accumulator; the swizzle atom's alignment slack.
constexpr int flash3_bwd_smem_bytes(int head_dim, TileShape t) {
  return 2 * t.block_c * head_dim * 2 + t.stages * 2 * t.block_r * head_dim * 2 + 2 * t.block_c * t.block_r * 2 +
         t.stages * 2 * t.block_r * 4 + 2 * t.block_r * head_dim * 4 + kFlash3SmemAlign;
}

// Does the i-th tile of the list suit a problem with `keys` keys (its `from`)?
template <int kHeadDim>
constexpr bool flash3_tile_suits(int i, long long keys, bool causal) {
  static_assert(sizeof(Flash3FwdConfigs<kHeadDim>::from) / sizeof(Flash3TileFrom) ==
                    sizeof(Flash3FwdConfigs<kHeadDim>::list) / sizeof(TileShape),
                "a `from` per tile");
  const Flash3TileFrom f = Flash3FwdConfigs<kHeadDim>::from[i];
  return keys >= (causal ? f.causal_keys : f.keys);
}

// The forward tile of a problem with `keys` keys: the first of the list that suits its length
// and fits `optin` bytes of shared memory per block.
template <int kHeadDim>
constexpr std::optional<TileShape> flash3_fwd_pick(long long optin, long long keys, bool causal) {
  int i = 0;
  for (const TileShape& s : Flash3FwdConfigs<kHeadDim>::list)
    if (flash3_tile_suits<kHeadDim>(i++, keys, causal) && flash3_fwd_smem_bytes(kHeadDim, s) <= optin) return s;
  return std::nullopt;
}

}  // namespace flashio::kernels

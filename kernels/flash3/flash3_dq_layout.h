// The flash3 backward's fp32 dQ accumulator: whole tiles of Br = 64 query rows × d, each in the
// order the consumers' wgmma accumulators leave it, so that a consumer warp stores its part into
// shared memory as 512 contiguous bytes per instruction (no bank conflict) and the dQ writer adds
// the tile into global memory with one bulk reduction (cp.reduce.async.bulk) per consumer.
//
// Per (batch, head): ⌈Nq/64⌉ tiles of 64·d floats (rows past Nq included: they add zeros and are
// never read). Within a tile, consumer warpgroup w holds columns [w·C, w·C + C), C = d / 2, as
// 64·C floats: element 4j + e of thread (warp, lane) of its accumulator — row 16·warp + g
// (+8 for e ≥ 2), column 8j + 2t + (e & 1), g = lane / 4, t = lane % 4 (kernels/common/wgmma_bwd.cuh)
// — at float ((j·4 + warp)·32 + lane)·4 + e. flash3's dQ conversion reads it back with
// flash3_dq_tile_offset.
#pragma once
#include <cstdint>

#include "kernels/common/host_device.h"

namespace flashio::kernels {

constexpr int kFlash3DqTileRows = 64;  // Br of kFlash3BwdTile

// Float offset, within its tile, of dQ element (row r < 64, column c < d); dq_columns = d / 2.
FLASHIO_HOST_DEVICE constexpr int flash3_dq_tile_offset(int r, int c, int dq_columns) {
  const int part = c / dq_columns, cc = c % dq_columns;
  const int warp = r / 16, g = r % 8, hr = (r % 16) / 8;
  const int j = cc / 8, t = (cc % 8) / 2;
  return part * kFlash3DqTileRows * dq_columns + ((j * 4 + warp) * 32 + 4 * g + t) * 4 + 2 * hr + (cc & 1);
}

// Query tiles per (batch, head), and the accumulator's size in floats.
FLASHIO_HOST_DEVICE constexpr int64_t flash3_dq_tiles(int64_t seqlen_q) {
  return (seqlen_q + kFlash3DqTileRows - 1) / kFlash3DqTileRows;
}
FLASHIO_HOST_DEVICE constexpr int64_t flash3_dq_accum_floats(int64_t batch, int64_t heads, int64_t seqlen_q,
                                                            int64_t head_dim) {
  return batch * heads * flash3_dq_tiles(seqlen_q) * kFlash3DqTileRows * head_dim;
}

}  // namespace flashio::kernels

// The record's `tiles` / `tiles_bwd` (bench/core/method.h) of a launch with a fused kernel's tile:
// its shape and shared memory, the instruction path the tile was compiled for (wgmma reading the
// 128-byte swizzle, else mma.sync on padded rows) and the thread blocks per head where the kernel
// splits one (flash1). Host code, for the methods' plans.
#pragma once
#include "bench/core/method.h"
#include "kernels/common/kernel_tile.h"

namespace flashio::kernels {

inline Tiles record_tiles(const KernelTile& t, int splits = 0) {
  Tiles out;
  static_cast<TileShape&>(out) = t;
  out.smem_bytes = t.smem_bytes;
  out.splits = splits;
  out.mma = t.wgmma ? "wgmma" : "mma.sync";
  out.smem_layout = t.wgmma ? "swizzle128" : "padded";
  return out;
}

}  // namespace flashio::kernels

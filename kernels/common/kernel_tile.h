// The tile configuration a fused kernel is launched with: one of its compiled tile shapes
// (its configs header) and what the launch needs beside it. Plain C++ for host code; shared by
// flash1, flash2 and block-sparse, whose methods report it in the record's `tiles`.
#pragma once
#include "bench/core/tile_shape.h"

namespace flashio::kernels {

struct KernelTile : TileShape {
  int smem_bytes = 0;  // dynamic shared memory per thread block
  bool wgmma = false;  // Hopper warpgroup MMA with swizzled tiles (kernels/flash2/hopper/), else mma.sync
};

// `shape` with its shared memory (and instruction path).
constexpr KernelTile kernel_tile(TileShape shape, int smem_bytes, bool wgmma = false) {
  KernelTile t{};
  static_cast<TileShape&>(t) = shape;
  t.smem_bytes = smem_bytes;
  t.wgmma = wgmma;
  return t;
}

}  // namespace flashio::kernels

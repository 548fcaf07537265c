// The shape of a fused attention kernel's tiles — the one type for it. The kernels' tile lists
// (kernels/*/..._configs.h), the tile a method launches (kernels/common/kernel_tile.h), the
// record's `tiles` (Tiles, bench/core/method.h) and the IO model's view of them
// (ModelTiles, analysis/io_model.h) are this shape plus what each of them adds.
//
// Names are the papers': Br query rows and Bc key rows per tile, whichever loop is outer
// (FlashAttention Algorithm 1 streams Q tiles inside a K/V loop; FlashAttention-2's forward
// streams K/V tiles inside a Q tile; both backwards stream Q tiles inside a K/V tile).
#pragma once

namespace flashio {

struct TileShape {
  int block_r = 0;  // Br: query rows per tile
  int block_c = 0;  // Bc: key rows per tile
  int warps = 0;    // warps per thread block
  int stages = 0;   // shared-memory buffers of the streamed operand (2: double-buffered)
};

}  // namespace flashio

// The `flash1` method: FlashAttention as published (Dao et al., 2022): Algorithm 2 forward
// (Algorithm 1 with masking and dropout) and Algorithm 4 backward, with the paper's loop order
// (outer loop over K/V tiles, O/ℓ/m re-read and re-written in HBM) and its parallelisation
// over (batch, head), split further over `splits` thread blocks per head when batch × heads
// cannot fill the GPU (as the paper's released kernel does). Kernels:
// kernels/flash1/flash1_kernels.cuh.
//
// Splits: the largest count that keeps one wave, ⌊SMs × resident blocks per SM / (B·H)⌋,
// between 1 and the number of tiles the split loop deals out (Q tiles forward, K/V tiles
// backward); recorded as tiles.splits and tiles_bwd.splits.
//
// Tile sizes: Algorithm 1's rule Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d), M = the GPU's shared
// memory per block in elements, rounded down to a compiled tile that fits (Br first, then Bc);
// --block-r/--block-c force one of the compiled tiles (FlashAttention Figure 2, middle).
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "bench/core/method.h"
#include "kernels/flash1/flash1_configs.h"
#include "kernels/flash1/flash1_method.h"

namespace flashio {
namespace {

using kernels::KernelTile;

std::vector<KernelTile> compiled_tiles(int head_dim) {
  KernelTile buf[16];
  const int n = kernels::flash1_fwd_tiles(head_dim, buf, 16);
  return {buf, buf + n};
}

}  // namespace

Support flash1_choose_tile(const Problem& p, const DeviceInfo& dev, KernelTile* out) {
  const auto tiles = compiled_tiles(int(p.head_dim));
  if (p.block_r > 0 || p.block_c > 0) {
    std::vector<std::string> names;
    for (const auto& t : tiles) {
      names.push_back(fmt::format("{}x{}", t.block_r, t.block_c));
      if ((p.block_r > 0 && t.block_r != p.block_r) || (p.block_c > 0 && t.block_c != p.block_c)) continue;
      if (t.smem_bytes > dev.smem_per_block_optin)
        return Support::no(fmt::format("tile {}x{} needs {} bytes of shared memory; this GPU allows {} per block",
                                       t.block_r, t.block_c, t.smem_bytes, dev.smem_per_block_optin));
      *out = t;
      return Support::yes();
    }
    return Support::no(fmt::format("flash1 has no {}x{} tile for d={} (compiled: {})", p.block_r, p.block_c,
                                   p.head_dim, fmt::join(names, ", ")));
  }
  // Algorithm 1, line 1 (flash1_fwd_pick, the rule `flashio predict` applies too).
  if (!kernels::flash1_fwd_tile_for(int(p.head_dim), dev.smem_per_block_optin, bytes_of(p.dtype), out))
    return Support::no(fmt::format("no flash1 tile for d={} fits Algorithm 1's rule (Bc <= M/4d, Br <= min(M/4d, d)) "
                                   "in {} bytes of shared memory",
                                   p.head_dim, dev.smem_per_block_optin));
  return Support::yes();
}

namespace {

class Flash1 final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i;
    i.name = "flash1";
    i.summary = "FlashAttention (Dao et al. 2022, Alg. 2/4): outer loop over K/V tiles, O/l/m re-read and re-written in HBM";
    i.where = "gpu";
    i.passes = {Pass::Fwd, Pass::Bwd, Pass::FwdBwd};
    i.dtypes = {DType::F16, DType::BF16};
    #define FLASH1_HEAD_DIM_ITEM(D) D,
    i.head_dims = {FLASH1_HEAD_DIMS(FLASH1_HEAD_DIM_ITEM)};
#undef FLASH1_HEAD_DIM_ITEM
    i.masks = {"none", "causal", "padding"};
    i.dropout = true;
    i.gqa = false;
    i.deterministic = true;  // --deterministic: one backward block per (batch, head) adds dQ in K/V-tile order
    i.mma = {"mma.sync"};
    i.notes = "thread blocks per (batch, head) as the paper's kernel, split to fill one wave (tiles.splits; "
              "backward unsplit when deterministic); tiles from Algorithm 1's rule unless forced";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    if (Support s = check_fused_kernels(p, dev); !s) return s;
    if (p.seqlen_q > (int64_t(1) << 30) || p.nk() > (int64_t(1) << 30))
      return Support::no("sequence lengths above 2^30 are not supported (32-bit row indices)");
    if (pass != Pass::Fwd) {
      KernelTile bwd{};
      if (!kernels::flash1_bwd_tile(int(p.head_dim), &bwd) || bwd.smem_bytes > dev.smem_per_block_optin)
        return Support::no(fmt::format("flash1 backward needs {} bytes of shared memory; this GPU allows {} per block",
                                       bwd.smem_bytes, dev.smem_per_block_optin));
    }
    KernelTile t{};
    return flash1_choose_tile(p, dev, &t);
  }
};

}  // namespace

std::unique_ptr<Method> make_flash1() { return std::make_unique<Flash1>(); }

}  // namespace flashio

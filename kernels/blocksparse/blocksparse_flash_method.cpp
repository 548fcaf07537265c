// The `blocksparse_flash` method: block-sparse FlashAttention (FlashAttention Algorithm 5 and
// its backward), built on flash2's kernels compiled with kSparse (kernels/flash2/
// flash2_{fwd,bwd}_kernel.cuh; instantiations for d = 64, 128 in fp16 and bf16).
//
// Loop order (the IO model of Proposition 4 is checked against this): flash2's, not
// Algorithm 5's. Forward: Q tiles across thread blocks (outer, parallel), non-zero K/V tiles
// of the Q tile's row of the mask streamed inside (FA-2 Algorithm 1 order). Backward: K/V tiles
// across thread blocks, non-zero Q tiles of the K/V tile's column inside (FA-2 Algorithm 2
// order). Zero blocks are never loaded or computed in either pass.
//
// Mask: the problem's pattern (bench/core/sparsity.h) over sparse_block × sparse_block blocks, the
// same for every batch and head, mapped to each kernel's tiles (forward Br × Bc, backward
// 64 × 64): the pattern block must be a multiple of both, else the point is skipped. The row
// lists (forward) and column lists (backward) of non-zero tiles are built on the host at plan
// time and live in device memory (workspace).
//
// IO per (batch, head), s = density, e = element bytes, Tr = ⌈Nq/Br⌉, Tc = ⌈Nk/Bc⌉:
//   forward:  Q read once, O and L written once, K and V read s·Tr times (tile lists
//             4·(Tr + 1 + s·Tr·Tc) bytes): Θ(Nd + s·N²d/Br) = Θ(Nd + N²d²M⁻¹s) with Br = Θ(M/d).
//   backward: K, V read and dK, dV written once; Q, dO, L, D read and dQ accumulated s·Tc·G
//             times.
// Run: build/flashio run --method blocksparse_flash,flash2 --pattern butterfly --seqlen 4096
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "bench/core/method.h"
#include "bench/core/sparsity.h"
#include "kernels/blocksparse/blocksparse_configs.h"
#include "kernels/blocksparse/blocksparse_params.h"

namespace flashio {
namespace {

using kernels::KernelTile;

// Why the pattern's block cannot be mapped onto the kernel tiles, or yes.
Support check_block(const Problem& p, int block_r, int block_c, const char* pass) {
  if (p.sparse_block % block_r != 0 || p.sparse_block % block_c != 0)
    return Support::no(fmt::format(
        "pattern block {} is not a multiple of the {} tile {}x{} (zero blocks could not be skipped whole); use "
        "--sparse-block a multiple of {}",
        p.sparse_block, pass, block_r, block_c, std::max(block_r, block_c)));
  return Support::yes();
}

class BlocksparseFlash final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i;
    i.name = "blocksparse_flash";
    i.summary = "block-sparse FlashAttention (Alg. 5, Prop. 4) on flash2's kernels: zero blocks skipped in fwd and bwd";
    i.where = "gpu";
    i.passes = {Pass::Fwd, Pass::Bwd, Pass::FwdBwd};
    i.dtypes = {DType::F16, DType::BF16};
    #define BLOCKSPARSE_HEAD_DIM_ITEM(D) D,
    i.head_dims = {BLOCKSPARSE_HEAD_DIMS(BLOCKSPARSE_HEAD_DIM_ITEM)};
#undef BLOCKSPARSE_HEAD_DIM_ITEM
    i.masks = {"blocksparse", "causal", "padding"};
    i.dropout = true;
    i.gqa = true;
    i.mma = {"mma.sync"};
    i.notes =
        "needs --pattern; pattern block a multiple of the forward tile (128x64) and the backward tile (64x64); "
        "loop order of flash2 (Q tiles outer in fwd, K/V tiles outer in bwd); no deterministic backward (the K/V "
        "tiles adding to a Q tile's dQ are not a prefix of the tile index, so flash2's in-turn dQ does not apply)";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (!p.sparse()) return Support::no("blocksparse_flash needs a block-sparse pattern (--pattern); dense is flash2");
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    if (Support s = check_fused_kernels(p, dev); !s) return s;
    if (p.seqlen_q > (int64_t(1) << 30) || p.nk() > (int64_t(1) << 30))
      return Support::no("sequence lengths above 2^30 are not supported (32-bit row indices)");
    if (auto why = pattern_invalid_reason(p)) return Support::no(*why);
    KernelTile fwd{};
    if (!kernels::blocksparse_fwd_tile(int(p.head_dim), &fwd))
      return Support::no(fmt::format("blocksparse_flash is compiled for head dims 64 and 128 (got {})", p.head_dim));
    if ((p.block_r > 0 && p.block_r != fwd.block_r) || (p.block_c > 0 && p.block_c != fwd.block_c))
      return Support::no(fmt::format("blocksparse_flash compiles only the {}x{} forward tile for d={}", fwd.block_r,
                                     fwd.block_c, p.head_dim));
    if (fwd.smem_bytes > dev.smem_per_block_optin)
      return Support::no(fmt::format("tile {}x{} needs {} bytes of shared memory; this GPU allows {} per block",
                                     fwd.block_r, fwd.block_c, fwd.smem_bytes, dev.smem_per_block_optin));
    if (Support s = check_block(p, fwd.block_r, fwd.block_c, "forward"); !s) return s;
    if (pass != Pass::Fwd) {
      KernelTile bwd{};
      if (!kernels::flash2_bwd_tile(int(p.head_dim), &bwd))
        return Support::no(fmt::format("no backward tile for d={}", p.head_dim));
      if (bwd.smem_bytes > dev.smem_per_block_optin)
        return Support::no(fmt::format("the backward needs {} bytes of shared memory; this GPU allows {} per block",
                                       bwd.smem_bytes, dev.smem_per_block_optin));
      if (Support s = check_block(p, bwd.block_r, bwd.block_c, "backward"); !s) return s;
    }
    return Support::yes();
  }
};

}  // namespace

std::unique_ptr<Method> make_blocksparse_flash() { return std::make_unique<BlocksparseFlash>(); }

}  // namespace flashio

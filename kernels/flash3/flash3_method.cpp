// The `flash3` method: FlashAttention-3 (Shah et al., 2024) on Hopper. Forward: TMA loads by a
// producer warpgroup, two or three consumer warpgroups taking turns at the tensor cores
// (ping-pong), softmax overlapped with the P·V product inside a warpgroup, a persistent grid.
// Backward (d 64, 128): one block per K/V tile, a TMA producer warp streaming Q, dO, L, D through
// an mbarrier ring to two wgmma consumer warpgroups that keep dK, dV in registers.
// Kernels: kernels/flash3/flash3_{fwd,bwd}_kernel.cuh; tiles: flash3_configs.h.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/core/method.h"
#include "kernels/flash3/flash3_method.h"

namespace flashio {

using kernels::KernelTile;

Support flash3_choose_tile(const Problem& p, const DeviceInfo& dev, KernelTile* out) {
  if (!kernels::flash3_compiled())
    return Support::no("this build has no flash3 kernels (CMAKE_CUDA_ARCHITECTURES without 90)");
  if (dev.compute_capability() != 90)
    return Support::no(fmt::format("flash3 runs on compute capability 9.0 only (TMA, wgmma; this GPU: {}.{})",
                                   dev.cc_major, dev.cc_minor));
  KernelTile tiles[8];
  const int n = kernels::flash3_fwd_tiles(int(p.head_dim), tiles, 8);
  const bool forced = p.block_r > 0 || p.block_c > 0;
  std::vector<std::string> compiled;
  for (int i = 0; i < n; ++i) {
    const KernelTile& t = tiles[i];
    compiled.push_back(fmt::format("{}x{}", t.block_r, t.block_c));
    if ((p.block_r > 0 && t.block_r != p.block_r) || (p.block_c > 0 && t.block_c != p.block_c)) continue;
    if (!forced && !kernels::flash3_fwd_tile_suits(int(p.head_dim), i, p.nk(), p.causal)) continue;
    if (t.smem_bytes > dev.smem_per_block_optin) {
      if (forced)
        return Support::no(fmt::format("tile {}x{} needs {} bytes of shared memory; this GPU allows {} per block",
                                       t.block_r, t.block_c, t.smem_bytes, dev.smem_per_block_optin));
      continue;
    }
    *out = t;
    return Support::yes();
  }
  if (forced)
    return Support::no(fmt::format("flash3 has no {}x{} tile for d={} (compiled: {})", p.block_r, p.block_c,
                                   p.head_dim, fmt::join(compiled, ", ")));
  return Support::no(fmt::format("no flash3 tile for d={} fits in {} bytes of shared memory", p.head_dim,
                                 dev.smem_per_block_optin));
}

Support flash3_choose_bwd_tile(const Problem& p, const DeviceInfo& dev, KernelTile* out) {
  if (!kernels::flash3_bwd_tile(int(p.head_dim), out))
    return Support::no(fmt::format(
        "flash3 has no backward for d={} (d 64, 128 only: a consumer warpgroup's dK and dV of 64 keys would need "
        "{} fp32 registers per thread, more than setmaxnreg's 240)",
        p.head_dim, p.head_dim));
  if (out->smem_bytes > dev.smem_per_block_optin)
    return Support::no(fmt::format("flash3's backward needs {} bytes of shared memory; this GPU allows {} per block",
                                   out->smem_bytes, dev.smem_per_block_optin));
  return Support::yes();
}

namespace {

// flash3, or one of its ablations (FlashAttention-3 Table 2): the same kernel with ping-pong, the
// intra-warpgroup overlap or the producer warpgroup compiled out, registered as methods of their
// own so a sweep runs them side by side
// (`--method flash3,flash3_no_pingpong,flash3_no_overlap,flash3_no_warpspec`).
class Flash3 final : public Method {
 public:
  Flash3(std::string name, kernels::Flash3Schedule schedule) : name_(std::move(name)), schedule_(schedule) {}
  MethodInfo info() const override {
    MethodInfo i;
    i.name = name_;
    switch (schedule_) {
      case kernels::Flash3Schedule::Full:
        i.summary = "FlashAttention-3 forward (Shah et al. 2024): TMA producer, ping-pong consumer warpgroups, "
                    "softmax overlapped with P·V, persistent (Hopper)";
        break;
      case kernels::Flash3Schedule::NoPingPong:
        i.summary = "flash3 without ping-pong: the consumer warpgroups issue their GEMMs whenever ready "
                    "(FA-3 Table 2 ablation)";
        break;
      case kernels::Flash3Schedule::NoOverlap:
        i.summary = "flash3 without intra-warpgroup overlap: S, softmax, P·V one after the other "
                    "(FA-3 Table 2 ablation)";
        break;
      case kernels::Flash3Schedule::NoWarpSpecialisation:
        i.summary =
            "flash3 without warp specialisation: no producer warpgroup, a consumer thread issues the "
            "TMA loads between its GEMMs (FA-3 Table 2 ablation)";
        break;
    }
    i.where = "gpu";
    // The ablations are forward schedules: the backward is flash3's own.
    if (schedule_ == kernels::Flash3Schedule::Full) {
      i.passes = {Pass::Fwd, Pass::Bwd, Pass::FwdBwd};
    } else {
      i.passes = {Pass::Fwd};
    }
    i.dtypes = {DType::F16, DType::BF16};
    const bool ablation = schedule_ != kernels::Flash3Schedule::Full;
#define FLASH3_HEAD_DIM_ITEM(D) \
  if (!ablation || kernels::flash3_has_ablations(D)) i.head_dims.push_back(D);
    FLASH3_HEAD_DIMS(FLASH3_HEAD_DIM_ITEM)
#undef FLASH3_HEAD_DIM_ITEM
    i.masks = {"none", "causal", "padding"};
    i.dropout = false;
    i.gqa = true;
    i.mma = {"wgmma"};
    i.notes = ablation ? "Hopper (sm_90a) only; forward only (an ablation of the forward's schedule); no dropout"
                       : "Hopper (sm_90a) only; backward for d 64 and 128 (TMA producer warp, two wgmma consumer "
                         "warpgroups, dQ by fp32 atomics: not deterministic); no dropout, as FlashAttention-3";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    if (p.seqlen_q > (int64_t(1) << 30) || p.nk() > (int64_t(1) << 30))
      return Support::no("sequence lengths above 2^30 are not supported (32-bit TMA coordinates)");
    KernelTile t{};
    if (pass != Pass::Fwd) {
      if (Support s = flash3_choose_bwd_tile(p, dev, &t); !s) return s;
    }
    return flash3_choose_tile(p, dev, &t);
  }

 private:
  std::string name_;
  kernels::Flash3Schedule schedule_;
};

}  // namespace

std::unique_ptr<Method> make_flash3() { return std::make_unique<Flash3>("flash3", kernels::Flash3Schedule::Full); }
std::unique_ptr<Method> make_flash3_no_pingpong() {
  return std::make_unique<Flash3>("flash3_no_pingpong", kernels::Flash3Schedule::NoPingPong);
}
std::unique_ptr<Method> make_flash3_no_overlap() {
  return std::make_unique<Flash3>("flash3_no_overlap", kernels::Flash3Schedule::NoOverlap);
}
std::unique_ptr<Method> make_flash3_no_warpspec() {
  return std::make_unique<Flash3>("flash3_no_warpspec", kernels::Flash3Schedule::NoWarpSpecialisation);
}

}  // namespace flashio

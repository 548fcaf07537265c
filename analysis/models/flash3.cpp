// flash3 (FlashAttention-3, kernels/flash3/). Forward: flash2's forward schedule — Q once, the
// visible K/V tiles once per Q tile, O and L once — moved by TMA: the tile loads read whole
// tiles up to the tensor's end (a batch's padded keys are read and masked, where flash2's
// copies stop at the key length), O leaves in TMA stores clipped at Nq. The persistent grid
// changes when Q tiles run, not what each moves; its DRAM prediction is flash2's forward trace
// through the L2 simulation (Flash2Model::dram_trace): the dynamic scheduler hands out work items
// in flash2's grid order (a head's Q tiles consecutive), causal in flash3_fwd_plane_group's groups
// of planes (each plane's longest Q tile first within a group), one block per SM at this shared
// memory. The ablations (flash3_no_pingpong, flash3_no_overlap) move the same bytes.
//
// Backward (d 64, 128; kernels/flash3/flash3_bwd_kernel.cuh): flash2's wgmma backward schedule and
// bytes, so flash2_bwd_traffic with flash3's backward tile (Br 64, Bc 128, swizzle128): flash2's
// preprocess and dQ conversion; one block per (K/V tile, K/V head, batch) loading K_j, V_j once
// (every block, as flash2's: TMA boxes cut at the tensor's end, which flash2's copies are too),
// Q_i and dO_i per visited Q tile (TMA: rows past Nq zero-filled and counted here as not read; the
// forward's K/V boxes showed the crossbar counting such rows, which no committed backward point,
// all with Nq a multiple of Br, has tested), L_i and D_i one row
// per producer lane (32 rows per instruction, flash2's vector_load_rows), dQ_i's whole tile (rows
// past Nq too) by bulk reductions into a tile-ordered accumulator and flash3's conversion reading
// its row pairs (ModelTiles::dq_whole_tiles; records before it: red.global.add.v2.f32, "pairs"),
// dK and dV by TMA stores clipped at Nk (the bytes of flash2's 16-byte row stores).
#include "analysis/models/flash3.h"

#include <fmt/format.h>

#include "analysis/models/flash2.h"
#include "analysis/models/model_parts.h"
#include "analysis/schedule_sim.h"
#include "kernels/flash3/flash3_configs.h"

namespace flashio::analysis {

namespace {

// Blocks (or work items) dealt in groups of `group` planes, tile-major within a group
// (flash3_bwd_block; group 1: a plane's tiles consecutive).
Flash2Model::BlockOrder grouped_order(int64_t tiles, int64_t planes, int group) {
  return [=](int64_t blk) {
    const kernels::Flash3BwdBlock b = kernels::flash3_bwd_block(int(blk), int(tiles), int(planes), group);
    return std::pair<int64_t, int64_t>{b.tile, b.plane};
  };
}

class Flash3Model final : public Flash2Model {
 public:
  explicit Flash3Model(std::string method) : method_(std::move(method)) {}
  std::string method() const override { return method_; }
  Traffic sm_l2(const ModelPoint& m) const override {
    const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
    require_backward(m, bwd);
    Traffic out;
    if (fwd)
      out += flash2_fwd_traffic(m.problem, parts::need_tiles(m.fwd_tiles, m, "forward"), m.mask,
                                KvTileLoads::WholeTiles);
    if (bwd) out += flash2_bwd_traffic(m.problem, parts::need_tiles(m.bwd_tiles, m, "backward"), m.bwd_mask, m.dq());
    return out;
  }
  Traffic simulate_sm_l2(const ModelPoint& m) const override {
    const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
    require_backward(m, bwd);
    Traffic out;
    if (fwd) out += simulate_flash2_fwd(m.problem, m.fwd_tiles.value(), m.mask, KvTileLoads::WholeTiles);
    if (bwd) out += simulate_flash2_bwd(m.problem, m.bwd_tiles.value(), m.bwd_mask, m.dq());
    return out;
  }
  std::string asymptotic_formula(const ModelPoint& m) const override {
    if (m.pass == Pass::Fwd) return "N·d + N²·d/Br  (FA-3 forward: K,V read Tr times, TMA)";
    if (m.pass == Pass::Bwd) return "N·d + N²·d/Bc  (FA-3 backward: Q, dO read and dQ accumulated Tc times)";
    return IoModel::asymptotic_formula(m);
  }
  // Causal: flash3_bwd_block's order for the GPU's SMs (kernels/flash3/flash3_configs.h).
  BlockOrder bwd_block_order(const ModelPoint& m, const GpuLimits& gpu, int64_t tiles, int64_t planes) const override {
    if (!m.problem.causal) return Flash2Model::bwd_block_order(m, gpu, tiles, planes);
    return grouped_order(tiles, planes, kernels::flash3_bwd_plane_group(tiles, gpu.sm_count));
  }
  // Causal: flash3_fwd_plane_group's groups of planes, each plane's longest Q tile first.
  BlockOrder fwd_block_order(const ModelPoint& m, const GpuLimits& gpu, int64_t tiles, int64_t planes) const override {
    return grouped_order(tiles, planes, kernels::flash3_fwd_plane_group(tiles, gpu.sm_count, m.problem.causal));
  }
  PredictedTiles predict_tiles(const Problem& p, int64_t optin) const override {
    switch (p.head_dim) {
#define FLASH3_PREDICT_CASE(D) \
  case D:                      \
    return tiles<D>(optin, p);
      FLASH3_HEAD_DIMS(FLASH3_PREDICT_CASE)
#undef FLASH3_PREDICT_CASE
      default:
        return no_backward({});
    }
  }

 private:
  // The ablations are forward schedules; flash3's backward exists for FLASH3_BWD_HEAD_DIMS.
  void require_backward(const ModelPoint& m, bool bwd) const {
    parts::require(!bwd || method_ == "flash3", method_ + " has a forward kernel only");
    parts::require(!bwd || has_backward(m.problem.head_dim),
                   fmt::format("flash3 has no backward kernel for d={}", m.problem.head_dim));
  }
  static bool has_backward(int64_t head_dim) {
    switch (head_dim) {
#define FLASH3_HAS_BWD_CASE(D) \
  case D:                      \
    return true;
      FLASH3_BWD_HEAD_DIMS(FLASH3_HAS_BWD_CASE)
#undef FLASH3_HAS_BWD_CASE
      default:
        return false;
    }
  }
  static PredictedTiles no_backward(PredictedTiles t) {
    t.bwd_kernel = false;
    return t;
  }
  template <int D>
  PredictedTiles tiles(int64_t optin, const Problem& p) const {
    PredictedTiles out;
    if (const auto f = kernels::flash3_fwd_pick<D>(optin, p.nk(), p.causal)) {
      out.fwd = ModelTiles{*f};
      out.fwd_smem = kernels::flash3_fwd_smem_bytes(D, *f);
    }
    if (method_ != "flash3" || !has_backward(D)) return no_backward(out);
    out.bwd = ModelTiles{kernels::kFlash3BwdTile};
    out.bwd.smem_layout = SmemLayout::Swizzle128;
    out.bwd.dq_whole_tiles = true;  // flash3_dq_layout.h
    out.bwd_smem = kernels::flash3_bwd_smem_bytes(D, kernels::kFlash3BwdTile);
    return out;
  }
  std::string method_;
};

}  // namespace

std::unique_ptr<IoModel> make_flash3_model(std::string method) { return std::make_unique<Flash3Model>(std::move(method)); }

void register_flash3_model(ModelRegistry& r) { r.add(make_flash3_model("flash3")); }

}  // namespace flashio::analysis

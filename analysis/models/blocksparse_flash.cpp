// blocksparse_flash (Proposition 4, kernels/blocksparse/): flash2's schedule visiting only the
// non-zero tiles of its block masks — the pattern regenerated from the problem at each kernel's
// tile size (analysis/analyze.cpp), the closed forms and the simulator of flash2 run with those
// masks. Its kernels are flash2's first forward and backward tiles (blocksparse_dispatch.cu).
#include "analysis/models/flash2.h"
#include "analysis/models/model_parts.h"
#include "kernels/common/mma_bwd_configs.h"
#include "kernels/flash2/flash2_fwd_configs.h"

namespace flashio::analysis {

namespace {

class BlocksparseFlashModel final : public Flash2Model {
 public:
  std::string method() const override { return "blocksparse_flash"; }
  Traffic sm_l2(const ModelPoint& m) const override {
    parts::require(m.problem.sparse(), "blocksparse_flash: the problem has no block-sparse pattern");
    return Flash2Model::sm_l2(m);
  }
  std::string asymptotic_formula(const ModelPoint& m) const override { return IoModel::asymptotic_formula(m); }
  PredictedTiles predict_tiles(const Problem& p, int64_t optin) const override {
    switch (p.head_dim) {
      case 32:
        return first_tiles<32>(optin);
      case 64:
        return first_tiles<64>(optin);
      case 96:
        return first_tiles<96>(optin);
      case 128:
        return first_tiles<128>(optin);
      case 256:
        return first_tiles<256>(optin);
      default: {
        PredictedTiles none;
        none.bwd_kernel = false;
        return none;
      }
    }
  }

 private:
  // The one forward and backward tile the block-sparse kernels are compiled for (the lists' first).
  template <int D>
  static PredictedTiles first_tiles(int64_t optin) {
    PredictedTiles out;
    const TileShape f = kernels::Flash2FwdConfigs<D>::list[0];
    if (kernels::flash2_fwd_smem_bytes(D, f) <= optin) {
      out.fwd = ModelTiles{f};
      out.fwd_smem = kernels::flash2_fwd_smem_bytes(D, f);
    }
    const TileShape b = kernels::MmaBwdConfig<D>::kSpec;
    out.bwd = ModelTiles{b};
    out.bwd_smem = kernels::mma_bwd_smem_bytes(D, b);
    return out;
  }
};

}  // namespace

void register_blocksparse_flash_model(ModelRegistry& r) { r.add(std::make_unique<BlocksparseFlashModel>()); }

}  // namespace flashio::analysis

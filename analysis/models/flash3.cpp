// flash3 (FlashAttention-3's forward, kernels/flash3/): flash2's forward schedule — Q once, the
// visible K/V tiles once per Q tile, O and L once — moved by TMA: the tile loads read whole
// tiles up to the tensor's end (a batch's padded keys are read and masked, where flash2's
// copies stop at the key length), O leaves in TMA stores clipped at Nq. The persistent grid
// changes when Q tiles run, not what each moves; its DRAM prediction is flash2's forward trace
// through the L2 simulation (Flash2Model::dram_trace): the dynamic scheduler hands out work items
// in flash2's grid order (a head's Q tiles consecutive, causal longest first), one block per SM at
// this shared memory. No backward kernel. The ablations (flash3_no_pingpong, flash3_no_overlap)
// move the same bytes.
#include "analysis/models/flash3.h"

#include <fmt/format.h>

#include "analysis/models/flash2.h"
#include "analysis/models/model_parts.h"
#include "analysis/schedule_sim.h"
#include "kernels/flash3/flash3_configs.h"

namespace flashio::analysis {

namespace {

class Flash3Model final : public Flash2Model {
 public:
  explicit Flash3Model(std::string method) : method_(std::move(method)) {}
  std::string method() const override { return method_; }
  Traffic sm_l2(const ModelPoint& m) const override {
    parts::require(m.pass == Pass::Fwd, "flash3 has a forward kernel only");
    return flash2_fwd_traffic(m.problem, parts::need_tiles(m.fwd_tiles, m, "forward"), m.mask,
                              KvTileLoads::CutAtTensorEnd);
  }
  Traffic simulate_sm_l2(const ModelPoint& m) const override {
    parts::require(m.pass == Pass::Fwd, "flash3 has a forward kernel only");
    return simulate_flash2_fwd(m.problem, m.fwd_tiles.value(), m.mask, KvTileLoads::CutAtTensorEnd);
  }
  std::string asymptotic_formula(const ModelPoint& m) const override {
    if (m.pass == Pass::Fwd) return "N·d + N²·d/Br  (FA-3 forward: K,V read Tr times, TMA)";
    return IoModel::asymptotic_formula(m);
  }
  PredictedTiles predict_tiles(int64_t head_dim, int64_t optin) const override {
    switch (head_dim) {
#define FLASH3_PREDICT_CASE(D) \
  case D:                      \
    return tiles<D>(optin);
      FLASH3_HEAD_DIMS(FLASH3_PREDICT_CASE)
#undef FLASH3_PREDICT_CASE
      default:
        return no_backward({});
    }
  }

 private:
  static PredictedTiles no_backward(PredictedTiles t) {
    t.bwd_kernel = false;
    return t;
  }
  template <int D>
  static PredictedTiles tiles(int64_t optin) {
    PredictedTiles out;
    if (const auto f = kernels::flash3_fwd_pick<D>(optin)) {
      out.fwd = ModelTiles{*f};
      out.fwd_smem = kernels::flash3_fwd_smem_bytes(D, *f);
    }
    return no_backward(out);
  }
  std::string method_;
};

}  // namespace

std::unique_ptr<IoModel> make_flash3_model(std::string method) { return std::make_unique<Flash3Model>(std::move(method)); }

void register_flash3_model(ModelRegistry& r) { r.add(make_flash3_model("flash3")); }

}  // namespace flashio::analysis

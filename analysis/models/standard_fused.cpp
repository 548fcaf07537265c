// standard_fused (baselines/standard/standard_fused_method.cpp): standard attention with mask +
// softmax + dropout fused into one pass (P and P_drop written) and the dropout redrawn inside
// the softmax backward. The standard model (analysis/models/standard.cpp) with its elementwise
// passes fixed to the fused ones.
#include "analysis/models/standard.h"

namespace flashio::analysis {

namespace {

class StandardFusedModel final : public StandardModel {
 public:
  std::string method() const override { return "standard_fused"; }
  Reading read_record(const nlohmann::json&, const nlohmann::json&, ModelPoint& m) const override {
    m.elementwise = Elementwise::Fused;
    return {};
  }
  std::string matched_as(const nlohmann::json&, const nlohmann::json&) const override { return {}; }
  std::string label_note(const nlohmann::json&, const nlohmann::json&) const override { return {}; }
  bool speedup_baseline() const override { return false; }

 protected:
  Elementwise elementwise(const ModelPoint&) const override { return Elementwise::Fused; }
};

}  // namespace

void register_standard_fused_model(ModelRegistry& r) { r.add(std::make_unique<StandardFusedModel>()); }

}  // namespace flashio::analysis

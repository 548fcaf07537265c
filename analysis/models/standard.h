// The materialized methods' model (analysis/models/standard.cpp), declared for standard_fused,
// which differs from standard in its elementwise passes only (io_model.h, Elementwise).
#pragma once
#include "analysis/models/model.h"

namespace flashio::analysis {

// `standard`: the elementwise steps as separate kernels, or — records without
// tiles.elementwise — the fused code that flashio's `standard` was before the split.
class StandardModel : public IoModel {
 public:
  std::string method() const override { return "standard"; }
  bool exact() const override { return false; }
  std::string unjudged_note() const override { return "standard: compulsory matrices only, not judged"; }
  Reading read_record(const nlohmann::json& rec, const nlohmann::json& file, ModelPoint& m) const override;
  std::string matched_as(const nlohmann::json& rec, const nlohmann::json& file) const override;
  std::string label_note(const nlohmann::json& rec, const nlohmann::json& file) const override;
  bool speedup_baseline() const override { return true; }
  Traffic sm_l2(const ModelPoint& m) const override;
  Traffic compulsory_dram(const ModelPoint& m) const override;
  int64_t dram_beyond_compulsory(const ModelPoint& m, const DramContext& c, DramPrediction& out) const override;
  bool dram_residency() const override { return false; }
  double asymptotic_form(const ModelPoint& m) const override;
  std::string asymptotic_formula(const ModelPoint& m) const override;

 protected:
  // The elementwise kernels the point ran.
  virtual Elementwise elementwise(const ModelPoint& m) const { return m.elementwise; }
};

}  // namespace flashio::analysis

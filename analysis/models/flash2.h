// The flash2 model (analysis/models/flash2.cpp), declared for the methods that run its schedule
// (blocksparse_flash: the same kernels visiting only the non-zero tiles).
#pragma once
#include <functional>
#include <utility>

#include "analysis/models/model.h"

namespace flashio::analysis {

class Flash2Model : public IoModel {
 public:
  std::string method() const override { return "flash2"; }
  bool exact() const override { return true; }
  Traffic sm_l2(const ModelPoint& m) const override;
  Traffic simulate_sm_l2(const ModelPoint& m) const override;
  Traffic compulsory_dram(const ModelPoint& m) const override;
  int64_t dram_beyond_compulsory(const ModelPoint& m, const DramContext& c, DramPrediction& out) const override;
  std::optional<SimTrace> dram_trace(const ModelPoint& m, const DramContext& c, int coarse) const override;
  std::string asymptotic_formula(const ModelPoint& m) const override;
  PredictedTiles predict_tiles(const Problem& p, int64_t smem_optin) const override;

  // The backward's blocks in launch order: block blk → (K/V tile, plane = batch·Hkv + K/V head).
  // flash2's grid order, tiles fastest; flash3 deals causal blocks in its own order.
  using BlockOrder = std::function<std::pair<int64_t, int64_t>(int64_t blk)>;
  virtual BlockOrder bwd_block_order(const ModelPoint& m, const GpuLimits& gpu, int64_t tiles, int64_t planes) const;
  // The forward's blocks (or work items) in launch order: block → (x, plane), x the Q tile's rank
  // within its (batch, head) plane (causal: 0 the last, longest Q tile). Default: a plane's tiles
  // consecutive.
  virtual BlockOrder fwd_block_order(const ModelPoint& m, const GpuLimits& gpu, int64_t tiles, int64_t planes) const;
};

}  // namespace flashio::analysis

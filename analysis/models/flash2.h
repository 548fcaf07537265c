// The flash2 model (analysis/models/flash2.cpp), declared for the methods that run its schedule
// (blocksparse_flash: the same kernels visiting only the non-zero tiles).
#pragma once
#include <functional>
#include <utility>

#include "analysis/models/model.h"

namespace flashio::analysis {

// How an SM shares its issue slots between co-resident forward blocks (issue 19; SimKernel::younger_rate).
// Measured for one kernel: the mma.sync forward with 128 × 64 tiles at d 128, no mask, no dropout
// (flash2_fwd_kernel<Flash2FwdTraits<T, 128, 128, 64, 4, 2>, false, false, false, false>, 255 registers,
// 8 B of local memory, two blocks per SM), fp16 and bf16. Its start/end timelines (stamps outside its loop:
// its DRAM bytes those of the committed kernel within 1-3 % on the H200, 0.3-4.2 % on the H100) show, on
// every SM, the block dealt first ending first and the other taking 1.123x its time (the SMs' spread
// 1.118-1.128): fp16 on an H200 (results/crosscheck/issue19-kernel-timelines/f2se-*), fp16 and bf16 on an
// H100 (…/observer-bf16/h100/).
// With the younger block at 1/(1 + δ) of the older's rate until the older ends (then a new block is the
// younger), that ratio is 1 + δ/(1 + δ): δ = 0.140, the same to ±0.001 in every run
// (tests/test_l2_sim.cpp, KernelTimeline.TheYoungerBlocksSlowdownIsTheMeasuredOne, derives it from the
// files). Every other kernel (not measured): its blocks in lock-step.
inline constexpr double kFlash2MmaSync128x64D128YoungerSlowdown = 0.140;

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

// The `flash3` method's launch side: its Plan (workspace: the tile scheduler's two counters; for
// the backward, D and the fp32 dQ accumulator; the tensor maps of the buffers it last ran on) and
// the launches. The description and tile choice are in flash3_method.cpp.
#include <memory>
#include <optional>
#include <stdexcept>

#include "bench/cuda/device_memory.h"
#include "kernels/common/problem_params.h"
#include "kernels/common/record_tiles.h"
#include "kernels/flash2/flash2_call_params.h"
#include "kernels/flash3/flash3_dq_layout.h"
#include "kernels/flash3/flash3_method.h"

namespace flashio {
namespace {

using kernels::KernelTile;

class Flash3Plan final : public Plan {
 public:
  Flash3Plan(const Problem& p, KernelTile tile, std::optional<KernelTile> bwd_tile, kernels::Flash3Schedule schedule,
             int sm_count, DeviceAllocator& alloc)
      : p_(p),
        tile_(tile),
        bwd_tile_(bwd_tile),
        schedule_(schedule),
        sm_count_(sm_count),
        scheduler_(alloc, kernels::kFlash3ScheduleInts * sizeof(int)) {
    kernels::flash3_schedule_init(scheduler_.as<int>(), nullptr);
    if (bwd_tile_) {  // D (flash2's preprocess) and the fp32 dQ accumulator's tiles (flash3_dq_layout.h)
      d_sum_ = DeviceBuffer(alloc, size_t(p.batch * p.heads * p.seqlen_q) * sizeof(float));
      dq_accum_ = DeviceBuffer(
          alloc, size_t(kernels::flash3_dq_accum_floats(p.batch, p.heads, p.seqlen_q, p.head_dim)) * sizeof(float));
    }
  }
  Tiles tiles() const override { return kernels::record_tiles(tile_); }
  std::optional<Tiles> backward_tiles() const override {
    if (!bwd_tile_) return std::nullopt;
    Tiles out = kernels::record_tiles(*bwd_tile_);
    out.dq_adds = "tiles";  // bulk reductions of whole 64-row dQ tiles (flash3_dq_layout.h)
    return out;
  }
  bool writes_lse() const override { return true; }
  void backward(const AttentionBuffers& buf, cudaStream_t stream) override {
    if (!bwd_tile_) throw std::logic_error("flash3: a plan made for the forward pass has no backward tile");
    const kernels::BwdParams k = flash2_bwd_params(p_, buf, d_sum_.as<float>(), dq_accum_.as<float>());
    kernels::flash3_bwd(k, *bwd_tile_, p_.dtype == DType::BF16, sm_count_, bwd_maps_, stream);
  }
  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    kernels::FwdParams k{};
    fill_problem_params(p_, k);
    k.q = buf.q;
    k.k = buf.k;
    k.v = buf.v;
    k.o = buf.o;
    k.lse = buf.lse;
    k.key_lengths = buf.key_lengths;
    kernels::flash3_fwd(k, tile_, schedule_, p_.dtype == DType::BF16, sm_count_, scheduler_.as<int>(), maps_, stream);
  }

 private:
  Problem p_;
  KernelTile tile_;
  std::optional<KernelTile> bwd_tile_;  // none for a forward-only plan
  kernels::Flash3Schedule schedule_;
  int sm_count_;
  DeviceBuffer scheduler_;  // the tile scheduler's counters (flash3_params.h)
  DeviceBuffer d_sum_, dq_accum_;
  kernels::Flash3MapCache maps_;
  kernels::Flash3BwdMapCache bwd_maps_;
};

std::unique_ptr<Plan> plan_flash3_schedule(const Problem& p, Pass pass, const DeviceInfo& dev, DeviceAllocator& alloc,
                                           kernels::Flash3Schedule schedule) {
  KernelTile t{};
  flash3_choose_tile(p, dev, &t);
  if (schedule == kernels::Flash3Schedule::NoWarpSpecialisation) t.warps -= 4;  // no producer warpgroup
  std::optional<KernelTile> bwd;
  if (KernelTile b{}; pass != Pass::Fwd && flash3_choose_bwd_tile(p, dev, &b)) bwd = b;
  return std::make_unique<Flash3Plan>(p, t, bwd, schedule, dev.sm_count, alloc);
}

}  // namespace

std::unique_ptr<Plan> plan_flash3(const Problem& p, Pass pass, const DeviceInfo& dev, DeviceAllocator& alloc) {
  return plan_flash3_schedule(p, pass, dev, alloc, kernels::Flash3Schedule::Full);
}
std::unique_ptr<Plan> plan_flash3_no_pingpong(const Problem& p, Pass, const DeviceInfo& dev, DeviceAllocator& alloc) {
  return plan_flash3_schedule(p, Pass::Fwd, dev, alloc, kernels::Flash3Schedule::NoPingPong);
}
std::unique_ptr<Plan> plan_flash3_no_overlap(const Problem& p, Pass, const DeviceInfo& dev, DeviceAllocator& alloc) {
  return plan_flash3_schedule(p, Pass::Fwd, dev, alloc, kernels::Flash3Schedule::NoOverlap);
}
std::unique_ptr<Plan> plan_flash3_no_warpspec(const Problem& p, Pass, const DeviceInfo& dev, DeviceAllocator& alloc) {
  return plan_flash3_schedule(p, Pass::Fwd, dev, alloc, kernels::Flash3Schedule::NoWarpSpecialisation);
}

}  // namespace flashio

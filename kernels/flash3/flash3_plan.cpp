// The `flash3` method's launch side: its Plan (workspace: the tile scheduler's two counters; the
// tensor maps of the buffers it last ran on) and the launch. The description and tile choice are in flash3_method.cpp.
#include <memory>

#include "bench/cuda/device_memory.h"
#include "kernels/common/problem_params.h"
#include "kernels/flash3/flash3_method.h"

namespace flashio {
namespace {

using kernels::KernelTile;

class Flash3Plan final : public Plan {
 public:
  Flash3Plan(const Problem& p, KernelTile tile, kernels::Flash3Schedule schedule, int sm_count, DeviceAllocator& alloc)
      : p_(p),
        tile_(tile),
        schedule_(schedule),
        sm_count_(sm_count),
        scheduler_(alloc, kernels::kFlash3ScheduleInts * sizeof(int)) {
    kernels::flash3_schedule_init(scheduler_.as<int>(), nullptr);
  }
  Tiles tiles() const override {
    return {tile_.block_r, tile_.block_c, tile_.warps, tile_.stages, tile_.smem_bytes, 0, "wgmma", "swizzle128"};
  }
  bool writes_lse() const override { return true; }
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
  kernels::Flash3Schedule schedule_;
  int sm_count_;
  DeviceBuffer scheduler_;  // the tile scheduler's counters (flash3_params.h)
  kernels::Flash3MapCache maps_;
};

std::unique_ptr<Plan> plan_flash3_schedule(const Problem& p, const DeviceInfo& dev, DeviceAllocator& alloc,
                                           kernels::Flash3Schedule schedule) {
  KernelTile t{};
  flash3_choose_tile(p, dev, &t);
  return std::make_unique<Flash3Plan>(p, t, schedule, dev.sm_count, alloc);
}

}  // namespace

std::unique_ptr<Plan> plan_flash3(const Problem& p, Pass, const DeviceInfo& dev, DeviceAllocator& alloc) {
  return plan_flash3_schedule(p, dev, alloc, kernels::Flash3Schedule::Full);
}
std::unique_ptr<Plan> plan_flash3_no_pingpong(const Problem& p, Pass, const DeviceInfo& dev, DeviceAllocator& alloc) {
  return plan_flash3_schedule(p, dev, alloc, kernels::Flash3Schedule::NoPingPong);
}
std::unique_ptr<Plan> plan_flash3_no_overlap(const Problem& p, Pass, const DeviceInfo& dev, DeviceAllocator& alloc) {
  return plan_flash3_schedule(p, dev, alloc, kernels::Flash3Schedule::NoOverlap);
}

}  // namespace flashio

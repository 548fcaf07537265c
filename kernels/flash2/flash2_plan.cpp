// The `flash2` method's launch side: its Plan (workspace: D and the fp32 dQ accumulator, the
// deterministic mode's semaphores) and the launches of the mma.sync and wgmma kernels. The
// method's description and tile choice are in flash2_method.cpp (plain C++).
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "bench/cuda/device_memory.h"
#include "kernels/common/record_tiles.h"
#include "kernels/flash2/flash2_call_params.h"
#include "kernels/flash2/flash2_method.h"

namespace flashio {
namespace {

using kernels::KernelTile;

class Flash2Plan final : public Plan {
 public:
  Flash2Plan(const Problem& p, Pass pass, KernelTile tile, std::optional<KernelTile> bwd_tile, DeviceAllocator& alloc)
      : p_(p), tile_(tile), bwd_tile_(bwd_tile) {
    if (pass != Pass::Fwd) {  // D and the fp32 dQ accumulator
      d_sum_ = DeviceBuffer(alloc, size_t(p.batch * p.heads * p.seqlen_q) * sizeof(float));
      dq_accum_ = DeviceBuffer(alloc, size_t(p.q_elements()) * sizeof(float));
      if (p.deterministic && bwd_tile_)  // a semaphore per Q tile
        dq_semaphore_ = DeviceBuffer(
            alloc,
            size_t(p.batch * p.heads * ((p.seqlen_q + bwd_tile_->block_r - 1) / bwd_tile_->block_r)) * sizeof(int));
    }
  }
  Tiles tiles() const override { return kernels::record_tiles(tile_); }
  std::optional<Tiles> backward_tiles() const override {
    if (!bwd_tile_) return std::nullopt;
    Tiles out = kernels::record_tiles(*bwd_tile_);
    out.dq_adds = "pairs";  // atomic_add2 (both kernels), ld/st.cg float2 (deterministic)
    return out;
  }
  bool writes_lse() const override { return true; }

  void backward(const AttentionBuffers& buf, cudaStream_t stream) override {
    const kernels::BwdParams k =
        flash2_bwd_params(p_, buf, d_sum_.as<float>(), dq_accum_.as<float>(), dq_semaphore_.as<int>());
    if (!bwd_tile_) throw std::logic_error("flash2: a plan made for the forward pass has no backward tile");
    if (bwd_tile_->wgmma) {
      kernels::flash2_bwd_wgmma(k, p_.dtype == DType::BF16, stream);
    } else {
      kernels::flash2_bwd(k, *bwd_tile_, p_.dtype == DType::BF16, stream);
    }
  }
  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    const kernels::FwdParams k = flash2_fwd_params(p_, buf);
    if (tile_.wgmma) {
      kernels::flash2_fwd_wgmma(k, tile_, p_.dtype == DType::BF16, stream);
    } else {
      kernels::flash2_fwd(k, tile_, p_.dtype == DType::BF16, stream);
    }
  }

 private:
  Problem p_;
  KernelTile tile_;
  std::optional<KernelTile> bwd_tile_;  // none for a forward-only plan
  DeviceBuffer d_sum_, dq_accum_, dq_semaphore_;
};

}  // namespace

std::unique_ptr<Plan> plan_flash2(const Problem& p, Pass pass, const DeviceInfo& dev, DeviceAllocator& alloc) {
  KernelTile t{};
  flash2_choose_tile(p, dev, &t);
  std::optional<KernelTile> bwd;
  std::string why;
  if (KernelTile b{}; pass != Pass::Fwd && flash2_choose_bwd_tile(p, dev, &b, &why)) bwd = b;
  return std::make_unique<Flash2Plan>(p, pass, t, bwd, alloc);
}

}  // namespace flashio

// The `flash1` method's launch side: its Plan (the split count from the kernels' occupancy, the
// O/ℓ/m and dQ workspaces) and the launches. Description and tile choice: flash1_method.cpp.
#include <algorithm>
#include <memory>

#include "bench/cuda/device_memory.h"
#include "kernels/common/problem_params.h"
#include "kernels/common/record_tiles.h"
#include "kernels/flash1/flash1_method.h"

namespace flashio {
namespace {

using kernels::KernelTile;

// Thread blocks per head so that B·H·splits fill one wave of the GPU (at most `tiles`).
int one_wave_splits(const Problem& p, const DeviceInfo& dev, int blocks_per_sm, int64_t tiles) {
  const int64_t heads = p.batch * p.heads;
  const int64_t wave = int64_t(dev.sm_count) * std::max(blocks_per_sm, 1);
  return int(std::clamp<int64_t>(wave / heads, 1, std::max<int64_t>(tiles, 1)));
}

class Flash1Plan final : public Plan {
 public:
  Flash1Plan(const Problem& p, Pass pass, KernelTile tile, const DeviceInfo& dev, DeviceAllocator& alloc)
      : p_(p), tile_(tile) {
    kernels::Flash1FwdParams f{};
    fill_problem_params(p_, f.base);
    const bool bf16 = p.dtype == DType::BF16;
    fwd_splits_ = one_wave_splits(p, dev, kernels::flash1_fwd_blocks_per_sm(f, tile_, bf16),
                                  (p.seqlen_q + tile_.block_r - 1) / tile_.block_r);
    if (pass != Pass::Fwd) {
      kernels::Flash1BwdParams b{};
      fill_problem_params(p_, b.base);
      kernels::KernelTile bt{};
      kernels::flash1_bwd_tile(int(p.head_dim), &bt);
      // Deterministic: one block per head adds dQ without atomics, in K/V-tile order.
      bwd_splits_ = p.deterministic ? 1
                                    : one_wave_splits(p, dev, kernels::flash1_bwd_blocks_per_sm(b, bf16),
                                                      (p.nk() + bt.block_c - 1) / bt.block_c);
    }
    const size_t rows = size_t(p.batch * p.heads * p.seqlen_q);
    o_accum_ = DeviceBuffer(alloc, size_t(p.q_elements()) * sizeof(float));  // O, ℓ, m in HBM (Algorithm 1)
    row_max_ = DeviceBuffer(alloc, rows * sizeof(float));
    row_sum_ = DeviceBuffer(alloc, rows * sizeof(float));
    if (pass != Pass::Fwd) dq_accum_ = DeviceBuffer(alloc, size_t(p.q_elements()) * sizeof(float));
  }
  Tiles tiles() const override { return kernels::record_tiles(tile_, fwd_splits_); }
  std::optional<Tiles> backward_tiles() const override {
    kernels::KernelTile t{};
    if (!kernels::flash1_bwd_tile(int(p_.head_dim), &t)) return std::nullopt;
    Tiles out = kernels::record_tiles(t, bwd_splits_);
    out.dq_adds = "pairs";  // float2 read-modify-write (S = 1), atomic_add2 (S > 1)
    return out;
  }
  bool writes_lse() const override { return true; }

  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    kernels::Flash1FwdParams k{};
    k.base.q = buf.q;
    k.base.k = buf.k;
    k.base.v = buf.v;
    k.base.o = buf.o;
    k.base.lse = buf.lse;
    k.base.key_lengths = buf.key_lengths;
    fill_problem_params(p_, k.base);
    k.o_accum = o_accum_.as<float>();
    k.row_max = row_max_.as<float>();
    k.row_sum = row_sum_.as<float>();
    k.splits = fwd_splits_;
    kernels::flash1_fwd(k, tile_, p_.dtype == DType::BF16, stream);
  }

  void backward(const AttentionBuffers& buf, cudaStream_t stream) override {
    kernels::Flash1BwdParams k{};
    k.base.q = buf.q;
    k.base.k = buf.k;
    k.base.v = buf.v;
    k.base.o = buf.o;
    k.base.d_o = buf.d_o;
    k.base.lse = buf.lse;
    k.base.dq_accum = dq_accum_.as<float>();
    k.base.dq = buf.dq;
    k.base.dk = buf.dk;
    k.base.dv = buf.dv;
    k.base.key_lengths = buf.key_lengths;
    fill_problem_params(p_, k.base);
    k.base.scale = float(p_.scale());
    k.row_max = row_max_.as<float>();
    k.row_sum = row_sum_.as<float>();
    k.splits = bwd_splits_;
    kernels::flash1_bwd(k, p_.dtype == DType::BF16, stream);
  }

 private:
  Problem p_;
  KernelTile tile_;
  int fwd_splits_ = 1, bwd_splits_ = 1;
  DeviceBuffer o_accum_, row_max_, row_sum_, dq_accum_;
};

}  // namespace

std::unique_ptr<Plan> plan_flash1(const Problem& p, Pass pass, const DeviceInfo& dev, DeviceAllocator& alloc) {
  KernelTile t{};
  flash1_choose_tile(p, dev, &t);
  return std::make_unique<Flash1Plan>(p, pass, t, dev, alloc);
}

}  // namespace flashio

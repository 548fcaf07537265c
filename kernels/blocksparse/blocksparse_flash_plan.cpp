// The `blocksparse_flash` method's launch side: the mask's tile lists copied to the device, the
// backward's workspace, and the kSparse launches. Description: blocksparse_flash_method.cpp.
#include <cuda_runtime.h>

#include <memory>
#include <optional>
#include <vector>

#include "bench/core/method.h"
#include "bench/core/sparsity.h"
#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_memory.h"
#include "kernels/blocksparse/blocksparse_params.h"
#include "kernels/common/record_tiles.h"
#include "kernels/flash2/flash2_call_params.h"

namespace flashio {
namespace {

using kernels::KernelTile;

// Device copy of a BlockLists (ptr then idx, one buffer).
struct DeviceLists {
  DeviceBuffer buf;
  const int* ptr = nullptr;
  const int* idx = nullptr;

  DeviceLists() = default;
  DeviceLists(const BlockLists& l, DeviceAllocator& alloc) {
    std::vector<int32_t> flat(l.ptr);
    flat.insert(flat.end(), l.idx.begin(), l.idx.end());
    buf = DeviceBuffer(alloc, flat.size() * sizeof(int32_t));
    FLASHIO_CUDA_CHECK(cudaMemcpy(buf.get(), flat.data(), flat.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    ptr = buf.as<int>();
    idx = ptr + l.ptr.size();
  }
};

class BlocksparseFlashPlan final : public Plan {
 public:
  BlocksparseFlashPlan(const Problem& p, Pass pass, KernelTile fwd, KernelTile bwd, DeviceAllocator& alloc)
      : p_(p), tile_(fwd) {
    const BlockMask mask = make_block_mask(p);
    fwd_lists_ = DeviceLists(by_rows(tile_mask(mask, p.seqlen_q, p.nk(), fwd.block_r, fwd.block_c)), alloc);
    if (pass != Pass::Fwd) {
      bwd_tile_ = bwd;
      bwd_lists_ = DeviceLists(by_cols(tile_mask(mask, p.seqlen_q, p.nk(), bwd.block_r, bwd.block_c)), alloc);
      d_sum_ = DeviceBuffer(alloc, size_t(p.batch * p.heads * p.seqlen_q) * sizeof(float));
      dq_accum_ = DeviceBuffer(alloc, size_t(p.q_elements()) * sizeof(float));
    }
  }
  Tiles tiles() const override { return kernels::record_tiles(tile_); }
  // flash2's mma.sync backward kernel over the column lists: its one compiled tile, dQ added in
  // pairs (atomic_add2) as flash2's.
  std::optional<Tiles> backward_tiles() const override {
    if (!bwd_tile_) return std::nullopt;
    Tiles out = kernels::record_tiles(*bwd_tile_);
    out.dq_adds = "pairs";
    return out;
  }
  bool writes_lse() const override { return true; }

  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    kernels::FwdParams k = flash2_fwd_params(p_, buf);
    k.sparse_ptr = fwd_lists_.ptr;
    k.sparse_idx = fwd_lists_.idx;
    kernels::blocksparse_flash_fwd(k, tile_, p_.dtype == DType::BF16, stream);
  }
  void backward(const AttentionBuffers& buf, cudaStream_t stream) override {
    kernels::BwdParams k = flash2_bwd_params(p_, buf, d_sum_.as<float>(), dq_accum_.as<float>());
    k.sparse_ptr = bwd_lists_.ptr;
    k.sparse_idx = bwd_lists_.idx;
    kernels::blocksparse_flash_bwd(k, p_.dtype == DType::BF16, stream);
  }

 private:
  Problem p_;
  KernelTile tile_;
  std::optional<KernelTile> bwd_tile_;  // a plan for a backward pass
  DeviceLists fwd_lists_, bwd_lists_;
  DeviceBuffer d_sum_, dq_accum_;
};

}  // namespace

std::unique_ptr<Plan> plan_blocksparse_flash(const Problem& p, Pass pass, const DeviceInfo&, DeviceAllocator& alloc) {
  KernelTile fwd{}, bwd{};
  kernels::blocksparse_fwd_tile(int(p.head_dim), &fwd);
  kernels::flash2_bwd_tile(int(p.head_dim), &bwd);
  return std::make_unique<BlocksparseFlashPlan>(p, pass, fwd, bwd, alloc);
}

}  // namespace flashio

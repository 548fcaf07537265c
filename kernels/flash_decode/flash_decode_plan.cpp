// The `flash_decode` method's launch side: its Plan (workspace: the splits' fp32 O and L and their
// counters) and the launch. The description and split choice are in flash_decode_method.cpp.
#include <memory>

#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_memory.h"
#include "kernels/flash_decode/flash_decode_method.h"
#include "kernels/flash_decode/flash_decode_params.h"

namespace flashio {
namespace {

class FlashDecodePlan final : public Plan {
 public:
  FlashDecodePlan(const Problem& p, kernels::DecodeSplit split, DeviceAllocator& alloc) : p_(p), split_(split) {
    if (split_.splits > 1) {
      const size_t rows = size_t(p.batch * p.heads * p.seqlen_q) * size_t(split_.splits);
      o_partial_ = DeviceBuffer(alloc, rows * size_t(p.head_dim) * sizeof(float));
      lse_partial_ = DeviceBuffer(alloc, rows * sizeof(float));
      const size_t counters = size_t(p.batch * p.kvh()) * size_t(split_.row_tiles);
      splits_done_ = DeviceBuffer(alloc, counters * sizeof(int));
      FLASHIO_CUDA_CHECK(cudaMemset(splits_done_.get(), 0, counters * sizeof(int)));
    }
  }
  Tiles tiles() const override {
    Tiles t;
    t.block_r = kernels::kDecodeBlockM;
    t.block_c = kernels::kDecodeBlockN;
    t.warps = kernels::kDecodeWarps;
    t.stages = kernels::flash_decode_stages(int(p_.head_dim));
    t.smem_bytes = kernels::flash_decode_smem_bytes(int(p_.head_dim));
    t.splits = split_.splits;
    t.mma = "mma.sync";
    t.smem_layout = "padded";
    return t;
  }
  bool writes_lse() const override { return true; }
  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    constexpr double kLog2e = 1.4426950408889634;
    kernels::DecodeParams k{};
    k.q = buf.q;
    k.k = buf.k;
    k.v = buf.v;
    k.block_table = p_.paged() ? buf.block_table : nullptr;
    k.cu_seqlens = p_.packed() ? buf.cu_seqlens : nullptr;  // a varlen decode (supports() admits no other)
    k.total_tokens = p_.packed_kv() ? p_.total_tokens() : 0;
    k.o = buf.o;
    k.lse = buf.lse;
    k.key_lengths = buf.key_lengths;
    k.o_partial = o_partial_.as<float>();
    k.lse_partial = lse_partial_.as<float>();
    k.splits_done = splits_done_.as<int>();
    k.batch = int(p_.batch);
    k.heads = int(p_.heads);
    k.kv_heads = int(p_.kvh());
    k.seqlen_q = int(p_.seqlen_q);
    k.seqlen_k = int(p_.nk());
    k.head_dim = int(p_.head_dim);
    k.page = p_.paged() ? p_.kv_page : int(p_.nk());  // paged varlen: the table's rows are ⌈Nk/P⌉ long too
    k.pages_per_seq = p_.paged() ? int((p_.nk() + p_.kv_page - 1) / p_.kv_page) : 1;
    k.row_tiles = split_.row_tiles;
    k.splits = split_.splits;
    k.tiles_per_split = split_.tiles_per_split;
    k.scale_log2 = float(p_.scale() * kLog2e);
    k.causal = p_.causal;
    kernels::flash_decode_fwd(k, p_.dtype == DType::BF16, stream);
  }

 private:
  Problem p_;
  kernels::DecodeSplit split_;
  DeviceBuffer o_partial_, lse_partial_, splits_done_;
};

}  // namespace

std::unique_ptr<Plan> plan_flash_decode(const Problem& p, Pass, const DeviceInfo& dev, DeviceAllocator& alloc) {
  return std::make_unique<FlashDecodePlan>(p, flash_decode_choose_split(p, dev), alloc);
}

}  // namespace flashio

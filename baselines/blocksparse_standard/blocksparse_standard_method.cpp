// The `blocksparse_standard` method's description: materialized block-sparse attention (the
// FlashAttention paper's §3.3 baseline); its plan and kernels are blocksparse_standard_plan.cpp
// and blocksparse_standard_kernels.cu, whose header describes the algorithm and its traffic.
#include <memory>

#include <fmt/format.h>

#include "bench/core/method.h"
#include "bench/core/sparsity.h"

namespace flashio {
namespace {

class BlocksparseStandard final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i;
    i.name = "blocksparse_standard";
    i.summary =
        "materialized block-sparse attention (FlashAttention §3.3 baseline): S, P only on non-zero blocks, in HBM";
    i.where = "gpu";
    i.passes = {Pass::Fwd, Pass::Bwd, Pass::FwdBwd};
    i.dtypes = {DType::F16, DType::BF16};
    i.head_dims = {};
    i.masks = {"blocksparse", "causal", "padding"};
    i.dropout = true;
    i.gqa = true;
    i.deterministic = true;  // no atomics: cuBLAS batched GEMMs and row-wise kernels
    i.cublas = true;
    i.notes = "needs --pattern; any pattern block size; cuBLAS batched GEMMs on the non-zero blocks, S/P/dP/dS in HBM";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (!p.sparse())
      return Support::no("blocksparse_standard needs a block-sparse pattern (--pattern); dense is standard");
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    if (auto why = pattern_invalid_reason(p)) return Support::no(*why);
    if (p.head_dim % 8 != 0) return Support::no(fmt::format("head dim must be a multiple of 8 (got {})", p.head_dim));
    if (p.seqlen_q > (int64_t(1) << 30) || p.nk() > (int64_t(1) << 30))
      return Support::no("sequence lengths above 2^30 are not supported");
    return Support::yes();
  }
};

}  // namespace

std::unique_ptr<Method> make_blocksparse_standard() { return std::make_unique<BlocksparseStandard>(); }

}  // namespace flashio

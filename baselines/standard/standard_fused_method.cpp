// The `standard_fused` method: materialized attention (FlashAttention Algorithms 0 and 3, S and
// P in HBM, cuBLAS GEMMs) with the elementwise steps fused — a stronger baseline than the
// paper's PyTorch one (`standard`), for comparison:
// Forward:
//   S = scale·Q·Kᵀ                          cuBLAS, S to HBM
//   P = softmax(mask(S)), P_drop = P∘Z      one row kernel: reads S, writes P and, with dropout,
//                                           P_drop over S (baselines/standard/standard_softmax.cu)
//   O = P_drop·V                            cuBLAS
// Backward (from P and P_drop; no mask is stored: Z is redrawn from Philox):
//   dV = P_dropᵀ·dO, dP_drop = dO·Vᵀ        cuBLAS
//   dS = P∘(dP_drop∘Z − D)                  one row kernel: reads P, dP_drop, writes dS over dP_drop
//                                           (standard_softmax_backward.cu)
//   dQ = scale·dS·K, dK = scale·dSᵀ·Q       cuBLAS
// Until `standard` became the unfused baseline this was `standard`: result files written
// before then hold its records under that name (without tiles.elementwise; analysis/README.md).
// The plan is standard's (standard_plan.cpp); records say tiles.elementwise = "fused".
//
// Workspace (E = B·H·Nq·Nk elements of e bytes, plus cuBLAS's 32 MiB): fwd 2·E·e (S/P_drop, P);
// bwd, fwdbwd 2·E·e without dropout (dP/dS over S), 3·E·e with (dP/dS of its own).
// HBM traffic per (batch, head), E' = Nq·Nk: forward Q, K read; S written; S read, P (and P_drop)
// written; P_drop, V read; O written. Backward: P_drop, dO read, dV written; dO, V read, dP_drop
// written; P, dP_drop read, dS written; dS, K read, dQ written; dS, Q read, dK written.
// Run: build/flashio run --method standard_fused --pass fwdbwd --seqlen 4096 --dropout 0.1
#include <memory>

#include "baselines/standard/standard_plan.h"
#include "bench/core/method.h"

namespace flashio {
namespace {

class StandardFused final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i = standard_common_info();
    i.name = "standard_fused";
    i.summary =
        "materialized attention with fused elementwise kernels (FlashAttention Alg. 0 / Alg. 3): cuBLAS GEMMs, "
        "mask+softmax+dropout and softmax-backward(+dropout) kernels; S, P, dP, dS in HBM";
    i.notes =
        "workspace of B·H·Nq·Nk elements: 2 (S, P; P_drop over S) for fwd and for bwd without dropout (dP/dS reuse "
        "S), 3 for bwd with dropout (+dP/dS); dropout mask redrawn from Philox in the backward, never stored";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    return standard_supports(info(), p, pass, dev, StandardKernels::Fused);
  }
};

}  // namespace

std::unique_ptr<Method> make_standard_fused() { return std::make_unique<StandardFused>(); }

}  // namespace flashio

// The `standard` method: materialized attention as the FlashAttention paper's PyTorch baseline
// runs it — Algorithm 0 (forward) and Algorithm 3 (backward) with every elementwise step a
// memory-bound kernel of its own, S and P (and the dropout mask) in HBM:
// Forward:
//   S = scale·Q·Kᵀ                     cuBLAS, S to HBM in the input type
//   S := −∞ where masked               masking kernel in place (causal, key padding; masked_fill_)
//   P = softmax(S)                     softmax kernel: reads S, writes P
//   P_drop = P∘Z, mask Z               dropout kernel: reads P, writes P_drop (over S, dead by
//                                      then) and one byte per element (PyTorch's bool mask)
//   O = P_drop·V                       cuBLAS (P_drop is P without dropout)
// Backward (Algorithm 3, from the P, P_drop and mask the forward kept):
//   dV = P_dropᵀ·dO                    cuBLAS
//   dP_drop = dO·Vᵀ                    cuBLAS, to HBM
//   dP = dP_drop∘Z                     dropout backward: reads dP_drop and the mask, writes dP
//   dS = P∘(dP − D), D = rowsum(P∘dP)  softmax backward: reads P and dP, writes dS (line 3)
//   dQ = scale·dS·K, dK = scale·dSᵀ·Q  cuBLAS
// Z_ij = keep(b, h, i, j)/(1 − p) is *drawn* from the shared Philox mask (bench/core/philox.h),
// so outputs match every other method exactly; the backward reads it back, never redraws it.
// The plan (GEMMs, buffers) is shared with `standard_fused` (baselines/standard/standard_plan.cpp),
// which fuses the elementwise steps; records say which as tiles.elementwise = "separate".
//
// Workspace (E = B·H·Nq·Nk elements of e bytes, plus cuBLAS's 32 MiB):
//   fwd:                 S (P_drop over it), P; with dropout the mask       2·E·e (+ E)
//   bwd, fwdbwd, p = 0:  S (dP/dS over it: dead after the forward), P        2·E·e
//   bwd, fwdbwd, p > 0:  S/P_drop, P, dP/dS, the mask                         3·E·e + E
//
// HBM traffic per (batch, head), E' = Nq·Nk: forward Q, K read, S written (E'e); masking S read
// and written (2E'e, with a mask); softmax S read, P written (2E'e); dropout P read, P_drop and
// the mask written (2E'e + E'); P_drop, V read, O written: Θ(Nd + N²). Backward: P_drop, dO
// read, dV written; dO, V read, dP_drop written (E'e); dropout backward dP_drop and the mask
// read, dP written (2E'e + E'); softmax backward P, dP read, dS written (3E'e); dS, K read, dQ
// written; dS, Q read, dK written: Θ(Nd + N²) (analysis/io_model.cpp counts each pass).
// Run: build/flashio run --method standard,standard_fused --pass fwdbwd --seqlen 4096 --dropout 0.1 --padding random
#include <memory>

#include "baselines/standard/standard_plan.h"
#include "bench/core/method.h"

namespace flashio {
namespace {

class Standard final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i = standard_common_info();
    i.name = "standard";
    i.summary =
        "materialized attention as PyTorch runs it (FlashAttention Alg. 0 / Alg. 3): cuBLAS GEMMs; masking, "
        "softmax, dropout (stored mask), dropout backward, softmax backward as separate kernels; S, P, dP, dS in HBM";
    i.notes =
        "workspace of B·H·Nq·Nk elements: 2 (S, P; P_drop over S) for fwd and for bwd without dropout (dP/dS reuse "
        "S), 3 for bwd with dropout (+dP/dS); with dropout also the mask, one byte per element, which the backward "
        "reads; standard_fused is the same with the elementwise steps fused";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    return standard_supports(info(), p, pass, dev, StandardKernels::Separate);
  }
};

}  // namespace

std::unique_ptr<Method> make_standard() { return std::make_unique<Standard>(); }

}  // namespace flashio

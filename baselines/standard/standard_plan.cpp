// The plan of `standard` and `standard_fused` (standard_plan.h): FlashAttention's Algorithm 0
// (forward) and Algorithm 3 (backward) with cuBLAS GEMMs and S, P in HBM.
//
// GEMMs (both variants):
//   S = scale·Q·Kᵀ   O = P_drop·V   dV = P_dropᵀ·dO   dP_drop = dO·Vᵀ   dQ = scale·dS·K   dK = scale·dSᵀ·Q
// Elementwise steps:
//   Separate:  [mask S in place] → softmax S → P → [dropout P → P_drop (over S), mask bytes]
//              backward: [dropout backward dP_drop → dP from the mask, in place] →
//              softmax backward P, dP → dS (in place)
//   Fused:     softmax(mask(S)) → P [and P_drop over S] in one kernel; backward: one kernel
//              reading P and dP_drop, redrawing Z from Philox, writing dS (in place)
// Z_ij = keep(b, h, i, j)/(1 − p) comes from the shared Philox mask (bench/core/philox.h,
// seed = Problem::seed, offset 0) in both: outputs are bit-compatible masks across methods.
// P, P_drop, dP and dS are kept in the input type as in PyTorch's reference implementation;
// GEMMs accumulate in fp32. The backward never overwrites P, P_drop or the mask, so it can run
// again from the same forward (the runner times `bwd` that way).
//
// GQA costs nothing extra: in BHND layout the G query heads sharing a K/V head are one
// contiguous (G·Nq, d) matrix, so every GEMM is batched over (batch, kv-head), and the
// contractions over the group's G·Nq rows (dK, dV) sum over its query heads by themselves.
//
// cuBLAS is column-major: a row-major (r × c) matrix with row stride c is, to cuBLAS, the
// column-major (c × r) matrix with leading dimension c — its transpose. Each call below
// computes the transpose of the row-major product: (A·B)ᵀ = Bᵀ·Aᵀ.
#include "baselines/standard/standard_plan.h"

#include <cublas_v2.h>
#include <fmt/format.h>

#include <stdexcept>

#include "baselines/common/cublas_handle.h"
#include "baselines/standard/standard_elementwise.h"
#include "baselines/standard/standard_softmax.h"
#include "baselines/standard/standard_softmax_backward.h"
#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_memory.h"
#include "bench/core/philox.h"

namespace flashio {

namespace {

class StandardPlan final : public Plan {
 public:
  StandardPlan(const Problem& p, Pass pass, DeviceAllocator& alloc, StandardKernels kernels)
      : p_(p), pass_(pass), kernels_(kernels) {
    const StandardWorkspace w = standard_workspace(p, pass, kernels);
    s_ = DeviceBuffer(alloc, size_t(w.score_bytes));
    p_buf_ = DeviceBuffer(alloc, size_t(w.score_bytes));
    if (w.score_buffers == 3) dp_ = DeviceBuffer(alloc, size_t(w.score_bytes));
    if (w.mask_bytes) mask_ = DeviceBuffer(alloc, size_t(w.mask_bytes));
    cublas_ = std::make_unique<CublasHandle>(alloc);

    shape_.rows = p.batch * p.heads * p.seqlen_q;
    shape_.seqlen_q = int(p.seqlen_q);
    shape_.seqlen_k = int(p.nk());
    shape_.heads = int(p.heads);
    dropout_.enabled = p.dropout > 0.0;
    dropout_.seed = p.seed;
    dropout_.threshold = dropout_threshold(p.dropout);
    dropout_.scale = float(dropout_scale(p.dropout));
  }

  Tiles tiles() const override {
    Tiles t;
    t.elementwise = to_string(kernels_);
    return t;
  }

  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    FLASHIO_CUBLAS_CHECK(cublasSetStream(cublas_->get(), stream));
    const Dims g = dims();
    const float alpha = float(p_.scale()), one = 1.f, zero = 0.f;
    const bool bf16 = p_.dtype == DType::BF16;
    // Algorithm 0 line 1: S (m × nk) = scale·Q (m × d)·Kᵀ (d × nk), row-major. Column-major:
    // Sᵀ (nk × m) = K (nk × d)·Qᵀ (d × m). K is stored as col-major Kᵀ (d × nk, ld d): op T gives
    // K. Q is stored as col-major Qᵀ (d × m, ld d): op N. C = Sᵀ col-major (nk × m, ld nk) =
    // row-major S. (M, N, K) = (nk, m, d).
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        cublas_->get(), CUBLAS_OP_T, CUBLAS_OP_N, g.nk, g.m, g.d, &alpha, buf.k, g.t, g.d, g.kv_stride, buf.q, g.t, g.d,
        g.q_stride, &zero, s_.get(), g.t, g.nk, g.score_stride, g.batches, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    // Line 2: P = softmax(mask(S)), then P_drop = P∘Z.
    baselines::SoftmaxParams sp;
    sp.s = s_.get();
    sp.p = p_buf_.get();
    sp.bf16 = bf16;
    if (kernels_ == StandardKernels::Fused) {  // one kernel: reads S, writes P (and P_drop over S)
      sp.p_drop = dropout_.enabled ? s_.get() : nullptr;
      sp.shape = masked_shape(buf);
      sp.dropout = dropout_;
      baselines::softmax_rows(sp, stream);
    } else {
      if (p_.causal || buf.key_lengths) {  // masked_fill_: reads S, writes S
        baselines::MaskScoresParams mp;
        mp.s = s_.get();
        mp.shape = masked_shape(buf);
        mp.bf16 = bf16;
        baselines::mask_scores(mp, stream);
      }
      sp.shape = shape_;  // the masks are −∞ in S already; no dropout here
      baselines::softmax_rows(sp, stream);
      if (dropout_.enabled) {  // reads P, writes P_drop over S (dead now) and the mask
        baselines::DropoutForwardParams dp;
        dp.p = p_buf_.get();
        dp.p_drop = s_.get();
        dp.mask = mask_.as<uint8_t>();
        dp.shape = shape_;
        dp.dropout = dropout_;
        dp.bf16 = bf16;
        baselines::dropout_forward(dp, stream);
      }
    }
    // Line 3: O (m × d) = P_drop (m × nk)·V (nk × d), row-major. Column-major: Oᵀ (d × m) =
    // Vᵀ (d × nk)·P_dropᵀ (nk × m). V is stored as col-major Vᵀ (d × nk, ld d): op N. P_drop is
    // stored as col-major P_dropᵀ (nk × m, ld nk): op N. C = Oᵀ col-major (d × m, ld d) =
    // row-major O. (M, N, K) = (d, m, nk).
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        cublas_->get(), CUBLAS_OP_N, CUBLAS_OP_N, g.d, g.m, g.nk, &one, buf.v, g.t, g.d, g.kv_stride, p_drop(), g.t,
        g.nk, g.score_stride, &zero, buf.o, g.t, g.d, g.q_stride, g.batches, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  void backward(const AttentionBuffers& buf, cudaStream_t stream) override {
    if (pass_ == Pass::Fwd)
      throw std::logic_error("standard: a plan made for the forward pass has no backward workspace");
    FLASHIO_CUBLAS_CHECK(cublasSetStream(cublas_->get(), stream));
    const Dims g = dims();
    const float alpha = float(p_.scale()), one = 1.f, zero = 0.f;
    const bool bf16 = p_.dtype == DType::BF16;
    // dP_drop, then dP and dS in place: S's buffer when P_drop is P (S is dead after the
    // forward), else a buffer of its own (S's holds P_drop, which a repeated backward reads again).
    void* dscores = dropout_.enabled ? dp_.get() : s_.get();

    // Algorithm 3 line 1: dV (nk × d) = P_dropᵀ (nk × m)·dO (m × d), row-major; the sum over
    // the m = G·Nq rows adds the group's query heads. Column-major: dVᵀ (d × nk) = dOᵀ (d × m)·
    // P_drop (m × nk). dO is stored as col-major dOᵀ (d × m, ld d): op N. P_drop is stored as
    // col-major P_dropᵀ (nk × m, ld nk): op T gives P_drop (m × nk). C = dVᵀ col-major
    // (d × nk, ld d) = row-major dV. (M, N, K) = (d, nk, m).
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_->get(), CUBLAS_OP_N, CUBLAS_OP_T, g.d, g.nk, g.m, &one,
                                                    buf.d_o, g.t, g.d, g.q_stride, p_drop(), g.t, g.nk, g.score_stride,
                                                    &zero, buf.dv, g.t, g.d, g.kv_stride, g.batches, CUBLAS_COMPUTE_32F,
                                                    CUBLAS_GEMM_DEFAULT));
    // Line 2: dP_drop (m × nk) = dO (m × d)·Vᵀ (d × nk), row-major. Column-major: dP_dropᵀ
    // (nk × m) = V (nk × d)·dOᵀ (d × m). V is stored as col-major Vᵀ (d × nk, ld d): op T gives
    // V. dO is stored as col-major dOᵀ (d × m, ld d): op N. C = dP_dropᵀ col-major (nk × m,
    // ld nk) = row-major dP_drop. (M, N, K) = (nk, m, d): the S GEMM's shape.
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        cublas_->get(), CUBLAS_OP_T, CUBLAS_OP_N, g.nk, g.m, g.d, &one, buf.v, g.t, g.d, g.kv_stride, buf.d_o, g.t, g.d,
        g.q_stride, &zero, dscores, g.t, g.nk, g.score_stride, g.batches, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    // Line 3: dP = dP_drop∘Z, D_i = Σ_j P_ij·dP_ij, dS = P∘(dP − D), over dP_drop's buffer.
    baselines::SoftmaxBackwardParams bp;
    bp.p = p_buf_.get();
    bp.dp = dscores;
    bp.ds = dscores;
    bp.bf16 = bf16;
    if (kernels_ == StandardKernels::Fused) {  // one kernel, Z redrawn from Philox
      bp.shape = masked_shape(buf);
      bp.dropout = dropout_;
    } else {
      if (dropout_.enabled) {  // dropout backward from the stored mask: reads dP_drop and the mask, writes dP
        baselines::DropoutBackwardParams dp;
        dp.dp_drop = dscores;
        dp.mask = mask_.as<uint8_t>();
        dp.dp = dscores;
        dp.shape = shape_;
        dp.scale = dropout_.scale;
        dp.bf16 = bf16;
        baselines::dropout_backward(dp, stream);
      }
      bp.shape = shape_;  // masked entries have P = 0, so dS = 0 there
    }
    baselines::softmax_backward_rows(bp, stream);
    // Line 4: dQ (m × d) = scale·dS (m × nk)·K (nk × d), row-major. Column-major: dQᵀ (d × m) =
    // Kᵀ (d × nk)·dSᵀ (nk × m). K is stored as col-major Kᵀ (d × nk, ld d): op N. dS is stored
    // as col-major dSᵀ (nk × m, ld nk): op N. C = dQᵀ col-major (d × m, ld d) = row-major dQ.
    // (M, N, K) = (d, m, nk): the O GEMM's shape.
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        cublas_->get(), CUBLAS_OP_N, CUBLAS_OP_N, g.d, g.m, g.nk, &alpha, buf.k, g.t, g.d, g.kv_stride, dscores, g.t,
        g.nk, g.score_stride, &zero, buf.dq, g.t, g.d, g.q_stride, g.batches, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    // Line 5: dK (nk × d) = scale·dSᵀ (nk × m)·Q (m × d), row-major; the sum over the m = G·Nq
    // rows adds the group's query heads. Column-major: dKᵀ (d × nk) = Qᵀ (d × m)·dS (m × nk). Q is
    // stored as col-major Qᵀ (d × m, ld d): op N. dS is stored as col-major dSᵀ (nk × m, ld nk):
    // op T gives dS (m × nk). C = dKᵀ col-major (d × nk, ld d) = row-major dK. (M, N, K) =
    // (d, nk, m): the dV GEMM's shape.
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_->get(), CUBLAS_OP_N, CUBLAS_OP_T, g.d, g.nk, g.m, &alpha,
                                                    buf.q, g.t, g.d, g.q_stride, dscores, g.t, g.nk, g.score_stride,
                                                    &zero, buf.dk, g.t, g.d, g.kv_stride, g.batches, CUBLAS_COMPUTE_32F,
                                                    CUBLAS_GEMM_DEFAULT));
  }

 private:
  // One GEMM batch per (batch, kv-head): Q, O, dO, dQ are (m × d) with m = G·Nq; K, V, dK, dV
  // are (nk × d); S, P, P_drop, dP_drop, dS are (m × nk). All row-major, contiguous, and
  // consecutive batches are consecutive matrices (BHND).
  struct Dims {
    cudaDataType_t t;
    int m, nk, d, batches;
    long long q_stride, kv_stride, score_stride;  // elements between consecutive batches
  };
  Dims dims() const {
    Dims g;
    g.t = p_.dtype == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
    g.m = int((p_.heads / p_.kvh()) * p_.seqlen_q);  // query rows sharing one K/V head
    g.nk = int(p_.nk());
    g.d = int(p_.head_dim);
    g.batches = int(p_.batch * p_.kvh());
    g.q_stride = static_cast<long long>(g.m) * g.d;
    g.kv_stride = static_cast<long long>(g.nk) * g.d;
    g.score_stride = static_cast<long long>(g.m) * g.nk;
    return g;
  }
  // The row shape with this call's masks (key lengths live in the call's buffers).
  baselines::RowShape masked_shape(const AttentionBuffers& buf) const {
    baselines::RowShape s = shape_;
    s.key_lengths = buf.key_lengths;
    s.causal = p_.causal;
    return s;
  }
  // What the P·V and dV GEMMs read: P_drop (over S) with dropout, else P itself.
  const void* p_drop() const { return dropout_.enabled ? s_.get() : p_buf_.get(); }

  Problem p_;
  Pass pass_;
  StandardKernels kernels_;
  baselines::RowShape shape_;  // the rows without masks (masked_shape adds them)
  baselines::DropoutParams dropout_;
  DeviceBuffer s_, p_buf_, dp_, mask_;
  std::unique_ptr<CublasHandle> cublas_;
};

}  // namespace

std::unique_ptr<Plan> make_standard_plan(const Problem& p, Pass pass, DeviceAllocator& alloc, StandardKernels k) {
  return std::make_unique<StandardPlan>(p, pass, alloc, k);
}

std::unique_ptr<Plan> plan_standard(const Problem& p, Pass pass, const DeviceInfo&, DeviceAllocator& alloc) {
  return make_standard_plan(p, pass, alloc, StandardKernels::Separate);
}

std::unique_ptr<Plan> plan_standard_fused(const Problem& p, Pass pass, const DeviceInfo&, DeviceAllocator& alloc) {
  return make_standard_plan(p, pass, alloc, StandardKernels::Fused);
}

}  // namespace flashio

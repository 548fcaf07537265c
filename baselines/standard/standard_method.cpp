// The `standard` method: materialized attention, FlashAttention's Algorithm 0 (forward) and
// Algorithm 3 (backward), with dropout.
// Forward:
//   S = scale·Q·Kᵀ                        (cuBLAS, written to HBM in the input type)
//   P = softmax(mask(S)), P_drop = P∘Z    (one memory-bound kernel: reads S, writes P and,
//                                          with dropout, P_drop over S)
//   O = P_drop·V                          (cuBLAS; P_drop is P without dropout)
// Backward (from the P and P_drop the forward left in HBM):
//   dV = P_dropᵀ·dO                       (cuBLAS)
//   dP_drop = dO·Vᵀ                       (cuBLAS, written to HBM)
//   dS = P∘(dP_drop∘Z − D), D_i = Σ_j P_ij·(dP_drop∘Z)_ij
//                                         (one memory-bound kernel: reads P, dP_drop; writes dS over dP_drop)
//   dQ = scale·dS·K,  dK = scale·dSᵀ·Q   (cuBLAS, straight into the outputs)
// Z_ij = keep(b, h, i, j)/(1 − p) comes from the shared Philox mask (kernels/common/philox.h,
// seed = Problem::seed, offset 0); P, dP_drop and dS are kept in the input type as in
// PyTorch's reference implementation, GEMMs accumulate in fp32.
//
// Dropout storage: the forward stores P and P_drop (the GEMM needs P_drop; the backward needs
// the undropped P, which P_drop loses where Z = 0) and no mask: the backward's elementwise
// kernel redraws Z from Philox, as the fused methods do. P_drop is written over S, which is
// dead once P is written, so dropout costs the forward no memory and N²·e more writes.
//
// Workspace (E = B·H·Nq·Nk elements of e bytes, plus cuBLAS's 32 MiB):
//   fwd:                    S (P_drop with dropout), P                    2·E·e
//   bwd, fwdbwd, p = 0:     as fwd; dP_drop/dS reuse S's buffer (dead     2·E·e
//                           after the forward: P_drop is P)
//   bwd, fwdbwd, p > 0:     S/P_drop, P, and dP_drop/dS                   3·E·e
// The backward never overwrites P or P_drop, so it can run again from the same forward.
//
// GQA costs nothing extra: in BHND layout the G query heads sharing a K/V head are one
// contiguous (G·Nq, d) matrix, so every GEMM is batched over (batch, kv-head), and the
// contractions over the group's G·Nq rows (dK, dV) sum over its query heads by themselves.
//
// cuBLAS is column-major: a row-major (r × c) matrix with row stride c is, to cuBLAS, the
// column-major (c × r) matrix with leading dimension c — its transpose. Each call below
// computes the transpose of the row-major product: (A·B)ᵀ = Bᵀ·Aᵀ.
//
// IO per (batch, head): forward Q, K read; S written, S read, P (and P_drop) written; P_drop,
// V read; O written: Θ(Nd + N²). Backward: P_drop, dO read, dV written; dO, V read, dP_drop
// written; P, dP_drop read, dS written; dS, K read, dQ written; dS, Q read, dK written:
// Θ(Nd + N²). Run: build/flashio run --method standard --pass fwdbwd --seqlen 4096
#include <memory>
#include <stdexcept>

#include <cublas_v2.h>
#include <fmt/format.h>

#include "baselines/common/cublas_handle.h"
#include "baselines/standard/standard_softmax.h"
#include "baselines/standard/standard_softmax_backward.h"
#include "bench/cuda_check.h"
#include "bench/device_memory.h"
#include "bench/method.h"
#include "kernels/common/philox.h"

namespace flashio {
namespace {

bool has_dropout(const Problem& p) { return p.dropout > 0.0; }

// Score-shaped (B·H·Nq × Nk) buffers the plan allocates for a pass (see the file comment).
int score_buffers(const Problem& p, Pass pass) { return pass != Pass::Fwd && has_dropout(p) ? 3 : 2; }

class StandardPlan final : public Plan {
 public:
  StandardPlan(const Problem& p, Pass pass, DeviceAllocator& alloc) : p_(p), pass_(pass) {
    const size_t scores = size_t(p.batch * p.heads * p.seqlen_q * p.nk()) * size_t(bytes_of(p.dtype));
    s_ = DeviceBuffer(alloc, scores);
    p_buf_ = DeviceBuffer(alloc, scores);
    if (score_buffers(p, pass) == 3) dp_ = DeviceBuffer(alloc, scores);
    cublas_ = std::make_unique<CublasHandle>(alloc);

    shape_.rows = p.batch * p.heads * p.seqlen_q;
    shape_.seqlen_q = int(p.seqlen_q);
    shape_.seqlen_k = int(p.nk());
    shape_.heads = int(p.heads);
    shape_.causal = p.causal;
    dropout_.enabled = has_dropout(p);
    dropout_.seed = p.seed;
    dropout_.threshold = dropout_threshold(p.dropout);
    dropout_.scale = float(dropout_scale(p.dropout));
  }

  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    FLASHIO_CUBLAS_CHECK(cublasSetStream(cublas_->get(), stream));
    const Dims g = dims();
    const float alpha = float(p_.scale()), one = 1.f, zero = 0.f;
    // S (m × nk) = scale·Q (m × d)·Kᵀ (d × nk), row-major. Column-major: Sᵀ (nk × m) = K (nk × d)·Qᵀ (d × m).
    // K is stored as col-major Kᵀ (d × nk, ld d): op T gives K.  Q is stored as col-major Qᵀ (d × m, ld d): op N.
    // C = Sᵀ col-major (nk × m, ld nk) = row-major S. (M, N, K) = (nk, m, d).
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_->get(), CUBLAS_OP_T, CUBLAS_OP_N, g.nk, g.m, g.d, &alpha,
                                                    buf.k, g.t, g.d, g.kv_stride,
                                                    buf.q, g.t, g.d, g.q_stride, &zero,
                                                    s_.get(), g.t, g.nk, g.score_stride, g.batches,
                                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    baselines::SoftmaxParams sp;
    sp.s = s_.get();
    sp.p = p_buf_.get();
    sp.p_drop = dropout_.enabled ? s_.get() : nullptr;  // in place over S
    sp.shape = shape_;
    sp.shape.key_lengths = buf.key_lengths;
    sp.dropout = dropout_;
    sp.bf16 = p_.dtype == DType::BF16;
    baselines::softmax_rows(sp, stream);
    // O (m × d) = P_drop (m × nk)·V (nk × d), row-major. Column-major: Oᵀ (d × m) = Vᵀ (d × nk)·P_dropᵀ (nk × m).
    // V is stored as col-major Vᵀ (d × nk, ld d): op N.  P_drop is stored as col-major P_dropᵀ (nk × m, ld nk): op N.
    // C = Oᵀ col-major (d × m, ld d) = row-major O. (M, N, K) = (d, m, nk).
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_->get(), CUBLAS_OP_N, CUBLAS_OP_N, g.d, g.m, g.nk, &one,
                                                    buf.v, g.t, g.d, g.kv_stride,
                                                    p_drop(), g.t, g.nk, g.score_stride, &zero,
                                                    buf.o, g.t, g.d, g.q_stride, g.batches,
                                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  void backward(const AttentionBuffers& buf, cudaStream_t stream) override {
    if (pass_ == Pass::Fwd)
      throw std::logic_error("standard: a plan made for the forward pass has no backward workspace");
    FLASHIO_CUBLAS_CHECK(cublasSetStream(cublas_->get(), stream));
    const Dims g = dims();
    const float alpha = float(p_.scale()), one = 1.f, zero = 0.f;
    // dP_drop, then dS in place: S's buffer when P_drop is P (S is dead after the forward),
    // else a buffer of its own (S's holds P_drop, which a repeated backward reads again).
    void* dscores = dropout_.enabled ? dp_.get() : s_.get();

    // Line 1: dV (nk × d) = P_dropᵀ (nk × m)·dO (m × d), row-major; the sum over the m = G·Nq
    // rows adds the group's query heads. Column-major: dVᵀ (d × nk) = dOᵀ (d × m)·P_drop (m × nk).
    // dO is stored as col-major dOᵀ (d × m, ld d): op N.  P_drop is stored as col-major
    // P_dropᵀ (nk × m, ld nk): op T gives P_drop (m × nk).  C = dVᵀ col-major (d × nk, ld d)
    // = row-major dV. (M, N, K) = (d, nk, m).
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_->get(), CUBLAS_OP_N, CUBLAS_OP_T, g.d, g.nk, g.m, &one,
                                                    buf.d_o, g.t, g.d, g.q_stride,
                                                    p_drop(), g.t, g.nk, g.score_stride, &zero,
                                                    buf.dv, g.t, g.d, g.kv_stride, g.batches,
                                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    // Line 2: dP_drop (m × nk) = dO (m × d)·Vᵀ (d × nk), row-major. Column-major:
    // dP_dropᵀ (nk × m) = V (nk × d)·dOᵀ (d × m). V is stored as col-major Vᵀ (d × nk, ld d):
    // op T gives V.  dO is stored as col-major dOᵀ (d × m, ld d): op N.  C = dP_dropᵀ
    // col-major (nk × m, ld nk) = row-major dP_drop. (M, N, K) = (nk, m, d): the S GEMM's shape.
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_->get(), CUBLAS_OP_T, CUBLAS_OP_N, g.nk, g.m, g.d, &one,
                                                    buf.v, g.t, g.d, g.kv_stride,
                                                    buf.d_o, g.t, g.d, g.q_stride, &zero,
                                                    dscores, g.t, g.nk, g.score_stride, g.batches,
                                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    // Line 3: dS = P∘(dP_drop∘Z − D), written over dP_drop.
    baselines::SoftmaxBackwardParams bp;
    bp.p = p_buf_.get();
    bp.dp = dscores;
    bp.ds = dscores;
    bp.shape = shape_;
    bp.shape.key_lengths = buf.key_lengths;
    bp.dropout = dropout_;
    bp.bf16 = p_.dtype == DType::BF16;
    baselines::softmax_backward_rows(bp, stream);
    // Line 4: dQ (m × d) = scale·dS (m × nk)·K (nk × d), row-major. Column-major:
    // dQᵀ (d × m) = Kᵀ (d × nk)·dSᵀ (nk × m). K is stored as col-major Kᵀ (d × nk, ld d): op N.
    // dS is stored as col-major dSᵀ (nk × m, ld nk): op N.  C = dQᵀ col-major (d × m, ld d)
    // = row-major dQ. (M, N, K) = (d, m, nk): the O GEMM's shape.
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_->get(), CUBLAS_OP_N, CUBLAS_OP_N, g.d, g.m, g.nk, &alpha,
                                                    buf.k, g.t, g.d, g.kv_stride,
                                                    dscores, g.t, g.nk, g.score_stride, &zero,
                                                    buf.dq, g.t, g.d, g.q_stride, g.batches,
                                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    // Line 5: dK (nk × d) = scale·dSᵀ (nk × m)·Q (m × d), row-major; the sum over the m = G·Nq
    // rows adds the group's query heads. Column-major: dKᵀ (d × nk) = Qᵀ (d × m)·dS (m × nk).
    // Q is stored as col-major Qᵀ (d × m, ld d): op N.  dS is stored as col-major dSᵀ (nk × m,
    // ld nk): op T gives dS (m × nk).  C = dKᵀ col-major (d × nk, ld d) = row-major dK.
    // (M, N, K) = (d, nk, m): the dV GEMM's shape.
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas_->get(), CUBLAS_OP_N, CUBLAS_OP_T, g.d, g.nk, g.m, &alpha,
                                                    buf.q, g.t, g.d, g.q_stride,
                                                    dscores, g.t, g.nk, g.score_stride, &zero,
                                                    buf.dk, g.t, g.d, g.kv_stride, g.batches,
                                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
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
  // What the P·V and dV GEMMs read: P_drop (over S) with dropout, else P itself.
  const void* p_drop() const { return dropout_.enabled ? s_.get() : p_buf_.get(); }

  Problem p_;
  Pass pass_;
  baselines::RowShape shape_;
  baselines::DropoutParams dropout_;
  DeviceBuffer s_, p_buf_, dp_;
  std::unique_ptr<CublasHandle> cublas_;
};

class Standard final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i;
    i.name = "standard";
    i.summary =
        "materialized attention (FlashAttention Alg. 0 / Alg. 3): cuBLAS GEMMs, softmax(+dropout) and "
        "softmax-backward kernels; S, P, dP, dS in HBM";
    i.where = "gpu";
    i.passes = {Pass::Fwd, Pass::Bwd, Pass::FwdBwd};
    i.dtypes = {DType::F16, DType::BF16};
    i.head_dims = {};  // any head dim cuBLAS accepts
    i.masks = {"none", "causal", "padding"};
    i.dropout = true;
    i.gqa = true;
    i.deterministic = true;  // no atomics: cuBLAS GEMMs (atomics mode off) and row-wise kernels
    i.notes =
        "workspace of B·H·Nq·Nk elements: 2 (S, P; P_drop over S) for fwd and for bwd without dropout "
        "(dP/dS reuse S), 3 for bwd with dropout (+dP/dS); dropout mask redrawn from Philox in the backward";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    if (p.head_dim % 8 != 0) return Support::no("standard needs head_dim % 8 == 0 (16-byte aligned GEMM rows)");
    const int buffers = score_buffers(p, pass);
    const double need = double(buffers) * double(p.batch * p.heads * p.seqlen_q) * double(p.nk()) * bytes_of(p.dtype) +
                        double(CublasHandle::kWorkspaceBytes);
    if (need > double(dev.global_memory_bytes))
      return Support::no(fmt::format("{} workspace ({} score-sized buffers) needs {:.1f} GiB; the GPU has {:.1f} GiB",
                                     to_string(pass), buffers, need / (1 << 30),
                                     double(dev.global_memory_bytes) / (1 << 30)));
    if (double(p.heads / p.kvh()) * double(p.seqlen_q) * double(p.nk()) > 2147483647.0)
      return Support::no("one GEMM's S exceeds 2^31 elements (cuBLAS int dimensions)");
    return Support::yes();
  }
  std::unique_ptr<Plan> plan(const Problem& p, Pass pass, const DeviceInfo&, DeviceAllocator& alloc) const override {
    return std::make_unique<StandardPlan>(p, pass, alloc);
  }
};

}  // namespace

std::unique_ptr<Method> make_standard() { return std::make_unique<Standard>(); }

}  // namespace flashio

// The `standard` method: materialized attention, FlashAttention's Algorithm 0.
//   S = scale·Q·Kᵀ  (cuBLAS, written to HBM in the input type)
//   P = softmax(mask(S))  (one memory-bound kernel: reads S, writes P)
//   O = P·V  (cuBLAS)
// As PyTorch's reference implementation, S and P are kept in the input type and both live
// in HBM at once. GQA costs nothing extra: in BHND layout the G query heads sharing a K/V
// head are one contiguous (G·Nq, d) matrix, so each GEMM is batched over (batch, kv-head).
//
// IO per (batch, head): Q, K read; S written, S read, P written; P, V read; O written:
// Θ(Nd + N²). Run: build/flashio run --method standard --seqlen 4096
#include <cublas_v2.h>
#include <fmt/format.h>

#include "baselines/standard/standard_softmax.h"
#include "bench/cuda_check.h"
#include "bench/device_memory.h"
#include "bench/method.h"

namespace flashio {
namespace {

constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;  // cuBLAS's recommendation for Hopper

class StandardPlan final : public Plan {
 public:
  StandardPlan(const Problem& p, DeviceAllocator& alloc) : p_(p) {
    const size_t scores = size_t(p.batch * p.heads * p.seqlen_q * p.nk()) * size_t(bytes_of(p.dtype));
    s_ = DeviceBuffer(alloc, scores);
    p_buf_ = DeviceBuffer(alloc, scores);
    workspace_ = DeviceBuffer(alloc, kCublasWorkspaceBytes);
    FLASHIO_CUBLAS_CHECK(cublasCreate(&handle_));
    FLASHIO_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.get(), workspace_.bytes()));
  }
  ~StandardPlan() override { cublasDestroy(handle_); }

  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    FLASHIO_CUBLAS_CHECK(cublasSetStream(handle_, stream));
    const cudaDataType_t t = p_.dtype == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
    const int64_t group = p_.heads / p_.kvh();
    const int m = int(group * p_.seqlen_q);  // query rows sharing one K/V head
    const int nk = int(p_.nk()), d = int(p_.head_dim);
    const int batches = int(p_.batch * p_.kvh());
    const float alpha = float(p_.scale()), one = 1.f, zero = 0.f;
    // Row-major S (m × nk) = Q (m × d) · Kᵀ is column-major Sᵀ (nk × m) = Kᵀ(op T of K col-major d × nk) · Q.
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, nk, m, d, &alpha,
                                                    buf.k, t, d, int64_t(nk) * d,
                                                    buf.q, t, d, int64_t(m) * d, &zero,
                                                    s_.get(), t, nk, int64_t(m) * nk, batches,
                                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    baselines::SoftmaxParams sp{s_.get(), p_buf_.get(), p_.batch * p_.heads * p_.seqlen_q, int(p_.seqlen_q), nk,
                                int(p_.heads), buf.key_lengths, p_.causal, p_.dtype == DType::BF16};
    baselines::softmax_rows(sp, stream);
    // Row-major O (m × d) = P (m × nk) · V (nk × d) is column-major Oᵀ (d × m) = Vᵀ (d × nk) · Pᵀ (nk × m).
    FLASHIO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, d, m, nk, &one,
                                                    buf.v, t, d, int64_t(nk) * d,
                                                    p_buf_.get(), t, nk, int64_t(m) * nk, &zero,
                                                    buf.o, t, d, int64_t(m) * d, batches,
                                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

 private:
  Problem p_;
  DeviceBuffer s_, p_buf_, workspace_;
  cublasHandle_t handle_ = nullptr;
};

class Standard final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i;
    i.name = "standard";
    i.summary = "materialized attention (FlashAttention Alg. 0): cuBLAS S=QK^T, softmax kernel, cuBLAS O=PV; S, P in HBM";
    i.where = "gpu";
    i.passes = {Pass::Fwd};
    i.dtypes = {DType::F16, DType::BF16};
    i.head_dims = {};  // any head dim cuBLAS accepts
    i.masks = {"none", "causal", "padding"};
    i.gqa = true;
    i.notes = "needs 2·B·H·Nq·Nk elements of workspace (S and P); backward and dropout: not yet";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    if (p.head_dim % 8 != 0) return Support::no("standard needs head_dim % 8 == 0 (16-byte aligned GEMM rows)");
    const double need = 2.0 * double(p.batch * p.heads * p.seqlen_q) * double(p.nk()) * bytes_of(p.dtype);
    if (need > double(dev.global_memory_bytes))
      return Support::no(fmt::format("S and P need {:.1f} GiB; the GPU has {:.1f} GiB", need / (1 << 30),
                                     double(dev.global_memory_bytes) / (1 << 30)));
    if (double(p.heads / p.kvh()) * double(p.seqlen_q) * double(p.nk()) > 2147483647.0)
      return Support::no("one GEMM's S exceeds 2^31 elements (cuBLAS int dimensions)");
    return Support::yes();
  }
  std::unique_ptr<Plan> plan(const Problem& p, Pass, const DeviceInfo&, DeviceAllocator& alloc) const override {
    return std::make_unique<StandardPlan>(p, alloc);
  }
};

}  // namespace

std::unique_ptr<Method> make_standard() { return std::make_unique<Standard>(); }

}  // namespace flashio

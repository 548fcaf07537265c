// The `blocksparse_standard` method: the materialized block-sparse baseline FlashAttention
// compared with (§3.3, Figure 2 right): standard attention computed only on the non-zero blocks
// of the block mask, every intermediate in HBM.
//   S_rc = scale·Q_r·K_cᵀ for every non-zero block (r, c)   one batched cuBLAS GEMM over
//                                                            (batch·head × non-zero blocks),
//                                                            S compact: [B·H, nnz, Bs, Bs]
//   P = softmax over each query row's materialized blocks     one memory-bound kernel, in place
//       (causal, key padding, dropout P∘Z as `standard`)      over S; writes LSE
//   O_r = Σ_c P_rc·V_c                                        batched GEMMs into an fp32 O,
//                                                            one per step k (the k-th non-zero
//                                                            block of every row), then O in
//                                                            the element type
// Blocks are the pattern's own Bs × Bs (any Bs: no tile constraint); inputs whose length is not
// a multiple of Bs are copied into zero-padded buffers first (Θ(Nd) more traffic).
//
// cuBLAS is column-major: a row-major (r × c) block with row stride c is the column-major
// (c × r) matrix with leading dimension c. S_rcᵀ = K_c·Q_rᵀ (op T on K, op N on Q) lands as
// row-major S_rc; O_rᵀ += V_cᵀ·P_rcᵀ (op N, op N) as row-major O_r.
//
// IO per (batch, head), s = density, R × C mask blocks, e = element bytes: each non-zero block
// reads a Q and a K block and writes its S block, s·R·C·(2·Bs·d + Bs²)·e = s·(2·Nq·Nk·d/Bs +
// Nq·Nk)·e; the softmax reads S twice and writes P once, 3·s·Nq·Nk·e; P·V reads each P block
// and V block and reads and writes an fp32 O block, s·Nq·Nk·(e + d·(e + 8)/Bs); O written once,
// Nq·d·e. Θ(Nd + s·N²) at fixed Bs and d: the N² terms scale by s.
// Forward only: the backward is not implemented (records say skipped).
// Run: build/flashio run --method blocksparse_standard --pattern butterfly --seqlen 4096
#include <algorithm>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "baselines/blocksparse_standard/blocksparse_standard_kernels.h"
#include "bench/cuda_check.h"
#include "bench/device_memory.h"
#include "bench/method.h"
#include "bench/sparsity.h"
#include "kernels/common/philox.h"

namespace flashio {
namespace {

constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;
constexpr int64_t kMaxBatch = 65535;  // GEMMs per cublasGemmBatchedEx call (a conservative grid.z bound)

cudaDataType_t cuda_type(DType t) { return t == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F; }

template <typename T>
DeviceBuffer upload(DeviceAllocator& alloc, const std::vector<T>& v) {
  DeviceBuffer b(alloc, std::max<size_t>(1, v.size()) * sizeof(T));
  if (!v.empty()) FLASHIO_CUDA_CHECK(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return b;
}

class BlocksparseStandardPlan final : public Plan {
 public:
  BlocksparseStandardPlan(const Problem& p, DeviceAllocator& alloc) : p_(p) {
    const BlockMask mask = make_block_mask(p);
    const BlockLists rows = by_rows(mask);
    const int bs = p.sparse_block;
    s_.batch = int(p.batch);
    s_.heads = int(p.heads);
    s_.kv_heads = int(p.kvh());
    s_.seqlen_q = int(p.seqlen_q);
    s_.seqlen_k = int(p.nk());
    s_.rows_padded = int(mask.rows) * bs;
    s_.keys_padded = int(mask.cols) * bs;
    s_.head_dim = int(p.head_dim);
    s_.block = bs;
    s_.nnz = int(rows.idx.size());
    s_.elem_bytes = bytes_of(p.dtype);
    bh_ = p.batch * p.heads;

    // Blocks e in row-major order, and the P·V steps: step k = the k-th block of each row.
    std::vector<int2> blocks, steps;
    int max_deg = 0;
    for (int64_t r = 0; r < mask.rows; ++r) {
      max_deg = std::max(max_deg, rows.ptr[size_t(r) + 1] - rows.ptr[size_t(r)]);
      for (int e = rows.ptr[size_t(r)]; e < rows.ptr[size_t(r) + 1]; ++e) blocks.push_back({int(r), rows.idx[size_t(e)]});
    }
    step_off_.push_back(0);
    for (int k = 0; k < max_deg; ++k) {
      for (int64_t r = 0; r < mask.rows; ++r)
        if (rows.ptr[size_t(r)] + k < rows.ptr[size_t(r) + 1]) steps.push_back({int(r), rows.ptr[size_t(r)] + k});
      step_off_.push_back(int64_t(steps.size()));
    }
    blocks_ = upload(alloc, blocks);
    steps_ = upload(alloc, steps);
    row_ptr_ = upload(alloc, rows.ptr);
    col_idx_ = upload(alloc, rows.idx);

    const size_t e = size_t(s_.elem_bytes);
    scores_ = DeviceBuffer(alloc, std::max<size_t>(1, size_t(bh_) * size_t(s_.nnz) * size_t(bs) * size_t(bs) * e));
    o_acc_ = DeviceBuffer(alloc, size_t(bh_) * size_t(s_.rows_padded) * size_t(p.head_dim) * sizeof(float));
    const size_t entries = std::max<size_t>(1, size_t(bh_) * size_t(s_.nnz));
    pointers_ = DeviceBuffer(alloc, 6 * entries * sizeof(void*));
    void** base = pointers_.as<void*>();
    ptrs_ = {const_cast<const void**>(base), const_cast<const void**>(base + entries), base + 2 * entries,
             const_cast<const void**>(base + 3 * entries), const_cast<const void**>(base + 4 * entries),
             base + 5 * entries};
    pad_q_ = s_.rows_padded != s_.seqlen_q;
    pad_kv_ = s_.keys_padded != s_.seqlen_k;
    if (pad_q_) {
      q_pad_ = DeviceBuffer(alloc, size_t(bh_) * size_t(s_.rows_padded) * size_t(p.head_dim) * e);
      FLASHIO_CUDA_CHECK(cudaMemset(q_pad_.get(), 0, q_pad_.bytes()));  // padding rows stay zero
    }
    if (pad_kv_) {
      const size_t kv = size_t(p.batch * p.kvh()) * size_t(s_.keys_padded) * size_t(p.head_dim) * e;
      k_pad_ = DeviceBuffer(alloc, kv);
      v_pad_ = DeviceBuffer(alloc, kv);
      FLASHIO_CUDA_CHECK(cudaMemset(k_pad_.get(), 0, kv));
      FLASHIO_CUDA_CHECK(cudaMemset(v_pad_.get(), 0, kv));
    }
    workspace_ = DeviceBuffer(alloc, kCublasWorkspaceBytes);
    FLASHIO_CUBLAS_CHECK(cublasCreate(&handle_));
    FLASHIO_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.get(), workspace_.bytes()));
  }
  ~BlocksparseStandardPlan() override {
    if (handle_) cublasDestroy(handle_);
  }
  Tiles tiles() const override { return {s_.block, s_.block, 0, 0, 0}; }
  bool writes_lse() const override { return true; }

  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    const size_t e = size_t(s_.elem_bytes);
    const size_t row_bytes = size_t(p_.head_dim) * e;
    // (rows, d) per head → (padded rows, d) per head: one 2-D copy over all heads.
    auto pad = [&](const void* src, const DeviceBuffer& dst, int64_t heads, int n, int n_pad) {
      FLASHIO_CUDA_CHECK(cudaMemcpy2DAsync(dst.get(), size_t(n_pad) * row_bytes, src, size_t(n) * row_bytes,
                                           size_t(n) * row_bytes, size_t(heads), cudaMemcpyDeviceToDevice, stream));
    };
    const void* q = buf.q;
    const void* k = buf.k;
    const void* v = buf.v;
    if (pad_q_) {
      pad(buf.q, q_pad_, bh_, s_.seqlen_q, s_.rows_padded);
      q = q_pad_.get();
    }
    if (pad_kv_) {
      pad(buf.k, k_pad_, p_.batch * p_.kvh(), s_.seqlen_k, s_.keys_padded);
      pad(buf.v, v_pad_, p_.batch * p_.kvh(), s_.seqlen_k, s_.keys_padded);
      k = k_pad_.get();
      v = v_pad_.get();
    }
    FLASHIO_CUDA_CHECK(cudaMemsetAsync(o_acc_.get(), 0, o_acc_.bytes(), stream));
    FLASHIO_CUBLAS_CHECK(cublasSetStream(handle_, stream));
    baselines::build_blocksparse_pointers(s_, blocks_.as<int2>(), steps_.as<int2>(), q, k, v, scores_.get(),
                                          o_acc_.as<float>(), ptrs_, stream);

    const cudaDataType_t t = cuda_type(p_.dtype);
    const int bs = s_.block, d = s_.head_dim;
    // S_rcᵀ = scale·K_c·Q_rᵀ over every (batch·head, non-zero block).
    const float alpha = float(p_.scale()), zero = 0.f, one = 1.f;
    const int64_t entries = bh_ * s_.nnz;
    for (int64_t off = 0; off < entries; off += kMaxBatch) {
      const int count = int(std::min(kMaxBatch, entries - off));
      FLASHIO_CUBLAS_CHECK(cublasGemmBatchedEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, bs, bs, d, &alpha, ptrs_.s_a + off, t,
                                               d, ptrs_.s_b + off, t, d, &zero, ptrs_.s_c + off, t, bs, count,
                                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }

    baselines::BlocksparseSoftmaxParams sp;
    sp.scores = scores_.get();
    sp.row_ptr = row_ptr_.as<int>();
    sp.col_idx = col_idx_.as<int>();
    sp.key_lengths = buf.key_lengths;
    sp.lse = buf.lse;
    sp.causal = p_.causal;
    sp.dropout = p_.dropout > 0.0;
    sp.seed = p_.seed;
    sp.dropout_threshold = dropout_threshold(p_.dropout);
    sp.dropout_scale = float(dropout_scale(p_.dropout));
    sp.bf16 = p_.dtype == DType::BF16;
    baselines::blocksparse_softmax(s_, sp, stream);

    // O_rᵀ += V_cᵀ·P_rcᵀ, step by step (rows with a k-th block), fp32 accumulation.
    for (size_t k = 0; k + 1 < step_off_.size(); ++k) {
      const int64_t first = step_off_[k] * bh_, end = step_off_[k + 1] * bh_;
      for (int64_t off = first; off < end; off += kMaxBatch) {
        const int count = int(std::min(kMaxBatch, end - off));
        FLASHIO_CUBLAS_CHECK(cublasGemmBatchedEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, d, bs, bs, &one, ptrs_.pv_a + off,
                                                 t, d, ptrs_.pv_b + off, t, bs, &one, ptrs_.pv_c + off, CUDA_R_32F, d,
                                                 count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      }
    }
    baselines::blocksparse_store_o(s_, o_acc_.as<float>(), buf.o, p_.dtype == DType::BF16, stream);
  }

 private:
  Problem p_;
  baselines::BlocksparseShape s_;
  int64_t bh_ = 0;
  std::vector<int64_t> step_off_;  // P·V step k covers steps [step_off[k], step_off[k+1])
  DeviceBuffer blocks_, steps_, row_ptr_, col_idx_, scores_, o_acc_, pointers_, q_pad_, k_pad_, v_pad_, workspace_;
  baselines::BlocksparsePointers ptrs_{};
  bool pad_q_ = false, pad_kv_ = false;
  cublasHandle_t handle_ = nullptr;
};

class BlocksparseStandard final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i;
    i.name = "blocksparse_standard";
    i.summary = "materialized block-sparse attention (FlashAttention §3.3 baseline): S, P only on non-zero blocks, in HBM";
    i.where = "gpu";
    i.passes = {Pass::Fwd};
    i.dtypes = {DType::F16, DType::BF16};
    i.head_dims = {};
    i.masks = {"blocksparse", "causal", "padding"};
    i.dropout = true;
    i.gqa = true;
    i.notes = "needs --pattern; any pattern block size; forward only (no backward yet); cuBLAS batched GEMMs";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (!p.sparse()) return Support::no("blocksparse_standard needs a block-sparse pattern (--pattern); dense is standard");
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    if (auto why = pattern_invalid_reason(p)) return Support::no(*why);
    if (p.head_dim % 8 != 0) return Support::no(fmt::format("head dim must be a multiple of 8 (got {})", p.head_dim));
    if (p.seqlen_q > (int64_t(1) << 30) || p.nk() > (int64_t(1) << 30))
      return Support::no("sequence lengths above 2^30 are not supported");
    return Support::yes();
  }
  std::unique_ptr<Plan> plan(const Problem& p, Pass, const DeviceInfo&, DeviceAllocator& alloc) const override {
    return std::make_unique<BlocksparseStandardPlan>(p, alloc);
  }
};

}  // namespace

std::unique_ptr<Method> make_blocksparse_standard() { return std::make_unique<BlocksparseStandard>(); }

}  // namespace flashio

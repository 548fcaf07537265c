// The `blocksparse_standard` method: the materialized block-sparse baseline FlashAttention
// compared with (§3.3, Figure 2 right): standard attention (Algorithms 0 and 3) computed only
// on the non-zero blocks of the block mask, every intermediate in HBM.
// Forward:
//   S_rc = scale·Q_r·K_cᵀ for every non-zero block (r, c)   one batched cuBLAS GEMM over
//                                                            (batch·head × non-zero blocks),
//                                                            S compact: [B·H, nnz, Bs, Bs]
//   P = softmax over each query row's materialized blocks     one memory-bound kernel over S;
//       (causal, key padding), P_drop = P∘Z                   writes P (and P_drop) and LSE
//   O_r = Σ_c P_drop,rc·V_c                                   batched GEMMs into an fp32 O, one
//                                                            call per step k (the k-th non-zero
//                                                            block of every row), then O in
//                                                            the element type
// Backward (from the P and P_drop the forward left in HBM):
//   dP_drop,rc = dO_r·V_cᵀ on the non-zero blocks             one batched GEMM, compact dP
//   dS = P∘(dP_drop∘Z − D), D_i = Σ_j P_ij·(dP_drop∘Z)_ij     one memory-bound kernel, over dP
//   dV_c = Σ_r P_drop,rcᵀ·dO_r, dK_c = scale·Σ_r dS_rcᵀ·Q_r   batched GEMMs per step over the
//                                                            columns (× query head of a GQA
//                                                            group), fp32 accumulators
//   dQ_r = scale·Σ_c dS_rc·K_c                                as O, fp32 accumulator
// Z_ij = keep(b, h, i, j)/(1 − p) is the shared Philox mask (offset 0). Blocks are the
// pattern's own Bs × Bs (any Bs: no tile constraint); inputs whose length is not a multiple of
// Bs are copied into zero-padded buffers first (Θ(Nd) more traffic).
//
// cuBLAS is column-major: a row-major (r × c) block with row stride c is the column-major
// (c × r) matrix with leading dimension c. S_rcᵀ = K_c·Q_rᵀ (op T on K, op N on Q) lands as
// row-major S_rc; O_rᵀ += V_cᵀ·P_rcᵀ (op N, op N) as row-major O_r; dV_cᵀ += dO_rᵀ·P_rc
// (op N, op T) as row-major dV_c.
//
// IO per (batch, head), s = density, R × C mask blocks, e = element bytes: each non-zero block
// reads a Q and a K block and writes its S block, s·R·C·(2·Bs·d + Bs²)·e = s·(2·Nq·Nk·d/Bs +
// Nq·Nk)·e; the softmax reads S twice and writes P once (twice with dropout), 3·s·Nq·Nk·e; P·V
// reads each P block and V block and reads and writes an fp32 O block, s·Nq·Nk·(e + d·(e + 8)/
// Bs); O written once, Nq·d·e. Θ(Nd + s·N²) at fixed Bs and d: the N² terms scale by s. The
// backward likewise (dP written, read twice, dS written; P, P_drop, dS read by the GEMMs).
//
// Workspace: P (and P_drop with dropout) [B·H, nnz, Bs, Bs]; for the backward dP/dS of the
// same size; fp32 O (dQ, dK, dV) accumulators; 6 (backward: 18) pointer arrays of B·H·nnz;
// padded copies of Q, K, V (dO) when N is not a multiple of Bs; cuBLAS's 32 MiB.
// Run: build/flashio run --method blocksparse_standard --pattern butterfly --seqlen 4096 --pass fwdbwd
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "baselines/blocksparse_standard/blocksparse_standard_kernels.h"
#include "baselines/common/cublas_handle.h"
#include "bench/core/method.h"
#include "bench/core/philox.h"
#include "bench/core/sparsity.h"
#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_memory.h"

namespace flashio {
namespace {

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
  BlocksparseStandardPlan(const Problem& p, Pass pass, DeviceAllocator& alloc) : p_(p), backward_(pass != Pass::Fwd) {
    const BlockMask mask = make_block_mask(p);
    const BlockLists rows = by_rows(mask);
    const int bs = p.sparse_block;
    const int group = int(p.heads / p.kvh());
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
    bkv_ = p.batch * p.kvh();

    // Blocks e in row-major order; the row steps (k-th block of each row) and the column steps
    // ((k-th block of each column) × query head of the group).
    std::vector<int2> blocks;
    std::vector<std::vector<int>> col_blocks(size_t(mask.cols));  // e of each column's blocks, by row
    int max_row = 0;
    for (int64_t r = 0; r < mask.rows; ++r) {
      max_row = std::max(max_row, rows.ptr[size_t(r) + 1] - rows.ptr[size_t(r)]);
      for (int e = rows.ptr[size_t(r)]; e < rows.ptr[size_t(r) + 1]; ++e) {
        blocks.push_back({int(r), rows.idx[size_t(e)]});
        col_blocks[size_t(rows.idx[size_t(e)])].push_back(e);
      }
    }
    std::vector<int2> row_steps;
    row_off_.push_back(0);
    for (int k = 0; k < max_row; ++k) {
      for (int64_t r = 0; r < mask.rows; ++r)
        if (rows.ptr[size_t(r)] + k < rows.ptr[size_t(r) + 1]) row_steps.push_back({int(r), rows.ptr[size_t(r)] + k});
      row_off_.push_back(int64_t(row_steps.size()));
    }
    std::vector<int4> col_steps;
    col_off_.push_back(0);
    if (backward_) {
      size_t max_col = 0;
      for (const auto& c : col_blocks) max_col = std::max(max_col, c.size());
      for (size_t k = 0; k < max_col; ++k)
        for (int g = 0; g < group; ++g) {
          for (size_t c = 0; c < col_blocks.size(); ++c)
            if (k < col_blocks[c].size()) col_steps.push_back({int(c), col_blocks[c][k], g, 0});
          col_off_.push_back(int64_t(col_steps.size()));
        }
    }
    blocks_ = upload(alloc, blocks);
    row_steps_ = upload(alloc, row_steps);
    col_steps_ = upload(alloc, col_steps);
    row_ptr_ = upload(alloc, rows.ptr);
    col_idx_ = upload(alloc, rows.idx);

    const size_t e = size_t(s_.elem_bytes);
    const size_t d = size_t(p.head_dim);
    const size_t compact = std::max<size_t>(1, size_t(bh_) * size_t(s_.nnz) * size_t(bs) * size_t(bs) * e);
    scores_ = DeviceBuffer(alloc, compact);
    if (backward_ && p.dropout > 0.0) p_drop_ = DeviceBuffer(alloc, compact);  // P must survive for dS
    if (backward_) ds_ = DeviceBuffer(alloc, compact);
    const size_t q_acc = size_t(bh_) * size_t(s_.rows_padded) * d * sizeof(float);
    const size_t kv_acc = size_t(bkv_) * size_t(s_.keys_padded) * d * sizeof(float);
    o_acc_ = DeviceBuffer(alloc, q_acc);
    if (backward_) {
      dq_acc_ = DeviceBuffer(alloc, q_acc);
      dk_acc_ = DeviceBuffer(alloc, kv_acc);
      dv_acc_ = DeviceBuffer(alloc, kv_acc);
    }
    const size_t entries = std::max<size_t>(1, size_t(bh_) * size_t(s_.nnz));
    const int arrays = backward_ ? 18 : 6;
    pointers_ = DeviceBuffer(alloc, size_t(arrays) * entries * sizeof(void*));
    void** base = pointers_.as<void*>();
    auto family = [&](int i) {
      return baselines::GemmPointers{const_cast<const void**>(base + size_t(3 * i) * entries),
                                     const_cast<const void**>(base + size_t(3 * i + 1) * entries),
                                     base + size_t(3 * i + 2) * entries};
    };
    ptrs_.scores = family(0);
    ptrs_.pv = family(1);
    if (backward_) {
      ptrs_.dp = family(2);
      ptrs_.dq = family(3);
      ptrs_.dv = family(4);
      ptrs_.dk = family(5);
    }
    pad_q_ = s_.rows_padded != s_.seqlen_q;
    pad_kv_ = s_.keys_padded != s_.seqlen_k;
    auto zeroed = [&](size_t bytes) {  // padding rows stay zero: copies write the valid rows only
      DeviceBuffer b(alloc, bytes);
      FLASHIO_CUDA_CHECK(cudaMemset(b.get(), 0, bytes));
      return b;
    };
    if (pad_q_) {
      q_pad_ = zeroed(size_t(bh_) * size_t(s_.rows_padded) * d * e);
      if (backward_) do_pad_ = zeroed(q_pad_.bytes());
    }
    if (pad_kv_) {
      k_pad_ = zeroed(size_t(bkv_) * size_t(s_.keys_padded) * d * e);
      v_pad_ = zeroed(k_pad_.bytes());
    }
    cublas_ = std::make_unique<CublasHandle>(alloc);
  }
  Tiles tiles() const override { return {s_.block, s_.block, 0, 0, 0}; }
  // Like `standard`, its row statistics come from S rounded to the element type (bf16:
  // 8 bits), too coarse for the LSE tolerance: the LSE is not part of its result.
  bool writes_lse() const override { return false; }

  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    const baselines::BlocksparseOperands ops = operands(buf, stream, false);
    FLASHIO_CUDA_CHECK(cudaMemsetAsync(o_acc_.get(), 0, o_acc_.bytes(), stream));
    const float scale = float(p_.scale()), zero = 0.f, one = 1.f;
    const int bs = s_.block, d = s_.head_dim;
    // S_rcᵀ = scale·K_c·Q_rᵀ over every (batch·head, non-zero block).
    gemms(ptrs_.scores, 0, bh_ * s_.nnz, CUBLAS_OP_T, CUBLAS_OP_N, bs, bs, d, scale, d, d, zero, bs, type());
    baselines::BlocksparseSoftmaxParams sp = softmax_params(buf);
    baselines::blocksparse_softmax(s_, sp, stream);
    // O_rᵀ += V_cᵀ·P_drop,rcᵀ, step by step (rows with a k-th block), fp32 accumulation.
    for (size_t k = 0; k + 1 < row_off_.size(); ++k)
      gemms(ptrs_.pv, row_off_[k] * bh_, row_off_[k + 1] * bh_, CUBLAS_OP_N, CUBLAS_OP_N, d, bs, bs, one, d, bs, one, d,
            CUDA_R_32F);
    baselines::blocksparse_store_rows(bh_, s_.seqlen_q, s_.rows_padded, d, 1.f, o_acc_.as<float>(), buf.o,
                                      p_.dtype == DType::BF16, stream);
    (void)ops;
  }

  void backward(const AttentionBuffers& buf, cudaStream_t stream) override {
    if (!backward_) throw std::logic_error("blocksparse_standard: plan made for the forward only");
    operands(buf, stream, true);
    for (DeviceBuffer* acc : {&dq_acc_, &dk_acc_, &dv_acc_})
      FLASHIO_CUDA_CHECK(cudaMemsetAsync(acc->get(), 0, acc->bytes(), stream));
    const float zero = 0.f, one = 1.f;
    const int bs = s_.block, d = s_.head_dim;
    // dP_drop,rcᵀ = V_c·dO_rᵀ on every non-zero block.
    gemms(ptrs_.dp, 0, bh_ * s_.nnz, CUBLAS_OP_T, CUBLAS_OP_N, bs, bs, d, one, d, d, zero, bs, type());
    baselines::blocksparse_softmax_backward(s_, softmax_params(buf), stream);
    // dQ_rᵀ += K_cᵀ·dS_rcᵀ per row step; dV_cᵀ += dO_rᵀ·P_drop,rc and dK_cᵀ += Q_rᵀ·dS_rc per
    // column step (each step writes every accumulator block at most once).
    for (size_t k = 0; k + 1 < row_off_.size(); ++k)
      gemms(ptrs_.dq, row_off_[k] * bh_, row_off_[k + 1] * bh_, CUBLAS_OP_N, CUBLAS_OP_N, d, bs, bs, one, d, bs, one, d,
            CUDA_R_32F);
    for (size_t k = 0; k + 1 < col_off_.size(); ++k) {
      gemms(ptrs_.dv, col_off_[k] * bkv_, col_off_[k + 1] * bkv_, CUBLAS_OP_N, CUBLAS_OP_T, d, bs, bs, one, d, bs, one,
            d, CUDA_R_32F);
      gemms(ptrs_.dk, col_off_[k] * bkv_, col_off_[k + 1] * bkv_, CUBLAS_OP_N, CUBLAS_OP_T, d, bs, bs, one, d, bs, one,
            d, CUDA_R_32F);
    }
    const bool bf16 = p_.dtype == DType::BF16;
    const float scale = float(p_.scale());
    baselines::blocksparse_store_rows(bh_, s_.seqlen_q, s_.rows_padded, d, scale, dq_acc_.as<float>(), buf.dq, bf16,
                                      stream);
    baselines::blocksparse_store_rows(bkv_, s_.seqlen_k, s_.keys_padded, d, scale, dk_acc_.as<float>(), buf.dk, bf16,
                                      stream);
    baselines::blocksparse_store_rows(bkv_, s_.seqlen_k, s_.keys_padded, d, 1.f, dv_acc_.as<float>(), buf.dv, bf16,
                                      stream);
  }

 private:
  cudaDataType_t type() const { return cuda_type(p_.dtype); }

  // Padded copies (where N is not a multiple of Bs) and the pointer arrays of this call's buffers.
  baselines::BlocksparseOperands operands(const AttentionBuffers& buf, cudaStream_t stream, bool backward) {
    const size_t row_bytes = size_t(p_.head_dim) * size_t(s_.elem_bytes);
    // (n, d) per head → (n_pad, d) per head: one 2-D copy over all heads.
    auto pad = [&](const void* src, const DeviceBuffer& dst, int64_t heads, int n, int n_pad) {
      FLASHIO_CUDA_CHECK(cudaMemcpy2DAsync(dst.get(), size_t(n_pad) * row_bytes, src, size_t(n) * row_bytes,
                                           size_t(n) * row_bytes, size_t(heads), cudaMemcpyDeviceToDevice, stream));
      return dst.get();
    };
    baselines::BlocksparseOperands ops{};
    ops.q = pad_q_ ? pad(buf.q, q_pad_, bh_, s_.seqlen_q, s_.rows_padded) : buf.q;
    ops.k = pad_kv_ ? pad(buf.k, k_pad_, bkv_, s_.seqlen_k, s_.keys_padded) : buf.k;
    ops.v = pad_kv_ ? pad(buf.v, v_pad_, bkv_, s_.seqlen_k, s_.keys_padded) : buf.v;
    if (backward) ops.d_o = pad_q_ ? pad(buf.d_o, do_pad_, bh_, s_.seqlen_q, s_.rows_padded) : buf.d_o;
    ops.p = scores_.get();
    ops.p_drop = p_drop_.get() ? p_drop_.get() : scores_.get();
    ops.ds = ds_.get();
    ops.o_acc = o_acc_.as<float>();
    ops.dq_acc = dq_acc_.as<float>();
    ops.dk_acc = dk_acc_.as<float>();
    ops.dv_acc = dv_acc_.as<float>();
    FLASHIO_CUBLAS_CHECK(cublasSetStream(cublas_->get(), stream));
    baselines::build_blocksparse_pointers(s_, blocks_.as<int2>(), row_steps_.as<int2>(), col_steps_.as<int4>(), ops,
                                          backward, ptrs_, stream);
    return ops;
  }

  baselines::BlocksparseSoftmaxParams softmax_params(const AttentionBuffers& buf) const {
    baselines::BlocksparseSoftmaxParams sp;
    sp.scores = scores_.get();
    sp.p_drop = p_drop_.get();
    sp.dp = ds_.get();
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
    return sp;
  }

  // Batched GEMMs over entries [first, end) of a family, in calls of at most kMaxBatch.
  void gemms(const baselines::GemmPointers& f, int64_t first, int64_t end, cublasOperation_t ta, cublasOperation_t tb,
             int m, int n, int k, float alpha, int lda, int ldb, float beta, int ldc, cudaDataType_t c_type) {
    const cudaDataType_t t = type();
    for (int64_t off = first; off < end; off += kMaxBatch) {
      const int count = int(std::min(kMaxBatch, end - off));
      FLASHIO_CUBLAS_CHECK(cublasGemmBatchedEx(cublas_->get(), ta, tb, m, n, k, &alpha, f.a + off, t, lda, f.b + off, t,
                                               ldb, &beta, f.c + off, c_type, ldc, count, CUBLAS_COMPUTE_32F,
                                               CUBLAS_GEMM_DEFAULT));
    }
  }

  Problem p_;
  bool backward_;
  baselines::BlocksparseShape s_;
  int64_t bh_ = 0, bkv_ = 0;
  std::vector<int64_t> row_off_;  // row step k covers row_steps [row_off[k], row_off[k+1])
  std::vector<int64_t> col_off_;  // column step (k, g) covers col_steps [col_off[i], col_off[i+1])
  DeviceBuffer blocks_, row_steps_, col_steps_, row_ptr_, col_idx_, scores_, p_drop_, ds_, o_acc_, dq_acc_, dk_acc_,
      dv_acc_, pointers_, q_pad_, do_pad_, k_pad_, v_pad_;
  baselines::BlocksparsePointers ptrs_{};
  bool pad_q_ = false, pad_kv_ = false;
  std::unique_ptr<CublasHandle> cublas_;
};

}  // namespace

std::unique_ptr<Plan> plan_blocksparse_standard(const Problem& p, Pass pass, const DeviceInfo&,
                                                DeviceAllocator& alloc) {
  return std::make_unique<BlocksparseStandardPlan>(p, pass, alloc);
}

}  // namespace flashio

// Memory-bound kernels of the blocksparse_standard baseline (see blocksparse_standard_method.cpp):
// the pointer arrays of its batched GEMMs, the row softmax and softmax backward over the
// materialized non-zero blocks, and the fp32 → element-type copies of O, dQ, dK, dV. Plain C++
// interface.
#pragma once
#include <vector_types.h>  // int2, int4

#include <cstdint>

typedef struct CUstream_st* cudaStream_t;

namespace flashio::baselines {

// Shapes shared by the kernels. Blocks are Bs × Bs; the inputs are padded to whole blocks
// (Np = R·Bs query rows, Nkp = C·Bs keys; padding rows are zero).
struct BlocksparseShape {
  int batch = 0, heads = 0, kv_heads = 0;
  int seqlen_q = 0, seqlen_k = 0;        // unpadded
  int rows_padded = 0, keys_padded = 0;  // Np, Nkp
  int head_dim = 0;
  int block = 0;  // Bs
  int nnz = 0;    // non-zero blocks of the mask (shared by every batch and head)
  int elem_bytes = 2;
};

// One family of batched GEMMs: entry t multiplies a[t] by b[t] into c[t].
struct GemmPointers {
  const void** a;
  const void** b;
  void** c;
};

// The operands the pointers point into (device; the *_pad ones padded to whole blocks).
struct BlocksparseOperands {
  const void* q;    // [B, H, Np, d]
  const void* k;    // [B, Hkv, Nkp, d]
  const void* v;    // [B, Hkv, Nkp, d]
  const void* d_o;  // [B, H, Np, d] (backward)
  void* p;          // [B·H, nnz, Bs, Bs]: S, then P (undropped when p_drop is separate)
  void* p_drop;     // P∘Z for P·V and dV: = p without dropout
  void* ds;         // [B·H, nnz, Bs, Bs]: dP∘Z, then dS (backward)
  float* o_acc;     // [B, H, Np, d]
  float* dq_acc;    // [B, H, Np, d]
  float* dk_acc;    // [B, Hkv, Nkp, d]
  float* dv_acc;    // [B, Hkv, Nkp, d]
};

// Block lists (device):
//   blocks[e] = (row, col) of non-zero block e, row-major order;
//   row_steps[u] = (row, e), step-major: step k holds the k-th block of every row that has one;
//   col_steps[u] = (col, e, g, 0), step-major over (k, g): the k-th block of every column that
//                  has one, for query head g of the GQA group (so no two entries of one step
//                  write the same dK/dV block).
// Families, BH = B·H, BKV = B·Hkv, G = H/Hkv (each has BH·nnz entries):
//   scores (t = bh·nnz + e):  K_col · Q_rowᵀ → S            dp: V_col · dO_rowᵀ → dP
//   rows   (t = u·BH + bh):   V_col, P_drop → O_acc_row      dq: K_col, dS → dQ_acc_row
//   cols   (t = u·BKV + bkv): dO_row, P_drop → dV_acc_col    dk: Q_row, dS → dK_acc_col
struct BlocksparsePointers {
  GemmPointers scores, pv, dp, dq, dv, dk;
};

void build_blocksparse_pointers(const BlocksparseShape& s, const int2* blocks, const int2* row_steps,
                                const int4* col_steps, const BlocksparseOperands& ops, bool backward,
                                const BlocksparsePointers& out, cudaStream_t stream);

// Forward, in place over the compact scores (already scaled): each query row's softmax over
// the materialized blocks of its block row (row_ptr/col_idx: the mask's row lists), with the
// causal and key-padding masks. Writes P over S, and P∘Z to p_drop when it is a separate
// buffer (else P∘Z over S). Rows of no key (and padding rows) get P = 0 and LSE = -inf.
// Backward (softmax_backward): D_i = Σ_j P_ij·(dP∘Z)_ij, dS = P∘(dP∘Z − D) over dP.
struct BlocksparseSoftmaxParams {
  void* scores;
  void* p_drop;  // null: in place
  void* dp;      // backward: dP in, dS out
  const int* row_ptr;
  const int* col_idx;
  const int* key_lengths;  // [B] or null
  float* lse;              // [B·H, Nq] natural log, or null
  bool causal = false;
  bool dropout = false;
  uint64_t seed = 0;
  uint32_t dropout_threshold = 0;
  float dropout_scale = 1.f;
  bool bf16 = false;
};
void blocksparse_softmax(const BlocksparseShape& s, const BlocksparseSoftmaxParams& p, cudaStream_t stream);
void blocksparse_softmax_backward(const BlocksparseShape& s, const BlocksparseSoftmaxParams& p, cudaStream_t stream);

// out[h, i, :] = scale·acc[h, i, :] for i < n (acc: [heads, n_pad, d] fp32), in the element type.
void blocksparse_store_rows(int64_t heads, int n, int n_pad, int d, float scale, const float* acc, void* out, bool bf16,
                            cudaStream_t stream);

}  // namespace flashio::baselines

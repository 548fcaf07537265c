// Memory-bound kernels of the blocksparse_standard baseline (see blocksparse_standard_method.cpp):
// the pointer arrays of its batched GEMMs, the row softmax over the materialized non-zero
// blocks, and the fp32 → element-type copy of O. Plain C++ interface.
#pragma once
#include <cstdint>

#include <vector_types.h>  // int2

typedef struct CUstream_st* cudaStream_t;

namespace flashio::baselines {

// Shapes shared by the kernels. Blocks are Bs × Bs; the inputs are padded to whole blocks
// (Np = R·Bs query rows, Nkp = C·Bs keys; padding rows are zero).
struct BlocksparseShape {
  int batch = 0, heads = 0, kv_heads = 0;
  int seqlen_q = 0, seqlen_k = 0;  // unpadded
  int rows_padded = 0, keys_padded = 0;  // Np, Nkp
  int head_dim = 0;
  int block = 0;  // Bs
  int nnz = 0;    // non-zero blocks of the mask (shared by every batch and head)
  int elem_bytes = 2;
};

// Pointer arrays (device) of the two batched GEMM families, BH = batch·heads:
//   scores, entry bh·nnz + e:  K block col(e) of bh's K/V head, Q block row(e), S block (bh, e)
//   pv, entry u·BH + bh:       V block col(e_u), P block (bh, e_u), O_acc block row(r_u), where
//                              (r_u, e_u) = steps[u] lists the blocks step by step (step k holds
//                              the k-th block of every row that has one)
struct BlocksparsePointers {
  const void** s_a;  // [BH·nnz]
  const void** s_b;
  void** s_c;
  const void** pv_a;  // [nnz·BH]
  const void** pv_b;
  void** pv_c;
};

// blocks: (row, col) per non-zero block, row-major order (e); steps: (row, e) step-major.
void build_blocksparse_pointers(const BlocksparseShape& s, const int2* blocks, const int2* steps, const void* q_pad,
                                const void* k_pad, const void* v_pad, void* scores, float* o_acc,
                                const BlocksparsePointers& out, cudaStream_t stream);

// In place over the compact scores [BH, nnz, Bs, Bs] (already scaled): each query row's
// softmax over the materialized blocks of its block row (row_ptr/col_idx: the mask's row lists),
// with the causal and key-padding masks; P∘Z with dropout (Philox, offset 0). Rows of no key
// (and padding rows) get P = 0 and LSE = -inf. lse: [BH, Nq] natural log, or null.
struct BlocksparseSoftmaxParams {
  void* scores;
  const int* row_ptr;
  const int* col_idx;
  const int* key_lengths;  // [B] or null
  float* lse;
  bool causal = false;
  bool dropout = false;
  uint64_t seed = 0;
  uint32_t dropout_threshold = 0;
  float dropout_scale = 1.f;
  bool bf16 = false;
};
void blocksparse_softmax(const BlocksparseShape& s, const BlocksparseSoftmaxParams& p, cudaStream_t stream);

// O[bh, i, :] = O_acc[bh, i, :] for i < Nq, in the element type (O_acc: [BH, Np, d] fp32).
void blocksparse_store_o(const BlocksparseShape& s, const float* o_acc, void* o, bool bf16, cudaStream_t stream);

}  // namespace flashio::baselines

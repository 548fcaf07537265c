// The argument blocks of the fused attention kernels (flash1, flash2 mma.sync and wgmma,
// block-sparse): the tensors, shape, masks, softmax scale and dropout of one call. Plain C++ so
// host code fills them without CUDA headers (kernels/common/problem_params.h fills the shared fields).
#pragma once
#include <cstdint>

namespace flashio::kernels {

struct FwdParams {
  const void* q;  // [B, H, Nq, d]
  const void* k;  // [B, Hkv, Nk, d]
  const void* v;  // [B, Hkv, Nk, d]
  void* o;        // [B, H, Nq, d]
  float* lse;     // [B, H, Nq], natural log
  const int* key_lengths;  // [B] or null
  int batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim;
  float scale_log2;  // softmax scale · log2(e): scores live in base 2 inside the kernel
  bool causal;
  // Dropout (bench/core/philox.h): keep iff the 16-bit Philox value >= dropout_threshold (⌊p·2^16⌋).
  bool dropout;
  uint32_t dropout_threshold;
  float dropout_scale;  // 1 / (1 - p)
  uint64_t seed;
  // Block-sparse only (blocksparse_flash; ignored by the dense kernels): the non-zero K/V tiles
  // of Q tile i are sparse_idx[sparse_ptr[i] .. sparse_ptr[i+1]), increasing (bench/core/sparsity.h
  // by_rows of the mask at the forward's tile size).
  const int* sparse_ptr;  // [⌈Nq/Br⌉ + 1]
  const int* sparse_idx;  // [non-zero tiles]
  // Packed variable lengths (flash2's varlen kernels only, kVarlen; ignored by the others): Q, O
  // [H, T, d], K, V [Hkv, T, d], L [H, T]; sequence b's tokens are rows cu_seqlens[b] ..
  // cu_seqlens[b+1] of each head; seqlen_q = seqlen_k = the longest sequence. Null otherwise.
  const int* cu_seqlens;  // [B + 1]
  int total_tokens;       // T = cu_seqlens[B]
};

struct BwdParams {
  const void* q;      // [B, H, Nq, d]
  const void* k;      // [B, Hkv, Nk, d]
  const void* v;      // [B, Hkv, Nk, d]
  const void* o;      // [B, H, Nq, d]
  const void* d_o;    // [B, H, Nq, d]
  const float* lse;   // [B, H, Nq] from the forward, natural log
  float* d_sum;       // [B, H, Nq] workspace: D = rowsum(dO ∘ O)
  float* dq_accum;    // [B, H, Nq, d] workspace: fp32 dQ, accumulated with atomics (or in turn)
  // Deterministic mode only: per (batch, query head, Q tile of the backward's Br) the count of
  // K/V tiles that have added their dQ contribution; zeroed by the launch. Null otherwise.
  int* dq_semaphore;  // [B, H, ⌈Nq/Br⌉]
  void* dq;           // [B, H, Nq, d]
  void* dk;           // [B, Hkv, Nk, d]
  void* dv;           // [B, Hkv, Nk, d]
  const int* key_lengths;
  int batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim;
  float scale;       // softmax scale
  float scale_log2;  // scale · log2(e)
  bool causal;
  bool dropout;
  uint32_t dropout_threshold;
  float dropout_scale;
  uint64_t seed;
  bool deterministic;  // dQ added by K/V tiles in order n = 0, 1, … (dq_semaphore), no atomics
  // Block-sparse only: the non-zero Q tiles of K/V tile j are sparse_idx[sparse_ptr[j] ..
  // sparse_ptr[j+1]), increasing (by_cols of the mask at the backward's tile size).
  const int* sparse_ptr;  // [⌈Nk/Bc⌉ + 1]
  const int* sparse_idx;
};

}  // namespace flashio::kernels

// The argument block of flash_decode's kernels and their host entry points. Plain C++ so host
// code fills them without CUDA headers.
#pragma once
#include <cstdint>

typedef struct CUstream_st* cudaStream_t;

namespace flashio::kernels {

struct DecodeParams {
  const void* q;  // [B, H, Nq, d]
  // K, V: contiguous [B, Hkv, Nk, d] (block_table null), or pages [pages, Hkv, page, d] with
  // block_table [B, pages_per_seq] naming the physical page of each logical one. Either way key
  // `key` of (b, hk) is row ((phys·Hkv + hk)·page + key % page) with phys = b, page = Nk when
  // contiguous.
  const void* k;
  const void* v;
  const int* block_table;
  void* o;                 // [B, H, Nq, d]
  float* lse;              // [B, H, Nq], natural log
  const int* key_lengths;  // [B] or null
  // The splits' results (splits > 1): O of each split normalised by its own ℓ, and its L.
  float* o_partial;    // [splits, B·H·Nq, d]
  float* lse_partial;  // [splits, B·H·Nq]
  // Splits of each (batch, K/V head, row tile) finished in this launch, [B, Hkv·row_tiles]: zero
  // before a launch, and left zero by the last split, which combines the rows.
  int* splits_done;
  int batch, heads, kv_heads, seqlen_q, seqlen_k, head_dim;
  int page, pages_per_seq;
  int row_tiles;                // ⌈(H/Hkv)·Nq / 16⌉
  int splits, tiles_per_split;  // varlen: the grid's splits; sequence b has decode_sequence_splits of them
  float scale_log2;             // softmax scale · log2(e)
  bool causal;                  // top-left aligned, as every method (bench/core/problem.h)
  // Varlen decode (cu_seqlens non-null): sequence b's keys cu_seqlens[b + 1] − cu_seqlens[b]; K, V
  // packed [Hkv, T, d], T = total_tokens, key `key` of (b, hk) at row hk·T + cu_seqlens[b] + key;
  // or, with block_table (paged varlen), in pages as above, sequence b's first ⌈L_b/page⌉ entries
  // of its row of the table. Last, so the dense kernel's parameter offsets (and its SASS) are
  // those it had before.
  const int* cu_seqlens;  // [B + 1] or null (the names fwd_key_length reads)
  int64_t total_tokens;
};

// Where a thread block finds its sequence's keys and how many there are: the split kernel's
// template flag, chosen at the launch from cu_seqlens and block_table.
//   Dense        K/V contiguous or paged (block_table), Nk keys or key_lengths[b]; every split runs
//   Packed       varlen decode, K/V packed through cu_seqlens; each sequence its own splits
//   PagedVarlen  varlen decode, K/V paged (block_table), the lengths from cu_seqlens; likewise
enum class DecodeKv { Dense, Packed, PagedVarlen };

// The split kernel over grid (splits, Hkv·row_tiles, B); with splits > 1 the last split of each
// row tile to finish combines them.
// Throws CudaError on a launch failure, std::invalid_argument for a head dim not compiled.
void flash_decode_fwd(const DecodeParams& params, bool bf16, cudaStream_t stream);

}  // namespace flashio::kernels

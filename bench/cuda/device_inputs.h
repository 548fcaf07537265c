// The input generator (bench/core/inputs.h) run on the GPU: the same input_word, so the same
// bits as the host's fill_normal, without generating and copying the tensor on the host.
#pragma once
#include <cstddef>
#include <cstdint>

#include "bench/core/inputs.h"

typedef struct CUstream_st* cudaStream_t;

namespace flashio {

// Elements [0, count) of `tensor` into the device array `out`, enqueued on `stream`.
void generate_inputs_on_device(uint16_t* out, size_t count, DType dtype, uint64_t seed, InputTensor tensor,
                               cudaStream_t stream);

// The same elements of K or V written into a paged cache (Problem::kv_page, KvPages): logical
// element ((b·Hkv + hk)·Nk + key)·d + col, generated as above, lands in physical page
// table[b·pages_per_seq + key / page] (`table` on the device), row key % page of head hk. The
// slots of the last pages past Nk are not written. With `key_lengths` ([B] on the device: a paged
// varlen decode, KvPages), only sequence b's keys below key_lengths[b] are (its table has no page
// for the others): the values of the padded twin at the real keys, as the packed layout holds.
struct PagedKvGeometry {
  int64_t batch, kv_heads, seqlen_k, head_dim, page, pages_per_seq;
  const int32_t* key_lengths = nullptr;
};
void generate_paged_inputs_on_device(uint16_t* out, const int32_t* table, const PagedKvGeometry& g, DType dtype,
                                     uint64_t seed, InputTensor tensor, cudaStream_t stream);

// A tensor of a packed varlen problem (Problem::packed()): [heads, T, d] with sequence b's tokens
// at rows cu[b] .. cu[b+1] (`cu` [B + 1] on the device, int32). Token t = cu[b] + i of head h
// holds logical element ((b·heads + h)·N + i)·d + col of the padded [B, heads, N, d] tensor
// (N the longest sequence), generated as above: the packed tensor, its padded twin and the host's
// reference read the same values.
struct VarlenGeometry {
  int64_t batch, heads, total, seqlen, head_dim;
};
void generate_varlen_inputs_on_device(uint16_t* out, const int32_t* cu, const VarlenGeometry& g, DType dtype,
                                      uint64_t seed, InputTensor tensor, cudaStream_t stream);

}  // namespace flashio

// The float64 CPU reference: the ground truth of every correctness check and test.
// Inputs are the exact 16-bit values the GPU methods read (BHND), widened to double;
// softmax(scale·QKᵀ + mask)·V is evaluated row by row in float64.
// Conventions shared by every method: causal is top-left aligned (key j is visible to
// query i iff j <= i); with key padding, sequence b sees keys j < key_lengths[b]; a row
// that sees no key at all has O = 0 and LSE = -inf. With a block-sparse pattern
// (p.sparse(), bench/core/sparsity.h), key j is visible to query i only where the expanded block
// mask allows it as well; a row whose blocks are all zero sees no key (O = 0, LSE = -inf, zero
// gradients).
// Dropout (p.dropout > 0) is applied to P after the softmax, as in FlashAttention
// (Algorithm 2) and PyTorch: O_i = Σ_j P_ij · keep(b,h,i,j)/(1-p) · V_j, with the mask of
// bench/core/philox.h drawn from p.seed at offset 0; LSE is that of the scores, which
// dropout does not change.
#pragma once
#include <cstdint>
#include <vector>

#include "bench/core/host_device.h"
#include "bench/core/problem.h"

namespace flashio {

struct RowId {
  int64_t b, h, i;  // batch, head, query row
};

struct HostTensors {
  const uint16_t* q = nullptr;  // [B, H, Nq, d] words of p.dtype
  const uint16_t* k = nullptr;  // [B, Hkv, Nk, d]
  const uint16_t* v = nullptr;  // [B, Hkv, Nk, d]
  const int32_t* key_lengths = nullptr;  // [B] or null
};

// Keys query row i of sequence b sees before any block mask: its sequence's keys (key_lengths[b]
// with key padding, else all nk), then the causal limit (top-left: keys j <= i). The host's
// reference and the GPU's (bench/cuda/device_reference.cu) both ask here.
FLASHIO_HOST_DEVICE int64_t keys_seen(int64_t nk, const int32_t* key_lengths, bool causal, int64_t b, int64_t i) {
  int64_t visible = key_lengths && key_lengths[b] < nk ? int64_t(key_lengths[b]) : nk;
  if (causal && i + 1 < visible) visible = i + 1;
  return visible > 0 ? visible : 0;
}

// O rows (rows.size() × d, row-major) and their log-sum-exp (natural log, of the scaled
// scores). Threads share the rows; the result does not depend on `threads`.
void reference_rows(const Problem& p, const HostTensors& t, const std::vector<RowId>& rows,
                    std::vector<double>& out, std::vector<double>& lse, int threads = 0);

// All rows, in BHND order; of a varlen problem, the rows of the real tokens (i < its length),
// packed or padded alike.
std::vector<RowId> all_rows(const Problem& p);

// Query rows of sequence b: its length (varlen) or seqlen_q.
int64_t query_length(const Problem& p, int64_t b);

// Multiply-adds the reference needs for `nrows` query rows.
double reference_cost(const Problem& p, int64_t nrows);

// Backward pass (FlashAttention Algorithm 3/4 in float64), given dO [B, H, Nq, d]:
//   P = softmax(scale·QKᵀ + mask), Z = dropout keep/(1-p) (1 without dropout)
//   dV = (P∘Z)ᵀ dO,  dP = (dO Vᵀ)∘Z,  D_i = Σ_j P_ij dP_ij,  dS = P∘(dP − D)
//   dQ = scale·dS K,  dK = scale·dSᵀ Q  (dK, dV summed over the query heads of a GQA group)
// dQ of a row needs only that row; dK and dV of a key need every query row of its group.

// dQ of `rows` (rows.size() × d).
void reference_dq_rows(const Problem& p, const HostTensors& t, const uint16_t* d_o, const std::vector<RowId>& rows,
                       std::vector<double>& dq, int threads = 0);

// dK and dV of K/V head `hk` of sequence `b` (each Nk × d).
void reference_dkdv_head(const Problem& p, const HostTensors& t, const uint16_t* d_o, int64_t b, int64_t hk,
                         std::vector<double>& dk, std::vector<double>& dv, int threads = 0);

// Multiply-adds of reference_dkdv_head for one K/V head.
double reference_dkdv_cost(const Problem& p);

// Whether the GPU's float64 reference (bench/cuda/device_reference.h) covers `p`: dense
// [B, H, N, d] layouts (not packed, not paged), no block-sparse mask, d <= 256. The others are
// made on the host.
bool device_reference_covers(const Problem& p);

}  // namespace flashio

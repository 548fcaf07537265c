// The float64 reference (bench/core/reference.h) made on the GPU, from the inputs the methods read
// there: the same definitions (causal top-left, key padding, the Philox dropout mask, GQA, Nq ≠ Nk,
// a row that sees no key: O = 0, LSE = -inf, zero gradients), every product and sum in float64,
// each sum over its terms in a fixed order, so the result is the same on every run of any GPU of
// one architecture. It agrees with the host's to rounding, not to the bit (the exponential and the
// order of the sums differ): tests/test_gpu_reference.cpp holds it to 1e-12 of each tensor's
// largest value on random problems. Only the problems device_reference_covers() names (dense
// [B, H, N, d] layouts); the others keep the host's.
//
// Why: with two or more GPUs the host's float64 reference of every GPU's problems shared the
// host's cores with the workers that launch, synchronise and compare, and made each of them wait
// (issue 22, docs/sweep-time.md step 19). Here it is a few milliseconds of each problem's own GPU,
// run between points, never while one is timed.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "bench/core/reference.h"

typedef struct CUstream_st* cudaStream_t;

namespace flashio {

class DeviceAllocator;

// Device pointers of a dense problem's inputs: q, d_o [B, H, Nq, d]; k, v [B, Hkv, Nk, d];
// key_lengths [B] (int32) or null; d_o may be null for the forward.
struct DeviceTensors {
  const uint16_t* q = nullptr;
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  const uint16_t* d_o = nullptr;
  const int32_t* key_lengths = nullptr;
};

// O rows (rows.size() × d) and their LSE, as reference_rows. Enqueued on `stream` and waited for;
// its device memory from `alloc`.
void device_reference_rows(const Problem& p, const DeviceTensors& t, const std::vector<RowId>& rows,
                           std::vector<double>& out, std::vector<double>& lse, DeviceAllocator& alloc,
                           cudaStream_t stream);

// dQ of `rows` (rows.size() × d), as reference_dq_rows.
void device_reference_dq_rows(const Problem& p, const DeviceTensors& t, const std::vector<RowId>& rows,
                              std::vector<double>& dq, DeviceAllocator& alloc, cudaStream_t stream);

// dK and dV of the K/V heads `heads` ((b, hk) pairs), each Nk × d, one head after the other in
// the order given, as reference_dkdv_head of each.
void device_reference_dkdv_heads(const Problem& p, const DeviceTensors& t,
                                 const std::vector<std::pair<int64_t, int64_t>>& heads, std::vector<double>& dk,
                                 std::vector<double>& dv, DeviceAllocator& alloc, cudaStream_t stream);

}  // namespace flashio

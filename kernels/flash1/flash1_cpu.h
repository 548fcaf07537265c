// flash1 on the CPU: FlashAttention's tiled schedule as published (FlashAttention paper,
// appendix B: Algorithm 2 forward with masking and dropout, Algorithm 4 backward), run in plain
// C++ so that the algorithm itself — not only the float64 reference — is tested in CI without a
// GPU, and so that the IO model of flash1 can be checked against the loads and stores the
// schedule actually performs.
//
// Loop order (both passes): outer loop over K/V blocks j = 0 … Tc−1 (Tc = ⌈Nk/Bc⌉), inner loop
// over Q blocks i = 0 … Tr−1 (Tr = ⌈Nq/Br⌉), one (batch, head) after the other. Arrays that the
// paper keeps "in HBM" are plain arrays here: O, ℓ, m (forward) and dQ (backward) are re-read
// and re-written on every inner iteration; everything "on chip" lives in per-tile fp32 buffers.
//
// Numerics (what a GPU kernel with fp32 accumulation does):
//   - Q, K, V, dO are the problem's 16-bit words (fp16/bf16), widened exactly to float;
//   - S, the softmax statistics, P and every accumulation are float;
//   - the matmul operands that are not inputs — P̃_dropped before P̃·V (forward line 15),
//     P_dropped before Pᵀ·dO and dS before dS·K and dSᵀ·Q (backward lines 16, 21, 22) — are
//     rounded to the dtype, as tensor cores see them;
//   - O, ℓ, m and dQ stay float in HBM; the backward reads the forward's O rounded to the dtype
//     (as the output tensor a GPU method returns) and the forward's ℓ, m.
// ℓ̃ is the row sum of P̃ before dropout; dropout multiplies P̃ by keep/(1−p), with the shared
// Philox mask (bench/core/philox.h, offset 0). Masks are the suite's (reference.h): causal
// top-left (key j visible to query i iff j ≤ i), key padding by HostTensors::key_lengths.
// A row that sees no key keeps O = 0, ℓ = 0, m = −inf and gets LSE = −inf and zero gradients.
//
// Masked blocks. A block (i, j) none of whose elements is visible — causal: its first key is
// after its last query; padding: its first key is at or past the sequence's key length — is
// skipped whole, as a GPU kernel skips it: no loads, no stores, no arithmetic. An outer
// iteration j none of whose blocks is visible does not load K_j, V_j. Partly masked blocks are
// computed in full with −inf scores (line 11 / line 12).
//
// What is counted (Flash1HbmTraffic), in ELEMENTS, not bytes (the IO model multiplies by each
// tensor's element size: 2 bytes for Q, K, V, dO and the returned O; 4 for the fp32 O, ℓ, m,
// dQ accumulators and dK, dV): every element load from and store to an HBM tensor as the
// schedule performs it, counting only the rows that exist (a last partial block of r rows moves
// r·d elements, not Br·d):
//   forward  — K_j, V_j once per visited outer iteration (line 7); Q_i, O_i, ℓ_i, m_i on each
//              visited inner iteration (line 9), except O_i, ℓ_i, m_i on the first visit of
//              block i, whose values are the initial 0, 0, −inf of line 3 and are made on chip;
//              O_i, ℓ_i, m_i written on each visited inner iteration (lines 15, 16). The
//              initialisation of line 3 is not counted (it is never read back: a memset a
//              kernel folds into its first visit). LSE = m + log ℓ is formed after the loops
//              and not counted (a kernel forms it on chip in its last visit).
//              No mask: Q reads Tc·Nq·d, K and V reads Nk·d, O reads (Tc−1)·Nq·d,
//              O writes Tc·Nq·d, ℓ and m reads (Tc−1)·Nq and writes Tc·Nq, per head.
//   backward — K_j, V_j once per visited outer iteration (line 7); Q_i, O_i, dO_i, ℓ_i, m_i on
//              each visited inner iteration (line 10; dO_i is read there although line 10 does
//              not list it, line 16 needs it); dQ_i read on each visited inner iteration except
//              the first of block i (zero, line 5) and written on each (line 21); dK_j, dV_j
//              written once per outer iteration, visited or not (line 24: an all-masked K/V
//              block has zero gradients, which must still reach HBM).
//              No mask: Q, O, dO reads Tc·Nq·d, ℓ, m reads Tc·Nq, dQ reads (Tc−1)·Nq·d,
//              dQ writes Tc·Nq·d, K, V reads Nk·d, dK, dV writes Nk·d, per head.
//
// Tested by tests/test_flash1_cpu.cpp (./build/tests/flashio_cpu_tests --gtest_filter='Flash1Cpu*').
#pragma once
#include <cstdint>
#include <vector>

#include "bench/core/reference.h"
#include "bench/core/problem.h"

namespace flashio {

// Element loads and stores of one HBM tensor.
struct Flash1HbmTensorTraffic {
  int64_t reads = 0;
  int64_t writes = 0;
};

// Per-tensor HBM traffic of one pass, in elements (see the header comment for the convention).
struct Flash1HbmTraffic {
  Flash1HbmTensorTraffic q, k, v, o, l, m;  // both passes (the backward reads O, ℓ, m)
  Flash1HbmTensorTraffic d_o, dq, dk, dv;   // backward only
  int64_t blocks_visited = 0;               // (i, j) blocks computed, over all (batch, head)
  int64_t blocks_skipped = 0;               // (i, j) blocks skipped as entirely masked

  int64_t reads() const;   // sum over tensors
  int64_t writes() const;  // sum over tensors
};

struct Flash1CpuResult {
  // Forward (empty after the backward): [B, H, Nq, d] and [B, H, Nq], fp32.
  std::vector<float> o;    // O as left in HBM by the last inner iteration that touched each row
  std::vector<float> l;    // ℓ: the softmax denominators (Algorithm 2 line 19)
  std::vector<float> m;    // m: the row maxima of the scaled scores
  std::vector<float> lse;  // m + log ℓ (natural log); −inf for a row that sees no key
  // Backward (empty after the forward): dQ [B, H, Nq, d], dK and dV [B, H, Nk, d], fp32.
  std::vector<float> dq, dk, dv;
  Flash1HbmTraffic traffic;
  int64_t hbm_reads = 0;   // traffic.reads(), elements
  int64_t hbm_writes = 0;  // traffic.writes(), elements
};

// Deliberate mistakes for the tests' sensitivity checks (a tolerance that passes these is too
// loose). Production callers leave the default.
enum class Flash1CpuFault {
  None,
  ForgetOutputRescale,  // forward line 15 without e^{m_i − m_new} on the old O_i
  ForgetDropoutOnDp,    // backward line 18 skipped: dP = dO·Vᵀ without ∘Z
  ForgetRowDotD,        // backward line 20 with D_i = 0
};

// Algorithm 2 with Br = block_r, Bc = block_c (any positive sizes; they need not divide N).
// Throws std::invalid_argument for an invalid problem, GQA/MQA (kv_heads ≠ heads: flash1 has
// none), or non-positive block sizes.
Flash1CpuResult flash1_forward_cpu(const Problem& p, const HostTensors& t, int block_r, int block_c,
                                   Flash1CpuFault fault = Flash1CpuFault::None);

// Algorithm 4, given dO ([B, H, Nq, d] words of p.dtype) and the forward's result (its O,
// rounded to the dtype, and its ℓ, m). Fills dq, dk, dv and the backward's traffic.
Flash1CpuResult flash1_backward_cpu(const Problem& p, const HostTensors& t, const uint16_t* d_o,
                                    const Flash1CpuResult& forward, int block_r, int block_c,
                                    Flash1CpuFault fault = Flash1CpuFault::None);

}  // namespace flashio

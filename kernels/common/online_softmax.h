// Online softmax: the running row max m and unnormalised row sum ℓ that let the fused kernels
// see one K/V tile at a time (FlashAttention Algorithm 1 lines 9-13; FlashAttention-2 §3.1.1,
// which defers the division by ℓ to the end). One helper for every fused forward — flash2
// (mma.sync and wgmma) and flash1 — and host-callable, so tests/test_online_softmax.cpp checks it
// on the CPU against flash1_cpu and the float64 reference.
//
// Numerics (shared bit for bit by the kernels, which compare outputs across methods): scores
// stay raw (unscaled) in the accumulators, m too; the scale τ·log2(e) is folded into exp2's
// argument, P = exp2(fma(s, τ·log2 e, −m·τ·log2 e)), and the rescale factor is
// exp2(m_old·τ·log2 e − m_new·τ·log2 e). A row that has seen no key keeps m = −inf and
// subtracts 0 instead, so exp2 gives 0, not NaN. L = (m·τ·log2 e + log2 ℓ)·ln 2.
//
// Fragments. The helpers work on a thread's share of a tile as the tensor cores leave it:
// n8 tiles j = 0 … kTiles−1 of four floats, (j, 0), (j, 1) in the thread's first row ("hr = 0",
// row g of an m16 tile) and (j, 2), (j, 3) in its second (hr = 1, row g + 8) — mma.sync's C
// fragment, and each warp's part of a wgmma accumulator (kernels/common/dropout_fragments.cuh
// draws the layout). Two array shapes hold it: float[kTiles][4] (mma.sync kernels) and
// float[4·kTiles] (wgmma). A row is spread over the four lanes of a quad on the GPU (Reduce =
// QuadRowReduce, kernels/common/mma.cuh); on the CPU one thread holds it (RowInThread).
#pragma once
#include <cmath>

#include "kernels/common/host_device.h"

namespace flashio::kernels {

constexpr float kLog2e = 1.4426950408889634f;  // log2(e): exp(x) = exp2(x·kLog2e)
constexpr float kLn2 = 0.6931471805599453f;    // ln(2): ln(x) = log2(x)·kLn2

// Number of n8 tiles in a fragment array, and element (j, e) of it.
template <class A>
struct FragmentTiles;
template <int N>
struct FragmentTiles<float[N][4]> {
  static constexpr int value = N;
};
template <int N>
struct FragmentTiles<float[N]> {
  static_assert(N % 4 == 0, "four floats per n8 tile");
  static constexpr int value = N / 4;
};
template <int N>
FLASHIO_HOST_DEVICE float& frag(float (&a)[N][4], int j, int e) {
  return a[j][e];
}
template <int N>
FLASHIO_HOST_DEVICE const float& frag(const float (&a)[N][4], int j, int e) {
  return a[j][e];
}
template <int N>
FLASHIO_HOST_DEVICE float& frag(float (&a)[N], int j, int e) {
  return a[4 * j + e];
}
template <int N>
FLASHIO_HOST_DEVICE const float& frag(const float (&a)[N], int j, int e) {
  return a[4 * j + e];
}

// Row reduction when one thread holds the whole row (the CPU).
struct RowInThread {
  static FLASHIO_HOST_DEVICE float max(float x) { return x; }
  static FLASHIO_HOST_DEVICE float sum(float x) { return x; }
};

// max(init, the row hr of s), reduced over the row's threads: raw scores.
template <class Reduce, class S>
FLASHIO_HOST_DEVICE float tile_row_max(const S& s, int hr, float init) {
  float mx = init;
  FLASHIO_UNROLL
  for (int j = 0; j < FragmentTiles<S>::value; ++j) mx = fmaxf(mx, fmaxf(frag(s, j, 2 * hr), frag(s, j, 2 * hr + 1)));
  return Reduce::max(mx);
}

// m·τ·log2 e, the offset exp2 subtracts; 0 for a row with no key yet (m = −inf) so that its
// masked scores give exp2(−inf) = 0, not NaN.
FLASHIO_HOST_DEVICE float max_scaled(float m, float scale_log2) { return m == -INFINITY ? 0.f : m * scale_log2; }

// exp(τ·s − τ·m) of a raw score s, with m_scaled = max_scaled(m, τ·log2 e).
FLASHIO_HOST_DEVICE float exp_score(float s, float scale_log2, float m_scaled) {
  return exp2f(fmaf(s, scale_log2, -m_scaled));
}

// L = τ·m + ln ℓ (natural log) of a row; −inf for a row that saw no key (ℓ = 0).
FLASHIO_HOST_DEVICE float log_sum_exp(float m, float l, float scale_log2) {
#if defined(__CUDA_ARCH__)
  return l > 0.f ? (m * scale_log2 + __log2f(l)) * kLn2 : -INFINITY;
#else
  return l > 0.f ? (m * scale_log2 + std::log2(l)) * kLn2 : -INFINITY;
#endif
}

// FlashAttention (flash1) Algorithm 1 line 11, one tile on its own: per row hr, m̃ = rowmax S,
// P̃ = exp(τ·(S − m̃)) and ℓ̃ = rowsum P̃ (reduced over the row's threads). Each pair of P̃ (n8 tile
// j, elements 2hr, 2hr + 1) goes to store(j, hr, p0, p1), not back into S: a kernel packs it to
// 16 bits as it goes, so that the fp32 scores die here.
template <class Reduce, class S, class Store>
FLASHIO_HOST_DEVICE void tile_softmax(const S& s, float scale_log2, float (&m)[2], float (&l)[2], Store store) {
  FLASHIO_UNROLL
  for (int hr = 0; hr < 2; ++hr) {
    const float mx = tile_row_max<Reduce>(s, hr, -INFINITY);
    const float m_scaled = max_scaled(mx, scale_log2);
    float sum = 0.f;
    FLASHIO_UNROLL
    for (int j = 0; j < FragmentTiles<S>::value; ++j) {
      const float p0 = exp_score(frag(s, j, 2 * hr), scale_log2, m_scaled);
      const float p1 = exp_score(frag(s, j, 2 * hr + 1), scale_log2, m_scaled);
      sum += p0;
      sum += p1;
      store(j, hr, p0, p1);
    }
    m[hr] = mx;
    l[hr] = Reduce::sum(sum);
  }
}

// The running statistics of a thread's two fragment rows (FlashAttention-2 Algorithm 1: m_i
// and ℓ_i, kept on chip across the K/V tiles of a Q tile): m (raw scores) and ℓ (this thread's
// share, Reduce::sum at the end) of rows hr = 0, 1. The steps are written on the two arrays, so
// that a kernel with several m16 tiles per warp can keep them as arrays of its own
// (float[kMTiles][2] each: the mma.sync forward, whose register allocation depends on that
// layout); OnlineSoftmax below bundles them.

// Before the first tile: m = −inf, ℓ = 0.
FLASHIO_HOST_DEVICE void softmax_init(float (&m)[2], float (&l)[2]) {
  m[0] = m[1] = -INFINITY;
  l[0] = l[1] = 0.f;
}

// The steps of one row hr: the new max (m·τ·log2 e returned, the rescale factor in alpha, ℓ
// rescaled) …
template <class Reduce, class S>
FLASHIO_HOST_DEVICE float softmax_new_max(float (&m)[2], float (&l)[2], const S& s, int hr, float scale_log2,
                                          float& alpha) {
  const float mx = tile_row_max<Reduce>(s, hr, m[hr]);  // row max
  const float m_scaled = max_scaled(mx, scale_log2);
  alpha = exp2f(m[hr] * scale_log2 - m_scaled);  // rescale factor
  m[hr] = mx;
  l[hr] *= alpha;
  return m_scaled;
}
// … P = exp(τ·(S − m)) in place and ℓ += rowsum P …
template <class S>
FLASHIO_HOST_DEVICE void softmax_exp_row(float (&l)[2], S& s, int hr, float scale_log2, float m_scaled) {
  FLASHIO_UNROLL
  for (int j = 0; j < FragmentTiles<S>::value; ++j) {
    FLASHIO_UNROLL
    for (int e = 2 * hr; e < 2 * hr + 2; ++e) {
      const float pe = exp_score(frag(s, j, e), scale_log2, m_scaled);  // exp
      frag(s, j, e) = pe;
      l[hr] += pe;  // row sum
    }
  }
}
// … and O's row times alpha.
template <class O>
FLASHIO_HOST_DEVICE void softmax_rescale_row(O& o, int hr, float alpha) {
  FLASHIO_UNROLL
  for (int j = 0; j < FragmentTiles<O>::value; ++j) {
    frag(o, j, 2 * hr) *= alpha;
    frag(o, j, 2 * hr + 1) *= alpha;
  }
}

// One K/V tile (lines 9-10): per row, m_new = max(m, rowmax S); ℓ and O rescaled by
// exp(τ·(m − m_new)); S becomes P = exp(τ·(S − m_new)) in place, ℓ += rowsum P. Row by row, in
// that order (the mma.sync and wgmma forwards' order, which their register allocation keeps).
template <class Reduce, class S, class O>
FLASHIO_HOST_DEVICE void softmax_update(float (&m)[2], float (&l)[2], S& s, O& o, float scale_log2) {
  FLASHIO_UNROLL
  for (int hr = 0; hr < 2; ++hr) {
    float alpha;
    const float m_scaled = softmax_new_max<Reduce>(m, l, s, hr, scale_log2, alpha);
    softmax_rescale_row(o, hr, alpha);
    softmax_exp_row(l, s, hr, scale_log2, m_scaled);
  }
}

struct OnlineSoftmax {
  float row_max[2];  // m of rows hr = 0, 1: raw scores
  float row_sum[2];  // ℓ: this thread's share (Reduce::sum at the end)

  FLASHIO_HOST_DEVICE void init() { softmax_init(row_max, row_sum); }

  // One K/V tile: softmax_update's operations on every element, in another order: the
  // statistics and P of both rows, then O (update_scores, rescale: flash3's order, which its
  // register allocation keeps; softmax_update's row-by-row order is the mma.sync and wgmma
  // forwards').
  template <class Reduce, class S, class O>
  FLASHIO_HOST_DEVICE void update(S& s, O& o, float scale_log2) {
    float alpha[2];
    update_scores<Reduce>(s, scale_log2, alpha);
    rescale(o, alpha);
  }

  // update() in two steps, for kernels whose O is still being accumulated (an asynchronous
  // P·V in flight) when the next tile's scores arrive: first the statistics and P, with the
  // factors O must take in alpha …
  template <class Reduce, class S>
  FLASHIO_HOST_DEVICE void update_scores(S& s, float scale_log2, float (&alpha)[2]) {
    FLASHIO_UNROLL
    for (int hr = 0; hr < 2; ++hr) {
      const float m_scaled = softmax_new_max<Reduce>(row_max, row_sum, s, hr, scale_log2, alpha[hr]);
      softmax_exp_row(row_sum, s, hr, scale_log2, m_scaled);
    }
  }
  // … then O rescaled, once nothing writes it any more.
  template <class O>
  static FLASHIO_HOST_DEVICE void rescale(O& o, const float (&alpha)[2]) {
    FLASHIO_UNROLL
    for (int hr = 0; hr < 2; ++hr) softmax_rescale_row(o, hr, alpha[hr]);
  }

  // Lines 12-13, after the last tile: ℓ of row hr (reduced over its threads) …
  template <class Reduce>
  FLASHIO_HOST_DEVICE float total(int hr) const {
    return Reduce::sum(row_sum[hr]);
  }
  // … the factor O is multiplied by: 1/ℓ, or with kDropout the dropout scale 1/(1−p) over ℓ
  // (a template parameter: 1/ℓ must stay a reciprocal); 0 for a row that saw no key, whose O is 0 …
  template <bool kDropout>
  static FLASHIO_HOST_DEVICE float output_scale(float l, float dropout_scale) {
    return l > 0.f ? (kDropout ? dropout_scale : 1.f) / l : 0.f;
  }
  // … and L = τ·m + ln ℓ.
  FLASHIO_HOST_DEVICE float lse(int hr, float l, float scale_log2) const {
    return log_sum_exp(row_max[hr], l, scale_log2);
  }
};

// FlashAttention (flash1) Algorithm 1 line 13: the statistics of a row so far (m, ℓ, kept in
// HBM) merged with those of one tile (m̃, ℓ̃, each from −inf / 0): m_new = max(m, m̃),
// ℓ_new = e^{τ(m − m_new)}·ℓ + e^{τ(m̃ − m_new)}·ℓ̃. Factors 0 while the row has seen no key.
struct SoftmaxMerge {
  float max, sum;     // m_new, ℓ_new
  float old_factor;   // e^{τ(m − m_new)}
  float tile_factor;  // e^{τ(m̃ − m_new)}
};
FLASHIO_HOST_DEVICE SoftmaxMerge softmax_merge(float m_old, float l_old, float m_tile, float l_tile, float scale_log2) {
  SoftmaxMerge r;
  r.max = fmaxf(m_old, m_tile);
  r.old_factor = 0.f;
  r.tile_factor = 0.f;
  if (r.max != -INFINITY) {
    r.old_factor = exp2f((m_old - r.max) * scale_log2);
    r.tile_factor = exp2f((m_tile - r.max) * scale_log2);
  }
  r.sum = r.old_factor * l_old + r.tile_factor * l_tile;
  return r;
}

}  // namespace flashio::kernels

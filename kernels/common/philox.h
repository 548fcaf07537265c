// The dropout random-number generator shared by every method: Philox4x32-10 (Salmon, Moraes,
// Dror, Shaw, "Parallel Random Numbers: As Easy as 1, 2, 3", SC 2011; the Random123 library)
// and the mapping from an attention element (b, h, i, j) to its keep/drop decision.
// Usable from plain C++ (the float64 reference, tests) and from CUDA device code alike, so the
// forward and backward kernels, every baseline and the CPU reference draw the same mask and
// outputs with dropout are compared exactly across methods.
//
// Philox4x32-10: a 4×32-bit counter and a 2×32-bit key; ten rounds, each two 32×32→64-bit
// multiplies (kPhiloxM0, kPhiloxM1) and a permutation; the key is bumped by (kPhiloxW0,
// kPhiloxW1) between rounds. Checked against Random123's known-answer vectors
// (tests/test_philox.cpp).
//
// Element → random word (for query-head h of sequence b, query row i, key column j):
//   key      = { lo32(seed), hi32(seed) }
//   position = ((uint64(i) << 32) | (j / 4)) + offset        (mod 2^64)
//   counter  = { lo32(position), hi32(position), h, b }
//   word     = philox4x32_10(counter, key)[j % 4]
// One Philox call serves the four consecutive columns 4·⌊j/4⌋ … 4·⌊j/4⌋+3 (lane j % 4), so a
// fused kernel draws the words of a row segment four columns at a time. b, h, i and j/4 must
// each fit in 32 bits. h is the *query* head (with GQA/MQA the key/value head is shared, the
// mask is not). The offset advances every row's position alike, as curand's offset does; the
// methods use offset 0 (a fresh mask comes from a fresh seed).
//
// Keep rule: keep iff word >= threshold, threshold = dropout_threshold(p) = ⌊p · 2^32⌋,
// computed once on the host in double (p in [0, 1); p = 0 gives threshold 0: keep all).
// The keep probability is 1 − threshold/2^32, within 2^-32 of 1 − p. Kept elements are
// scaled by 1/(1 − p) (dropout_scale), dropped ones are zero.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define FLASHIO_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FLASHIO_HOST_DEVICE inline
#endif

namespace flashio {

// Philox4x32 constants (Random123's PHILOX_M4x32_0/1 and PHILOX_W32_0/1).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u;  // round multiplier of counter word 0
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;  // round multiplier of counter word 2
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;  // key word 0 increment (golden ratio)
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;  // key word 1 increment (sqrt(3) - 1)
constexpr int kPhiloxRounds = 10;

// Consecutive key columns served by one Philox call (one output word each).
constexpr uint32_t kDropoutColumnsPerDraw = 4;

struct Philox4x32 {
  uint32_t w[4];
};
struct PhiloxKey {
  uint32_t w[2];
};

// The high and low 32 bits of a · b.
FLASHIO_HOST_DEVICE void mul_hi_lo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
#if defined(__CUDA_ARCH__)
  hi = __umulhi(a, b);
  lo = a * b;
#else
  const uint64_t product = uint64_t(a) * uint64_t(b);
  hi = uint32_t(product >> 32);
  lo = uint32_t(product);
#endif
}

// One Philox4x32 round: two multiplies, the high halves mixed with the other words and the key.
FLASHIO_HOST_DEVICE Philox4x32 philox_round(const Philox4x32& c, const PhiloxKey& k) {
  uint32_t hi0, lo0, hi1, lo1;
  mul_hi_lo(kPhiloxM0, c.w[0], hi0, lo0);
  mul_hi_lo(kPhiloxM1, c.w[2], hi1, lo1);
  return Philox4x32{{hi1 ^ c.w[1] ^ k.w[0], lo1, hi0 ^ c.w[3] ^ k.w[1], lo0}};
}

// Philox4x32-10: ten rounds, the key bumped between consecutive rounds.
FLASHIO_HOST_DEVICE Philox4x32 philox4x32_10(Philox4x32 counter, PhiloxKey key) {
  counter = philox_round(counter, key);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 1; round < kPhiloxRounds; ++round) {
    key.w[0] += kPhiloxW0;
    key.w[1] += kPhiloxW1;
    counter = philox_round(counter, key);
  }
  return counter;
}

// Word `lane` (0..3) of a Philox output, by selects rather than an indexed load, so that a
// run-time lane keeps the words in registers on the GPU.
FLASHIO_HOST_DEVICE uint32_t philox_lane(const Philox4x32& r, uint32_t lane) {
  return lane == 0 ? r.w[0] : lane == 1 ? r.w[1] : lane == 2 ? r.w[2] : r.w[3];
}

// ---- dropout ------------------------------------------------------------------------------

FLASHIO_HOST_DEVICE PhiloxKey dropout_key(uint64_t seed) { return PhiloxKey{{uint32_t(seed), uint32_t(seed >> 32)}}; }

// The counter of columns 4·column_group … 4·column_group+3 of row i, head h, sequence b.
FLASHIO_HOST_DEVICE Philox4x32 dropout_counter(uint64_t offset, uint32_t b, uint32_t h, uint32_t i,
                                               uint32_t column_group) {
  const uint64_t position = ((uint64_t(i) << 32) | column_group) + offset;
  return Philox4x32{{uint32_t(position), uint32_t(position >> 32), h, b}};
}

// The four random words of columns 4·column_group … 4·column_group+3 (word j % 4 is column j's).
FLASHIO_HOST_DEVICE Philox4x32 dropout_words(uint64_t seed, uint64_t offset, uint32_t b, uint32_t h, uint32_t i,
                                             uint32_t column_group) {
  return philox4x32_10(dropout_counter(offset, b, h, i, column_group), dropout_key(seed));
}

// ⌊p · 2^32⌋: a word below it is dropped. Compute once, on the host, in double (a float
// product would round p to 24 bits). p must be in [0, 1); p = 0 keeps every element.
FLASHIO_HOST_DEVICE uint32_t dropout_threshold(double p) {
  constexpr double kTwoTo32 = 4294967296.0;
  return p <= 0.0 ? 0u : uint32_t(p * kTwoTo32);
}

// The factor applied to kept elements: 1/(1 − p).
FLASHIO_HOST_DEVICE double dropout_scale(double p) { return 1.0 / (1.0 - p); }

FLASHIO_HOST_DEVICE bool dropout_keeps_word(uint32_t word, uint32_t threshold) { return word >= threshold; }

// Whether dropout with probability p keeps element (b, h, i, j). One Philox call per element:
// the reference and tests use this; kernels compute dropout_threshold(p) once, draw
// dropout_words once per four columns and test each lane with dropout_keeps_word.
FLASHIO_HOST_DEVICE bool dropout_keeps(uint64_t seed, uint64_t offset, double p, uint32_t b, uint32_t h, uint32_t i,
                                       uint32_t j) {
  const Philox4x32 words = dropout_words(seed, offset, b, h, i, j / kDropoutColumnsPerDraw);
  return dropout_keeps_word(philox_lane(words, j % kDropoutColumnsPerDraw), dropout_threshold(p));
}

}  // namespace flashio

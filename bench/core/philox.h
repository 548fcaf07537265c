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
// Element → 16-bit random value (for query-head h of sequence b, query row i, key column j):
//   key      = { lo32(seed), hi32(seed) }
//   position = ((uint64(i) << 32) | (j / 8)) + offset        (mod 2^64)
//   counter  = { lo32(position), hi32(position), h, b }
//   word     = philox4x32_10(counter, key)[(j % 8) / 2]
//   value    = j even ? word & 0xFFFF : word >> 16           (low half for even j, high for odd)
// One Philox call serves the eight consecutive columns 8·⌊j/8⌋ … 8·⌊j/8⌋+7, 16 bits each: the
// column pair (2c, 2c+1) of a group is word c. b, h, i and j/8 must each fit in 32 bits. h is
// the *query* head (with GQA/MQA the key/value head is shared, the mask is not). The offset
// advances every row's position alike, as curand's offset does; the methods use offset 0, kDropoutOffset (a
// fresh mask comes from a fresh seed).
//
// Keep rule: keep iff value >= threshold, threshold = dropout_threshold(p) = ⌊p · 2^16⌋,
// computed once on the host in double (p in [0, 1); p = 0 gives threshold 0: keep all). The
// keep probability is 1 − threshold/2^16, in [1 − p, 1 − p + 2^-16): within 2^-16 of 1 − p
// (p = 0.1: 0.899993896…, not 0.9). Kept elements are scaled by 1/(1 − p) (dropout_scale),
// dropped ones are zero. Fused kernels compare whole words against threshold << 16
// (dropout_keeps_high / dropout_keeps_low), which is the same test without extracting halves.
//
// An earlier mask used 32 bits per element (one call per 4 columns, word j % 4, threshold
// ⌊p · 2^32⌋); result files recorded with it drew a different, equally valid mask.
#pragma once
#include <cstdint>

#include "bench/core/host_device.h"

namespace flashio {

// The Philox offset every method, baseline and reference draws its mask at (a fresh mask comes
// from a fresh seed; Problem has no offset field).
constexpr uint64_t kDropoutOffset = 0;

// Philox4x32 constants (Random123's PHILOX_M4x32_0/1 and PHILOX_W32_0/1).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u;  // round multiplier of counter word 0
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;  // round multiplier of counter word 2
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;  // key word 0 increment (golden ratio)
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;  // key word 1 increment (sqrt(3) - 1)
constexpr int kPhiloxRounds = 10;

// The mask's layout: 16 random bits per element, two elements per output word, so one Philox
// call (four words) serves kDropoutColumnsPerDraw consecutive key columns.
constexpr uint32_t kDropoutBitsPerElement = 16;
constexpr uint32_t kDropoutColumnsPerWord = 32 / kDropoutBitsPerElement;               // 2
constexpr uint32_t kDropoutColumnsPerDraw = 4 * kDropoutColumnsPerWord;                // 8
constexpr uint32_t kDropoutElementMask = (uint32_t(1) << kDropoutBitsPerElement) - 1;  // 0xFFFF

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

// The counter of columns 8·column_group … 8·column_group+7 of row i, head h, sequence b.
FLASHIO_HOST_DEVICE Philox4x32 dropout_counter(uint64_t offset, uint32_t b, uint32_t h, uint32_t i,
                                               uint32_t column_group) {
  const uint64_t position = ((uint64_t(i) << 32) | column_group) + offset;
  return Philox4x32{{uint32_t(position), uint32_t(position >> 32), h, b}};
}

// The four random words of columns 8·column_group … 8·column_group+7 (word c holds columns
// 8·column_group + 2c in its low half and + 2c + 1 in its high half).
FLASHIO_HOST_DEVICE Philox4x32 dropout_words(uint64_t seed, uint64_t offset, uint32_t b, uint32_t h, uint32_t i,
                                             uint32_t column_group) {
  return philox4x32_10(dropout_counter(offset, b, h, i, column_group), dropout_key(seed));
}

// The 16-bit value of column `column` (0 … 7) of a draw: word column / 2, low half for an even
// column, high half for an odd one.
FLASHIO_HOST_DEVICE uint32_t dropout_value(const Philox4x32& words, uint32_t column) {
  const uint32_t word = philox_lane(words, column / kDropoutColumnsPerWord);
  return (word >> (kDropoutBitsPerElement * (column % kDropoutColumnsPerWord))) & kDropoutElementMask;
}

// ⌊p · 2^16⌋ (0 … 65535): a value below it is dropped. Compute once, on the host, in double.
// p must be in [0, 1); p = 0 keeps every element.
FLASHIO_HOST_DEVICE uint32_t dropout_threshold(double p) {
  constexpr double kTwoTo16 = 65536.0;
  return p <= 0.0 ? 0u : uint32_t(p * kTwoTo16);
}

// The factor applied to kept elements: 1/(1 − p).
FLASHIO_HOST_DEVICE double dropout_scale(double p) { return 1.0 / (1.0 - p); }

// Whether a 16-bit value is kept.
FLASHIO_HOST_DEVICE bool dropout_keeps_value(uint32_t value, uint32_t threshold) { return value >= threshold; }

// The same test on a whole word, without extracting the half: `threshold_high` is
// dropout_threshold(p) << 16. The high half h is kept iff h ≥ threshold ⇔ word ≥ threshold·2^16
// (the low half cannot lift a smaller h over it); the low half moved up is tested the same way.
FLASHIO_HOST_DEVICE uint32_t dropout_threshold_high(uint32_t threshold) { return threshold << kDropoutBitsPerElement; }
FLASHIO_HOST_DEVICE bool dropout_keeps_high(uint32_t word, uint32_t threshold_high) { return word >= threshold_high; }
FLASHIO_HOST_DEVICE bool dropout_keeps_low(uint32_t word, uint32_t threshold_high) {
  return (word << kDropoutBitsPerElement) >= threshold_high;
}

// Whether dropout with probability p keeps element (b, h, i, j). One Philox call per element:
// the reference and tests use this; kernels compute dropout_threshold(p) once and draw
// dropout_words once per eight columns.
FLASHIO_HOST_DEVICE bool dropout_keeps(uint64_t seed, uint64_t offset, double p, uint32_t b, uint32_t h, uint32_t i,
                                       uint32_t j) {
  const Philox4x32 words = dropout_words(seed, offset, b, h, i, j / kDropoutColumnsPerDraw);
  return dropout_keeps_value(dropout_value(words, j % kDropoutColumnsPerDraw), dropout_threshold(p));
}

}  // namespace flashio

// The dropout RNG (bench/core/philox.h): Philox4x32-10 against Random123's known-answer
// vectors, the element → counter mapping every method must reproduce, and the mask's
// statistics (keep rate, independence across seeds and heads, determinism).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "bench/core/philox.h"

using namespace flashio;

namespace {

constexpr uint32_t kAllOnes = 0xFFFFFFFFu;

void expect_words(const Philox4x32& got, const Philox4x32& want) {
  for (int w = 0; w < 4; ++w) EXPECT_EQ(got.w[w], want.w[w]) << "word " << w;
}

// A mask over a (batch, head, row, column) grid, flattened in BHND order.
struct MaskGrid {
  uint32_t batch, heads, rows, columns;
  size_t size() const { return size_t(batch) * heads * rows * columns; }
};

std::vector<bool> draw_mask(const MaskGrid& g, uint64_t seed, double p) {
  std::vector<bool> keep;
  keep.reserve(g.size());
  for (uint32_t b = 0; b < g.batch; ++b)
    for (uint32_t h = 0; h < g.heads; ++h)
      for (uint32_t i = 0; i < g.rows; ++i)
        for (uint32_t j = 0; j < g.columns; ++j) keep.push_back(dropout_keeps(seed, 0, p, b, h, i, j));
  return keep;
}

double kept_fraction(const std::vector<bool>& keep) {
  size_t kept = 0;
  for (bool k : keep) kept += k;
  return double(kept) / double(keep.size());
}

double differing_fraction(const std::vector<bool>& a, const std::vector<bool>& b) {
  size_t differ = 0;
  for (size_t e = 0; e < a.size(); ++e) differ += a[e] != b[e];
  return double(differ) / double(a.size());
}

// One head's mask (rows × columns) at (b, h).
std::vector<bool> head_mask(uint64_t seed, double p, uint32_t b, uint32_t h, uint32_t rows, uint32_t columns) {
  std::vector<bool> keep;
  for (uint32_t i = 0; i < rows; ++i)
    for (uint32_t j = 0; j < columns; ++j) keep.push_back(dropout_keeps(seed, 0, p, b, h, i, j));
  return keep;
}

}  // namespace

// Random123 kat_vectors, philox4x32 with 10 rounds (also checked against an independent
// Python implementation of the paper's round function).
TEST(Philox, KnownAnswerZeroCounterZeroKey) {
  expect_words(philox4x32_10({{0, 0, 0, 0}}, {{0, 0}}), {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
}

TEST(Philox, KnownAnswerAllOnes) {
  expect_words(philox4x32_10({{kAllOnes, kAllOnes, kAllOnes, kAllOnes}}, {{kAllOnes, kAllOnes}}),
               {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
}

TEST(Philox, KnownAnswerPiDigits) {
  expect_words(philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, {{0xa4093822u, 0x299f31d0u}}),
               {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
}

// The mapping documented in philox.h, pinned: the CUDA kernels must draw these same words.
TEST(DropoutRng, CounterAndKeyFollowDocumentedMapping) {
  const uint64_t seed = 0x0123456789abcdefull;
  const Philox4x32 c = dropout_counter(/*offset=*/0, /*b=*/5, /*h=*/6, /*i=*/7, /*column_group=*/8);
  expect_words(c, {{8, 7, 6, 5}});
  const PhiloxKey k = dropout_key(seed);
  EXPECT_EQ(k.w[0], 0x89abcdefu);
  EXPECT_EQ(k.w[1], 0x01234567u);
  // The offset is added to the 64-bit position (i << 32 | column_group), carrying into i.
  expect_words(dropout_counter(3, 5, 6, 7, 8), {{11, 7, 6, 5}});
  expect_words(dropout_counter(1, 5, 6, 7, kAllOnes), {{0, 8, 6, 5}});
  expect_words(dropout_counter(uint64_t(2) << 32, 5, 6, 7, 8), {{8, 9, 6, 5}});
}

// Words computed by the independent Python implementation from the documented mapping.
TEST(DropoutRng, WordsMatchIndependentImplementation) {
  expect_words(dropout_words(0x5eed, 0, 0, 0, 0, 0), {{0xee1c2fccu, 0x6f56ed39u, 0xe29a6034u, 0x14c3f3d7u}});
  expect_words(dropout_words(0x5eed, 0, 1, 2, 3, 4), {{0xaf5bb30cu, 0xaf5dca83u, 0xf8f844a2u, 0x95c903ceu}});
  expect_words(dropout_words(0x0123456789abcdefull, 7, 5, 6, 7, 8),
               {{0x96e46bc2u, 0x3c518c73u, 0xe09cdfc6u, 0x956938f7u}});
}

// One Philox call serves eight consecutive columns, 16 bits each: column j is word (j % 8) / 2
// of group j / 8, its low half for even j and its high half for odd j (philox.h).
TEST(DropoutRng, EightConsecutiveColumnsShareOneDraw) {
  const uint64_t seed = 42;
  const double p = 0.5;
  const uint32_t threshold = dropout_threshold(p);
  for (uint32_t j = 0; j < 64; ++j) {
    const Philox4x32 words = dropout_words(seed, 0, 1, 2, 3, j / 8);
    const uint32_t word = words.w[(j % 8) / 2];
    const uint32_t value = j % 2 == 0 ? word & 0xFFFFu : word >> 16;
    EXPECT_EQ(dropout_value(words, j % 8), value) << "column " << j;
    EXPECT_EQ(dropout_keeps(seed, 0, p, 1, 2, 3, j), value >= threshold) << "column " << j;
  }
  EXPECT_EQ(kDropoutColumnsPerDraw, 8u);
}

// Hand-computed elements from the pinned words of (seed 0x5eed, b 1, h 2, i 3, group 4) above:
// {0xaf5bb30c, 0xaf5dca83, 0xf8f844a2, 0x95c903ce} are columns 32 … 39 with the 16-bit values
// 0xb30c, 0xaf5b, 0xca83, 0xaf5d, 0x44a2, 0xf8f8, 0x03ce, 0x95c9.
TEST(DropoutRng, HandComputedElements) {
  const Philox4x32 words = dropout_words(0x5eed, 0, 1, 2, 3, 4);
  const uint32_t values[8] = {0xb30c, 0xaf5b, 0xca83, 0xaf5d, 0x44a2, 0xf8f8, 0x03ce, 0x95c9};
  for (uint32_t c = 0; c < 8; ++c) EXPECT_EQ(dropout_value(words, c), values[c]) << "column " << 32 + c;
  auto keeps = [](double p, uint32_t j) { return dropout_keeps(0x5eed, 0, p, 1, 2, 3, j); };
  // p = 0.25: threshold 0x4000; only column 38 (0x03ce) is below it.
  for (uint32_t j = 32; j < 40; ++j) EXPECT_EQ(keeps(0.25, j), j != 38) << "column " << j;
  // p = 0.27: threshold ⌊0.27 · 65536⌋ = 17694 = 0x451e; column 36 (0x44a2 = 17570) drops too.
  EXPECT_EQ(dropout_threshold(0.27), 0x451eu);
  EXPECT_FALSE(keeps(0.27, 36));
  EXPECT_FALSE(keeps(0.27, 38));
  EXPECT_TRUE(keeps(0.27, 39));
  // p = 0.7: threshold 45875 = 0xb333; kept: 0xca83 (34), 0xf8f8 (37) only.
  for (uint32_t j = 32; j < 40; ++j) EXPECT_EQ(keeps(0.7, j), j == 34 || j == 37) << "column " << j;
}

// The kernels' whole-word tests (dropout_keeps_high / _low against threshold << 16) agree with
// extracting the half, at the edges of every threshold and on random words.
TEST(DropoutRng, WholeWordTestsMatchHalfExtraction) {
  for (uint32_t threshold : {0u, 1u, 0x4000u, 0x451eu, 0x8000u, 0xffffu}) {
    const uint32_t high = dropout_threshold_high(threshold);
    for (uint32_t half : {0u, 1u, threshold == 0 ? 0u : threshold - 1, threshold, threshold + 1, 0xfffeu, 0xffffu}) {
      half &= 0xffffu;
      for (uint32_t other : {0u, 0x7fffu, 0xffffu}) {
        EXPECT_EQ(dropout_keeps_high((half << 16) | other, high), half >= threshold) << threshold << " " << half;
        EXPECT_EQ(dropout_keeps_low((other << 16) | half, high), half >= threshold) << threshold << " " << half;
      }
    }
  }
  uint32_t x = 12345;
  for (int n = 0; n < 10000; ++n) {
    x = x * 1664525u + 1013904223u;
    const uint32_t threshold = (x >> 7) & 0xffffu, word = x * 2654435761u;
    EXPECT_EQ(dropout_keeps_high(word, dropout_threshold_high(threshold)), (word >> 16) >= threshold);
    EXPECT_EQ(dropout_keeps_low(word, dropout_threshold_high(threshold)), (word & 0xffffu) >= threshold);
  }
}

TEST(DropoutRng, ThresholdIsFloorOfPTimesTwoTo16) {
  EXPECT_EQ(dropout_threshold(0.0), 0u);
  EXPECT_EQ(dropout_threshold(0.5), 0x8000u);
  EXPECT_EQ(dropout_threshold(0.25), 0x4000u);
  EXPECT_EQ(dropout_threshold(0.1), 6553u);                         // ⌊6553.6⌋
  EXPECT_EQ(dropout_threshold(1e-9), 0u);                           // p < 2^-16 keeps everything
  EXPECT_EQ(dropout_threshold(1.0 / 65536), 1u);                    // the smallest p that drops
  EXPECT_EQ(dropout_threshold(std::nextafter(1.0, 0.0)), 0xffffu);  // the largest p < 1 fits 16 bits
  EXPECT_DOUBLE_EQ(dropout_scale(0.2), 1.25);
}

// The keep probability is 1 − ⌊p·2^16⌋/2^16, within 2^-16 of 1 − p; over 2^20 elements the
// measured fraction has a standard deviation of about 3·10^-4 (p = 0.1), 5·10^-4 (p = 0.5).
TEST(DropoutRng, KeepRateIsOneMinusP) {
  const MaskGrid grid{2, 4, 256, 512};  // 2^20 elements
  for (double p : {0.1, 0.5, 0.9}) {
    const double exact = 1.0 - double(dropout_threshold(p)) / 65536.0;
    EXPECT_NEAR(exact, 1.0 - p, 1.0 / 65536) << "p = " << p;
    const double rate = kept_fraction(draw_mask(grid, 0x5eed, p));
    EXPECT_NEAR(rate, exact, 0.002) << "p = " << p;
  }
}

// The two halves of a word (columns 2c, 2c+1) and neighbouring words are independent: both of
// two adjacent columns are kept with probability q² (q = 1 − p).
TEST(DropoutRng, AdjacentColumnsAreIndependent) {
  const uint32_t rows = 256, columns = 1024;
  const double p = 0.5, q = 1.0 - p;
  const std::vector<bool> keep = head_mask(77, p, 0, 0, rows, columns);
  for (uint32_t lag : {1u, 2u, 7u, 8u}) {  // same word, next word, same draw, next draw
    size_t both = 0, pairs = 0;
    for (uint32_t i = 0; i < rows; ++i)
      for (uint32_t j = 0; j + lag < columns; ++j, ++pairs)
        both += keep[size_t(i) * columns + j] && keep[size_t(i) * columns + j + lag];
    EXPECT_NEAR(double(both) / double(pairs), q * q, 0.005) << "lag " << lag;
  }
}

TEST(DropoutRng, ZeroProbabilityKeepsEverything) {
  const MaskGrid grid{2, 2, 64, 100};
  EXPECT_EQ(kept_fraction(draw_mask(grid, 7, 0.0)), 1.0);
  // Even the all-zero value (which the smallest p that drops, 2^-16, drops) is kept at p = 0.
  EXPECT_TRUE(dropout_keeps_value(0u, dropout_threshold(0.0)));
  EXPECT_FALSE(dropout_keeps_value(0u, dropout_threshold(1.0 / 65536)));
}

TEST(DropoutRng, MaskIsDeterministic) {
  const MaskGrid grid{2, 3, 17, 33};
  EXPECT_EQ(draw_mask(grid, 123, 0.3), draw_mask(grid, 123, 0.3));
}

// Independent masks with keep rate q = 1-p differ in a fraction 2·p·(1-p) of elements.
TEST(DropoutRng, MasksDifferAcrossSeeds) {
  const MaskGrid grid{2, 4, 64, 128};
  const double p = 0.5;
  const double expected = 2 * p * (1 - p);
  EXPECT_NEAR(differing_fraction(draw_mask(grid, 1, p), draw_mask(grid, 2, p)), expected, 0.02);
  // Seeds that differ only in their high 32 bits (key word 1) too.
  EXPECT_NEAR(differing_fraction(draw_mask(grid, 1, p), draw_mask(grid, 1 + (uint64_t(1) << 32), p)), expected, 0.02);
}

TEST(DropoutRng, MasksDifferAcrossBatchAndHead) {
  const uint32_t rows = 64, columns = 128;
  const double p = 0.5;
  const double expected = 2 * p * (1 - p);
  const std::vector<bool> base = head_mask(9, p, 0, 0, rows, columns);
  EXPECT_NEAR(differing_fraction(base, head_mask(9, p, 0, 1, rows, columns)), expected, 0.03);
  EXPECT_NEAR(differing_fraction(base, head_mask(9, p, 1, 0, rows, columns)), expected, 0.03);
  // Swapping b and h must not give the same counter.
  EXPECT_NEAR(differing_fraction(head_mask(9, p, 1, 2, rows, columns), head_mask(9, p, 2, 1, rows, columns)), expected,
              0.03);
}

// The dropout RNG (kernels/common/philox.h): Philox4x32-10 against Random123's known-answer
// vectors, the element → counter mapping every method must reproduce, and the mask's
// statistics (keep rate, independence across seeds and heads, determinism).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/common/philox.h"

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

// One Philox call serves four consecutive columns: column j reads lane j % 4 of group j / 4.
TEST(DropoutRng, FourConsecutiveColumnsShareOneDraw) {
  const uint64_t seed = 42;
  const double p = 0.5;
  const uint32_t threshold = dropout_threshold(p);
  for (uint32_t j = 0; j < 64; ++j) {
    const Philox4x32 words = dropout_words(seed, 0, 1, 2, 3, j / kDropoutColumnsPerDraw);
    EXPECT_EQ(dropout_keeps(seed, 0, p, 1, 2, 3, j), dropout_keeps_word(words.w[j % kDropoutColumnsPerDraw], threshold))
        << "column " << j;
  }
}

TEST(DropoutRng, ThresholdIsFloorOfPTimesTwoTo32) {
  EXPECT_EQ(dropout_threshold(0.0), 0u);
  EXPECT_EQ(dropout_threshold(0.5), 0x80000000u);
  EXPECT_EQ(dropout_threshold(0.25), 0x40000000u);
  EXPECT_EQ(dropout_threshold(1e-9), 4u);                            // ⌊4.29⌋
  EXPECT_EQ(dropout_threshold(std::nextafter(1.0, 0.0)), kAllOnes);  // the largest p < 1 does not wrap
  EXPECT_DOUBLE_EQ(dropout_scale(0.2), 1.25);
}

TEST(DropoutRng, KeepRateIsOneMinusP) {
  const MaskGrid grid{2, 4, 256, 512};  // 2^20 elements
  for (double p : {0.1, 0.5}) {
    const double rate = kept_fraction(draw_mask(grid, 0x5eed, p));
    EXPECT_NEAR(rate, 1.0 - p, 0.005 * (1.0 - p)) << "p = " << p;
  }
}

TEST(DropoutRng, ZeroProbabilityKeepsEverything) {
  const MaskGrid grid{2, 2, 64, 100};
  EXPECT_EQ(kept_fraction(draw_mask(grid, 7, 0.0)), 1.0);
  // Even the all-zero word (which the smallest positive p drops) is kept at p = 0.
  EXPECT_TRUE(dropout_keeps_word(0u, dropout_threshold(0.0)));
  EXPECT_FALSE(dropout_keeps_word(0u, dropout_threshold(1e-9)));
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

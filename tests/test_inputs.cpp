// The input generator: any part of a tensor made alone equals that part of the whole, and the
// words are the ones the generator has always made (hashes fixed when it was rewritten to make
// each element from (seed, tensor, index) alone, equal to the chunked sequence before it).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "bench/core/inputs.h"

using namespace flashio;

namespace {

uint64_t fnv1a(const std::vector<uint16_t>& words) {
  uint64_t h = 1469598103934665603ull;
  for (uint16_t w : words)
    for (int i = 0; i < 2; ++i) {
      h ^= (w >> (8 * i)) & 0xFF;
      h *= 1099511628211ull;
    }
  return h;
}

}  // namespace

TEST(Inputs, AnyPartEqualsThatPartOfTheWhole) {
  const size_t n = (size_t(1) << 19) + 12345;  // crosses two chunk boundaries
  for (DType dtype : {DType::F16, DType::BF16}) {
    std::vector<uint16_t> whole(n);
    fill_normal(whole.data(), 0, n, dtype, 7, InputTensor::K);
    for (auto [first, count] : {std::pair<size_t, size_t>{0, 1}, {262143, 3}, {300000, 200000}, {n - 1, 1}}) {
      std::vector<uint16_t> part(count);
      fill_normal(part.data(), first, count, dtype, 7, InputTensor::K);
      EXPECT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + long(first))) << first << "+" << count;
    }
  }
}

TEST(Inputs, WordsAreTheGeneratorsOfBefore) {
  Problem p;
  p.batch = 2;
  p.heads = 3;
  p.seqlen_q = 1000;
  p.head_dim = 64;
  p.seed = 1234;
  const HostInputs in = make_inputs(p, true);
  // Computed with the chunked sequential generator of c435baf (fill_normal over std::vector).
  EXPECT_EQ(fnv1a(in.q), 0xe455acecb3dcae16ull);
  EXPECT_EQ(fnv1a(in.k), 0x795038e6d76a3dd0ull);
  EXPECT_EQ(fnv1a(in.v), 0xd92b3fac220a431full);
  EXPECT_EQ(fnv1a(in.d_o), 0x4352e50fc45ac3cull);
}

TEST(Inputs, TensorsAndSeedsDiffer) {
  std::vector<uint16_t> a(4096), b(4096), c(4096);
  fill_normal(a.data(), 0, a.size(), DType::F16, 1, InputTensor::Q);
  fill_normal(b.data(), 0, b.size(), DType::F16, 1, InputTensor::K);
  fill_normal(c.data(), 0, c.size(), DType::F16, 2, InputTensor::Q);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
}

TEST(Inputs, HeadsMadeAtTheirPlacesAreTheWholeTensorsWords) {
  // Heads 1, 2 and 5 of a tensor of 7 heads (runs of one and two, pieces of 2^16 split across
  // heads), against the whole tensor made at once.
  const int64_t head_words = 70001;
  std::vector<uint16_t> whole(size_t(7 * head_words)), some(whole.size(), 0xABCD);
  fill_normal(whole.data(), 0, whole.size(), DType::BF16, 9, InputTensor::V);
  fill_normal_heads(some.data(), head_words, {1, 2, 5}, DType::BF16, 9, InputTensor::V);
  for (int64_t h = 0; h < 7; ++h) {
    const bool made = h == 1 || h == 2 || h == 5;
    for (int64_t e = 0; e < head_words; e += 997) {
      const size_t i = size_t(h * head_words + e);
      EXPECT_EQ(some[i], made ? whole[i] : uint16_t(0xABCD)) << "head " << h << " element " << e;
    }
  }
  // And a range not starting at 0 lands at out[0].
  std::vector<uint16_t> tail(1000);
  fill_normal(tail.data(), 123456, tail.size(), DType::BF16, 9, InputTensor::V);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), whole.begin() + 123456));
}

TEST(Inputs, ChunksCopiedFromTheCacheAreTheGeneratorsWords) {
  // Two whole chunks and parts of the two beside them, made twice: the second time the whole
  // chunks are copied from the cache the first kept; every word is input_word's either way.
  const size_t chunk = size_t(1) << kInputChunkBits, first = 5 * chunk - 1000, count = 2 * chunk + 3000;
  const uint64_t seed = 0xC0FFEE;  // a seed no other test uses: its chunks are not kept yet
  for (int round = 0; round < 2; ++round) {
    const InputCacheStats before = input_cache_stats();
    std::vector<uint16_t> words(count);
    fill_normal(words.data(), first, count, DType::F16, seed, InputTensor::dO);
    const InputCacheStats after = input_cache_stats();
    EXPECT_EQ(after.hits - before.hits, round == 0 ? 0u : 2u) << "round " << round;
    EXPECT_EQ(after.misses - before.misses, round == 0 ? 2u : 0u) << "round " << round;
    EXPECT_LE(after.bytes, kInputCacheBytes);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += words[i] != input_word(DType::F16, seed, InputTensor::dO, first + i);
    EXPECT_EQ(wrong, 0u) << "round " << round;
  }
  // Another dtype, tensor or seed is another chunk: not a hit.
  const InputCacheStats before = input_cache_stats();
  std::vector<uint16_t> words(chunk);
  fill_normal(words.data(), 5 * chunk, chunk, DType::BF16, seed, InputTensor::dO);
  fill_normal(words.data(), 5 * chunk, chunk, DType::F16, seed, InputTensor::Q);
  fill_normal(words.data(), 5 * chunk, chunk, DType::F16, seed + 1, InputTensor::dO);
  EXPECT_EQ(input_cache_stats().hits, before.hits);
  EXPECT_EQ(words[17], input_word(DType::F16, seed + 1, InputTensor::dO, 5 * chunk + 17));
}

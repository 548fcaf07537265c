#include <cmath>

#include <gtest/gtest.h>

#include "bench/core/dtype.h"

using namespace flashio;

TEST(DType, HalfRoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = half_to_float(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), uint16_t(h)) << "half 0x" << std::hex << h;
  }
}

TEST(DType, HalfKnownValues) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(1e6f), 0x7C00);                 // overflow to inf
  EXPECT_EQ(float_to_half(5.960464477539063e-08f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(2.0e-8f), 0x0000);               // below half of it: zero
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3C00);    // tie rounds to even
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3C02);    // tie rounds to even (up)
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(float_to_bf16(1.0f + 1.0f / 256), 0x3F80);      // tie → even
  EXPECT_EQ(float_to_bf16(1.0f + 3.0f / 256), 0x3F82);      // tie → even (up)
  for (uint32_t h = 0; h < 0x10000u; h += 7) {
    const float f = bf16_to_float(uint16_t(h));
    if (!std::isnan(f)) ASSERT_EQ(float_to_bf16(f), uint16_t(h));
  }
}

// Element types of attention inputs, and host-side conversions to and from float.
// Host code stores fp16/bf16 tensors as raw 16-bit words (no CUDA headers needed).
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "bench/core/host_device.h"

namespace flashio {

enum class DType { F16, BF16 };

inline const char* to_string(DType t) { return t == DType::F16 ? "fp16" : "bf16"; }
std::optional<DType> parse_dtype(const std::string& s);  // "fp16"/"f16"/"half", "bf16"
inline constexpr int bytes_of(DType) { return 2; }

// IEEE binary16 <-> float, round to nearest even.
FLASHIO_HOST_DEVICE float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do { ++e; mant <<= 1; } while ((mant & 0x400u) == 0);
      bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3FFu) << 13;
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

FLASHIO_HOST_DEVICE uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) return sign | (absx > 0x7F800000u ? 0x7E00u : 0x7C00u);  // NaN / inf
  if (absx >= 0x477FF000u) return sign | 0x7C00u;  // rounds to >= 65520: overflow to inf
  if (absx < 0x38800000u) {                        // below the smallest normal half: subnormal
    if (absx < 0x33000000u) return sign;           // rounds to zero
    const uint32_t mant = (absx & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - int(absx >> 23);  // value * 2^24 = mant * 2^(exp - 126)
    uint32_t v = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (v & 1u))) ++v;
    return sign | uint16_t(v);
  }
  uint32_t v = absx - 0x38000000u;  // rebias exponent 127 -> 15
  const uint32_t rem = v & 0x1FFFu;
  v >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) ++v;
  return sign | uint16_t(v);
}

FLASHIO_HOST_DEVICE float bf16_to_float(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

FLASHIO_HOST_DEVICE uint16_t float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);                      // nearest even
  return uint16_t((x + rounding) >> 16);
}

FLASHIO_HOST_DEVICE float to_float(DType t, uint16_t v) { return t == DType::F16 ? half_to_float(v) : bf16_to_float(v); }
FLASHIO_HOST_DEVICE uint16_t from_float(DType t, float v) { return t == DType::F16 ? float_to_half(v) : float_to_bf16(v); }

}  // namespace flashio

// Small deterministic generators for inputs (not the dropout RNG); host- and device-callable.
#pragma once
#include <cmath>
#include <cstdint>

#include "bench/core/host_device.h"

namespace flashio {

// SplitMix64: a fast, well-mixed 64-bit generator; one stream per seed.
class SplitMix64 {
 public:
  static constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;  // the state's step per draw

  FLASHIO_HOST_DEVICE explicit SplitMix64(uint64_t seed) : state_(seed) {}
  FLASHIO_HOST_DEVICE uint64_t next() {
    uint64_t z = (state_ += kGamma);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  FLASHIO_HOST_DEVICE double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  FLASHIO_HOST_DEVICE double normal() {  // Box-Muller; one value per call
    const double u1 = 1.0 - uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace flashio

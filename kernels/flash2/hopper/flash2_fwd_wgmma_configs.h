// The tile configurations compiled for the Hopper (wgmma) flash2 forward, per head dim, fastest
// first (H100 measurements: kernels/flash2/NOTES.md). Br is 64 rows per warpgroup.
// Plain C++: read by the instantiations and by the host-side tile list alike.
#pragma once

namespace flashio::kernels {

struct Flash2WgmmaTileSpec {
  int block_m, block_n;
};

template <int kHeadDim> struct Flash2FwdWgmmaConfigs {
  static constexpr bool kAvailable = false;
  static constexpr Flash2WgmmaTileSpec list[] = {{0, 0}};
};
template <> struct Flash2FwdWgmmaConfigs<64> {
  static constexpr bool kAvailable = true;
  static constexpr Flash2WgmmaTileSpec list[] = {{192, 128}, {128, 128}};
};
template <> struct Flash2FwdWgmmaConfigs<128> {
  static constexpr bool kAvailable = true;
  static constexpr Flash2WgmmaTileSpec list[] = {{128, 128}, {128, 64}};
};

}  // namespace flashio::kernels

// The tile configurations compiled for the Hopper (wgmma) flash2 forward, per head dim, fastest
// first (H100 measurements: kernels/flash2/NOTES.md). Br is 64 rows per warpgroup.
// Plain C++: read by the instantiations and by the host-side tile list alike.
#pragma once

namespace flashio::kernels {

struct Flash2WgmmaTileSpec {
  int block_m, block_n;
  bool dropout;  // a dropout variant is compiled (192 × 128: three warpgroups cap registers at
                 // 168, and the dropout variant spills there, ptxas sm_90a)
};

template <int kHeadDim> struct Flash2FwdWgmmaConfigs {
  static constexpr bool kAvailable = false;
  static constexpr Flash2WgmmaTileSpec list[] = {{0, 0, false}};
};
template <> struct Flash2FwdWgmmaConfigs<64> {
  static constexpr bool kAvailable = true;
  static constexpr Flash2WgmmaTileSpec list[] = {{192, 128, false}, {128, 128, true}};
};
template <> struct Flash2FwdWgmmaConfigs<128> {
  static constexpr bool kAvailable = true;
  static constexpr Flash2WgmmaTileSpec list[] = {{128, 128, true}, {128, 64, true}};
};

}  // namespace flashio::kernels

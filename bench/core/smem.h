// Shared memory as occupancy counts it: on sm_80 and later the driver reserves 1 KiB per
// resident block beside what the block asks for (cudaDevAttrReservedSharedMemoryPerBlock), so
// blocks per SM = shared memory per SM / (the block's bytes + this). The analysis' occupancy
// (analysis/dram_model.cpp), the L1 carve-out it implies (analysis/l1_reuse.cpp) and
// flash_decode's split rule (kernels/flash_decode/flash_decode_configs.h) use it.
#pragma once
#include <cstdint>

namespace flashio {

inline constexpr int64_t kSmemReservedPerBlock = 1024;

}  // namespace flashio

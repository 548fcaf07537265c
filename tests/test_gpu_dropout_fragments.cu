// The fused kernels' dropout helpers (kernels/common/dropout_fragments.cuh) against the mask's
// definition (bench/core/philox.h, dropout_keeps) on every lane and element of the m16n8
// C-fragment layout, forward (rows = queries) and backward (rows = keys), at row and column
// offsets that are not tile-aligned beyond what the helpers require. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "bench/cuda/cuda_check.h"
#include "kernels/common/dropout_fragments.cuh"
#include "tests/gpu_test_util.h"

using namespace flashio;
using namespace flashio::kernels;

namespace {

constexpr int kLanes = 32, kElements = 8;  // per lane: tiles k = 0, 1 × elements e = 0 … 3

struct FragmentCase {
  uint64_t seed;
  uint32_t b, h, threshold;
  uint32_t row0, group0, group1;                      // forward: query rows row0 + g (+8), key groups of tiles 0, 1
  uint32_t key_group_a, key_group_b, query0, query1;  // backward: key groups of rows g, g+8; tiles' first queries
};

// out[lane·8 + 4k + e] = keep(k, e); masks[lane·4 + 2k + r] = pair_mask(k, r) (forward only).
__global__ void fragment_kernel(FragmentCase c, bool backward, uint8_t* out, uint32_t* masks) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  if (!backward) {
    const FragmentKeep<false> keep =
        dropout_keep_fwd(c.seed, c.b, c.h, c.row0 + g, c.row0 + g + 8, c.group0, c.group1, c.threshold, lane);
    for (int k = 0; k < 2; ++k) {
      for (int e = 0; e < 4; ++e) out[lane * kElements + 4 * k + e] = keep(k, e);
      for (int r = 0; r < 2; ++r) masks[lane * 4 + 2 * k + r] = keep.pair_mask(k, r);
    }
  } else {
    const FragmentKeep<true> keep = dropout_keep_bwd(c.seed, c.b, c.h, c.key_group_a, c.key_group_b, c.query0 + 2 * t,
                                                     c.query1 + 2 * t, c.threshold, lane);
    for (int k = 0; k < 2; ++k)
      for (int e = 0; e < 4; ++e) out[lane * kElements + 4 * k + e] = keep(k, e);
  }
}

}  // namespace

class DropoutFragments : public testing_util::GpuTest {};

TEST_F(DropoutFragments, EveryLaneAndElementIsTheMasksBit) {
  for (double p : {0.1, 0.5, 0.9})
    for (const FragmentCase base : {FragmentCase{0x5eed, 1, 2, 0, 3, 4, 5, 10, 11, 40, 48},
                                    FragmentCase{0x0123456789abcdefull, 7, 3, 0, 1013, 126, 130, 0, 1, 4096, 8192}}) {
      FragmentCase c = base;
      c.threshold = dropout_threshold(p);
      for (bool backward : {false, true}) {
        uint8_t* d_out = nullptr;
        uint32_t* d_masks = nullptr;
        FLASHIO_CUDA_CHECK(cudaMalloc(&d_out, kLanes * kElements));
        FLASHIO_CUDA_CHECK(cudaMalloc(&d_masks, kLanes * 4 * sizeof(uint32_t)));
        fragment_kernel<<<1, kLanes>>>(c, backward, d_out, d_masks);
        FLASHIO_CHECK_LAUNCH();
        std::vector<uint8_t> out(kLanes * kElements);
        std::vector<uint32_t> masks(kLanes * 4);
        FLASHIO_CUDA_CHECK(cudaMemcpy(out.data(), d_out, out.size(), cudaMemcpyDeviceToHost));
        FLASHIO_CUDA_CHECK(cudaMemcpy(masks.data(), d_masks, masks.size() * 4, cudaMemcpyDeviceToHost));
        FLASHIO_CUDA_CHECK(cudaFree(d_out));
        FLASHIO_CUDA_CHECK(cudaFree(d_masks));
        int kept = 0;
        for (int lane = 0; lane < kLanes; ++lane) {
          const uint32_t g = lane / 4, t = lane % 4;
          for (int k = 0; k < 2; ++k)
            for (int e = 0; e < 4; ++e) {
              uint32_t query, key;
              if (!backward) {  // rows = queries g, g + 8; columns = keys 8·group + 2t (+1)
                query = c.row0 + g + (e >> 1) * 8;
                key = 8 * (k ? c.group1 : c.group0) + 2 * t + (e & 1);
              } else {  // rows = keys g, g + 8 of their groups; columns = queries 2t (+1)
                key = 8 * (e >> 1 ? c.key_group_b : c.key_group_a) + g;
                query = (k ? c.query1 : c.query0) + 2 * t + (e & 1);
              }
              const bool want = dropout_keeps(c.seed, 0, p, c.b, c.h, query, key);
              const bool got = out[lane * kElements + 4 * k + e];
              kept += got;
              EXPECT_EQ(got, want) << (backward ? "backward" : "forward") << " p " << p << " lane " << lane << " tile "
                                   << k << " element " << e << " (query " << query << ", key " << key << ")";
              if (!backward) {
                const uint32_t mask = masks[lane * 4 + 2 * k + (e >> 1)];
                EXPECT_EQ((mask >> (16 * (e & 1))) & 0xffffu, want ? 0xffffu : 0u) << "pair_mask, lane " << lane;
              }
            }
        }
        EXPECT_GT(kept, 0);
        EXPECT_LT(kept, kLanes * kElements);
      }
    }
}

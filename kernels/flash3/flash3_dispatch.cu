// The one dispatch point of the flash3 kernels: the tensor maps of a call's buffers (made with
// the driver's cuTensorMapEncodeTiled, reached through the runtime so nothing links libcuda),
// then run-time (element type, head dim) → template instantiation.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "kernels/flash3/flash3_bwd_kernel.cuh"
#include "kernels/flash3/flash3_launch.cuh"

namespace flashio::kernels {

bool flash3_compiled() { return true; }

template <typename T, int kHeadDim>
void run_flash3_fwd(const Flash3FwdArgs&, const KernelTile&, Flash3Schedule, int, cudaStream_t);
template <typename T, int kHeadDim>
void run_flash3_bwd(const Flash3BwdArgs&, cudaStream_t);

namespace {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    FLASHIO_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr)
      throw std::runtime_error("flash3: the CUDA driver has no cuTensorMapEncodeTiled (TMA needs driver 12.0 or newer)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// A [planes, rows, d] tensor of 16-bit elements as a 3-D tensor map whose box is 64 columns
// (one 128-byte panel row) × box_rows rows × 1 plane, with the 128-byte swizzle
// (kernels/common/wgmma.cuh's swizzle128 layout); rows past `rows` read as zeros, and are not
// written by a store.
CUtensorMap tensor_map(const void* base, bool bf16, int d, int rows, int planes, int box_rows) {
  CUtensorMap map;
  const cuuint64_t dims[3] = {cuuint64_t(d), cuuint64_t(rows), cuuint64_t(planes)};
  const cuuint64_t strides[2] = {cuuint64_t(d) * 2, cuuint64_t(rows) * cuuint64_t(d) * 2};  // bytes, dims 1 and 2
  const cuuint32_t box[3] = {cuuint32_t(kPanelColumns), cuuint32_t(box_rows), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUresult r = tensor_map_encoder()(
      &map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, const_cast<void*>(base), dims,
      strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(fmt::format("flash3: cuTensorMapEncodeTiled failed ({}) for a [{}, {}, {}] tensor",
                                         int(r), planes, rows, d));
  return map;
}

template <typename T>
void dispatch(const Flash3FwdArgs& args, const KernelTile& tile, Flash3Schedule schedule, int sm_count,
              cudaStream_t stream) {
  switch (args.p.head_dim) {
#define FLASH3_FWD_CASE(D) \
  case D: run_flash3_fwd<T, D>(args, tile, schedule, sm_count, stream); return;
    FLASH3_HEAD_DIMS(FLASH3_FWD_CASE)
#undef FLASH3_FWD_CASE
    default: throw std::invalid_argument("flash3: no kernel for head dim " + std::to_string(args.p.head_dim));
  }
}

template <typename T>
void dispatch_bwd(const Flash3BwdArgs& args, cudaStream_t stream) {
  switch (args.p.head_dim) {
#define FLASH3_BWD_CASE(D) \
  case D: run_flash3_bwd<T, D>(args, stream); return;
    FLASH3_BWD_HEAD_DIMS(FLASH3_BWD_CASE)
#undef FLASH3_BWD_CASE
    default: throw std::invalid_argument("flash3: no backward for head dim " + std::to_string(args.p.head_dim));
  }
}

// Makes the tensor maps of `tensors` that moved since the cache last saw them.
template <int kMaps>
void refresh_maps(const void* const (&tensors)[kMaps], const int (&rows)[kMaps], const int (&planes)[kMaps],
                  const int (&box_rows)[kMaps], bool bf16, int d, const void** cached, unsigned char (*maps)[128]) {
  for (int i = 0; i < kMaps; ++i) {
    if (cached[i] == tensors[i]) continue;
    const CUtensorMap m = tensor_map(tensors[i], bf16, d, rows[i], planes[i], box_rows[i]);
    std::memcpy(maps[i], &m, sizeof m);
    cached[i] = tensors[i];
  }
}

}  // namespace

void flash3_schedule_init(int* schedule, cudaStream_t stream) {
  FLASHIO_CUDA_CHECK(cudaMemsetAsync(schedule, 0, kFlash3ScheduleInts * sizeof(int), stream));
  FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));  // before any stream launches on them
}

void flash3_fwd(const FwdParams& p, const KernelTile& tile, Flash3Schedule schedule, bool bf16, int sm_count,
                int* scheduler, Flash3MapCache& cache, cudaStream_t stream) {
  static_assert(sizeof(CUtensorMap) == sizeof(cache.maps[0]) && alignof(CUtensorMap) <= 128, "CUtensorMap's size");
  const void* tensors[4] = {p.q, p.k, p.v, p.o};
  const int rows[4] = {p.seqlen_q, p.seqlen_k, p.seqlen_k, p.seqlen_q};
  const int planes[4] = {p.batch * p.heads, p.batch * p.kv_heads, p.batch * p.kv_heads, p.batch * p.heads};
  const int box_rows[4] = {tile.block_r, tile.block_c, tile.block_c, 64};  // O: one consumer's 64 rows
  refresh_maps<4>(tensors, rows, planes, box_rows, bf16, p.head_dim, cache.tensors, cache.maps);
  Flash3FwdArgs args;
  std::memcpy(&args.q, cache.maps[0], sizeof(CUtensorMap));
  std::memcpy(&args.k, cache.maps[1], sizeof(CUtensorMap));
  std::memcpy(&args.v, cache.maps[2], sizeof(CUtensorMap));
  std::memcpy(&args.o, cache.maps[3], sizeof(CUtensorMap));
  args.p = p;
  args.m_blocks = (p.seqlen_q + tile.block_r - 1) / tile.block_r;
  args.num_items = args.m_blocks * p.heads * p.batch;
  args.plane_group = flash3_fwd_plane_group(args.m_blocks, sm_count, p.causal);
  args.schedule = scheduler;
  if (bf16) {
    dispatch<__nv_bfloat16>(args, tile, schedule, sm_count, stream);
  } else {
    dispatch<half>(args, tile, schedule, sm_count, stream);
  }
}

void flash3_bwd(const BwdParams& p, const KernelTile& tile, bool bf16, int sm_count, Flash3BwdMapCache& cache,
                cudaStream_t stream) {
  if (tile.block_r != kFlash3BwdTile.block_r || tile.block_c != kFlash3BwdTile.block_c ||
      tile.stages != kFlash3BwdTile.stages)
    throw std::invalid_argument("flash3: backward tile configuration not compiled");
  if (p.deterministic) throw std::invalid_argument("flash3: the backward has no deterministic mode");
  if (p.dropout) throw std::invalid_argument("flash3: no dropout");
  const void* tensors[Flash3BwdMapCache::kMaps] = {p.q, p.d_o, p.k, p.v, p.dk, p.dv};
  const int q_planes = p.batch * p.heads, kv_planes = p.batch * p.kv_heads;
  const int rows[Flash3BwdMapCache::kMaps] = {p.seqlen_q, p.seqlen_q, p.seqlen_k, p.seqlen_k, p.seqlen_k, p.seqlen_k};
  const int planes[Flash3BwdMapCache::kMaps] = {q_planes, q_planes, kv_planes, kv_planes, kv_planes, kv_planes};
  // dK, dV: one consumer's 64 rows per store.
  const int box_rows[Flash3BwdMapCache::kMaps] = {tile.block_r, tile.block_r, tile.block_c, tile.block_c, 64, 64};
  refresh_maps<Flash3BwdMapCache::kMaps>(tensors, rows, planes, box_rows, bf16, p.head_dim, cache.tensors, cache.maps);
  Flash3BwdArgs args;
  CUtensorMap* maps[Flash3BwdMapCache::kMaps] = {&args.q, &args.d_o, &args.k, &args.v, &args.dk, &args.dv};
  for (int i = 0; i < Flash3BwdMapCache::kMaps; ++i) std::memcpy(maps[i], cache.maps[i], sizeof(CUtensorMap));
  args.p = p;
  const int key_tiles = (p.seqlen_k + tile.block_c - 1) / tile.block_c;
  args.plane_group = p.causal ? flash3_bwd_plane_group(key_tiles, sm_count) : 0;
  if (bf16) {
    dispatch_bwd<__nv_bfloat16>(args, stream);
  } else {
    dispatch_bwd<half>(args, stream);
  }
}

}  // namespace flashio::kernels

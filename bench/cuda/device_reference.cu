#include "bench/cuda/device_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include <cuda_fp16.h>

#include "bench/core/philox.h"
#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_memory.h"

namespace flashio {

namespace {

// Threads of every block below; each owns at most two columns of d in the kernels' sums, so
// d <= 256 (device_reference_covers).
constexpr int kThreads = 128;
constexpr int kKeyTile = 16, kRowTile = kThreads / kKeyTile;    // dK/dV: a block's keys, rows per step
constexpr int kTileRows = 4, kTileKeys = kThreads / kTileRows;  // rows: a block's rows, keys per step
// A row's keys are split into runs of kSplitKeys, a K/V head's query rows into runs of kSplitRows,
// each run a block of its own whose partial sums a second kernel adds in run order. The runs sit
// at fixed places, so a row's result does not depend on which other rows were asked; without them
// a sweep's grids held a block per four rows or per 16 keys and left four fifths of an H200 idle.
constexpr int64_t kSplitKeys = 16 * kTileKeys;
constexpr int64_t kSplitRows = 64 * kRowTile;
constexpr int kCombineThreads = 256;

// What the kernels need of a Problem (which holds host vectors).
struct Geometry {
  int64_t heads, kv_heads, nq, nk, d;
  DType dtype;
  double scale;
  bool causal;
  double dropout;
  uint64_t seed;
};

Geometry geometry_of(const Problem& p) {
  return {p.heads, p.kvh(), p.seqlen_q, p.nk(), p.head_dim, p.dtype, p.scale(), p.causal, p.dropout, p.seed};
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t key_runs(const Geometry& g) { return std::max<int64_t>(1, ceil_div(g.nk, kSplitKeys)); }

// A 16-bit element as double (exact), by the hardware's conversions.
__device__ double widen(const Geometry& g, uint16_t w) {
  return g.dtype == DType::F16 ? double(__half2float(__ushort_as_half(w))) : double(__uint_as_float(uint32_t(w) << 16));
}

// Σ_c a[c]·b[c] over c < d, as four sums over c mod 4 (independent chains) added in order; a and b
// widened by `fa`, `fb`.
template <typename A, typename B, typename FA, typename FB>
__device__ double dot4(const A* a, const B* b, int64_t d, FA fa, FB fb) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  int64_t c = 0;
  for (; c + 4 <= d; c += 4) {
    s0 += fa(a[c]) * fb(b[c]);
    s1 += fa(a[c + 1]) * fb(b[c + 1]);
    s2 += fa(a[c + 2]) * fb(b[c + 2]);
    s3 += fa(a[c + 3]) * fb(b[c + 3]);
  }
  for (; c < d; ++c) s0 += fa(a[c]) * fb(b[c]);
  return ((s0 + s1) + s2) + s3;
}

// Rows [0, n) of `from` (row stride d) into `to` (row stride d + 2), each row by the block's
// threads together: row by warp, columns by lane.
__device__ void stage_rows(uint16_t* to, const uint16_t* from, int64_t n, int64_t d) {
  for (int64_t row = threadIdx.x / 32; row < n; row += blockDim.x / 32)
    for (int64_t c = threadIdx.x % 32; c < d; c += 32) to[row * (d + 2) + c] = from[row * d + c];
}

__device__ int64_t visible_keys(const Geometry& g, const int32_t* key_lengths, int64_t b, int64_t i) {
  return keys_seen(g.nk, key_lengths, g.causal, b, i);
}

// Z_ij: 1/(1-p) where dropout keeps the element, 0 where it drops it, 1 without dropout.
__device__ double keep_factor(const Geometry& g, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (g.dropout <= 0.0) return 1.0;
  return dropout_keeps(g.seed, kDropoutOffset, g.dropout, uint32_t(b), uint32_t(h), uint32_t(i), uint32_t(j))
             ? dropout_scale(g.dropout)
             : 0.0;
}

enum class RowPass { Stats, Out, Dq };

// Shared memory of tile_kernel: the tile's Q rows widened (kTileRows × d doubles), its dO rows, and
// a step's K and V rows (kTileKeys each) as stored, each 16-bit row padded by a word.
size_t tile_kernel_smem(int64_t d) {
  return size_t(kTileRows * d) * sizeof(double) + size_t((kTileRows + 2 * kTileKeys) * (d + 2)) * sizeof(uint16_t);
}

// Block (x, y): tile x of up to kTileRows query rows (indices into `rows`, three int64 (b, h, i)
// each) that read the same K/V head, over run y of their keys (keys y·kSplitKeys ..), kTileKeys
// keys a step: thread (row, key) makes that pair's dot products, so each staged key serves the
// tile's rows. Its partial sums go to `part` at run y (row_count rows a run):
// - Stats: (m, Σ_j e_j, Σ_j e_j·dP_ij·Z_ij) per row with e_j = exp(s_j - m), m = max_j s_j,
//   s_j = scale·q·k_j, dP_ij = dO_i·v_j (the third only with dO; -inf, 0, 0 when the run has no key
//   the row sees); each thread keeps a running maximum and its sums rescaled to it, the row's
//   threads combine them; combine_stats makes LSE and D_i of the runs;
// - Out:   Σ_j P_ij·Z_ij·v_j (d per row) with P_ij = exp(s_j - lse[r]);
// - Dq:    Σ_j scale·P_ij·(dP_ij·Z_ij - D_i)·k_j.
// Out and Dq write each pair's weight to shared memory, then each thread adds the step's terms to
// its columns of every row of the tile, keys in order; combine_sums adds the runs.
template <RowPass Pass>
__global__ void __launch_bounds__(kThreads) tile_kernel(Geometry g, DeviceTensors t, const int64_t* __restrict__ rows,
                                                        const int32_t* __restrict__ tiles, int64_t row_count,
                                                        const double* __restrict__ lse, const double* __restrict__ dsum,
                                                        double* __restrict__ part) {
  extern __shared__ double smem[];
  __shared__ double w[kTileRows][kTileKeys];
  __shared__ int64_t row_h[kTileRows], row_i[kTileRows], row_visible[kTileRows];
  __shared__ int32_t row_index[kTileRows];
  const int64_t d = g.d, ds = d + 2;
  double* x = smem;
  uint16_t* y = reinterpret_cast<uint16_t*>(x + kTileRows * d);
  uint16_t *k_s = y + kTileRows * ds, *v_s = k_s + kTileKeys * ds;
  const bool with_dp = Pass == RowPass::Dq || (Pass == RowPass::Stats && t.d_o);
  const bool stage_v = with_dp || Pass == RowPass::Out;
  const int32_t* tile = tiles + int64_t(blockIdx.x) * kTileRows;
  const int64_t b = rows[3 * int64_t(tile[0])], hk = rows[3 * int64_t(tile[0]) + 1] / (g.heads / g.kv_heads);
  if (threadIdx.x < kTileRows) {
    const int32_t r = tile[threadIdx.x];
    row_index[threadIdx.x] = r;
    row_h[threadIdx.x] = r < 0 ? 0 : rows[3 * int64_t(r) + 1];
    row_i[threadIdx.x] = r < 0 ? 0 : rows[3 * int64_t(r) + 2];
    row_visible[threadIdx.x] = r < 0 ? 0 : visible_keys(g, t.key_lengths, b, rows[3 * int64_t(r) + 2]);
  }
  __syncthreads();
  int64_t longest = 0;
  for (int m = 0; m < kTileRows; ++m) longest = max(longest, row_visible[m]);
  const int64_t first = int64_t(blockIdx.y) * kSplitKeys, last = min(first + kSplitKeys, longest);
  if (first < last)
    for (int64_t e = threadIdx.x; e < kTileRows * d; e += kThreads) {
      const int m = int(e / d);
      const int64_t at = ((b * g.heads + row_h[m]) * g.nq + row_i[m]) * d + e % d;
      x[e] = row_index[m] < 0 ? 0.0 : widen(g, t.q[at]);
      if (with_dp) y[m * ds + e % d] = row_index[m] < 0 ? 0 : t.d_o[at];
    }
  const uint16_t* k = t.k + (b * g.kv_heads + hk) * g.nk * d;
  const uint16_t* v = t.v + (b * g.kv_heads + hk) * g.nk * d;
  const int pair_row = threadIdx.x / kTileKeys, pair_key = threadIdx.x % kTileKeys;
  const int64_t my_visible = row_visible[pair_row], h = row_h[pair_row], i = row_i[pair_row];
  const int32_t my_index = row_index[pair_row];
  double m = -INFINITY, sum = 0.0, e_dp = 0.0;  // Stats: this thread's keys of its row
  const double row_lse = Pass != RowPass::Stats && my_index >= 0 ? lse[my_index] : 0.0;
  const double row_d = Pass == RowPass::Dq && my_index >= 0 ? dsum[my_index] : 0.0;
  double acc[2][kTileRows] = {};  // Out, Dq: columns threadIdx.x and threadIdx.x + kThreads of each row
  for (int64_t j0 = first; j0 < last; j0 += kTileKeys) {
    const int64_t n = min(int64_t(kTileKeys), last - j0);
    __syncthreads();  // the rows written; the previous step's keys and weights read
    stage_rows(k_s, k + j0 * d, n, d);
    if (stage_v) stage_rows(v_s, v + j0 * d, n, d);
    __syncthreads();
    const int64_t j = j0 + pair_key;
    const bool seen = j < my_visible && pair_key < n;
    double s = 0.0, dp = 0.0;
    if (seen) {
      const double* xr = x + pair_row * d;
      const uint16_t *yr = y + pair_row * ds, *kr = k_s + pair_key * ds, *vr = v_s + pair_key * ds;
      const auto as_is = [](double x) { return x; };
      const auto wide = [&](uint16_t x) { return widen(g, x); };
      s = g.scale * dot4(xr, kr, d, as_is, wide);
      if (with_dp) dp = dot4(yr, vr, d, wide, wide);
    }
    if constexpr (Pass == RowPass::Stats) {
      if (seen) {
        const double next = fmax(m, s), rescale = exp(m - next), e = exp(s - next);
        sum = sum * rescale + e;
        if (with_dp) e_dp = e_dp * rescale + e * dp * keep_factor(g, b, h, i, j);
        m = next;
      }
    } else {
      double weight = 0.0;
      if (seen) {
        const double p = exp(s - row_lse), z = keep_factor(g, b, h, i, j);
        weight = Pass == RowPass::Out ? p * z : g.scale * p * (dp * z - row_d);
      }
      w[pair_row][pair_key] = weight;
      __syncthreads();
      const uint16_t* summed = Pass == RowPass::Out ? v_s : k_s;
      for (int cc = 0; cc < 2; ++cc) {
        const int64_t c = threadIdx.x + cc * kThreads;
        if (c >= d) break;
        for (int64_t jj = 0; jj < n; ++jj) {
          const double value = widen(g, summed[jj * ds + c]);
#pragma unroll
          for (int r = 0; r < kTileRows; ++r) acc[cc][r] += w[r][jj] * value;
        }
      }
    }
  }
  if constexpr (Pass == RowPass::Stats) {
    // The row's kTileKeys threads (consecutive lanes of one warp): its maximum, then its sums at it.
    double row_max = m;
    for (int lane = 1; lane < kTileKeys; lane *= 2)
      row_max = fmax(row_max, __shfl_xor_sync(0xffffffffu, row_max, lane));
    const double rescale = m == -INFINITY ? 0.0 : exp(m - row_max);
    double total = sum * rescale, total_dp = e_dp * rescale;
    for (int lane = 1; lane < kTileKeys; lane *= 2) {  // the same sums on every thread of the row
      total += __shfl_xor_sync(0xffffffffu, total, lane);
      total_dp += __shfl_xor_sync(0xffffffffu, total_dp, lane);
    }
    if (pair_key == 0 && my_index >= 0) {
      double* at = part + (int64_t(blockIdx.y) * row_count + my_index) * 3;
      at[0] = row_max;
      at[1] = total;
      at[2] = total_dp;
    }
  } else {
    for (int cc = 0; cc < 2; ++cc) {
      const int64_t c = threadIdx.x + cc * kThreads;
      if (c >= d) break;
      for (int r = 0; r < kTileRows; ++r)
        if (row_index[r] >= 0) part[(int64_t(blockIdx.y) * row_count + row_index[r]) * d + c] = acc[cc][r];
    }
  }
}

// Each row's LSE (and D_i, when dsum) from its key runs' (m, Σ e, Σ e·dP·Z), runs in order:
// M = max m, total = Σ Σe·exp(m - M); LSE = M + log total, D_i = Σ (Σe·dP·Z)·exp(m - M) / total
// (-inf and 0 for a row that sees no key).
__global__ void combine_stats(const double* __restrict__ part, int64_t row_count, int64_t runs,
                              double* __restrict__ lse, double* __restrict__ dsum) {
  const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= row_count) return;
  double top = -INFINITY;
  for (int64_t s = 0; s < runs; ++s) top = fmax(top, part[(s * row_count + r) * 3]);
  double total = 0.0, total_dp = 0.0;
  for (int64_t s = 0; s < runs && top != -INFINITY; ++s) {
    const double* at = part + (s * row_count + r) * 3;
    if (at[0] == -INFINITY) continue;
    const double rescale = exp(at[0] - top);
    total += at[1] * rescale;
    total_dp += at[2] * rescale;
  }
  lse[r] = top == -INFINITY ? -INFINITY : top + log(total);
  if (dsum) dsum[r] = top == -INFINITY ? 0.0 : total_dp / total;
}

// out[q·per_group + e] = Σ_s part[(q·runs + s)·per_group + e], runs in order, for q < groups.
__global__ void combine_sums(const double* __restrict__ part, int64_t groups, int64_t per_group, int64_t runs,
                             double* __restrict__ out) {
  const int64_t at = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (at >= groups * per_group) return;
  const int64_t q = at / per_group, e = at % per_group;
  double total = 0.0;
  for (int64_t s = 0; s < runs; ++s) total += part[(q * runs + s) * per_group + e];
  out[at] = total;
}

// Block (x, y, z): dK and dV of kKeyTile keys (x) of K/V head z ((b, hk) = heads[2z], heads[2z + 1])
// over run y of the head's group's query rows (heads hk·group .. , rows 0 .. Nq, in (h, i) order:
// rows y·kSplitRows ..), kRowTile rows a step; a step none of whose pairs sees a key (causal) is
// skipped. Thread (row, key) of the step's pairs makes that pair's weights, then each thread adds
// them to its columns of the tile's keys, the rows in order. lse, dsum: the heads' rows' Stats,
// indexed (z·group + h - h0)·Nq + i. Partial sums to part_k, part_v at (z, y), Nk × d each.
__global__ void __launch_bounds__(kThreads) dkdv_kernel(Geometry g, DeviceTensors t, const int64_t* __restrict__ heads,
                                                        const double* __restrict__ lse,
                                                        const double* __restrict__ dsum, double* __restrict__ part_k,
                                                        double* __restrict__ part_v) {
  __shared__ double wv[kRowTile][kKeyTile], wk[kRowTile][kKeyTile];
  extern __shared__ uint16_t tiles[];  // K, V tiles (kKeyTile × d), then the step's Q, dO rows (kRowTile × d)
  const int64_t d = g.d, group = g.heads / g.kv_heads, j0 = int64_t(blockIdx.x) * kKeyTile;
  const int64_t b = heads[2 * blockIdx.z], hk = heads[2 * blockIdx.z + 1], h0 = hk * group;
  const int64_t keys = min(int64_t(kKeyTile), g.nk - j0);
  const int64_t ds = d + 2;  // each tile row padded by a word: a warp's 16 keys fall in 16 banks
  uint16_t *k_tile = tiles, *v_tile = k_tile + kKeyTile * ds, *q_rows = v_tile + kKeyTile * ds,
           *do_rows = q_rows + kRowTile * ds;
  const uint16_t* k = t.k + ((b * g.kv_heads + hk) * g.nk + j0) * d;
  const uint16_t* v = t.v + ((b * g.kv_heads + hk) * g.nk + j0) * d;
  stage_rows(k_tile, k, keys, d);
  stage_rows(v_tile, v, keys, d);
  double acc_k[2][kKeyTile] = {}, acc_v[2][kKeyTile] = {};
  const int64_t rows = group * g.nq, first = int64_t(blockIdx.y) * kSplitRows, last = min(first + kSplitRows, rows);
  const double* head_lse = lse + int64_t(blockIdx.z) * rows;
  const double* head_dsum = dsum + int64_t(blockIdx.z) * rows;
  const int pair_key = threadIdx.x % kKeyTile, pair_row = threadIdx.x / kKeyTile;
  for (int64_t r0 = first; r0 < last; r0 += kRowTile) {
    const int64_t n = min(int64_t(kRowTile), last - r0);
    const int64_t r = r0 + pair_row, h = h0 + r / g.nq, i = r % g.nq, j = j0 + pair_key;
    const bool seen = pair_row < n && pair_key < keys && j < visible_keys(g, t.key_lengths, b, i);
    // Also the barrier before this step's rows and weights overwrite the previous step's.
    if (!__syncthreads_or(seen)) continue;
    for (int64_t m = threadIdx.x / 32; m < n; m += kThreads / 32) {  // rows r0 .. r0 + n: (h, i) in order
      const int64_t rm = r0 + m, at = ((b * g.heads + h0 + rm / g.nq) * g.nq + rm % g.nq) * d;
      for (int64_t c = threadIdx.x % 32; c < d; c += 32) {
        q_rows[m * ds + c] = t.q[at + c];
        do_rows[m * ds + c] = t.d_o[at + c];
      }
    }
    __syncthreads();
    double pv = 0.0, pk = 0.0;
    if (seen) {
      const auto wide = [&](uint16_t x) { return widen(g, x); };
      const double s = dot4(q_rows + pair_row * ds, k_tile + pair_key * ds, d, wide, wide);
      const double dp = dot4(do_rows + pair_row * ds, v_tile + pair_key * ds, d, wide, wide);
      const double p = exp(g.scale * s - head_lse[r]), z = keep_factor(g, b, h, i, j);
      pv = p * z;
      pk = g.scale * p * (dp * z - head_dsum[r]);
    }
    wv[pair_row][pair_key] = pv;
    wk[pair_row][pair_key] = pk;
    __syncthreads();
    for (int cc = 0; cc < 2; ++cc) {
      const int64_t c = threadIdx.x + cc * kThreads;
      if (c >= d) break;
      for (int64_t m = 0; m < n; ++m) {
        const double qc = widen(g, q_rows[m * ds + c]), doc = widen(g, do_rows[m * ds + c]);
#pragma unroll
        for (int jj = 0; jj < kKeyTile; ++jj) {
          acc_v[cc][jj] += wv[m][jj] * doc;
          acc_k[cc][jj] += wk[m][jj] * qc;
        }
      }
    }
  }
  const int64_t at = (int64_t(blockIdx.z) * gridDim.y + blockIdx.y) * g.nk * d;
  for (int cc = 0; cc < 2; ++cc) {
    const int64_t c = threadIdx.x + cc * kThreads;
    if (c >= d) break;
    for (int64_t jj = 0; jj < keys; ++jj) {
      part_k[at + (j0 + jj) * d + c] = acc_k[cc][jj];
      part_v[at + (j0 + jj) * d + c] = acc_v[cc][jj];
    }
  }
}

// The rows as (b, h, i) triples on the device, and their tiles: up to kTileRows indices of rows
// that read the same K/V head (in the order given within a head), -1 past a tile's last row.
struct RowsOnDevice {
  DeviceBuffer rows, tiles;
  size_t count = 0, tile_count = 0;
};

RowsOnDevice rows_on_device(const Problem& p, const std::vector<RowId>& rows, DeviceAllocator& alloc,
                            cudaStream_t stream) {
  std::vector<int64_t> flat;
  flat.reserve(rows.size() * 3);
  for (const RowId& r : rows) flat.insert(flat.end(), {r.b, r.h, r.i});
  std::map<std::pair<int64_t, int64_t>, std::vector<int32_t>> by_head;  // (b, hk) → rows
  for (size_t r = 0; r < rows.size(); ++r) by_head[{rows[r].b, rows[r].h / (p.heads / p.kvh())}].push_back(int32_t(r));
  std::vector<int32_t> tiles;
  for (const auto& [head, members] : by_head)
    for (size_t m = 0; m < members.size(); m += kTileRows)
      for (size_t k = m; k < m + kTileRows; ++k) tiles.push_back(k < members.size() ? members[k] : -1);
  RowsOnDevice out;
  out.count = rows.size();
  out.tile_count = tiles.size() / kTileRows;
  out.rows = DeviceBuffer(alloc, flat.size() * sizeof(int64_t));
  out.tiles = DeviceBuffer(alloc, tiles.size() * sizeof(int32_t));
  // From pageable memory: each call returns once `flat` and `tiles` are read.
  FLASHIO_CUDA_CHECK(cudaMemcpyAsync(out.rows.get(), flat.data(), out.rows.bytes(), cudaMemcpyHostToDevice, stream));
  FLASHIO_CUDA_CHECK(cudaMemcpyAsync(out.tiles.get(), tiles.data(), out.tiles.bytes(), cudaMemcpyHostToDevice, stream));
  return out;
}

unsigned combine_blocks(int64_t count) { return unsigned(ceil_div(count, kCombineThreads)); }

// LSE of the rows (and D_i into *dsum when t.d_o): tile_kernel's Stats over every key run, then
// combine_stats.
void row_stats(const Geometry& g, const DeviceTensors& t, const RowsOnDevice& rows, DeviceBuffer& lse,
               DeviceBuffer* dsum, DeviceAllocator& alloc, cudaStream_t stream) {
  const int64_t runs = key_runs(g), count = int64_t(rows.count);
  DeviceBuffer part(alloc, size_t(runs * count * 3) * sizeof(double));
  const dim3 grid(unsigned(rows.tile_count), unsigned(runs));
  tile_kernel<RowPass::Stats><<<grid, kThreads, tile_kernel_smem(g.d), stream>>>(
      g, t, rows.rows.as<int64_t>(), rows.tiles.as<int32_t>(), count, nullptr, nullptr, part.as<double>());
  FLASHIO_CHECK_LAUNCH();
  combine_stats<<<combine_blocks(count), kCombineThreads, 0, stream>>>(part.as<double>(), count, runs, lse.as<double>(),
                                                                       dsum ? dsum->as<double>() : nullptr);
  FLASHIO_CHECK_LAUNCH();
}

// O (Pass Out) or dQ (Pass Dq) of the rows into `out` (count × d), given their Stats.
template <RowPass Pass>
void row_sums(const Geometry& g, const DeviceTensors& t, const RowsOnDevice& rows, const DeviceBuffer& lse,
              const DeviceBuffer* dsum, DeviceBuffer& out, DeviceAllocator& alloc, cudaStream_t stream) {
  const int64_t runs = key_runs(g), count = int64_t(rows.count);
  DeviceBuffer part(alloc, size_t(runs * count * g.d) * sizeof(double));
  const dim3 grid(unsigned(rows.tile_count), unsigned(runs));
  tile_kernel<Pass><<<grid, kThreads, tile_kernel_smem(g.d), stream>>>(
      g, t, rows.rows.as<int64_t>(), rows.tiles.as<int32_t>(), count, lse.as<double>(),
      dsum ? dsum->as<double>() : nullptr, part.as<double>());
  FLASHIO_CHECK_LAUNCH();
  combine_sums<<<combine_blocks(count * g.d), kCombineThreads, 0, stream>>>(part.as<double>(), 1, count * g.d, runs,
                                                                            out.as<double>());
  FLASHIO_CHECK_LAUNCH();
}

std::vector<double> copied_back(const DeviceBuffer& buf, size_t count, cudaStream_t stream) {
  std::vector<double> out(count);
  if (count)
    FLASHIO_CUDA_CHECK(cudaMemcpyAsync(out.data(), buf.get(), count * sizeof(double), cudaMemcpyDeviceToHost, stream));
  FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}

void require_covered(const Problem& p) {
  if (!device_reference_covers(p))
    throw std::logic_error(
        "the GPU's float64 reference does not cover this problem's layout (device_reference_covers)");
}

}  // namespace

void device_reference_rows(const Problem& p, const DeviceTensors& t, const std::vector<RowId>& rows,
                           std::vector<double>& out, std::vector<double>& lse, DeviceAllocator& alloc,
                           cudaStream_t stream) {
  require_covered(p);
  out.clear();
  lse.clear();
  if (rows.empty()) return;
  const Geometry g = geometry_of(p);
  DeviceTensors forward = t;
  forward.d_o = nullptr;
  const RowsOnDevice on_device = rows_on_device(p, rows, alloc, stream);
  DeviceBuffer l(alloc, rows.size() * sizeof(double)), o(alloc, rows.size() * size_t(p.head_dim) * sizeof(double));
  row_stats(g, forward, on_device, l, nullptr, alloc, stream);
  row_sums<RowPass::Out>(g, forward, on_device, l, nullptr, o, alloc, stream);
  out = copied_back(o, rows.size() * size_t(p.head_dim), stream);
  lse = copied_back(l, rows.size(), stream);
}

void device_reference_dq_rows(const Problem& p, const DeviceTensors& t, const std::vector<RowId>& rows,
                              std::vector<double>& dq, DeviceAllocator& alloc, cudaStream_t stream) {
  require_covered(p);
  if (!t.d_o) throw std::logic_error("device_reference_dq_rows needs dO");
  dq.clear();
  if (rows.empty()) return;
  const Geometry g = geometry_of(p);
  const RowsOnDevice on_device = rows_on_device(p, rows, alloc, stream);
  DeviceBuffer l(alloc, rows.size() * sizeof(double)), ds(alloc, rows.size() * sizeof(double));
  DeviceBuffer out(alloc, rows.size() * size_t(p.head_dim) * sizeof(double));
  row_stats(g, t, on_device, l, &ds, alloc, stream);
  row_sums<RowPass::Dq>(g, t, on_device, l, &ds, out, alloc, stream);
  dq = copied_back(out, rows.size() * size_t(p.head_dim), stream);
}

void device_reference_dkdv_heads(const Problem& p, const DeviceTensors& t,
                                 const std::vector<std::pair<int64_t, int64_t>>& heads, std::vector<double>& dk,
                                 std::vector<double>& dv, DeviceAllocator& alloc, cudaStream_t stream) {
  require_covered(p);
  if (!t.d_o) throw std::logic_error("device_reference_dkdv_heads needs dO");
  const Geometry g = geometry_of(p);
  const int64_t group = p.heads / p.kvh(), d = p.head_dim, nk = p.nk(), count = int64_t(heads.size());
  const int64_t rows_per_head = group * p.seqlen_q;
  if (count == 0 || rows_per_head == 0 || nk == 0) {  // no head, or no term in any sum
    dk.assign(size_t(count * nk * d), 0.0);
    dv.assign(size_t(count * nk * d), 0.0);
    return;
  }
  std::vector<RowId> rows;  // every head's group rows, (h, i) in order
  std::vector<int64_t> flat_heads;
  for (auto [b, hk] : heads) {
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h)
      for (int64_t i = 0; i < p.seqlen_q; ++i) rows.push_back({b, h, i});
    flat_heads.insert(flat_heads.end(), {b, hk});
  }
  const RowsOnDevice on_device = rows_on_device(p, rows, alloc, stream);
  DeviceBuffer heads_on_gpu(alloc, flat_heads.size() * sizeof(int64_t));
  FLASHIO_CUDA_CHECK(cudaMemcpyAsync(heads_on_gpu.get(), flat_heads.data(), heads_on_gpu.bytes(),
                                     cudaMemcpyHostToDevice, stream));
  DeviceBuffer l(alloc, rows.size() * sizeof(double)), ds(alloc, rows.size() * sizeof(double));
  row_stats(g, t, on_device, l, &ds, alloc, stream);
  const int64_t runs = ceil_div(rows_per_head, kSplitRows), per_head = nk * d;
  DeviceBuffer part_k(alloc, size_t(count * runs * per_head) * sizeof(double));
  DeviceBuffer part_v(alloc, size_t(count * runs * per_head) * sizeof(double));
  const size_t smem = size_t(2 * (kKeyTile + kRowTile) * (d + 2)) * sizeof(uint16_t);
  dkdv_kernel<<<dim3(unsigned(ceil_div(nk, kKeyTile)), unsigned(runs), unsigned(count)), kThreads, smem, stream>>>(
      g, t, heads_on_gpu.as<int64_t>(), l.as<double>(), ds.as<double>(), part_k.as<double>(), part_v.as<double>());
  FLASHIO_CHECK_LAUNCH();
  DeviceBuffer k_out(alloc, size_t(count * per_head) * sizeof(double)), v_out(alloc, k_out.bytes());
  combine_sums<<<combine_blocks(count * per_head), kCombineThreads, 0, stream>>>(part_k.as<double>(), count, per_head,
                                                                                 runs, k_out.as<double>());
  FLASHIO_CHECK_LAUNCH();
  combine_sums<<<combine_blocks(count * per_head), kCombineThreads, 0, stream>>>(part_v.as<double>(), count, per_head,
                                                                                 runs, v_out.as<double>());
  FLASHIO_CHECK_LAUNCH();
  dk = copied_back(k_out, size_t(count * per_head), stream);
  dv = copied_back(v_out, size_t(count * per_head), stream);
}

}  // namespace flashio

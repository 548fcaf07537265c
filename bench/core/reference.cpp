#include "bench/core/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "bench/core/parallel.h"
#include "bench/core/sparsity.h"
#include "bench/core/philox.h"

namespace flashio {

std::vector<RowId> all_rows(const Problem& p) {
  std::vector<RowId> rows;
  rows.reserve(size_t(p.batch * p.heads * p.seqlen_q));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < query_length(p, b); ++i) rows.push_back({b, h, i});
  return rows;
}

int64_t query_length(const Problem& p, int64_t b) {
  return p.varlen() && !p.key_varlen() ? int64_t(p.seq_lengths[size_t(b)]) : p.seqlen_q;
}

double reference_cost(const Problem& p, int64_t nrows) {
  return 2.0 * double(nrows) * double(p.nk()) * double(p.head_dim);
}

namespace {

// Keys per block of the transposed layout.
constexpr int64_t kKeyBlock = 16;

// Doubles a vector does not zero when it grows: decoded heads are written whole (their transposed
// copies' padding keys explicitly), and value-initialising them would first zero hundreds of MB.
template <typename T>
struct Uninitialised : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = Uninitialised<U>;
  };
  Uninitialised() = default;
  template <typename U>
  Uninitialised(const Uninitialised<U>&) {}
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0)
      ::new (static_cast<void*>(p)) U;
    else
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Doubles = std::vector<double, Uninitialised<double>>;

// One K/V head's keys and values widened once to double (exact: every fp16 and bf16 value is a
// double), so the row loops neither convert an element once per query row nor widen it in their
// inner loops; also transposed by blocks of kKeyBlock keys, (Nk / 16, d, 16) with the last block
// zero-padded, for the sums over d (dot_keys): a block's d × 16 values lie together in memory.
// Each copy is made only where its caller reads it (null otherwise).
struct DecodedHead {
  double* k = nullptr;   // (Nk, d)
  double* v = nullptr;   // (Nk, d)
  double* kt = nullptr;  // (ceil(Nk / 16), d, 16)
  double* vt = nullptr;  // (ceil(Nk / 16), d, 16)
};
enum Copies : unsigned { kK = 1 << 0, kV = 1 << 1, kKt = 1 << 2, kVt = 1 << 3 };  // bit c: DecodedHead's c-th copy
// The copies each part of the reference reads: O and LSE (the forward), dQ, dK and dV.
constexpr unsigned kOCopies = kKt | kV, kDqCopies = kKt | kVt | kK, kDkDvCopies = kKt | kVt;

// Bytes of one decoded head with all four copies: about Nk × d × 32 (1 GiB at Nk = 128k, d = 256).
double decoded_head_bytes(const Problem& p) {
  const int64_t blocks = (p.nk() + kKeyBlock - 1) / kKeyBlock;
  return 16.0 * double(p.nk() * p.head_dim + blocks * kKeyBlock * p.head_dim);
}

// The heads (b, hk) decoded into the copies `copies` names, all of them in one pool of threads,
// each taking the next run of 256 keys of any head: a few heads of a long sequence keep every
// core busy. The copies live in memory the calling thread keeps for its next calls (grown, never
// shrunk: at most what kDecodedBudgetBytes lets one batch of heads take), so they are valid until
// the thread calls again. Fresh memory for each batch cost as much as the decoding itself (its
// pages faulted in one by one: a third of the host's work for issue 22's 64-point sweep on a
// virtual machine of 2 cores).
std::vector<DecodedHead> decode_heads(const Problem& p, const HostTensors& t,
                                      const std::vector<std::pair<int64_t, int64_t>>& heads, unsigned copies,
                                      int threads) {
  const int64_t d = p.head_dim, nk = p.nk(), per_head = nk * d;
  const int64_t blocks = (nk + kKeyBlock - 1) / kKeyBlock, per_blocked = blocks * kKeyBlock * d;
  const int64_t sizes[4] = {per_head, per_head, per_blocked, per_blocked};  // of kK, kV, kKt, kVt
  int64_t per_decoded = 0;
  for (int c = 0; c < 4; ++c) per_decoded += (copies >> c & 1) ? sizes[c] : 0;
  thread_local Doubles kept;
  if (kept.size() < size_t(per_decoded) * heads.size()) {
    kept = Doubles();
    kept.resize(size_t(per_decoded) * heads.size());
  }
  std::vector<DecodedHead> out(heads.size());
  for (size_t i = 0; i < heads.size(); ++i) {
    double* at = kept.data() + i * size_t(per_decoded);
    double** fields[4] = {&out[i].k, &out[i].v, &out[i].kt, &out[i].vt};
    for (int c = 0; c < 4; ++c) {
      if (!(copies >> c & 1)) continue;
      *fields[c] = at;
      at += sizes[c];
    }
  }
  constexpr int64_t kBlocksPerRun = 16;
  const int64_t runs = (blocks + kBlocksPerRun - 1) / kBlocksPerRun, items = runs * int64_t(heads.size());
  for_each_item(size_t(items), threads, [&](int, size_t item) {
    const size_t i = item / size_t(runs);
    const int64_t run = int64_t(item % size_t(runs));
    const DecodedHead& h = out[i];
    const uint16_t* k = t.k + (heads[i].first * p.kvh() + heads[i].second) * per_head;
    const uint16_t* v = t.v + (heads[i].first * p.kvh() + heads[i].second) * per_head;
    const int64_t end = std::min(blocks, (run + 1) * kBlocksPerRun) * kKeyBlock;  // padding keys included
    for (int64_t j = run * kBlocksPerRun * kKeyBlock; j < end; ++j)
      for (int64_t c = 0; c < d; ++c) {
        const size_t e = size_t(j * d + c), et = size_t(((j / kKeyBlock) * d + c) * kKeyBlock + j % kKeyBlock);
        const double kw = j < nk ? to_float(p.dtype, k[e]) : 0.0, vw = j < nk ? to_float(p.dtype, v[e]) : 0.0;
        if (j < nk) {
          if (h.k) h.k[e] = kw;
          if (h.v) h.v[e] = vw;
        }
        if (h.kt) h.kt[et] = kw;  // the last block's padding keys: 0
        if (h.vt) h.vt[et] = vw;
      }
  });
  return out;
}

// The hot loops below are compiled for each vector unit (function multi-versioning: the widest
// the running machine has is chosen at load time), on GCC's generic vectors of eight doubles
// (lowered to what each unit has). reference.cpp is built with -ffp-contract=off, so every
// version multiplies and adds separately, as a scalar loop does: the same bits on any x86-64
// (tests/test_reference.cpp, ReferenceBits: against the order of operations spelled out).
// Each loop keeps many independent sums in registers, so that its additions overlap instead of
// waiting on one chain of dependent additions, and uses each value it loads for two query rows
// where it can; each sum still runs over its terms in their order.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FLASHIO_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FLASHIO_VECTOR_CLONES
#endif
// The clones' helpers are inlined into each clone, so that they are compiled for its unit.
#if defined(__GNUC__)
#define FLASHIO_INLINE inline __attribute__((always_inline))
#else
#define FLASHIO_INLINE inline
#endif

typedef double F64x8 __attribute__((vector_size(64)));
// The same at any address of a double: a load or a store through it moves eight doubles.
typedef double F64x8Unaligned __attribute__((vector_size(64), aligned(8), may_alias));
#define FLASHIO_LOAD8(x) (*reinterpret_cast<const F64x8Unaligned*>(x))
#define FLASHIO_STORE8(x, v) (*reinterpret_cast<F64x8Unaligned*>(x) = (v))
#define FLASHIO_SPLAT8(x) (F64x8{(x), (x), (x), (x), (x), (x), (x), (x)})

// out_r[c] += Σ_m w_r[m]·rows[k(m)·d + c] for each of the R rows r, the terms added in the order
// of m (k(m) = m, or index[m] when Indexed): `Lanes` eight-wide columns of each out_r at a time
// stay in registers over all m, and each loaded row of `rows` serves the R rows.
template <bool Indexed, int R, int Lanes>
FLASHIO_INLINE int64_t accumulate_columns(const double* const* w, const double* rows, const int32_t* index, int64_t n,
                                          int64_t d, int64_t c, double* const* out) {
  for (; c + 8 * Lanes <= d; c += 8 * Lanes) {
    F64x8 acc[R][Lanes];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int l = 0; l < Lanes; ++l) acc[r][l] = FLASHIO_LOAD8(out[r] + c + 8 * l);
    for (int64_t m = 0; m < n; ++m) {
      const double* row = rows + (Indexed ? int64_t(index[m]) : m) * d + c;
      F64x8 x[Lanes];
#pragma GCC unroll 8
      for (int l = 0; l < Lanes; ++l) x[l] = FLASHIO_LOAD8(row + 8 * l);
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) {
        const double wm = w[r][m];
        const F64x8 ws = FLASHIO_SPLAT8(wm);
#pragma GCC unroll 8
        for (int l = 0; l < Lanes; ++l) acc[r][l] += ws * x[l];
      }
    }
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int l = 0; l < Lanes; ++l) FLASHIO_STORE8(out[r] + c + 8 * l, acc[r][l]);
  }
  return c;
}

template <bool Indexed, int R>
FLASHIO_INLINE void accumulate(const double* const* w, const double* rows, const int32_t* index, int64_t n, int64_t d,
                               double* const* out) {
  int64_t c = accumulate_columns<Indexed, R, 8>(w, rows, index, n, d, 0, out);
  c = accumulate_columns<Indexed, R, 4>(w, rows, index, n, d, c, out);
  c = accumulate_columns<Indexed, R, 1>(w, rows, index, n, d, c, out);
  for (; c < d; ++c)
    for (int r = 0; r < R; ++r) {
      double acc = out[r][c];
      for (int64_t m = 0; m < n; ++m) acc += w[r][m] * rows[(Indexed ? int64_t(index[m]) : m) * d + c];
      out[r][c] = acc;
    }
}

// out[c] += Σ_{m < n} w[m]·rows[m·d + c] for c < d (rows: n × d, row-major).
FLASHIO_VECTOR_CLONES void accumulate_rows(const double* w, const double* rows, int64_t n, int64_t d, double* out) {
  accumulate<false, 1>(&w, rows, nullptr, n, d, &out);
}
// The same for two rows of weights over the same rows: out0 with w0, out1 with w1.
FLASHIO_VECTOR_CLONES void accumulate_rows2(const double* w0, const double* w1, const double* rows, int64_t n,
                                            int64_t d, double* out0, double* out1) {
  const double* w[2] = {w0, w1};
  double* out[2] = {out0, out1};
  accumulate<false, 2>(w, rows, nullptr, n, d, out);
}
// out[c] += Σ_{m < n} w[m]·rows[index[m]·d + c] for c < d.
FLASHIO_VECTOR_CLONES void accumulate_listed_rows(const double* w, const double* rows, const int32_t* index, int64_t n,
                                                  int64_t d, double* out) {
  accumulate<true, 1>(&w, rows, index, n, d, &out);
}

// out_r[j] = Σ_c x_r[c]·T[c][j] for the keys j in [j, j1) (j a multiple of 16) of a head
// transposed by blocks (DecodedHead::kt) and each of the R rows x_r: each key's sum runs over c
// in order from 0.0, as the plain loop would (so the bits are the same), `Blocks` blocks of
// sixteen keys at a time, each block's values loaded once for the R rows.
template <int Blocks, int R>
FLASHIO_INLINE int64_t dot_blocks(const double* const* x, const double* t, int64_t j, int64_t j1, int64_t d,
                                  double* const* out) {
  for (; j + kKeyBlock * (Blocks - 1) < j1; j += kKeyBlock * Blocks) {  // the last block has a key below j1
    F64x8 acc[R][Blocks][2] = {};
    const double* block = t + (j / kKeyBlock) * d * kKeyBlock;
    for (int64_t c = 0; c < d; ++c) {
      F64x8 k[Blocks][2];
#pragma GCC unroll 4
      for (int b = 0; b < Blocks; ++b) {
        k[b][0] = FLASHIO_LOAD8(block + (b * d + c) * kKeyBlock);
        k[b][1] = FLASHIO_LOAD8(block + (b * d + c) * kKeyBlock + 8);
      }
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) {
        const double xc = x[r][c];
        const F64x8 xs = FLASHIO_SPLAT8(xc);
#pragma GCC unroll 4
        for (int b = 0; b < Blocks; ++b) {
          acc[r][b][0] += xs * k[b][0];
          acc[r][b][1] += xs * k[b][1];
        }
      }
    }
    const int64_t keys = std::min<int64_t>(Blocks * kKeyBlock, j1 - j);
    for (int r = 0; r < R; ++r) {
      double sums[Blocks * kKeyBlock];
      for (int b = 0; b < Blocks; ++b) {
        FLASHIO_STORE8(sums + b * kKeyBlock, acc[r][b][0]);
        FLASHIO_STORE8(sums + b * kKeyBlock + 8, acc[r][b][1]);
      }
      std::copy_n(sums, keys, out[r] + j);
    }
  }
  return j;
}

// out[j] = x · K_j for j in [j0, j1), j0 a multiple of 16 (t: DecodedHead::kt or ::vt).
FLASHIO_VECTOR_CLONES void dot_keys(const double* x, const double* t, int64_t j0, int64_t j1, int64_t d, double* out) {
  const int64_t j = dot_blocks<4, 1>(&x, t, j0, j1, d, &out);
  dot_blocks<1, 1>(&x, t, j, j1, d, &out);
}
// The same for two rows at once.
FLASHIO_VECTOR_CLONES void dot_keys2(const double* x0, const double* x1, const double* t, int64_t j0, int64_t j1,
                                     int64_t d, double* out0, double* out1) {
  const double* x[2] = {x0, x1};
  double* out[2] = {out0, out1};
  const int64_t j = dot_blocks<4, 2>(x, t, j0, j1, d, out);
  dot_blocks<1, 2>(x, t, j, j1, d, out);
}

// ---- row tiles ----------------------------------------------------------------------------
//
// A thread takes its query rows a tile at a time, and the tile's loops over keys go a chunk at a
// time: each chunk of a decoded K or V head (about 256 KiB) is used by every row of the tile while
// it is in the core's cache, instead of each row streaming the whole head (which made the
// reference wait on memory). What each row computes, and in what order, is unchanged.

constexpr size_t kTileRows = 8;

// Keys per chunk: 32768 doubles of a head (256 KiB), a multiple of 64 keys.
int64_t chunk_keys(int64_t d) {
  constexpr int64_t kUnit = 4 * kKeyBlock;
  return std::max<int64_t>(kUnit, 32768 / d / kUnit * kUnit);
}

// out_m[j] = x_m · T_j for j in [j0, min(j1, ends[m])) of each of the n rows, two rows at a time
// where both have the whole range.
void dot_tile(const double* t, int64_t d, int64_t j0, int64_t j1, size_t n, const double* const* x,
              const int64_t* ends, double* const* out) {
  size_t waiting = n;  // a row with the whole range, not yet paired
  for (size_t m = 0; m < n; ++m) {
    const int64_t end = std::min(j1, ends[m]);
    if (end <= j0) continue;
    if (end < j1) {
      dot_keys(x[m], t, j0, end, d, out[m]);
    } else if (waiting == n) {
      waiting = m;
    } else {
      dot_keys2(x[waiting], x[m], t, j0, j1, d, out[waiting], out[m]);
      waiting = n;
    }
  }
  if (waiting < n) dot_keys(x[waiting], t, j0, j1, d, out[waiting]);
}

// out_m[c] += Σ_j w_m[j]·rows[j·d + c] for j in [j0, min(j1, ends[m])) of each of the n rows, two
// rows at a time where both have the whole range.
void accumulate_tile(const double* rows, int64_t d, int64_t j0, int64_t j1, size_t n, const double* const* w,
                     const int64_t* ends, double* const* out) {
  size_t waiting = n;
  for (size_t m = 0; m < n; ++m) {
    const int64_t end = std::min(j1, ends[m]);
    if (end <= j0) continue;
    if (end < j1) {
      accumulate_rows(w[m] + j0, rows + j0 * d, end - j0, d, out[m]);
    } else if (waiting == n) {
      waiting = m;
    } else {
      accumulate_rows2(w[waiting] + j0, w[m] + j0, rows + j0 * d, j1 - j0, d, out[waiting], out[m]);
      waiting = n;
    }
  }
  if (waiting < n) accumulate_rows(w[waiting] + j0, rows + j0 * d, j1 - j0, d, out[waiting]);
}

// `rows` grouped by the K/V head they read, (b, hk) in order of first appearance: positions
// into `rows`, each group in the order given.
std::vector<std::pair<std::pair<int64_t, int64_t>, std::vector<size_t>>> rows_by_kv_head(
    const Problem& p, const std::vector<RowId>& rows) {
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::vector<size_t>>> groups;
  std::vector<int64_t> slot(size_t(p.batch * p.kvh()), -1);
  const int64_t group = p.heads / p.kvh();
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t hk = rows[r].h / group, key = rows[r].b * p.kvh() + hk;
    if (slot[size_t(key)] < 0) {
      slot[size_t(key)] = int64_t(groups.size());
      groups.push_back({{rows[r].b, hk}, {}});
    }
    groups[size_t(slot[size_t(key)])].second.push_back(r);
  }
  return groups;
}

// The problem's block mask, or none when dense (Algorithm 5's M, expanded to elements on use).
std::optional<BlockMask> mask_of(const Problem& p) {
  if (!p.sparse()) return std::nullopt;
  return make_block_mask(p);
}

// Keys j < visible of row r that the block mask allows (all of them when dense); false when
// the row sees no key at all.
bool any_allowed(const BlockMask* mask, const RowId& r, int64_t visible) {
  if (!mask) return visible > 0;
  for (int64_t j = 0; j < visible; ++j)
    if (mask->allows(r.i, j)) return true;
  return false;
}

// Keys a query row sees before the block mask: its sequence's keys (padding), the causal limit.
int64_t visible_keys(const Problem& p, const HostTensors& t, const RowId& r) {
  return keys_seen(p.nk(), t.key_lengths, p.causal, r.b, r.i);
}

const uint16_t* query_row(const Problem& p, const uint16_t* q, const RowId& r) {
  return q + ((r.b * p.heads + r.h) * p.seqlen_q + r.i) * p.head_dim;
}

// A thread's scratch for its tiles.
struct TileScratch {
  std::vector<double> q;       // (kTileRows, d): the tile's query rows, widened
  std::vector<double> scores;  // (kTileRows, Nk)
  std::vector<int32_t> kept;   // (kTileRows, Nk): the keys dropout keeps
};

// The forward of n <= kTileRows query rows of one K/V head (O rows out[m], d each; LSE *lse[m]):
// per row, scores over the visible keys, max-subtracted exp, normalised sum of V; with dropout,
// each normalised weight is then kept (scaled by 1/(1-p)) or dropped.
void forward_tile(const Problem& p, const HostTensors& t, const DecodedHead& kv, const BlockMask* mask, const RowId* r,
                  size_t n, double* const* out, double* const* lse, TileScratch& s) {
  const int64_t d = p.head_dim, nk = p.nk();
  const bool dropout = p.dropout > 0.0;
  s.q.resize(kTileRows * size_t(d));
  s.scores.resize(kTileRows * size_t(nk));
  if (dropout) s.kept.resize(kTileRows * size_t(nk));
  const double* x[kTileRows];
  double* scores[kTileRows];
  int64_t visible[kTileRows], weights[kTileRows];  // keys scored (0: none), weights of O's sum
  int64_t longest = 0;
  for (size_t m = 0; m < n; ++m) {
    double* qm = s.q.data() + m * size_t(d);
    x[m] = qm;
    scores[m] = s.scores.data() + m * size_t(nk);
    visible[m] = weights[m] = 0;
    std::fill(out[m], out[m] + d, 0.0);
    const int64_t keys = visible_keys(p, t, r[m]);
    if (!any_allowed(mask, r[m], keys)) {  // no key at all (causal, padding, or all blocks zero)
      *lse[m] = -std::numeric_limits<double>::infinity();
      continue;
    }
    const uint16_t* q = query_row(p, t.q, r[m]);
    for (int64_t c = 0; c < d; ++c) qm[c] = to_float(p.dtype, q[c]);
    visible[m] = keys;
    longest = std::max(longest, keys);
  }
  const int64_t chunk = chunk_keys(d);
  for (int64_t j0 = 0; j0 < longest; j0 += chunk) dot_tile(kv.kt, d, j0, j0 + chunk, n, x, visible, scores);

  const double scale = p.scale();
  const double keep_scale = dropout ? dropout_scale(p.dropout) : 1.0;
  for (size_t m = 0; m < n; ++m) {
    if (visible[m] == 0) continue;
    double* sc = scores[m];
    double row_max = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < visible[m]; ++j) {
      if (mask && !mask->allows(r[m].i, j)) {  // a zero block: excluded from the softmax
        sc[j] = -std::numeric_limits<double>::infinity();
        continue;
      }
      sc[j] *= scale;
      row_max = std::max(row_max, sc[j]);
    }
    double sum = 0.0;
    for (int64_t j = 0; j < visible[m]; ++j) {
      const double e = std::exp(sc[j] - row_max);
      sc[j] = e;
      sum += e;
    }
    // The weights, in place of the exponentials, for O = Σ_j w_j·V_j in the order of j; a dropped
    // key is left out (not added as 0·V_j), its weight's place taken by the next kept key's.
    int32_t* kept = dropout ? s.kept.data() + m * size_t(nk) : nullptr;
    int64_t w = 0;
    for (int64_t j = 0; j < visible[m]; ++j) {
      if (dropout && !dropout_keeps(p.seed, kDropoutOffset, p.dropout, uint32_t(r[m].b), uint32_t(r[m].h),
                                    uint32_t(r[m].i), uint32_t(j)))
        continue;
      sc[w] = sc[j] / sum * keep_scale;
      if (dropout) kept[w] = int32_t(j);
      ++w;
    }
    weights[m] = w;
    *lse[m] = row_max + std::log(sum);
  }

  if (!dropout) {
    for (int64_t j0 = 0; j0 < longest; j0 += chunk)
      accumulate_tile(kv.v, d, j0, j0 + chunk, n, scores, weights, out);
    return;
  }
  int64_t done[kTileRows] = {};  // weights of each row added so far
  for (int64_t j0 = 0; j0 < longest; j0 += chunk)
    for (size_t m = 0; m < n; ++m) {
      const int32_t* kept = s.kept.data() + m * size_t(nk);
      int64_t end = done[m];
      while (end < weights[m] && kept[end] < j0 + chunk) ++end;
      accumulate_listed_rows(scores[m] + done[m], kv.v, kept + done[m], end - done[m], d, out[m]);
      done[m] = end;
    }
}

}  // namespace

namespace {

// One query row's backward quantities: the visible keys, P (no dropout), Z and dS.
struct RowGrad {
  int64_t visible = 0;
  std::vector<double> prob, keep, ds;  // size visible
};

// The backward quantities of n <= kTileRows query rows of one K/V head, given dO: g[m], and the
// rows of Q and dO widened (exactly) to double at qrows, dorows (n × d).
void backward_tile(const Problem& p, const HostTensors& t, const DecodedHead& kv, const uint16_t* d_o,
                   const BlockMask* mask, const RowId* r, size_t n, RowGrad* g, double* qrows, double* dorows) {
  const int64_t d = p.head_dim;
  const double* q[kTileRows];
  const double* dorow[kTileRows];
  double* prob[kTileRows];
  double* dp[kTileRows];
  int64_t scored[kTileRows];  // keys scored: 0 for a row that sees none
  int64_t longest = 0;
  for (size_t m = 0; m < n; ++m) {
    double* qm = qrows + m * size_t(d);
    double* dom = dorows + m * size_t(d);
    const uint16_t* q16 = query_row(p, t.q, r[m]);
    const uint16_t* do16 = query_row(p, d_o, r[m]);
    for (int64_t c = 0; c < d; ++c) {
      qm[c] = to_float(p.dtype, q16[c]);
      dom[c] = to_float(p.dtype, do16[c]);
    }
    q[m] = qm;
    dorow[m] = dom;
    scored[m] = 0;
    g[m].visible = visible_keys(p, t, r[m]);
    g[m].prob.assign(size_t(g[m].visible), 0.0);
    g[m].keep.assign(size_t(g[m].visible), 1.0);
    g[m].ds.assign(size_t(g[m].visible), 0.0);
    prob[m] = g[m].prob.data();
    dp[m] = g[m].ds.data();  // dP = dO·Vᵀ first, then dS in place
    if (!any_allowed(mask, r[m], g[m].visible)) continue;  // P = 0: zero gradients
    scored[m] = g[m].visible;
    longest = std::max(longest, scored[m]);
  }
  const int64_t chunk = chunk_keys(d);
  for (int64_t j0 = 0; j0 < longest; j0 += chunk) {
    dot_tile(kv.kt, d, j0, j0 + chunk, n, q, scored, prob);
    dot_tile(kv.vt, d, j0, j0 + chunk, n, dorow, scored, dp);
  }
  const double scale = p.scale();
  for (size_t m = 0; m < n; ++m) {
    if (scored[m] == 0) continue;
    RowGrad& gm = g[m];
    double row_max = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < gm.visible; ++j) {
      if (mask && !mask->allows(r[m].i, j)) {  // a zero block: P = 0 there
        gm.prob[size_t(j)] = -std::numeric_limits<double>::infinity();
        continue;
      }
      gm.prob[size_t(j)] *= scale;
      row_max = std::max(row_max, gm.prob[size_t(j)]);
    }
    double sum = 0.0;
    for (auto& x : gm.prob) sum += (x = std::exp(x - row_max));
    for (auto& x : gm.prob) x /= sum;
    if (p.dropout > 0.0)
      for (int64_t j = 0; j < gm.visible; ++j)
        gm.keep[size_t(j)] = dropout_keeps(p.seed, kDropoutOffset, p.dropout, uint32_t(r[m].b), uint32_t(r[m].h),
                                           uint32_t(r[m].i), uint32_t(j))
                                 ? dropout_scale(p.dropout)
                                 : 0.0;
    double dsum = 0.0;  // D_i = Σ_j P_ij dP_ij
    for (int64_t j = 0; j < gm.visible; ++j) {
      gm.ds[size_t(j)] = gm.ds[size_t(j)] * gm.keep[size_t(j)];
      dsum += gm.prob[size_t(j)] * gm.ds[size_t(j)];
    }
    for (int64_t j = 0; j < gm.visible; ++j) gm.ds[size_t(j)] = gm.prob[size_t(j)] * (gm.ds[size_t(j)] - dsum);
  }
}

// Decoded heads held at once by the row loops below, at least one.
constexpr double kDecodedBudgetBytes = double(int64_t(1) << 30);

// Calls f(tid, kv, tile, n) for tiles of up to kTileRows rows (indices into `rows`) of one K/V
// head each, kv that head decoded into `copies`. The heads are decoded a batch at a time (as many as
// kDecodedBudgetBytes hold); the tiles of a batch's heads go to the threads as they come free (a
// shared counter), so a few heads of a few hundred rows keep every core busy and a thread the
// machine holds back delays no one. Each row's result is the same whichever thread and tile take
// it. At most thread_count(rows.size(), threads) threads: tid indexes a scratch array of that size.
template <typename F>
void for_each_head_tile(const Problem& p, const HostTensors& t, const std::vector<RowId>& rows, unsigned copies,
                        int threads, F f) {
  const auto groups = rows_by_kv_head(p, rows);
  const size_t batch = size_t(std::max(1.0, std::floor(kDecodedBudgetBytes / decoded_head_bytes(p))));
  for (size_t g0 = 0; g0 < groups.size(); g0 += batch) {
    const size_t g1 = std::min(groups.size(), g0 + batch);
    std::vector<std::pair<int64_t, int64_t>> heads;
    struct Tile {
      size_t head, first, count;  // head: in this batch; members [first, first + count) of its group
    };
    std::vector<Tile> tiles;
    for (size_t g = g0; g < g1; ++g) {
      heads.push_back(groups[g].first);
      for (size_t m = 0; m < groups[g].second.size(); m += kTileRows)
        tiles.push_back({g - g0, m, std::min(kTileRows, groups[g].second.size() - m)});
    }
    const std::vector<DecodedHead> kv = decode_heads(p, t, heads, copies, threads);
    for_each_item(tiles.size(), threads, [&](int tid, size_t i) {
      const Tile& tile = tiles[i];
      const std::vector<size_t>& members = groups[g0 + tile.head].second;
      size_t rows_of_tile[kTileRows];
      for (size_t m = 0; m < tile.count; ++m) rows_of_tile[m] = members[tile.first + m];
      f(tid, kv[tile.head], rows_of_tile, tile.count);
    });
  }
}

}  // namespace

void reference_dq_rows(const Problem& p, const HostTensors& t, const uint16_t* d_o, const std::vector<RowId>& rows,
                       std::vector<double>& dq, int threads) {
  const int64_t d = p.head_dim;
  const double scale = p.scale();
  dq.assign(rows.size() * size_t(d), 0.0);
  const auto mask = mask_of(p);
  const int64_t chunk = chunk_keys(d);
  struct Scratch {
    RowGrad g[kTileRows];
    std::vector<double> qrows, dorows;
  };
  std::vector<Scratch> scratch(size_t(thread_count(rows.size(), threads)));
  for_each_head_tile(p, t, rows, kDqCopies, threads, [&](int tid, const DecodedHead& kv, const size_t* tile, size_t n) {
    RowId r[kTileRows];
    RowGrad* g = scratch[size_t(tid)].g;
    std::vector<double>& qrows = scratch[size_t(tid)].qrows;
    std::vector<double>& dorows = scratch[size_t(tid)].dorows;
    qrows.resize(kTileRows * size_t(d));
    dorows.resize(kTileRows * size_t(d));
    const double* w[kTileRows];
    double* out[kTileRows];
    int64_t keys[kTileRows], longest = 0;
    for (size_t m = 0; m < n; ++m) r[m] = rows[tile[m]];
    backward_tile(p, t, kv, d_o, mask ? &*mask : nullptr, r, n, g, qrows.data(), dorows.data());
    for (size_t m = 0; m < n; ++m) {
      for (auto& ds : g[m].ds) ds *= scale;  // dQ = Σ_j (scale·dS_j)·K_j
      w[m] = g[m].ds.data();
      out[m] = dq.data() + tile[m] * size_t(d);
      keys[m] = g[m].visible;
      longest = std::max(longest, keys[m]);
    }
    for (int64_t j0 = 0; j0 < longest; j0 += chunk) accumulate_tile(kv.k, d, j0, j0 + chunk, n, w, keys, out);
  });
}

void reference_dkdv_head(const Problem& p, const HostTensors& t, const uint16_t* d_o, int64_t b, int64_t hk,
                         std::vector<double>& dk, std::vector<double>& dv, int threads) {
  const int64_t d = p.head_dim, nk = p.nk(), group = p.heads / p.kvh();
  const double scale = p.scale();
  std::vector<RowId> rows;
  for (int64_t h = hk * group; h < (hk + 1) * group; ++h)
    for (int64_t i = 0; i < p.seqlen_q; ++i) rows.push_back({b, h, i});
  const auto mask = mask_of(p);
  // Each thread accumulates its own dK, dV; summed at the end (deterministic order).
  threads = thread_count(rows.size(), threads);
  std::vector<std::vector<double>> part_k(static_cast<size_t>(threads)), part_v(static_cast<size_t>(threads));
  const DecodedHead kv = decode_heads(p, t, {{b, hk}}, kDkDvCopies, threads).front();
  // A thread takes its rows (tid, tid + threads, ...) a block at a time and adds the block's
  // rows key by key, in row order: each element's additions come in the same order as row by
  // row (the same bits), while a key's dK, dV rows stay in cache across the block.
  constexpr size_t kBlock = 16;
  parallel_for(rows.size(), threads, [&](int tid, int nthreads) {
    auto& pk = part_k[size_t(tid)];
    auto& pv = part_v[size_t(tid)];
    pk.assign(size_t(nk * d), 0.0);
    pv.assign(size_t(nk * d), 0.0);
    RowGrad g[kBlock];
    RowId block[kBlock];
    std::vector<double> qrows(kBlock * size_t(d)), dorows(kBlock * size_t(d));  // the block's rows, (kBlock, d)
    double wv[kBlock], wk[kBlock];
    int32_t listed[kBlock];
    for (size_t first = size_t(tid); first < rows.size(); first += kBlock * size_t(nthreads)) {
      size_t n = 0;
      int64_t keys = 0;
      for (size_t r = first; r < rows.size() && n < kBlock; r += size_t(nthreads)) block[n++] = rows[r];
      for (size_t m = 0; m < n; m += kTileRows)
        backward_tile(p, t, kv, d_o, mask ? &*mask : nullptr, block + m, std::min(kTileRows, n - m), g + m,
                      qrows.data() + m * size_t(d), dorows.data() + m * size_t(d));
      for (size_t m = 0; m < n; ++m) keys = std::max(keys, g[m].visible);
      for (int64_t j = 0; j < keys; ++j) {
        int64_t terms = 0;  // the block's rows that see key j, in order
        for (size_t m = 0; m < n; ++m) {
          if (j >= g[m].visible) continue;
          wv[terms] = g[m].prob[size_t(j)] * g[m].keep[size_t(j)];
          wk[terms] = scale * g[m].ds[size_t(j)];
          listed[terms++] = int32_t(m);
        }
        accumulate_listed_rows(wv, dorows.data(), listed, terms, d, pv.data() + j * d);
        accumulate_listed_rows(wk, qrows.data(), listed, terms, d, pk.data() + j * d);
      }
    }
  });
  dk.assign(size_t(nk * d), 0.0);
  dv.assign(size_t(nk * d), 0.0);
  for (int tid = 0; tid < threads; ++tid) {
    if (part_k[size_t(tid)].empty()) continue;
    for (size_t e = 0; e < dk.size(); ++e) {
      dk[e] += part_k[size_t(tid)][e];
      dv[e] += part_v[size_t(tid)][e];
    }
  }
}

bool device_reference_covers(const Problem& p) {
  return !p.packed() && !p.paged() && !p.sparse() && p.head_dim <= 256;
}

double reference_dkdv_cost(const Problem& p) {
  return 4.0 * double(p.heads / p.kvh()) * double(p.seqlen_q) * double(p.nk()) * double(p.head_dim);
}

void reference_rows(const Problem& p, const HostTensors& t, const std::vector<RowId>& rows,
                    std::vector<double>& out, std::vector<double>& lse, int threads) {
  const int64_t d = p.head_dim;
  out.assign(rows.size() * size_t(d), 0.0);
  lse.assign(rows.size(), 0.0);
  const auto mask = mask_of(p);
  std::vector<TileScratch> scratch(size_t(thread_count(rows.size(), threads)));
  for_each_head_tile(p, t, rows, kOCopies, threads, [&](int tid, const DecodedHead& kv, const size_t* tile, size_t n) {
    RowId r[kTileRows];
    double* o[kTileRows];
    double* l[kTileRows];
    for (size_t m = 0; m < n; ++m) {
      r[m] = rows[tile[m]];
      o[m] = out.data() + tile[m] * size_t(d);
      l[m] = &lse[tile[m]];
    }
    forward_tile(p, t, kv, mask ? &*mask : nullptr, r, n, o, l, scratch[size_t(tid)]);
  });
}

}  // namespace flashio

#include "bench/core/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

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
  return p.varlen() ? int64_t(p.seq_lengths[size_t(b)]) : p.seqlen_q;
}

double reference_cost(const Problem& p, int64_t nrows) {
  return 2.0 * double(nrows) * double(p.nk()) * double(p.head_dim);
}

namespace {

template <typename Work>
void parallel_for(size_t n, int threads, Work work) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  threads = int(std::min<size_t>(size_t(threads), std::max<size_t>(1, n)));
  if (threads == 1) {
    work(0, 1);
    return;
  }
  std::vector<std::thread> pool;
  for (int tid = 0; tid < threads; ++tid) pool.emplace_back(work, tid, threads);
  for (auto& th : pool) th.join();
}

// Threads for `n` items: `threads`, or every core when 0; at least 1, at most n.
int thread_count(size_t n, int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  return int(std::min<size_t>(size_t(threads), std::max<size_t>(1, n)));
}

// Keys per block of the transposed layout and lanes of dot_keys.
constexpr int64_t kKeyBlock = 16;

// One K/V head's keys and values widened once to float (exact: every fp16 and bf16 value is a
// float), so the row loops multiply instead of converting each element once per query row; also
// transposed by blocks of kKeyBlock keys, (Nk / 16, d, 16) with the last block zero-padded, for
// the sums over d (dot_keys): a block's d × 16 values lie together in memory.
// Bounded memory: one head at a time, about Nk × d × 16 bytes (512 MiB at Nk = 128k, d = 256).
struct DecodedHead {
  std::vector<float> k, v;    // (Nk, d)
  std::vector<float> kt, vt;  // (ceil(Nk / 16), d, 16)
};

DecodedHead decode_head(const Problem& p, const HostTensors& t, int64_t b, int64_t hk, int threads) {
  const int64_t d = p.head_dim, nk = p.nk(), per_head = nk * d;
  const uint16_t* k = t.k + (b * p.kvh() + hk) * per_head;
  const uint16_t* v = t.v + (b * p.kvh() + hk) * per_head;
  const int64_t blocks = (nk + kKeyBlock - 1) / kKeyBlock;
  DecodedHead h;
  h.k.resize(size_t(per_head));
  h.v.resize(size_t(per_head));
  h.kt.assign(size_t(blocks * d * kKeyBlock), 0.0f);
  h.vt.assign(size_t(blocks * d * kKeyBlock), 0.0f);
  constexpr int64_t kBlocksPerChunk = 64;
  const int64_t chunks = (blocks + kBlocksPerChunk - 1) / kBlocksPerChunk;
  parallel_for(size_t(chunks), thread_count(size_t(chunks), threads), [&](int tid, int nthreads) {
    for (int64_t ch = tid; ch < chunks; ch += nthreads)
      for (int64_t j = ch * kBlocksPerChunk * kKeyBlock; j < std::min(nk, (ch + 1) * kBlocksPerChunk * kKeyBlock); ++j)
        for (int64_t c = 0; c < d; ++c) {
          const size_t e = size_t(j * d + c), et = size_t(((j / kKeyBlock) * d + c) * kKeyBlock + j % kKeyBlock);
          h.k[e] = h.kt[et] = to_float(p.dtype, k[e]);
          h.v[e] = h.vt[et] = to_float(p.dtype, v[e]);
        }
  });
  return h;
}

// The hot loops below are compiled for each vector unit (function multi-versioning: the widest
// the running machine has is chosen at load time). reference.cpp is built with
// -ffp-contract=off, so every version multiplies and adds separately, as the scalar loop does:
// the same bits on any x86-64 (tests/test_reference.cpp's hashes).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FLASHIO_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FLASHIO_VECTOR_CLONES
#endif

// out[c] += w·x[c], c < d.
template <typename T>
FLASHIO_VECTOR_CLONES void add_scaled(double w, const T* x, int64_t d, double* out) {
  for (int64_t c = 0; c < d; ++c) out[c] += w * double(x[c]);
}

// out[j] = Σ_c x[c]·T[c][j] for the keys j < n of a head transposed by blocks (DecodedHead::kt):
// each key's sum runs over c in order from 0.0, as the plain loop would (so the bits are the
// same), sixteen keys at a time so that the additions of different keys overlap and vectorise
// instead of waiting on one chain of dependent additions.
FLASHIO_VECTOR_CLONES void dot_keys(const double* x, const float* t, int64_t n, int64_t d, double* out) {
  for (int64_t j = 0; j < n; j += kKeyBlock) {
    double acc[kKeyBlock] = {};
    const float* block = t + (j / kKeyBlock) * d * kKeyBlock;
    for (int64_t c = 0; c < d; ++c) {
      const double xc = x[c];
      for (int64_t l = 0; l < kKeyBlock; ++l) acc[l] += xc * double(block[c * kKeyBlock + l]);
    }
    for (int64_t l = 0; l < std::min(kKeyBlock, n - j); ++l) out[j + l] = acc[l];
  }
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

// Every method draws its dropout mask at Philox offset 0 (a fresh mask comes from a fresh
// seed); Problem has no offset field.
constexpr uint64_t kDropoutOffset = 0;

// One query row: scores over visible keys, max-subtracted exp, normalised sum of V; with
// dropout, each normalised weight is then kept (scaled by 1/(1-p)) or dropped.
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

void reference_row(const Problem& p, const HostTensors& t, const DecodedHead& kv, const RowId& r, double* out,
                   double* lse, std::vector<double>& scores, std::vector<double>& qrow, const BlockMask* mask) {
  const int64_t d = p.head_dim, nk = p.nk();
  const uint16_t* q = t.q + ((r.b * p.heads + r.h) * p.seqlen_q + r.i) * d;
  const float* v = kv.v.data();
  int64_t visible = t.key_lengths ? std::min<int64_t>(nk, t.key_lengths[r.b]) : nk;
  if (p.causal) visible = std::min<int64_t>(visible, r.i + 1);

  std::fill(out, out + d, 0.0);
  if (!any_allowed(mask, r, visible)) {  // no key at all (causal, padding, or all blocks zero)
    *lse = -std::numeric_limits<double>::infinity();
    return;
  }
  for (int64_t c = 0; c < d; ++c) qrow[size_t(c)] = to_float(p.dtype, q[c]);
  const double scale = p.scale();
  double row_max = -std::numeric_limits<double>::infinity();
  dot_keys(qrow.data(), kv.kt.data(), visible, d, scores.data());
  for (int64_t j = 0; j < visible; ++j) {
    if (mask && !mask->allows(r.i, j)) {  // a zero block: excluded from the softmax
      scores[size_t(j)] = -std::numeric_limits<double>::infinity();
      continue;
    }
    scores[size_t(j)] *= scale;
    row_max = std::max(row_max, scores[size_t(j)]);
  }
  double sum = 0.0;
  for (int64_t j = 0; j < visible; ++j) {
    const double e = std::exp(scores[size_t(j)] - row_max);
    scores[size_t(j)] = e;
    sum += e;
  }
  const bool dropout = p.dropout > 0.0;
  const double keep_scale = dropout ? dropout_scale(p.dropout) : 1.0;
  for (int64_t j = 0; j < visible; ++j) {
    if (dropout &&
        !dropout_keeps(p.seed, kDropoutOffset, p.dropout, uint32_t(r.b), uint32_t(r.h), uint32_t(r.i), uint32_t(j)))
      continue;
    const double w = scores[size_t(j)] / sum * keep_scale;
    const float* vj = v + j * d;
    add_scaled(w, vj, d, out);
  }
  *lse = row_max + std::log(sum);
}

}  // namespace

namespace {

// One query row's backward quantities: the visible keys, P (no dropout), Z and dS.
struct RowGrad {
  int64_t visible = 0;
  std::vector<double> prob, keep, ds;  // size visible
};

// `dorow` receives the row of dO widened (exactly) to double.
void backward_row(const Problem& p, const HostTensors& t, const DecodedHead& kv, const uint16_t* d_o, const RowId& r,
                  RowGrad& g, std::vector<double>& qrow, std::vector<double>& dorow, const BlockMask* mask) {
  const int64_t d = p.head_dim, nk = p.nk();
  const uint16_t* q = t.q + ((r.b * p.heads + r.h) * p.seqlen_q + r.i) * d;
  const uint16_t* dorow16 = d_o + ((r.b * p.heads + r.h) * p.seqlen_q + r.i) * d;
  dorow.resize(size_t(d));
  for (int64_t c = 0; c < d; ++c) dorow[size_t(c)] = to_float(p.dtype, dorow16[c]);
  int64_t visible = t.key_lengths ? std::min<int64_t>(nk, t.key_lengths[r.b]) : nk;
  if (p.causal) visible = std::min<int64_t>(visible, r.i + 1);
  g.visible = std::max<int64_t>(visible, 0);
  g.prob.assign(size_t(g.visible), 0.0);
  g.keep.assign(size_t(g.visible), 1.0);
  g.ds.assign(size_t(g.visible), 0.0);
  if (!any_allowed(mask, r, g.visible)) return;  // P = 0: zero gradients
  for (int64_t c = 0; c < d; ++c) qrow[size_t(c)] = to_float(p.dtype, q[c]);
  const double scale = p.scale();
  double row_max = -std::numeric_limits<double>::infinity();
  dot_keys(qrow.data(), kv.kt.data(), g.visible, d, g.prob.data());
  for (int64_t j = 0; j < g.visible; ++j) {
    if (mask && !mask->allows(r.i, j)) {  // a zero block: P = 0 there
      g.prob[size_t(j)] = -std::numeric_limits<double>::infinity();
      continue;
    }
    g.prob[size_t(j)] *= scale;
    row_max = std::max(row_max, g.prob[size_t(j)]);
  }
  double sum = 0.0;
  for (auto& x : g.prob) sum += (x = std::exp(x - row_max));
  for (auto& x : g.prob) x /= sum;
  if (p.dropout > 0.0)
    for (int64_t j = 0; j < g.visible; ++j)
      g.keep[size_t(j)] = dropout_keeps(p.seed, kDropoutOffset, p.dropout, uint32_t(r.b), uint32_t(r.h),
                                        uint32_t(r.i), uint32_t(j))
                              ? dropout_scale(p.dropout)
                              : 0.0;
  std::vector<double>& dp = g.ds;  // dP = dO·Vᵀ first, then dS in place
  dot_keys(dorow.data(), kv.vt.data(), g.visible, d, dp.data());
  double dsum = 0.0;  // D_i = Σ_j P_ij dP_ij
  for (int64_t j = 0; j < g.visible; ++j) {
    g.ds[size_t(j)] = dp[size_t(j)] * g.keep[size_t(j)];
    dsum += g.prob[size_t(j)] * g.ds[size_t(j)];
  }
  for (int64_t j = 0; j < g.visible; ++j) g.ds[size_t(j)] = g.prob[size_t(j)] * (g.ds[size_t(j)] - dsum);
}


}  // namespace

void reference_dq_rows(const Problem& p, const HostTensors& t, const uint16_t* d_o, const std::vector<RowId>& rows,
                       std::vector<double>& dq, int threads) {
  const int64_t d = p.head_dim;
  const double scale = p.scale();
  dq.assign(rows.size() * size_t(d), 0.0);
  const auto mask = mask_of(p);
  for (const auto& group : rows_by_kv_head(p, rows)) {
    const auto& head = group.first;  // not a structured binding: clang 14 cannot capture one in a lambda
    const auto& members = group.second;
    const DecodedHead kv = decode_head(p, t, head.first, head.second, threads);
    parallel_for(members.size(), thread_count(members.size(), threads), [&](int tid, int nthreads) {
      RowGrad g;
      std::vector<double> qrow(static_cast<size_t>(d));
      std::vector<double> dorow;
      for (size_t m = size_t(tid); m < members.size(); m += size_t(nthreads)) {
        const size_t r = members[m];
        backward_row(p, t, kv, d_o, rows[r], g, qrow, dorow, mask ? &*mask : nullptr);
        const float* k = kv.k.data();
        double* out = dq.data() + r * size_t(d);
        for (int64_t j = 0; j < g.visible; ++j)
          add_scaled(scale * g.ds[size_t(j)], k + j * d, d, out);
      }
    });
  }
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
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  threads = int(std::min<size_t>(size_t(threads), std::max<size_t>(1, rows.size())));
  std::vector<std::vector<double>> part_k(static_cast<size_t>(threads)), part_v(static_cast<size_t>(threads));
  const DecodedHead kv = decode_head(p, t, b, hk, threads);
  // A thread takes its rows (tid, tid + threads, ...) a block at a time and adds the block's
  // rows key by key, in row order: each element's additions come in the same order as row by
  // row (the same bits), while a key's dK, dV rows stay in cache across the block.
  constexpr size_t kBlock = 16;
  parallel_for(rows.size(), threads, [&](int tid, int nthreads) {
    auto& pk = part_k[size_t(tid)];
    auto& pv = part_v[size_t(tid)];
    pk.assign(size_t(nk * d), 0.0);
    pv.assign(size_t(nk * d), 0.0);
    std::vector<RowGrad> g(kBlock);
    std::vector<std::vector<double>> qrow(kBlock, std::vector<double>(size_t(d))), dorow(kBlock);
    for (size_t first = size_t(tid); first < rows.size(); first += kBlock * size_t(nthreads)) {
      size_t n = 0;
      int64_t keys = 0;
      for (size_t r = first; r < rows.size() && n < kBlock; r += size_t(nthreads), ++n) {
        backward_row(p, t, kv, d_o, rows[r], g[n], qrow[n], dorow[n], mask ? &*mask : nullptr);
        keys = std::max(keys, g[n].visible);
      }
      for (int64_t j = 0; j < keys; ++j) {
        double* pvj = pv.data() + j * d;
        double* pkj = pk.data() + j * d;
        for (size_t m = 0; m < n; ++m) {
          if (j >= g[m].visible) continue;
          const double wv = g[m].prob[size_t(j)] * g[m].keep[size_t(j)];
          const double wk = scale * g[m].ds[size_t(j)];
          add_scaled(wv, dorow[m].data(), d, pvj);
          add_scaled(wk, qrow[m].data(), d, pkj);
        }
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

double reference_dkdv_cost(const Problem& p) {
  return 4.0 * double(p.heads / p.kvh()) * double(p.seqlen_q) * double(p.nk()) * double(p.head_dim);
}

void reference_rows(const Problem& p, const HostTensors& t, const std::vector<RowId>& rows,
                    std::vector<double>& out, std::vector<double>& lse, int threads) {
  const int64_t d = p.head_dim;
  out.assign(rows.size() * size_t(d), 0.0);
  lse.assign(rows.size(), 0.0);
  const auto mask = mask_of(p);
  for (const auto& group : rows_by_kv_head(p, rows)) {
    const auto& head = group.first;  // not a structured binding: clang 14 cannot capture one in a lambda
    const auto& members = group.second;
    const DecodedHead kv = decode_head(p, t, head.first, head.second, threads);
    parallel_for(members.size(), thread_count(members.size(), threads), [&](int tid, int nthreads) {
      std::vector<double> scores(static_cast<size_t>(p.nk())), qrow(static_cast<size_t>(d));
      for (size_t m = size_t(tid); m < members.size(); m += size_t(nthreads)) {
        const size_t r = members[m];
        reference_row(p, t, kv, rows[r], out.data() + r * size_t(d), &lse[r], scores, qrow, mask ? &*mask : nullptr);
      }
    });
  }
}

}  // namespace flashio

// flash1 on the CPU: Algorithm 2 (forward) and Algorithm 4 (backward) of the FlashAttention
// paper, outer loop over K/V blocks, inner loop over Q blocks, HBM traffic counted in elements.
// The conventions (numerics, masks, block skipping, what is counted) are in flash1_cpu.h.
// "Line n" below is the line of Algorithm 2 in the forward and of Algorithm 4 in the backward.
#include "kernels/flash1/flash1_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "bench/core/philox.h"

namespace flashio {

int64_t Flash1HbmTraffic::reads() const {
  return q.reads + k.reads + v.reads + o.reads + l.reads + m.reads + d_o.reads + dq.reads + dk.reads + dv.reads;
}

int64_t Flash1HbmTraffic::writes() const {
  return q.writes + k.writes + v.writes + o.writes + l.writes + m.writes + d_o.writes + dq.writes + dk.writes +
         dv.writes;
}

namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

void validate(const Problem& p, int block_r, int block_c) {
  if (auto why = p.invalid_reason()) throw std::invalid_argument("flash1_cpu: " + *why);
  if (p.kvh() != p.heads)
    throw std::invalid_argument("flash1_cpu: flash1 has no GQA/MQA (kv_heads " + std::to_string(p.kvh()) +
                                " != heads " + std::to_string(p.heads) + ")");
  if (block_r <= 0 || block_c <= 0)
    throw std::invalid_argument("flash1_cpu: block sizes must be positive (Br " + std::to_string(block_r) + ", Bc " +
                                std::to_string(block_c) + ")");
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Rows [begin, begin + size) of block `index` of a length-n dimension cut into blocks of `block`.
struct BlockRange {
  int64_t begin, size;
};
BlockRange block_range(int64_t index, int64_t block, int64_t n) {
  const int64_t begin = index * block;
  return {begin, std::min(block, n - begin)};
}

// The suite's masks for one sequence: key `key` is visible to query `row` iff it lies before
// the sequence's key length and, with a causal mask, key <= row (top-left aligned).
struct SequenceMask {
  bool causal;
  int64_t key_length;

  bool visible(int64_t row, int64_t key) const { return key < key_length && (!causal || key <= row); }
  // No element of the block (rows [row_begin, row_end) × keys from key_begin) is visible.
  bool block_fully_masked(int64_t row_end, int64_t key_begin) const {
    return key_begin >= key_length || (causal && key_begin > row_end - 1);
  }
};

SequenceMask sequence_mask(const Problem& p, const HostTensors& t, int64_t b) {
  const int64_t key_length = t.key_lengths ? std::clamp<int64_t>(t.key_lengths[b], 0, p.nk()) : p.nk();
  return {p.causal, key_length};
}

// A tensor operand as the tensor cores see it: rounded to the dtype.
float round_to_dtype(DType dtype, float x) { return to_float(dtype, from_float(dtype, x)); }

// Widens `rows` × d words into a float tile (rows × d).
void load_words(DType dtype, const uint16_t* src, int64_t rows, int64_t d, std::vector<float>& tile) {
  for (int64_t e = 0; e < rows * d; ++e) tile[size_t(e)] = to_float(dtype, src[e]);
}

// Line 10/11 (forward) or 11/12 (backward): S = τ·Q_i K_jᵀ, −inf where masked.
// q_tile (rows, d), k_tile (cols, d) → scores (rows, Bc), leading dimension block_c.
void masked_scores(const std::vector<float>& q_tile, const std::vector<float>& k_tile, BlockRange rows, BlockRange cols,
                   int64_t d, int64_t block_c, float softmax_scale, const SequenceMask& mask,
                   std::vector<float>& scores) {
  for (int64_t r = 0; r < rows.size; ++r)
    for (int64_t c = 0; c < cols.size; ++c) {
      float* s = &scores[size_t(r * block_c + c)];
      if (!mask.visible(rows.begin + r, cols.begin + c)) {
        *s = kMinusInfinity;
        continue;
      }
      float dot = 0.0f;
      for (int64_t e = 0; e < d; ++e) dot += q_tile[size_t(r * d + e)] * k_tile[size_t(c * d + e)];
      *s = softmax_scale * dot;
    }
}

// Z of the block (rows, Bc): keep/(1−p) or 0 (all 1 without dropout). Line 14 of both algorithms.
void dropout_mask(const Problem& p, int64_t b, int64_t h, BlockRange rows, BlockRange cols, int64_t block_c,
                  std::vector<float>& z) {
  const bool dropout = p.dropout > 0.0;
  const float keep_scale = float(dropout_scale(p.dropout));
  for (int64_t r = 0; r < rows.size; ++r)
    for (int64_t c = 0; c < cols.size; ++c)
      z[size_t(r * block_c + c)] =
          !dropout || dropout_keeps(p.seed, kDropoutOffset, p.dropout, uint32_t(b), uint32_t(h),
                                    uint32_t(rows.begin + r), uint32_t(cols.begin + c))
              ? (dropout ? keep_scale : 1.0f)
              : 0.0f;
}

// The fixed shapes of one call.
struct Schedule {
  int64_t nq, nk, d, block_r, block_c, tr, tc;
};

Schedule make_schedule(const Problem& p, int block_r, int block_c) {
  return {p.seqlen_q, p.nk(), p.head_dim, block_r, block_c, ceil_div(p.seqlen_q, block_r), ceil_div(p.nk(), block_c)};
}

// ---- forward: Algorithm 2 for one (batch, head) ---------------------------------------------

struct ForwardTiles {          // on-chip SRAM of one thread block
  std::vector<float> k, v;     // (Bc, d)
  std::vector<float> q, o;     // (Br, d)
  std::vector<float> l, m;     // (Br)
  std::vector<float> s, z, p;  // (Br, Bc): S, dropout mask Z, P̃ (then P̃_dropped, rounded)
  ForwardTiles(const Schedule& g)
      : k(size_t(g.block_c * g.d)),
        v(k.size()),
        q(size_t(g.block_r * g.d)),
        o(q.size()),
        l(size_t(g.block_r)),
        m(l.size()),
        s(size_t(g.block_r * g.block_c)),
        z(s.size()),
        p(s.size()) {}
};

void forward_head(const Problem& p, const HostTensors& t, int64_t b, int64_t h, const Schedule& g, Flash1CpuFault fault,
                  ForwardTiles& tile, Flash1CpuResult& result) {
  const int64_t d = g.d, bc = g.block_c;
  const int64_t head = b * p.heads + h;
  const uint16_t* q_hbm = t.q + head * g.nq * d;
  const uint16_t* k_hbm = t.k + head * g.nk * d;
  const uint16_t* v_hbm = t.v + head * g.nk * d;
  // Line 3: O = 0, ℓ = 0, m = −inf in HBM (the caller's initialisation; not counted).
  float* o_hbm = result.o.data() + head * g.nq * d;
  float* l_hbm = result.l.data() + head * g.nq;
  float* m_hbm = result.m.data() + head * g.nq;
  std::vector<bool> row_block_visited(size_t(g.tr), false);
  const SequenceMask mask = sequence_mask(p, t, b);
  const float softmax_scale = float(p.scale());
  Flash1HbmTraffic& io = result.traffic;

  for (int64_t j = 0; j < g.tc; ++j) {  // line 6
    const BlockRange keys = block_range(j, g.block_c, g.nk);
    bool any_visible = false;
    for (int64_t i = 0; i < g.tr && !any_visible; ++i) {
      const BlockRange rows = block_range(i, g.block_r, g.nq);
      any_visible = !mask.block_fully_masked(rows.begin + rows.size, keys.begin);
    }
    if (!any_visible) {
      io.blocks_skipped += g.tr;
      continue;
    }
    // Line 7: load K_j, V_j.
    load_words(p.dtype, k_hbm + keys.begin * d, keys.size, d, tile.k);
    load_words(p.dtype, v_hbm + keys.begin * d, keys.size, d, tile.v);
    io.k.reads += keys.size * d;
    io.v.reads += keys.size * d;

    for (int64_t i = 0; i < g.tr; ++i) {  // line 8
      const BlockRange rows = block_range(i, g.block_r, g.nq);
      if (mask.block_fully_masked(rows.begin + rows.size, keys.begin)) {
        ++io.blocks_skipped;
        continue;
      }
      ++io.blocks_visited;
      // Line 9: load Q_i, O_i, ℓ_i, m_i. On the first visit of block i they hold line 3's
      // 0, 0, −inf: made on chip, not read.
      load_words(p.dtype, q_hbm + rows.begin * d, rows.size, d, tile.q);
      io.q.reads += rows.size * d;
      if (row_block_visited[size_t(i)]) {
        std::copy(o_hbm + rows.begin * d, o_hbm + (rows.begin + rows.size) * d, tile.o.begin());
        std::copy(l_hbm + rows.begin, l_hbm + rows.begin + rows.size, tile.l.begin());
        std::copy(m_hbm + rows.begin, m_hbm + rows.begin + rows.size, tile.m.begin());
        io.o.reads += rows.size * d;
        io.l.reads += rows.size;
        io.m.reads += rows.size;
      } else {
        std::fill(tile.o.begin(), tile.o.end(), 0.0f);
        std::fill(tile.l.begin(), tile.l.end(), 0.0f);
        std::fill(tile.m.begin(), tile.m.end(), kMinusInfinity);
        row_block_visited[size_t(i)] = true;
      }

      // Lines 10, 11: S_ij = τ Q_i K_jᵀ, masked.
      masked_scores(tile.q, tile.k, rows, keys, d, bc, softmax_scale, mask, tile.s);
      // Line 14's mask Z, drawn here for the whole block.
      dropout_mask(p, b, h, rows, keys, bc, tile.z);

      for (int64_t r = 0; r < rows.size; ++r) {
        const float* s = &tile.s[size_t(r * bc)];
        float* p_tilde = &tile.p[size_t(r * bc)];
        // Line 12: m̃_ij = rowmax(S), P̃_ij = exp(S − m̃_ij), ℓ̃_ij = rowsum(P̃_ij) (before dropout).
        float block_max = kMinusInfinity;
        for (int64_t c = 0; c < keys.size; ++c) block_max = std::max(block_max, s[c]);
        float block_sum = 0.0f;
        for (int64_t c = 0; c < keys.size; ++c) {
          p_tilde[c] = s[c] == kMinusInfinity ? 0.0f : std::exp(s[c] - block_max);
          block_sum += p_tilde[c];
        }
        // Line 13: m_new = max(m_i, m̃_ij), ℓ_new = e^{m_i − m_new} ℓ_i + e^{m̃_ij − m_new} ℓ̃_ij.
        const float m_old = tile.m[size_t(r)], l_old = tile.l[size_t(r)];
        const float m_new = std::max(m_old, block_max);
        if (m_new == kMinusInfinity) continue;             // the row has seen no key yet: O, ℓ, m stay 0, 0, −inf
        const float old_factor = std::exp(m_old - m_new);  // 0 when m_old = −inf
        const float block_factor = std::exp(block_max - m_new);  // 0 when this block hides the row
        const float l_new = old_factor * l_old + block_factor * block_sum;
        // Line 14: P̃_dropped = P̃ ∘ Z, rounded to the dtype for the P̃·V product.
        for (int64_t c = 0; c < keys.size; ++c)
          p_tilde[c] = round_to_dtype(p.dtype, p_tilde[c] * tile.z[size_t(r * bc + c)]);
        // Line 15: O_i ← diag(ℓ_new)⁻¹ (diag(ℓ_i) e^{m_i − m_new} O_i + e^{m̃_ij − m_new} P̃_dropped V_j).
        const float old_output_factor = fault == Flash1CpuFault::ForgetOutputRescale ? 1.0f : old_factor;
        float* o = &tile.o[size_t(r * d)];
        for (int64_t e = 0; e < d; ++e) {
          float pv = 0.0f;
          for (int64_t c = 0; c < keys.size; ++c) pv += p_tilde[c] * tile.v[size_t(c * d + e)];
          o[e] = (l_old * old_output_factor * o[e] + block_factor * pv) / l_new;
        }
        // Line 16 (on chip until the write below): ℓ_i ← ℓ_new, m_i ← m_new.
        tile.l[size_t(r)] = l_new;
        tile.m[size_t(r)] = m_new;
      }

      // Lines 15, 16: write O_i, ℓ_i, m_i to HBM.
      std::copy(tile.o.begin(), tile.o.begin() + rows.size * d, o_hbm + rows.begin * d);
      std::copy(tile.l.begin(), tile.l.begin() + rows.size, l_hbm + rows.begin);
      std::copy(tile.m.begin(), tile.m.begin() + rows.size, m_hbm + rows.begin);
      io.o.writes += rows.size * d;
      io.l.writes += rows.size;
      io.m.writes += rows.size;
    }
  }
}

// ---- backward: Algorithm 4 for one (batch, head) --------------------------------------------

struct BackwardTiles {               // on-chip SRAM of one thread block
  std::vector<float> k, v, dk, dv;   // (Bc, d): K_j, V_j and the accumulators dK̃_j, dṼ_j
  std::vector<float> q, o, d_o, dq;  // (Br, d)
  std::vector<float> l, m, row_dot;  // (Br): ℓ_i, m_i, D_i
  std::vector<float> s, z, p, ds;    // (Br, Bc): S then P, Z, P_dropped (rounded), dS (rounded)
  BackwardTiles(const Schedule& g)
      : k(size_t(g.block_c * g.d)),
        v(k.size()),
        dk(k.size()),
        dv(k.size()),
        q(size_t(g.block_r * g.d)),
        o(q.size()),
        d_o(q.size()),
        dq(q.size()),
        l(size_t(g.block_r)),
        m(l.size()),
        row_dot(l.size()),
        s(size_t(g.block_r * g.block_c)),
        z(s.size()),
        p(s.size()),
        ds(s.size()) {}
};

void backward_head(const Problem& p, const HostTensors& t, const uint16_t* d_o, const std::vector<float>& o_rounded,
                   const Flash1CpuResult& forward, int64_t b, int64_t h, const Schedule& g, Flash1CpuFault fault,
                   BackwardTiles& tile, Flash1CpuResult& result) {
  const int64_t d = g.d, bc = g.block_c;
  const int64_t head = b * p.heads + h;
  const uint16_t* q_hbm = t.q + head * g.nq * d;
  const uint16_t* k_hbm = t.k + head * g.nk * d;
  const uint16_t* v_hbm = t.v + head * g.nk * d;
  const uint16_t* do_hbm = d_o + head * g.nq * d;
  const float* o_hbm = o_rounded.data() + head * g.nq * d;
  const float* l_hbm = forward.l.data() + head * g.nq;
  const float* m_hbm = forward.m.data() + head * g.nq;
  // Line 5: dQ, dK, dV = 0 in HBM (the caller's initialisation; not counted).
  float* dq_hbm = result.dq.data() + head * g.nq * d;
  float* dk_hbm = result.dk.data() + head * g.nk * d;
  float* dv_hbm = result.dv.data() + head * g.nk * d;
  std::vector<bool> row_block_visited(size_t(g.tr), false);
  const SequenceMask mask = sequence_mask(p, t, b);
  const float softmax_scale = float(p.scale());
  Flash1HbmTraffic& io = result.traffic;

  for (int64_t j = 0; j < g.tc; ++j) {  // line 6
    const BlockRange keys = block_range(j, g.block_c, g.nk);
    // Line 8: dK̃_j = 0, dṼ_j = 0 on chip.
    std::fill(tile.dk.begin(), tile.dk.end(), 0.0f);
    std::fill(tile.dv.begin(), tile.dv.end(), 0.0f);
    bool kv_loaded = false;

    for (int64_t i = 0; i < g.tr; ++i) {  // line 9
      const BlockRange rows = block_range(i, g.block_r, g.nq);
      if (mask.block_fully_masked(rows.begin + rows.size, keys.begin)) {
        ++io.blocks_skipped;
        continue;
      }
      ++io.blocks_visited;
      if (!kv_loaded) {  // line 7: load K_j, V_j (only for an outer iteration with a visible block)
        load_words(p.dtype, k_hbm + keys.begin * d, keys.size, d, tile.k);
        load_words(p.dtype, v_hbm + keys.begin * d, keys.size, d, tile.v);
        io.k.reads += keys.size * d;
        io.v.reads += keys.size * d;
        kv_loaded = true;
      }
      // Line 10: load Q_i, O_i, dO_i, dQ_i, ℓ_i, m_i (dQ_i is line 5's zero on the first visit).
      load_words(p.dtype, q_hbm + rows.begin * d, rows.size, d, tile.q);
      load_words(p.dtype, do_hbm + rows.begin * d, rows.size, d, tile.d_o);
      std::copy(o_hbm + rows.begin * d, o_hbm + (rows.begin + rows.size) * d, tile.o.begin());
      std::copy(l_hbm + rows.begin, l_hbm + rows.begin + rows.size, tile.l.begin());
      std::copy(m_hbm + rows.begin, m_hbm + rows.begin + rows.size, tile.m.begin());
      io.q.reads += rows.size * d;
      io.d_o.reads += rows.size * d;
      io.o.reads += rows.size * d;
      io.l.reads += rows.size;
      io.m.reads += rows.size;
      if (row_block_visited[size_t(i)]) {
        std::copy(dq_hbm + rows.begin * d, dq_hbm + (rows.begin + rows.size) * d, tile.dq.begin());
        io.dq.reads += rows.size * d;
      } else {
        std::fill(tile.dq.begin(), tile.dq.end(), 0.0f);
        row_block_visited[size_t(i)] = true;
      }

      // Lines 11, 12: S_ij = τ Q_i K_jᵀ, masked.
      masked_scores(tile.q, tile.k, rows, keys, d, bc, softmax_scale, mask, tile.s);
      // Line 14: Z_ij.
      dropout_mask(p, b, h, rows, keys, bc, tile.z);
      for (int64_t r = 0; r < rows.size; ++r) {
        // Line 13: P_ij = diag(ℓ_i)⁻¹ exp(S_ij − m_i) (zero where masked, and for a row with no key).
        const float l_i = tile.l[size_t(r)], m_i = tile.m[size_t(r)];
        float* prob = &tile.s[size_t(r * bc)];  // S becomes P in place
        for (int64_t c = 0; c < keys.size; ++c)
          prob[c] = prob[c] == kMinusInfinity || l_i == 0.0f ? 0.0f : std::exp(prob[c] - m_i) / l_i;
        // Line 15: P_dropped = P ∘ Z, rounded to the dtype for the Pᵀ·dO product.
        for (int64_t c = 0; c < keys.size; ++c)
          tile.p[size_t(r * bc + c)] = round_to_dtype(p.dtype, prob[c] * tile.z[size_t(r * bc + c)]);
        // Line 19: D_i = rowsum(dO_i ∘ O_i).
        float row_dot = 0.0f;
        for (int64_t e = 0; e < d; ++e) row_dot += tile.d_o[size_t(r * d + e)] * tile.o[size_t(r * d + e)];
        tile.row_dot[size_t(r)] = fault == Flash1CpuFault::ForgetRowDotD ? 0.0f : row_dot;
      }
      // Line 16: dṼ_j ← dṼ_j + P_droppedᵀ dO_i.
      for (int64_t c = 0; c < keys.size; ++c)
        for (int64_t e = 0; e < d; ++e) {
          float acc = 0.0f;
          for (int64_t r = 0; r < rows.size; ++r) acc += tile.p[size_t(r * bc + c)] * tile.d_o[size_t(r * d + e)];
          tile.dv[size_t(c * d + e)] += acc;
        }
      for (int64_t r = 0; r < rows.size; ++r)
        for (int64_t c = 0; c < keys.size; ++c) {
          // Line 17: dP_dropped = dO_i V_jᵀ.
          float dp = 0.0f;
          for (int64_t e = 0; e < d; ++e) dp += tile.d_o[size_t(r * d + e)] * tile.v[size_t(c * d + e)];
          // Line 18: dP = dP_dropped ∘ Z.
          if (fault != Flash1CpuFault::ForgetDropoutOnDp) dp *= tile.z[size_t(r * bc + c)];
          // Line 20: dS = P ∘ (dP − D_i), rounded to the dtype for the dS·K and dSᵀ·Q products.
          const float prob = tile.s[size_t(r * bc + c)];
          tile.ds[size_t(r * bc + c)] = round_to_dtype(p.dtype, prob * (dp - tile.row_dot[size_t(r)]));
        }
      // Line 21: dQ_i ← dQ_i + τ dS_ij K_j, written to HBM.
      for (int64_t r = 0; r < rows.size; ++r)
        for (int64_t e = 0; e < d; ++e) {
          float acc = 0.0f;
          for (int64_t c = 0; c < keys.size; ++c) acc += tile.ds[size_t(r * bc + c)] * tile.k[size_t(c * d + e)];
          tile.dq[size_t(r * d + e)] += softmax_scale * acc;
        }
      std::copy(tile.dq.begin(), tile.dq.begin() + rows.size * d, dq_hbm + rows.begin * d);
      io.dq.writes += rows.size * d;
      // Line 22: dK̃_j ← dK̃_j + τ dS_ijᵀ Q_i.
      for (int64_t c = 0; c < keys.size; ++c)
        for (int64_t e = 0; e < d; ++e) {
          float acc = 0.0f;
          for (int64_t r = 0; r < rows.size; ++r) acc += tile.ds[size_t(r * bc + c)] * tile.q[size_t(r * d + e)];
          tile.dk[size_t(c * d + e)] += softmax_scale * acc;
        }
    }
    // Line 24: write dK_j ← dK̃_j, dV_j ← dṼ_j (zero when every block of the column was masked).
    std::copy(tile.dk.begin(), tile.dk.begin() + keys.size * d, dk_hbm + keys.begin * d);
    std::copy(tile.dv.begin(), tile.dv.begin() + keys.size * d, dv_hbm + keys.begin * d);
    io.dk.writes += keys.size * d;
    io.dv.writes += keys.size * d;
  }
}

}  // namespace

Flash1CpuResult flash1_forward_cpu(const Problem& p, const HostTensors& t, int block_r, int block_c,
                                   Flash1CpuFault fault) {
  validate(p, block_r, block_c);
  const Schedule g = make_schedule(p, block_r, block_c);
  const int64_t rows_total = p.batch * p.heads * g.nq;
  Flash1CpuResult result;
  // Line 3: O = 0, ℓ = 0, m = −inf.
  result.o.assign(size_t(p.q_elements()), 0.0f);
  result.l.assign(size_t(rows_total), 0.0f);
  result.m.assign(size_t(rows_total), kMinusInfinity);
  ForwardTiles tiles(g);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) forward_head(p, t, b, h, g, fault, tiles, result);
  // LSE = m + log ℓ (−inf where the row saw no key; its O is still line 3's zero).
  result.lse.resize(size_t(rows_total));
  for (int64_t r = 0; r < rows_total; ++r)
    result.lse[size_t(r)] =
        result.l[size_t(r)] > 0.0f ? result.m[size_t(r)] + std::log(result.l[size_t(r)]) : kMinusInfinity;
  result.hbm_reads = result.traffic.reads();
  result.hbm_writes = result.traffic.writes();
  return result;
}

Flash1CpuResult flash1_backward_cpu(const Problem& p, const HostTensors& t, const uint16_t* d_o,
                                    const Flash1CpuResult& forward, int block_r, int block_c, Flash1CpuFault fault) {
  validate(p, block_r, block_c);
  if (d_o == nullptr) throw std::invalid_argument("flash1_cpu: the backward pass needs dO");
  const Schedule g = make_schedule(p, block_r, block_c);
  const int64_t rows_total = p.batch * p.heads * g.nq;
  if (int64_t(forward.o.size()) != p.q_elements() || int64_t(forward.l.size()) != rows_total ||
      int64_t(forward.m.size()) != rows_total)
    throw std::invalid_argument("flash1_cpu: the forward result does not match the problem's shape");
  // The backward's O is the forward's output as a GPU method returns it: in the dtype.
  std::vector<float> o_rounded(forward.o.size());
  for (size_t e = 0; e < o_rounded.size(); ++e) o_rounded[e] = round_to_dtype(p.dtype, forward.o[e]);

  Flash1CpuResult result;
  // Line 5: dQ = 0, dK = 0, dV = 0.
  result.dq.assign(size_t(p.q_elements()), 0.0f);
  result.dk.assign(size_t(p.kv_elements()), 0.0f);
  result.dv.assign(size_t(p.kv_elements()), 0.0f);
  BackwardTiles tiles(g);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) backward_head(p, t, d_o, o_rounded, forward, b, h, g, fault, tiles, result);
  result.hbm_reads = result.traffic.reads();
  result.hbm_writes = result.traffic.writes();
  return result;
}

}  // namespace flashio

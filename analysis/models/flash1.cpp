// flash1 (FlashAttention, Algorithms 1, 2 and 4; kernels/flash1/): the exact SM↔L2 model of its
// forward and backward schedules (kernels/flash1/flash1_kernels.cuh), checked against
// analysis/schedule_sim.cpp; its DRAM re-reads; Theorem 2's form; its tiles (Algorithm 1's rule).
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "analysis/models/model.h"
#include "analysis/models/model_parts.h"
#include "analysis/schedule_sim.h"
#include "kernels/flash1/flash1_configs.h"
#include "kernels/common/mma_bwd_configs.h"

namespace flashio::analysis {

using namespace parts;

namespace {

// The forward's O, ℓ, m re-read bytes that reach the L2 (flash1_fwd_traffic's L1 term): block z owns
// the Q tiles i ≡ z (mod S) and at K/V tile j ≥ 1 re-reads (`reread[i]` bytes, as its instructions
// count them) those from `i_first(j)` on, each after a stream of all of them (`footprint[i]`: the
// distinct sectors of tile i's O, ℓ, m).
template <class FirstTile>
int64_t l1_missed_rereads(const std::vector<int64_t>& reread, const std::vector<int64_t>& footprint, int64_t splits,
                          int64_t n_blocks, FirstTile i_first, const L1Reuse& l1) {
  const int64_t m_blocks = int64_t(reread.size());
  int64_t out = 0;
  for (int64_t z = 0; z < std::min(splits, m_blocks); ++z) {
    std::vector<int64_t> from(static_cast<size_t>(m_blocks + 1), 0);  // from[i]: footprint of own tiles i' >= i
    for (int64_t i = m_blocks - 1; i >= 0; --i)
      from[size_t(i)] = from[size_t(i + 1)] + (i % splits == z ? footprint[size_t(i)] : 0);
    for (int64_t j = 1; j < n_blocks; ++j) {
      const int64_t first = i_first(j), window = from[size_t(first)];
      for (int64_t i = first + ((z - first % splits) % splits + splits) % splits; i < m_blocks; i += splits)
        out += l1_missed_sectors(reread[size_t(i)] / kSector, window, l1) * kSector;
    }
  }
  return out;
}

}  // namespace

// flash1 forward (grid (heads, batch, S): block z of a head takes the Q tiles i ≡ z (mod S);
// outer loop over K/V tiles j, inner over its Q tiles i ≥ i_first(j)): K_j, V_j once per block
// that has a Q tile for j (rows < seqlen_k; S = 1 loads them even when it has none, as the
// kernel without splits does), Q_i once per visit, and per visited (i, j): m_i, ℓ_i, O_i (fp32)
// read when j > 0; written back, or on the last visit O (element type, 16 of 32 bytes per
// sector) and L instead of the fp32 O. Everything per (i, j) is independent of S, except what the
// L1 keeps (`l1`, l1_reuse.h): block z's rows between two visits of Q tile i at K/V tiles j − 1 and
// j are those of every own tile it visits at j (the tiles that finished at j − 1 lie below i and
// came before it), so a re-read at j reaches the L2 as that stream's L1 share says.
Traffic flash1_fwd_traffic(const Problem& p, const ModelTiles& t, const L1Reuse& l1) {
  check_tiles(t, "flash1 forward");
  require(t.splits >= 1, "flash1 forward: splits must be >= 1");
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, nkmax = p.nk(), row_bytes = d * e;
  const int64_t br = t.block_r, bc = t.block_c, m_blocks = ceil_div(nq, br), splits = t.splits;
  // The first Q tile K/V tile j visits (causal: the diagonal's).
  auto i_first = [&](int64_t j) { return p.causal ? std::min(j * bc / br, m_blocks) : int64_t(0); };
  const auto lens = key_lengths(p);
  Traffic out;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t nk = std::min<int64_t>(lens[size_t(b)], nkmax);
    const int64_t n_blocks = ceil_div(nk, bc);
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t head = (b * p.heads + h) * nq;
      if (n_blocks == 0) {  // O = 0, L = −∞: S = 1 over the head, S > 1 per own Q tile
        out.add("O", 0, nq * row_bytes);
        int64_t l_sectors = 0;
        if (splits == 1) {
          l_sectors = grouped_fp32_sectors(head, nq, 32);
        } else {
          for (int64_t i = 0; i < m_blocks; ++i)
            l_sectors += grouped_fp32_sectors(head + i * br, std::min(br, nq - i * br), 32);
        }
        out.add("L (log-sum-exp)", 0, l_sectors * kSector);
        continue;
      }
      int64_t kv_rows = 0;
      for (int64_t j = 0; j < n_blocks; ++j) {
        const int64_t loaders = splits == 1 ? 1 : std::min(splits, m_blocks - i_first(j));  // blocks with a Q tile
        kv_rows += loaders * smem_row_deliveries(std::min(bc, nkmax - j * bc), t.smem_layout);
      }
      out.add("K,V tiles", 2 * kv_rows * row_bytes, 0);
      // K/V tile j visits Q tile i iff j <= last_j(i) (i >= i_first(j) = ⌊j·Bc/Br⌋ ⇔ j·Bc <= i·Br + Br − 1):
      // v_i visits; the first writes back without reading, the last writes O, L (and l, m).
      int64_t q = 0, reread = 0, writeback = 0, final_write = 0;
      // Q tile i's O, ℓ, m bytes read per visit, and its distinct sectors (what the L1 holds of it).
      std::vector<int64_t> rmw(static_cast<size_t>(m_blocks)), footprint(static_cast<size_t>(m_blocks));
      for (int64_t i = 0; i < m_blocks; ++i) {
        const int64_t m0 = i * br, rows = std::min(br, nq - m0);
        const int64_t last_j = p.causal ? std::min(n_blocks - 1, (m0 + br - 1) / bc) : n_blocks - 1;
        const int64_t visits = last_j + 1;
        const int64_t vec = tile_vector_bytes(head, m0, rows, 8);
        const int64_t o_fp32 = rows * d * kF32;  // one sector per row per 8 columns (float2 × 4 lanes)
        rmw[size_t(i)] = o_fp32 + 2 * vec;
        footprint[size_t(i)] = o_fp32 + 2 * tile_vector_bytes(head, m0, rows, rows);
        q += visits * smem_row_deliveries(rows, t.smem_layout) * row_bytes;
        reread += (visits - 1) * rmw[size_t(i)];
        writeback += (visits - 1) * rmw[size_t(i)];
        final_write += rows * (d / 8) * kSector + 3 * vec;  // O in the element type: 16 of 32 bytes per sector
      }
      if (l1.l1_bytes > 0) reread = l1_missed_rereads(rmw, footprint, splits, n_blocks, i_first, l1);
      out.add("Q tiles", q, 0);
      out.add("O, l, m re-read", reread, 0);
      out.add("O, L, l, m final write", 0, final_write);
      out.add("O, l, m write-back", 0, writeback);
    }
  }
  return out;
}

// flash1 backward (grid (heads, batch, S): block z of a head takes the K/V tiles j ≡ z (mod S),
// inner loop over the Q tiles each sees): K_j, V_j once in all; Q_i, dO_i, O_i tiles, ℓ_i and
// m_i per visit; dQ_i (fp32) per visit read-modify-written with plain loads and stores when
// S = 1 (one 8-byte load and store per row and 8 columns: a sector each; before 9077f49 two
// 4-byte ones, the second load hitting L1, both stores reaching L2), added with flash2's fp32
// atomics when S > 1 (dq_sectors_per_row); dK_j, dV_j written; dQ accumulator zeroed
// before, converted after.
Traffic flash1_bwd_traffic(const Problem& p, const ModelTiles& t, DqWidth dq) {
  check_tiles(t, "flash1 backward");
  require(t.splits >= 1, "flash1 backward: splits must be >= 1");
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, nkmax = p.nk(), row_bytes = d * e;
  const int64_t br = t.block_r, bc = t.block_c, m_blocks = ceil_div(nq, br), n_blocks = ceil_div(nkmax, bc);
  const int64_t vec_group = std::min<int64_t>(32, br);
  const int64_t rows_total = p.batch * p.heads * nq;
  const auto lens = key_lengths(p);
  Traffic out;
  // The dQ accumulator's cudaMemsetAsync is no kernel of the pass: the counters' per-kernel
  // ranges do not see it (H100: l2_write = the kernels' stores exactly, without it).
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t nk = std::min<int64_t>(lens[size_t(b)], nkmax);
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t head = (b * p.heads + h) * nq;
      out.add("K,V tiles", 2 * kv_xbar_rows(n_blocks, nkmax, bc, t.smem_layout) * row_bytes, 0);
      out.add("dK, dV", 0, 2 * nkmax * row_bytes);
      // Rows and L/D-vector bytes of Q tiles i..m_blocks−1, as suffix sums.
      std::vector<int64_t> rows_from(size_t(m_blocks + 1), 0), vec_from(size_t(m_blocks + 1), 0);
      std::vector<int64_t> xrows_from(size_t(m_blocks + 1), 0);
      for (int64_t i = m_blocks - 1; i >= 0; --i) {
        const int64_t r = std::min(br, nq - i * br);
        rows_from[size_t(i)] = rows_from[size_t(i + 1)] + r;
        xrows_from[size_t(i)] = xrows_from[size_t(i + 1)] + smem_row_deliveries(r, t.smem_layout);
        vec_from[size_t(i)] = vec_from[size_t(i + 1)] + tile_vector_bytes(head, i * br, r, vec_group);
      }
      int64_t rows = 0, xrows = 0, vec = 0;
      for (int64_t j = 0; j < n_blocks && j * bc < nk; ++j) {
        const int64_t i_first = p.causal ? std::min(j * bc / br, m_blocks) : 0;
        rows += rows_from[size_t(i_first)];
        xrows += xrows_from[size_t(i_first)];
        vec += vec_from[size_t(i_first)];
      }
      out.add("Q, dO, O tiles", 3 * xrows * row_bytes, 0);
      out.add("l, m", 2 * vec, 0);
      if (t.splits == 1) {
        out.add("dQ read-modify-write", rows * d * kF32, rows * dq_sectors_per_row(d, dq.plain) * kSector);
      } else {
        out.add("dQ accumulate (atomic)", 0, 0, rows * dq_sectors_per_row(d, dq.atomic) * kSector);
      }
    }
  }
  out.add("dQ convert", rows_total * d * kF32, rows_total * row_bytes);
  return out;
}

namespace {

class Flash1Model final : public IoModel {
 public:
  std::string method() const override { return "flash1"; }
  bool exact() const override { return true; }

  Traffic sm_l2(const ModelPoint& m) const override {
    const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
    require(m.mask.empty() && m.bwd_mask.empty(), "flash1: no block-sparse schedule");
    Traffic out;
    if (fwd) out += flash1_fwd_traffic(m.problem, need_tiles(m.fwd_tiles, m, "forward"), m.fwd_l1);
    if (bwd) out += flash1_bwd_traffic(m.problem, need_tiles(m.bwd_tiles, m, "backward"), m.dq());
    return out;
  }

  Traffic simulate_sm_l2(const ModelPoint& m) const override {
    const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
    Traffic out;
    if (fwd) out += simulate_flash1_fwd(m.problem, m.fwd_tiles.value(), m.fwd_l1);
    if (bwd) out += simulate_flash1_bwd(m.problem, m.bwd_tiles.value(), m.dq());
    return out;
  }

  // The forward also writes ℓ and m for the backward; the backward computes D in its main
  // kernel and reads ℓ, m instead of L.
  Traffic compulsory_dram(const ModelPoint& m) const override {
    const Problem& p = m.problem;
    Traffic out;
    if (m.pass != Pass::Bwd) {
      add_forward_compulsory(p, out);
      out.add("l, m (kept for the backward)", 0, 2 * p.batch * p.heads * p.seqlen_q * kF32);
    }
    if (m.pass != Pass::Fwd) add_fused_backward_compulsory(p, /*d_in_main_kernel=*/true, out);
    return out;
  }

  int64_t dram_beyond_compulsory(const ModelPoint& m, const DramContext& c, DramPrediction& out) const override;
  std::optional<SimTrace> dram_trace(const ModelPoint& m, const DramContext& c, int coarse) const override;

  // The forward's fp32 O accumulator and its ℓ, m.
  int64_t forward_workspace_bytes(const Problem& p) const override {
    const int64_t rows = p.batch * p.heads * p.seqlen_q;
    return rows * p.head_dim * kF32 + 2 * rows * kF32;
  }

  // Algorithm 1's loop order re-reads Q, O, ℓ, m once per K/V tile: the forward divides by Bc.
  int reread_tile(const ModelTiles& fwd) const override { return fwd.block_c; }
  const char* reread_tile_name() const override { return "Bc"; }
  std::string asymptotic_formula(const ModelPoint& m) const override {
    const std::string s = m.mask.empty() ? "" : "s·";
    if (m.pass == Pass::Fwd) return "N·d + " + s + "N²·d/Bc  (Theorem 2: Θ(N²d²/M), Bc = Θ(M/d))";
    return IoModel::asymptotic_formula(m);
  }

  // Algorithm 1's rule (flash1_fwd_pick); the backward is flash2's first mma.sync tile with
  // flash1's O stages (d <= 128 only).
  PredictedTiles predict_tiles(const Problem& p, int64_t optin) const override {
    switch (p.head_dim) {
#define FLASH1_PREDICT_CASE(D) \
  case D:                      \
    return tiles<D>(optin);
      FLASH1_HEAD_DIMS(FLASH1_PREDICT_CASE)
#undef FLASH1_PREDICT_CASE
      default: {  // no kernel (d = 256 included)
        PredictedTiles none;
        none.bwd_kernel = false;
        return none;
      }
    }
  }

 private:
  template <int D>
  static PredictedTiles tiles(int64_t optin) {
    PredictedTiles out;
    if (const auto f = kernels::flash1_fwd_pick<D>(optin)) {
      out.fwd = ModelTiles{*f};
      out.fwd_smem = kernels::flash1_fwd_smem_bytes(D, *f);
    }
    const TileShape b = kernels::MmaBwdConfig<D>::kSpec;
    out.bwd = ModelTiles{b};
    out.bwd_smem = kernels::flash1_bwd_smem_bytes(D, b);
    return out;
  }
};

// S blocks per head (tiles.splits): forward block z holds its own Q tiles' Q and fp32 O, ℓ, m
// (1/S of the head's) and re-reads them once per K/V tile; backward blocks each stream the
// head's Q, dO, O, ℓ, m and fp32 dQ once per K/V tile they hold, the S blocks of a head
// sharing them through L2 (same order, near lock-step). They stay in L2 while the resident
// blocks' sets fit; then every re-read is a DRAM read. K/V: the S blocks of a head read the
// same tiles close together, so L2 serves all but the first.
int64_t Flash1Model::dram_beyond_compulsory(const ModelPoint& m, const DramContext& c, DramPrediction& out) const {
  const Problem& p = m.problem;
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q;
  const GpuLimits& gpu = c.gpu;
  const StreamingKernels& kernels = c.kernels;
  const int64_t fwd_smem_bytes = c.fwd_smem, bwd_smem_bytes = c.bwd_smem;
  const double usable = c.usable;
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  int64_t extra = 0;
  const Traffic sm = sm_l2(m);
  const int64_t heads = p.batch * p.heads;
  if (fwd) {
    const ModelTiles t = m.fwd_tiles.value();
    const int64_t splits = t.splits;
    out.blocks_per_sm = resident_blocks(t.warps * 32, fwd_smem_bytes, gpu, kernels.fwd);
    out.occupancy = occupancy_source(kernels.fwd, gpu);
    out.wave_blocks = int64_t(out.blocks_per_sm) * gpu.sm_count;
    const int64_t per_head = nq * (d * e + 4 * d + 8);
    out.spills = double(std::min(heads * splits, out.wave_blocks)) * double(per_head) / double(splits) > usable;
    out.waves_per_head = 1;
    if (out.spills) {
      extra += term_bytes(sm, "Q tiles") - p.q_elements() * e + term_bytes(sm, "O, l, m re-read") +
               term_bytes(sm, "O, l, m write-back");
      out.note = "resident blocks' Q, O, l, m exceed the usable L2: every K/V tile re-reads them from DRAM";
    } else {
      extra += heads * nq * d * 4;  // the fp32 O accumulator, written back once
    }
  }
  if (bwd) {
    const ModelTiles t = m.bwd_tiles.value();
    const int64_t splits = t.splits;
    const int bps = resident_blocks(t.warps * 32, bwd_smem_bytes, gpu, kernels.bwd);
    const int64_t per_head = nq * (3 * d * e + 8 + 4 * d);
    const int64_t resident_heads = ceil_div(std::min(heads * splits, int64_t(bps) * gpu.sm_count), splits);
    const bool spill = double(resident_heads * per_head) > usable;
    out.bwd_working = resident_heads * per_head;
    if (!fwd)
      out.blocks_per_sm = bps, out.wave_blocks = int64_t(bps) * gpu.sm_count,
      out.occupancy = occupancy_source(kernels.bwd, gpu);
    out.spills = out.spills || spill;
    if (spill) {
      // dQ (read-modify-written for S = 1, atomics for S > 1): a DRAM read and a write-back of
      // its fp32 bytes per visit, whatever the instruction width. The S blocks of a head walk
      // the same Q tiles in the same order, together: the first fetches a tile, L2 serves the
      // others (measured, H100, S = 2: DRAM ≈ half the per-block re-reads).
      const int64_t streamed =
          term_bytes(sm, "Q, dO, O tiles") + term_bytes(sm, "l, m") + 2 * dq_visit_bytes(sm, m.dq());
      extra += streamed / splits - 3 * p.q_elements() * e -
               2 * heads * nq * d * 4;  // the accumulator's one write-back and read: compulsory
      out.note += (out.note.empty() ? "" : "; ") + std::string("backward: Q, dO, O, dQ re-read from DRAM per K/V tile");
    }
    if (double(resident_heads * per_head) <= double(gpu.l2_bytes) && spill) {
      out.out_of_scope = fmt::format(
          "the resident blocks' backward streams ({:.1f} MB) lie between the usable L2 ({:.1f} MB) and the whole "
          "L2 ({:.1f} MB): partial residency is not modelled",
          double(resident_heads * per_head) / 1e6, usable / 1e6, double(gpu.l2_bytes) / 1e6);
    }
    if (splits > 1 && double(per_head) > usable) {  // S = 1: one block, every re-read a miss (as modelled)
      out.out_of_scope = fmt::format(
          "one head's backward streams Q, dO, O, l, m, dQ of {:.1f} MB, more than the usable L2 ({:.1f} MB), "
          "through each of its {} blocks: how far those blocks drift apart is not modelled",
          double(per_head) / 1e6, usable / 1e6, splits);
    }
  }
  return extra;
}

// The L2 simulation's trace (l2_sim.h), one time unit per (K/V tile j, Q tile i) iteration:
//   forward   one block per (head, batch, split z), heads fastest; outer loop over K/V tiles j
//             (K_j, V_j read at the block's first iteration of j), inner over its Q tiles
//             i ≡ z (mod S), i ≥ i_first(j): Q_i read; the fp32 O, ℓ, m read back when j > 0;
//             written back, or on the last visit O, L, ℓ, m written;
//   backward  the dQ accumulator's cudaMemsetAsync (not counted); main: one block per (head,
//             batch, split z): K/V tiles j ≡ z (mod S) below seqlen_k (K_j, V_j read first, dK_j,
//             dV_j written last), Q tiles i ≥ i_first(j) of sequences that see j: Q_i, dO_i, O_i,
//             ℓ_i, m_i read, dQ_i added into the accumulator (a read-modify-write in L2);
//             convert (accumulator read, dQ written).
std::optional<SimTrace> Flash1Model::dram_trace(const ModelPoint& m, const DramContext& c, int coarse) const {
  const Problem& p = m.problem;
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, nkmax = p.nk();
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  const int64_t heads = p.heads, kvh = p.kvh(), group = heads / kvh, batch = p.batch;
  const int64_t qh = batch * heads, kh = batch * kvh;
  const bool causal = p.causal;
  const auto lens_i32 = key_lengths(p);
  const auto lens = std::make_shared<const std::vector<int64_t>>(lens_i32.begin(), lens_i32.end());
  int64_t cq = 0, ck = 0;
  if (fwd) cq = gcd_rows(cq, need_tiles(m.fwd_tiles, m, "forward").block_r), ck = gcd_rows(ck, m.fwd_tiles->block_c);
  if (bwd) cq = gcd_rows(cq, need_tiles(m.bwd_tiles, m, "backward").block_r), ck = gcd_rows(ck, m.bwd_tiles->block_c);
  // Coarse steps take taller chunks of the streamed buffers only: K and V are the outer loop's
  // tiles, which a block holds while it streams the Q side (with S > 1 a chunk of several K/V tiles
  // would be read again at each of the block's tiles in it).
  cq *= coarse;
  enum : int32_t { kQ, kK, kV, kO, kL, kOAcc, kRowSum, kRowMax, kDO, kAcc, kDQ, kDK, kDV };
  SimTrace tr;
  tr.buffers = {{"Q", qh, nq, d * e, cq},    {"K", kh, nkmax, d * e, ck},
                {"V", kh, nkmax, d * e, ck}, {"O", qh, nq, d * e, cq},
                {"L", qh, nq, 4, cq},        {"O (fp32)", qh, nq, 4 * d, cq},
                {"l", qh, nq, 4, cq},        {"m", qh, nq, 4, cq},
                {"dO", qh, nq, d * e, cq},   {"dQ accumulator", qh, nq, 4 * d, cq},
                {"dQ", qh, nq, d * e, cq},   {"dK", kh, nkmax, d * e, ck},
                {"dV", kh, nkmax, d * e, ck}};
  const auto bufs = std::make_shared<const std::vector<SimBuffer>>(tr.buffers);
  const int64_t k = coarse;

  // A block's iterations (j, i), walked by a cursor per block: step s continues where s − 1 ended.
  struct Cursor {
    int64_t j = 0, i = 0, done = 0;
    bool started = false;
  };
  struct Block {
    int64_t h, b, z, qhead, khead, nk;
  };
  auto block_of = [=](int64_t blk) {
    Block w{};
    w.h = blk % heads, w.b = (blk / heads) % batch, w.z = blk / heads / batch;
    w.qhead = w.b * heads + w.h, w.khead = w.b * kvh + w.h / group;
    w.nk = std::min((*lens)[size_t(w.b)], nkmax);
    return w;
  };

  if (fwd) {
    const ModelTiles t = *m.fwd_tiles;
    const int64_t br = t.block_r, bc = t.block_c, mb = ceil_div(nq, br), splits = t.splits;
    // The block's first Q tile at or after `from` (i ≡ z mod S), or mb.
    auto own_from = [=](int64_t z, int64_t from) {
      return std::min(from + ((z - from % splits) % splits + splits) % splits, mb);
    };
    auto i_first = [=](int64_t j) { return causal ? std::min(j * bc / br, mb) : int64_t(0); };
    auto per_j = [=](int64_t z, int64_t j) {  // the block's Q tiles for K/V tile j
      const int64_t f = own_from(z, i_first(j));
      return f >= mb ? int64_t(0) : (mb - 1 - f) / splits + 1;
    };
    auto iterations = [=](int64_t blk) {
      const Block w = block_of(blk);
      int64_t n = 0;
      for (int64_t j = 0; j < ceil_div(w.nk, bc); ++j) n += per_j(w.z, j);
      return n;
    };
    auto cursors = std::make_shared<std::vector<Cursor>>();
    SimKernel kf;
    kf.name = "forward";
    kf.blocks = heads * batch * splits;
    cursors->resize(size_t(kf.blocks));
    kf.blocks_per_sm = resident_blocks(t.warps * 32, c.fwd_smem, c.gpu, c.kernels.fwd);
    kf.steps = [=](int64_t blk) { return std::max<int64_t>(1, ceil_div(iterations(blk), k)); };
    kf.step = [=](int64_t blk, int64_t, std::vector<SimAccess>& out) {
      const Block w = block_of(blk);
      const int64_t n_blocks = ceil_div(w.nk, bc);
      if (n_blocks == 0) {  // no visible key: O = 0 and L = −∞ over the block's rows
        for (int64_t i = own_from(w.z, 0); i < mb; i += splits)
          for (int32_t buf : {kO, kL}) push_rows(out, *bufs, buf, w.qhead, i * br, (i + 1) * br, SimOp::Write);
        return;
      }
      // The step's iterations first, then their accesses buffer by buffer (a coarse step's
      // consecutive Q tiles share chunks).
      struct It {
        int64_t j, i;
        bool load_kv, final;
      };
      thread_local std::vector<It> its;  // reused: one step is called per block step
      its.clear();
      Cursor& cur = (*cursors)[size_t(blk)];
      for (int64_t n = 0; n < k && cur.j < n_blocks; ++n) {
        bool load = false;
        if (!cur.started) {  // the next K/V tile with a Q tile of this block
          while (cur.j < n_blocks && per_j(w.z, cur.j) == 0) ++cur.j;
          if (cur.j >= n_blocks) break;
          cur.i = own_from(w.z, i_first(cur.j)), cur.started = true, load = true;
        }
        const int64_t r0 = cur.i * br;
        const int64_t last_j = causal ? std::min(n_blocks - 1, (r0 + br - 1) / bc) : n_blocks - 1;
        its.push_back({cur.j, cur.i, load, cur.j == last_j});
        cur.i += splits;
        if (cur.i >= mb) ++cur.j, cur.started = false;
      }
      for (int32_t buf : {kK, kV})
        for (const It& it : its)
          if (it.load_kv) push_rows(out, *bufs, buf, w.khead, it.j * bc, std::min(w.nk, (it.j + 1) * bc), SimOp::Read);
      auto rows = [&](int32_t buf, SimOp op, auto&& which) {
        for (const It& it : its)
          if (which(it)) push_rows(out, *bufs, buf, w.qhead, it.i * br, (it.i + 1) * br, op);
      };
      rows(kQ, SimOp::Read, [](const It&) { return true; });
      for (int32_t buf : {kOAcc, kRowSum, kRowMax}) rows(buf, SimOp::Read, [](const It& it) { return it.j > 0; });
      for (int32_t buf : {kO, kL}) rows(buf, SimOp::Write, [](const It& it) { return it.final; });
      rows(kOAcc, SimOp::Write, [](const It& it) { return !it.final; });
      for (int32_t buf : {kRowSum, kRowMax}) rows(buf, SimOp::Write, [](const It&) { return true; });
    };
    tr.kernels.push_back(std::move(kf));
  }
  if (bwd) {
    const ModelTiles t = *m.bwd_tiles;
    const int64_t br = t.block_r, bc = t.block_c, mb = ceil_div(nq, br), splits = t.splits;
    const int64_t n_blocks = ceil_div(nkmax, bc);  // every K/V tile up to seqlen_k is loaded
    tr.kernels.push_back(
        streaming_kernel("dQ accumulator memset", false, (*bufs)[kAcc].chunks(), {{kAcc, SimOp::Write}}));
    auto i_first = [=](int64_t j) { return causal ? std::min(j * bc / br, mb) : int64_t(0); };
    // Iterations of K/V tile j: its Q tiles, or one (K/V in, dK/dV out) when its Q loop is empty.
    auto per_j = [=](const Block& w, int64_t j) { return j * bc < w.nk ? std::max<int64_t>(1, mb - i_first(j)) : 1; };
    auto iterations = [=](int64_t blk) {
      const Block w = block_of(blk);
      int64_t n = 0;
      for (int64_t j = w.z; j < n_blocks; j += splits) n += per_j(w, j);
      return n;
    };
    auto cursors = std::make_shared<std::vector<Cursor>>();
    SimKernel kb;
    kb.name = "backward";
    kb.blocks = heads * batch * splits;
    cursors->resize(size_t(kb.blocks));
    kb.blocks_per_sm = resident_blocks(t.warps * 32, c.bwd_smem, c.gpu, c.kernels.bwd);
    kb.steps = [=](int64_t blk) { return std::max<int64_t>(1, ceil_div(iterations(blk), k)); };
    kb.step = [=](int64_t blk, int64_t, std::vector<SimAccess>& out) {
      const Block w = block_of(blk);
      struct It {
        int64_t j, i;  // i < 0: the K/V tile's Q loop is empty
        bool first, last;
      };
      thread_local std::vector<It> its;  // reused: one step is called per block step
      its.clear();
      Cursor& cur = (*cursors)[size_t(blk)];
      if (!cur.started && cur.done == 0) cur.j = w.z;
      for (int64_t n = 0; n < k && cur.j < n_blocks; ++n) {
        const bool visits = cur.j * bc < w.nk && i_first(cur.j) < mb;
        const bool first = !cur.started;
        if (first) cur.i = i_first(cur.j), cur.started = true;
        its.push_back({cur.j, visits ? cur.i : -1, first, !visits || cur.i + 1 >= mb});
        if (visits) ++cur.i;
        ++cur.done;
        if (its.back().last) cur.j += splits, cur.started = false;
      }
      for (int32_t buf : {kK, kV})
        for (const It& it : its)
          if (it.first) push_rows(out, *bufs, buf, w.khead, it.j * bc, (it.j + 1) * bc, SimOp::Read);
      for (auto [buf, op] :
           {std::pair{kQ, SimOp::Read}, std::pair{kDO, SimOp::Read}, std::pair{kO, SimOp::Read},
            std::pair{kRowSum, SimOp::Read}, std::pair{kRowMax, SimOp::Read}, std::pair{kAcc, SimOp::Red}})
        for (const It& it : its)
          if (it.i >= 0) push_rows(out, *bufs, buf, w.qhead, it.i * br, (it.i + 1) * br, op);
      for (int32_t buf : {kDK, kDV})
        for (const It& it : its)
          if (it.last) push_rows(out, *bufs, buf, w.khead, it.j * bc, (it.j + 1) * bc, SimOp::Write);
    };
    tr.kernels.push_back(std::move(kb));
    tr.kernels.push_back(
        streaming_kernel("convert", true, (*bufs)[kAcc].chunks(), {{kAcc, SimOp::Read}, {kDQ, SimOp::Write}}));
  }
  return tr;
}

}  // namespace

void register_flash1_model(ModelRegistry& r) { r.add(std::make_unique<Flash1Model>()); }

}  // namespace flashio::analysis

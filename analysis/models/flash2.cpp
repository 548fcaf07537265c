// flash2 (FlashAttention-2, kernels/flash2/): the exact SM↔L2 model of its forward and
// backward schedules (kernels/flash2/flash2_{fwd,bwd}_kernel.cuh and the wgmma kernels of
// kernels/flash2/hopper/, which follow the same schedule: analysis/README.md "What the flash2 model
// assumes of a kernel"), checked against analysis/schedule_sim.cpp; its DRAM waves; its tiles.
#include "analysis/models/flash2.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "analysis/models/model_parts.h"
#include "analysis/schedule_sim.h"
#include "kernels/common/mma_bwd_configs.h"
#include "kernels/flash2/flash2_fwd_configs.h"

namespace flashio::analysis {

using namespace parts;

namespace {

// The dQ convert / preprocess kernels' lanes per row (flash2_bwd_launch.cuh): a power of two ≥ d/8.
int64_t preprocess_lanes(int64_t d) {
  const int64_t chunks = d / 8;
  return chunks <= 4 ? 4 : chunks <= 8 ? 8 : chunks <= 16 ? 16 : 32;
}

// The forward's SimKernel::younger_rate: measured for one kernel in both its instantiations
// (kFlash2MmaSync128x64D128YoungerSlowdown, flash2.h), lock-step for every other.
double fwd_younger_rate(const ModelPoint& m, const ModelTiles& t) {
  const Problem& p = m.problem;
  const bool measured = t.block_r == 128 && t.block_c == 64 && t.warps == 4 && t.stages == 2 &&
                        t.smem_layout == SmemLayout::Padded && p.head_dim == 128 &&
                        (p.dtype == DType::F16 || p.dtype == DType::BF16) &&
                        !p.causal && p.dropout == 0 && m.mask.empty() && !p.packed();
  return measured ? 1.0 / (1.0 + kFlash2MmaSync128x64D128YoungerSlowdown) : 1.0;
}

}  // namespace

// flash2 forward (one block per Q tile i, head, batch): Q_i once, K_j/V_j for every visible
// key tile (rows < the sequence's key length; causal: tiles up to the Q tile's last row),
// O_i once (16-byte stores of whole rows), L_i once (`l_store_rows` rows per instruction: 8 for
// the t == 0 lanes of the mma.sync and wgmma accumulators). Tile loads as smem_row_deliveries counts them.
Traffic flash2_fwd_traffic(const Problem& p, const ModelTiles& t, const BlockMask& mask, KvTileLoads loads) {
  check_tiles(t, "flash2 forward");
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, row_bytes = d * e;
  const int64_t br = t.block_r, bc = t.block_c;
  const auto lens = key_lengths(p);
  Traffic out;
  int64_t first_token = 0;  // packed varlen: sequence b's first row in each head's T rows
  const int64_t total = p.packed() ? p.total_tokens() : 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t nk = std::min<int64_t>(lens[size_t(b)], p.nk());
    // A packed varlen sequence has its own query rows (its Q tiles past its length exit at once);
    // otherwise every sequence has nq (the padded twin's queries past a length are computed too).
    const int64_t nq_b = p.packed() ? nk : nq, tr = ceil_div(nq_b, br);
    const int64_t load_end = loads == KvTileLoads::CutAtKeyLength ? nk : ceil_div(p.nk(), bc) * bc;
    // K/V rows one Q tile loads: whole tiles below n_end, the last one cut at load_end.
    int64_t kv_rows = 0;  // as the crossbar counts them (smem_row_deliveries)
    if (mask.empty() && !p.causal) {
      kv_rows = tr * kv_xbar_rows(ceil_div(nk, bc), load_end, bc, t.smem_layout);
    } else {
      for (int64_t i = 0; i < tr; ++i) {
        const int64_t n_end = p.causal ? std::min(nk, i * br + br) : nk;
        const int64_t nb = ceil_div(n_end, bc);
        if (mask.empty()) {
          kv_rows += kv_xbar_rows(nb, load_end, bc, t.smem_layout);
        } else {
          for (int64_t j = 0; j < nb; ++j)
            if (mask.at(i, j)) kv_rows += smem_row_deliveries(std::min(bc, load_end - j * bc), t.smem_layout);
        }
      }
    }
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t head = p.packed() ? h * total + first_token : (b * p.heads + h) * nq;
      out.add("Q tiles", q_xbar_rows(nq_b, br, t.smem_layout) * row_bytes, 0);
      out.add("K,V tiles", 2 * kv_rows * row_bytes, 0);
      out.add("O", 0, nq_b * row_bytes);
      out.add(kLseTerm, 0, grouped_fp32_sectors(head, nq_b, t.l_store_rows) * kSector);
    }
    first_token += nk;
  }
  return out;
}

// flash2 backward, deterministic mode (Problem::deterministic; kernels/flash2/flash2_bwd_kernel.cuh):
// the dQ_i add of each visited (Q tile i, K/V tile j) is a plain fp32 read and write instead of
// atomics — ld.global.cg / st.global.cg (no L1), one 8-byte instruction each per row and 8
// columns (dq_sectors_per_row; two 4-byte ones before 9077f49), the same sectors as the atomics — plus the tile's
// turn: one acquire load of its semaphore and one release store, a sector each (the extra loads
// of a block that spins while an earlier K/V tile adds are timing-dependent: not modelled); the
// semaphores ([B, H, ⌈Nq/Br⌉] ints) are zeroed before the kernel.
static void add_deterministic_dq(Traffic& out, int64_t q_rows, int64_t visits, int64_t d, int plain_floats) {
  const int64_t bytes = q_rows * dq_sectors_per_row(d, plain_floats) * kSector;
  out.add("dQ read + write (deterministic)", bytes, bytes);
  out.add("dQ semaphores (deterministic)", visits * kSector, visits * kSector);
}

// flash3's dQ conversion of a head's whole-tile accumulator (ModelTiles::dq_whole_tiles): one
// thread per row pair (r, r + 8), r = 16w + g of an m16 block, whose first row is below Nq,
// reading both rows' 2·d floats (kernels/flash3/flash3_bwd_kernel.cuh).
static int64_t whole_tile_convert_reads(int64_t nq, int64_t d) {
  int64_t pairs = 0;
  for (int64_t row0 = 0; row0 < nq; row0 += 16)  // the tiles' m16 blocks (Br a multiple of 16)
    for (int64_t g = 0; g < 8; ++g) pairs += row0 + g < nq;
  return pairs * 2 * d * kF32;
}

// flash2 backward: preprocess D = rowsum(dO∘O); dQ accumulator zeroed; main kernel (one block
// per K/V tile j, K/V head, batch) loads K_j, V_j once and, for every query head of the group
// and every Q tile i it sees, Q_i, dO_i, L_i, D_i, and adds dS·K_j to dQ_i with atomics
// (dq_sectors_per_row: one vector instruction per sector on sm_90, the fp32 bytes; two scalar
// ones before, 2× the fp32 bytes); dK_j, dV_j
// written; convert dQ.
Traffic flash2_bwd_traffic(const Problem& p, const ModelTiles& t, const BlockMask& mask, DqWidth dq) {
  check_tiles(t, "flash2 backward");
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, nkmax = p.nk(), row_bytes = d * e;
  const int64_t br = t.block_r, bc = t.block_c, m_blocks = ceil_div(nq, br), tc = ceil_div(nkmax, bc);
  const int64_t group = p.heads / p.kvh(), vec_group = std::min<int64_t>(t.vector_load_rows, br);
  const int64_t rows_total = p.batch * p.heads * nq;
  const auto lens = key_lengths(p);
  Traffic out;

  const int64_t rows_per_warp = 32 / preprocess_lanes(d);
  out.add("preprocess: O, dO", 2 * rows_total * row_bytes, 0);
  out.add("preprocess: D", 0, ceil_div(rows_total, rows_per_warp) * kSector);
  // The dQ accumulator's (and the deterministic mode's semaphores') cudaMemsetAsync is no
  // kernel of the pass: the counters' per-kernel ranges do not see it (H100: l2_write = the
  // kernels' stores exactly, without it).

  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t nk = std::min<int64_t>(lens[size_t(b)], nkmax);
    for (int64_t hk = 0; hk < p.kvh(); ++hk) {
      out.add("K,V tiles", 2 * kv_xbar_rows(tc, nkmax, bc, t.smem_layout) * row_bytes, 0);
      out.add("dK, dV", 0, 2 * nkmax * row_bytes);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t head = (b * p.heads + hk * group + g) * nq;
        std::vector<int64_t> rows_from(size_t(m_blocks + 1), 0), vec_from(size_t(m_blocks + 1), 0);
        std::vector<int64_t> xrows_from(size_t(m_blocks + 1), 0);
        for (int64_t i = m_blocks - 1; i >= 0; --i) {
          const int64_t r = std::min(br, nq - i * br);
          rows_from[size_t(i)] = rows_from[size_t(i + 1)] + r;
          xrows_from[size_t(i)] = xrows_from[size_t(i + 1)] + smem_row_deliveries(r, t.smem_layout);
          vec_from[size_t(i)] = vec_from[size_t(i + 1)] + tile_vector_bytes(head, i * br, r, vec_group);
        }
        int64_t q_rows = 0, q_xrows = 0, vec_bytes = 0, visits = 0;
        for (int64_t j = 0; j < tc && j * bc < nk; ++j) {
          const int64_t m_first = p.causal ? std::min(j * bc / br, m_blocks) : 0;
          if (mask.empty()) {  // Q tiles m_first..m_blocks−1
            visits += m_blocks - m_first;
            q_rows += rows_from[size_t(m_first)];
            q_xrows += xrows_from[size_t(m_first)];
            vec_bytes += 2 * vec_from[size_t(m_first)];
            continue;
          }
          for (int64_t i = m_first; i < m_blocks; ++i) {
            if (!mask.at(i, j)) continue;
            ++visits;
            q_rows += rows_from[size_t(i)] - rows_from[size_t(i + 1)];
            q_xrows += xrows_from[size_t(i)] - xrows_from[size_t(i + 1)];
            vec_bytes += 2 * (vec_from[size_t(i)] - vec_from[size_t(i + 1)]);
          }
        }
        out.add("Q, dO tiles", 2 * q_xrows * row_bytes, 0);
        out.add("L, D", vec_bytes, 0);
        if (p.deterministic) {
          add_deterministic_dq(out, q_rows, visits, d, dq.plain);
        } else if (t.dq_whole_tiles) {
          out.add("dQ accumulate (bulk reductions)", 0, 0, visits * br * d * kF32);
        } else {
          out.add("dQ accumulate (atomic)", 0, 0, q_rows * dq_sectors_per_row(d, dq.atomic) * kSector);
        }
      }
    }
  }
  const int64_t convert_reads =
      t.dq_whole_tiles ? p.batch * p.heads * whole_tile_convert_reads(nq, d) : rows_total * d * kF32;
  out.add("dQ convert", convert_reads, rows_total * row_bytes);
  return out;
}

Traffic Flash2Model::sm_l2(const ModelPoint& m) const {
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  Traffic out;
  if (fwd) out += flash2_fwd_traffic(m.problem, need_tiles(m.fwd_tiles, m, "forward"), m.mask);
  if (bwd) out += flash2_bwd_traffic(m.problem, need_tiles(m.bwd_tiles, m, "backward"), m.bwd_mask, m.dq());
  return out;
}

Traffic Flash2Model::simulate_sm_l2(const ModelPoint& m) const {
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  Traffic out;
  if (fwd) out += simulate_flash2_fwd(m.problem, m.fwd_tiles.value(), m.mask);
  if (bwd) out += simulate_flash2_bwd(m.problem, m.bwd_tiles.value(), m.bwd_mask, m.dq());
  return out;
}

Traffic Flash2Model::compulsory_dram(const ModelPoint& m) const {
  Traffic out;
  if (m.pass != Pass::Bwd) add_forward_compulsory(m.problem, out);
  if (m.pass != Pass::Fwd) add_fused_backward_compulsory(m.problem, /*d_in_main_kernel=*/false, out);
  return out;
}

// The forward: one block per (Q tile, head, batch), K/V of the block's head streamed, a wave of
// resident blocks sharing them through L2 (dram_model.h). The backward: one block per (K/V
// tile, K/V head, batch), the K/V head's group's Q, dO, L, D and dQ streamed. Sparse: a wave's
// K/V need is that of the dense schedule (an upper bound).
int64_t Flash2Model::dram_beyond_compulsory(const ModelPoint& m, const DramContext& c, DramPrediction& out) const {
  const Problem& p = m.problem;
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, nkmax = p.nk();
  const GpuLimits& gpu = c.gpu;
  const StreamingKernels& kernels = c.kernels;
  const int64_t fwd_smem_bytes = c.fwd_smem, bwd_smem_bytes = c.bwd_smem;
  const double usable = c.usable;
  const auto lens = key_lengths(p);
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  int64_t extra = 0;
  if (fwd) {
    const ModelTiles t = m.fwd_tiles.value();
    const int64_t tr = ceil_div(nq, t.block_r), group = p.heads / p.kvh();
    out.blocks_per_sm = resident_blocks(t.warps * 32, fwd_smem_bytes, gpu, kernels.fwd);
    out.occupancy = occupancy_source(kernels.fwd, gpu);
    out.drift = forward_drift(kernels.fwd, gpu);
    out.wave_blocks = int64_t(out.blocks_per_sm) * gpu.sm_count;
    if (out.wave_blocks <= 0) throw std::invalid_argument("DRAM model: the forward kernel does not fit on an SM");
    // Block x: Q tile (causal: heaviest first), then head, then batch (fwd_block_order).
    const BlockOrder order = fwd_block_order(m, gpu, tr, p.heads * p.batch);
    auto unit = [&](int64_t blk) {
      const int64_t bh = order(blk).second, b = bh / p.heads, h = bh % p.heads;
      return b * p.kvh() + h / group;
    };
    auto need = [&](int64_t blk) {
      const auto [x, bh] = order(blk);
      const int64_t b = bh / p.heads;
      const int64_t i = p.causal ? tr - 1 - x : x;
      const int64_t nk = std::min<int64_t>(lens[size_t(b)], nkmax);
      const int64_t rows = p.causal ? std::min(nk, (i + 1) * t.block_r) : nk;
      return 2 * rows * d * e;
    };
    const int64_t fetched =
        stream_fetches(p.batch * p.heads * tr, out.wave_blocks, gpu.sm_count, usable, out.drift, unit, need, out);
    extra += fetched - 2 * p.kv_elements() * e;  // K, V once are in the compulsory bytes
    out.bwd_working = 0;                         // stream_fetches' maximum: the forward's here
    if (out.spills) out.note = "K+V of the heads a wave streams exceed the usable L2: re-fetched per wave";
    if (out.drift_bytes > 0) out.note += ", and per drifted layer of co-resident blocks";
    if (out.spills && kernels.fwd && out.drift == 0 && gpu.drift > 0)
      out.note += " (co-resident layers in lock-step: the kernel records no local memory)";
  }
  if (bwd) {
    const ModelTiles t = m.bwd_tiles.value();
    const int64_t tc = ceil_div(nkmax, t.block_c), group = p.heads / p.kvh();
    DramPrediction b_out;
    b_out.blocks_per_sm = resident_blocks(t.warps * 32, bwd_smem_bytes, gpu, kernels.bwd);
    b_out.wave_blocks = int64_t(b_out.blocks_per_sm) * gpu.sm_count;
    if (b_out.wave_blocks <= 0) throw std::invalid_argument("DRAM model: the backward kernel does not fit on an SM");
    // Streamed per K/V head: the group's Q, dO (e), L, D (fp32) and dQ accumulator (fp32, read and written back).
    const int64_t per_unit = group * nq * (2 * d * e + 8 + 2 * 4 * d);
    auto unit = [&](int64_t blk) { return blk / tc; };
    auto need = [&](int64_t) { return per_unit; };
    const int64_t fetched = stream_fetches(p.batch * p.kvh() * tc, b_out.wave_blocks, gpu.sm_count, usable,
                                           /*drift: not measured for the backward*/ 0, unit, need, b_out);
    extra += fetched - p.batch * p.kvh() * per_unit;
    if (!fwd)
      out.blocks_per_sm = b_out.blocks_per_sm, out.wave_blocks = b_out.wave_blocks,
      out.occupancy = occupancy_source(kernels.bwd, gpu);
    out.waves_per_head = std::max(out.waves_per_head, b_out.waves_per_head);
    out.spills = out.spills || b_out.spills;
    out.bwd_working = b_out.bwd_working;
    if (b_out.spills)
      out.note += (out.note.empty() ? "" : "; ") + std::string("backward: Q, dO, L, D, dQ re-fetched per wave");
    if (double(per_unit) > usable)
      out.out_of_scope = fmt::format(
          "one K/V head's backward streams Q, dO, L, D, dQ of {:.1f} MB, more than the usable L2 ({:.1f} MB), "
          "through every block of the head: how far those blocks drift apart is not modelled",
          double(per_unit) / 1e6, usable / 1e6);
  }
  return extra;
}

// The L2 simulation's trace (l2_sim.h) of the pass's launches, in stream order:
//   forward   one block per (Q tile, head, batch), x fastest; causal: x = 0 is the last Q tile
//             (heaviest first). Step 0 reads Q_i; each step reads the next K/V tiles, last to
//             first (rows past the sequence's key length not requested; block-sparse: the
//             mask's tiles); the last step writes O_i and L_i. Packed varlen: the grid of the
//             longest sequence; sequence b's tiles are rows cu[b] + … of its head's T rows (Q, O,
//             L of H heads, K, V of Hkv: the packed tensors, not B padded sequences), and a Q
//             tile past its sequence's length exits at once (one empty step).
//   backward  preprocess (O, dO read, D written, row by row), the dQ accumulator's
//             cudaMemsetAsync (not counted), main: one block per (K/V tile, K/V head, batch);
//             step 0 reads K_j, V_j; each step visits the next Q tile of the group's heads (Q,
//             dO, L, D read, dQ_i reduced into the accumulator); the last writes dK_j, dV_j;
//             convert (accumulator read, dQ written).
// One tile iteration (QKᵀ and PV, or the backward's five products) is one time unit.
// flash2's grid order, both passes: a plane's tiles consecutive.
static Flash2Model::BlockOrder plane_major_order(int64_t tiles) {
  return [tiles](int64_t blk) { return std::pair{blk % tiles, blk / tiles}; };
}

Flash2Model::BlockOrder Flash2Model::bwd_block_order(const ModelPoint&, const GpuLimits&, int64_t tiles,
                                                     int64_t) const {
  return plane_major_order(tiles);
}

Flash2Model::BlockOrder Flash2Model::fwd_block_order(const ModelPoint&, const GpuLimits&, int64_t tiles,
                                                     int64_t) const {
  return plane_major_order(tiles);
}

std::optional<SimTrace> Flash2Model::dram_trace(const ModelPoint& m, const DramContext& c, int coarse) const {
  const Problem& p = m.problem;
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, nkmax = p.nk();
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  const int64_t heads = p.heads, kvh = p.kvh(), group = heads / kvh, batch = p.batch;
  const bool causal = p.causal, packed = p.packed();
  require(!packed || !bwd, "flash2: a packed varlen problem has no backward kernel");
  const auto lens_i32 = key_lengths(p);
  const auto lens = std::make_shared<const std::vector<int64_t>>(lens_i32.begin(), lens_i32.end());
  // Where sequence b's rows start in its head's rows: packed varlen, the rows of the sequences
  // before it (Q, O [H, T, d], K, V [Hkv, T, d], L [H, T]: one head of T rows each); otherwise
  // every (batch, head) is a head of its own, its rows from 0.
  auto first = std::make_shared<std::vector<int64_t>>(size_t(batch), 0);
  for (int64_t b = 1; packed && b < batch; ++b) (*first)[size_t(b)] = (*first)[size_t(b - 1)] + (*lens)[size_t(b - 1)];
  const int64_t qh = packed ? heads : batch * heads, kh = packed ? kvh : batch * kvh;
  int64_t cq = 0, ck = 0;
  if (fwd) cq = gcd_rows(cq, need_tiles(m.fwd_tiles, m, "forward").block_r), ck = gcd_rows(ck, m.fwd_tiles->block_c);
  if (bwd) cq = gcd_rows(cq, need_tiles(m.bwd_tiles, m, "backward").block_r), ck = gcd_rows(ck, m.bwd_tiles->block_c);
  cq *= coarse, ck *= coarse;
  enum : int32_t { kQ, kK, kV, kO, kL, kDO, kD, kAcc, kDQ, kDK, kDV };
  // Whole-tile dQ (ModelTiles::dq_whole_tiles): the accumulator's heads have ⌈Nq/Br⌉·Br rows.
  const int64_t dq_acc_rows =
      bwd && m.bwd_tiles->dq_whole_tiles ? ceil_div(nq, m.bwd_tiles->block_r) * m.bwd_tiles->block_r : nq;
  SimTrace tr;
  tr.buffers = {{"Q", qh, nq, d * e, cq},    {"K", kh, nkmax, d * e, ck},
                {"V", kh, nkmax, d * e, ck}, {"O", qh, nq, d * e, cq},
                {"L", qh, nq, 4, cq},        {"dO", qh, nq, d * e, cq},
                {"D", qh, nq, 4, cq},        {"dQ accumulator", qh, dq_acc_rows, 4 * d, cq},
                {"dQ", qh, nq, d * e, cq},   {"dK", kh, nkmax, d * e, ck},
                {"dV", kh, nkmax, d * e, ck}};
  if (packed) {  // one head of T rows per tensor head, a segment (its own chunks) per sequence
    const std::vector<int64_t> seqs(lens->begin(), lens->end());
    tr.buffers[kQ] = segmented_buffer("Q", qh, seqs, d * e, cq);
    tr.buffers[kK] = segmented_buffer("K", kh, seqs, d * e, ck);
    tr.buffers[kV] = segmented_buffer("V", kh, seqs, d * e, ck);
    tr.buffers[kO] = segmented_buffer("O", qh, seqs, d * e, cq);
    tr.buffers[kL] = segmented_buffer("L", qh, seqs, 4, cq);
  }
  const auto bufs = std::make_shared<const std::vector<SimBuffer>>(tr.buffers);
  const int64_t k = coarse;

  if (fwd) {
    const ModelTiles t = *m.fwd_tiles;
    const int64_t br = t.block_r, bc = t.block_c, tq = ceil_div(nq, br);
    // Block-sparse: per Q tile, the mask's K/V tiles, last to first.
    auto visible = std::make_shared<std::vector<std::vector<int64_t>>>();
    if (!m.mask.empty())
      for (int64_t i = 0; i < tq; ++i) {
        visible->emplace_back();
        for (int64_t j = m.mask.cols - 1; j >= 0; --j)
          if (m.mask.at(i, j)) visible->back().push_back(j);
      }
    struct Where {
      int64_t i, qhead, khead, row0, nq, nk, nb, skip, count;
    };
    const BlockOrder order = fwd_block_order(m, c.gpu, tq, heads * batch);
    auto where = [=](int64_t blk) {
      Where w{};
      const auto [x, plane] = order(blk);
      const int64_t h = plane % heads, b = plane / heads;
      w.i = causal ? tq - 1 - x : x;
      w.qhead = packed ? h : b * heads + h, w.khead = packed ? h / group : b * kvh + h / group;
      w.row0 = (*first)[size_t(b)];
      w.nk = std::min((*lens)[size_t(b)], nkmax);
      // A packed sequence's queries are its keys; a Q tile past them exits at once (no load).
      w.nq = packed ? w.nk : nq;
      if (w.i * br >= w.nq) return w;
      const int64_t n_end = causal ? std::min(w.nk, (w.i + 1) * br) : w.nk;
      w.nb = n_end > 0 ? ceil_div(n_end, bc) : 0;
      if (visible->empty()) {
        w.count = w.nb;
      } else {  // the list is descending: tiles at or past nb come first
        const auto& v = (*visible)[size_t(w.i)];
        w.skip = std::partition_point(v.begin(), v.end(), [&](int64_t j) { return j >= w.nb; }) - v.begin();
        w.count = int64_t(v.size()) - w.skip;
      }
      return w;
    };
    SimKernel kf;
    kf.name = "forward";
    kf.blocks = tq * heads * batch;
    kf.blocks_per_sm = resident_blocks(t.warps * 32, c.fwd_smem, c.gpu, c.kernels.fwd);
    kf.younger_rate = fwd_younger_rate(m, t);
    kf.steps = [=](int64_t blk) { return std::max<int64_t>(1, ceil_div(where(blk).count, k)); };
    kf.step = [=](int64_t blk, int64_t s, std::vector<SimAccess>& out) {
      const Where w = where(blk);
      const int64_t steps = std::max<int64_t>(1, ceil_div(w.count, k));
      if (w.i * br >= w.nq) return;  // past a packed sequence's end
      const int64_t q0 = w.row0 + w.i * br, q1 = w.row0 + std::min(w.nq, (w.i + 1) * br);
      if (s == 0) push_rows(out, *bufs, kQ, w.qhead, q0, q1, SimOp::Read);
      for (int32_t buf : {kK, kV})
        for (int64_t q = s * k; q < std::min(w.count, (s + 1) * k); ++q) {
          const int64_t j = visible->empty() ? w.nb - 1 - q : (*visible)[size_t(w.i)][size_t(w.skip + q)];
          push_rows(out, *bufs, buf, w.khead, w.row0 + j * bc, w.row0 + std::min(w.nk, (j + 1) * bc), SimOp::Read);
        }
      if (s == steps - 1) {
        push_rows(out, *bufs, kO, w.qhead, q0, q1, SimOp::Write);
        push_rows(out, *bufs, kL, w.qhead, q0, q1, SimOp::Write);
      }
    };
    tr.kernels.push_back(std::move(kf));
  }
  if (bwd) {
    const ModelTiles t = *m.bwd_tiles;
    const int64_t br = t.block_r, bc = t.block_c, mb = ceil_div(nq, br), tc = ceil_div(nkmax, bc);
    const int64_t q_chunks = (*bufs)[kO].chunks();
    tr.kernels.push_back(
        streaming_kernel("preprocess", true, q_chunks, {{kO, SimOp::Read}, {kDO, SimOp::Read}, {kD, SimOp::Write}}));
    tr.kernels.push_back(streaming_kernel("dQ accumulator memset", false, q_chunks, {{kAcc, SimOp::Write}}));
    // Block-sparse: per K/V tile, the mask's Q tiles, ascending.
    auto visible = std::make_shared<std::vector<std::vector<int64_t>>>();
    if (!m.bwd_mask.empty())
      for (int64_t j = 0; j < tc; ++j) {
        visible->emplace_back();
        for (int64_t i = 0; i < std::min(mb, m.bwd_mask.rows); ++i)
          if (m.bwd_mask.at(i, j)) visible->back().push_back(i);
      }
    struct Where {
      int64_t j, khead, qhead0, n0, m_first, skip, per_head, count;
    };
    const BlockOrder order = bwd_block_order(m, c.gpu, tc, kvh * batch);
    auto where = [=](int64_t blk) {
      Where w{};
      const auto [tile, plane] = order(blk);
      w.j = tile;
      const int64_t hk = plane % kvh, b = plane / kvh;
      w.khead = b * kvh + hk, w.qhead0 = b * heads + hk * group;
      w.n0 = w.j * bc;
      const int64_t nk = std::min((*lens)[size_t(b)], nkmax);
      w.m_first = causal ? std::min(w.n0 / br, mb) : 0;
      if (w.n0 >= nk) {
        w.per_head = 0;
      } else if (visible->empty()) {
        w.per_head = mb - w.m_first;
      } else {
        const auto& v = (*visible)[size_t(w.j)];
        w.skip = std::partition_point(v.begin(), v.end(), [&](int64_t i) { return i < w.m_first; }) - v.begin();
        w.per_head = int64_t(v.size()) - w.skip;
      }
      w.count = group * w.per_head;
      return w;
    };
    SimKernel kb;
    kb.name = "backward";
    kb.blocks = tc * kvh * batch;
    kb.blocks_per_sm = resident_blocks(t.warps * 32, c.bwd_smem, c.gpu, c.kernels.bwd);
    kb.steps = [=](int64_t blk) { return std::max<int64_t>(1, ceil_div(where(blk).count, k)); };
    kb.step = [=](int64_t blk, int64_t s, std::vector<SimAccess>& out) {
      const Where w = where(blk);
      const int64_t steps = std::max<int64_t>(1, ceil_div(w.count, k));
      if (s == 0)
        for (int32_t buf : {kK, kV}) push_rows(out, *bufs, buf, w.khead, w.n0, w.n0 + bc, SimOp::Read);
      for (auto [buf, op] : {std::pair{kQ, SimOp::Read}, std::pair{kDO, SimOp::Read}, std::pair{kL, SimOp::Read},
                             std::pair{kD, SimOp::Read}, std::pair{kAcc, SimOp::Red}})
        for (int64_t q = s * k; q < std::min(w.count, (s + 1) * k); ++q) {
          const int64_t g = q / w.per_head, x = q % w.per_head;
          const int64_t i = visible->empty() ? w.m_first + x : (*visible)[size_t(w.j)][size_t(w.skip + x)];
          push_rows(out, *bufs, buf, w.qhead0 + g, i * br, (i + 1) * br, op);
        }
      if (s == steps - 1)
        for (int32_t buf : {kDK, kDV}) push_rows(out, *bufs, buf, w.khead, w.n0, w.n0 + bc, SimOp::Write);
    };
    tr.kernels.push_back(std::move(kb));
    tr.kernels.push_back(streaming_kernel("convert", true, q_chunks, {{kAcc, SimOp::Read}, {kDQ, SimOp::Write}}));
  }
  return tr;
}

std::string Flash2Model::asymptotic_formula(const ModelPoint& m) const {
  const std::string s = m.mask.empty() ? "" : "s·";
  if (m.pass == Pass::Fwd) return "N·d + " + s + "N²·d/Br  (FA-2: K,V read Tr times)";
  return IoModel::asymptotic_formula(m);
}

namespace {

template <int D>
PredictedTiles flash2_tiles(int64_t optin) {
  PredictedTiles out;
  if (const auto f = kernels::flash2_fwd_pick<D>(optin)) {
    out.fwd = ModelTiles{*f};
    out.fwd_smem = kernels::flash2_fwd_smem_bytes(D, *f);
  }
  const TileShape b = kernels::mma_bwd_pick<D>(optin);
  out.bwd = ModelTiles{b};
  out.bwd_smem = kernels::mma_bwd_smem_bytes(D, b);
  return out;
}

}  // namespace

// The mma.sync tiles the method runs unforced: the first forward tile that fits
// (flash2_fwd_pick), the backward's mma_bwd_pick.
PredictedTiles Flash2Model::predict_tiles(const Problem& p, int64_t optin) const {
  switch (p.head_dim) {
#define FLASH2_PREDICT_CASE(D) \
  case D:                      \
    return flash2_tiles<D>(optin);
    FLASH2_HEAD_DIMS(FLASH2_PREDICT_CASE)
#undef FLASH2_PREDICT_CASE
    default: {
      PredictedTiles none;
      none.bwd_kernel = false;
      return none;
    }
  }
}

void register_flash2_model(ModelRegistry& r) { r.add(std::make_unique<Flash2Model>()); }

}  // namespace flashio::analysis

// The two-level (L2 ↔ DRAM) model; see dram_model.h.
#include "analysis/dram_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace flashio::analysis {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t term_bytes(const Traffic& t, const std::string& name) {
  for (const auto& x : t.terms)
    if (x.name == name) return x.read + x.write + x.red;
  return 0;
}

// Walks the grid in launch order (x fastest) wave by wave. `unit_of(block)` names the operand
// a block streams (a head, or a K/V head) and `bytes_of(block)` how much of it the block needs;
// a unit is fetched from DRAM in a wave when the wave is its first or the wave's working set
// spills out of the usable L2. Returns the bytes fetched and fills the prediction's wave data.
template <typename UnitOf, typename BytesOf>
int64_t stream_fetches(int64_t blocks, int64_t wave, double usable, UnitOf unit_of, BytesOf bytes_of,
                       DramPrediction& out) {
  std::set<int64_t> seen;
  std::map<int64_t, int64_t> waves_touching;
  int64_t fetched = 0;
  for (int64_t w0 = 0; w0 < blocks; w0 += wave) {
    std::map<int64_t, int64_t> need;  // unit → bytes this wave needs of it
    for (int64_t blk = w0; blk < std::min(blocks, w0 + wave); ++blk) {
      int64_t& n = need[unit_of(blk)];
      n = std::max(n, bytes_of(blk));
    }
    int64_t working = 0;
    for (const auto& [u, n] : need) working += n;
    const bool spill = double(working) > usable;
    out.spills = out.spills || spill;
    for (const auto& [u, n] : need) {
      ++waves_touching[u];
      if (spill || seen.insert(u).second) fetched += n;
      seen.insert(u);
    }
  }
  double sum = 0;
  for (const auto& [u, n] : waves_touching) sum += double(n);
  out.waves_per_head = waves_touching.empty() ? 0 : sum / double(waves_touching.size());
  return fetched;
}

}  // namespace

nlohmann::json DramPrediction::to_json() const {
  return {{"compulsory", compulsory},
          {"predicted", predicted},
          {"blocks_per_sm", blocks_per_sm},
          {"wave_blocks", wave_blocks},
          {"waves_per_head", waves_per_head},
          {"spills", spills},
          {"note", note}};
}

int blocks_per_sm(int threads, int64_t smem_bytes, const GpuLimits& gpu) {
  if (gpu.blocks_per_sm_override > 0) return gpu.blocks_per_sm_override;
  constexpr int kMaxBlocksPerSm = 32;
  constexpr int64_t kReservedSmemPerBlock = 1024;
  int n = kMaxBlocksPerSm;
  if (threads > 0) n = std::min(n, gpu.max_threads_per_sm / threads);
  if (smem_bytes > 0) n = std::min<int64_t>(n, gpu.smem_per_sm_bytes / (smem_bytes + kReservedSmemPerBlock));
  return std::max(n, 0);
}

DramPrediction predict_dram(const ModelPoint& m, int64_t fwd_smem_bytes, int64_t bwd_smem_bytes, const GpuLimits& gpu,
                            double l2_usable_fraction) {
  if (gpu.sm_count <= 0 || gpu.l2_bytes <= 0)
    throw std::invalid_argument("DRAM model: the result file's device block lacks sm_count or l2_bytes");
  const Problem& p = m.problem;
  const int64_t e = bytes_of(p.dtype), d = p.head_dim, nq = p.seqlen_q, nkmax = p.nk();
  const double usable = l2_usable_fraction * double(gpu.l2_bytes);
  const auto lens = key_lengths(p);
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  DramPrediction out;
  out.compulsory = compulsory_dram(m).total();
  int64_t extra = 0;

  if (m.method == "flash2" || m.method == "blocksparse_flash") {  // sparse: a wave's K/V need is an upper bound
    if (fwd) {
      const KernelTiles t = m.fwd_tiles.value();
      const int64_t tr = ceil_div(nq, t.block_r), group = p.heads / p.kvh();
      out.blocks_per_sm = blocks_per_sm(t.warps * 32, fwd_smem_bytes, gpu);
      out.wave_blocks = int64_t(out.blocks_per_sm) * gpu.sm_count;
      if (out.wave_blocks <= 0) throw std::invalid_argument("DRAM model: the forward kernel does not fit on an SM");
      // Block x: Q tile (causal: heaviest first), then head, then batch.
      auto unit = [&](int64_t blk) {
        const int64_t bh = blk / tr, b = bh / p.heads, h = bh % p.heads;
        return b * p.kvh() + h / group;
      };
      auto need = [&](int64_t blk) {
        const int64_t x = blk % tr, b = blk / tr / p.heads;
        const int64_t i = p.causal ? tr - 1 - x : x;
        const int64_t nk = std::min<int64_t>(lens[size_t(b)], nkmax);
        const int64_t rows = p.causal ? std::min(nk, (i + 1) * t.block_r) : nk;
        return 2 * rows * d * e;
      };
      const int64_t fetched = stream_fetches(p.batch * p.heads * tr, out.wave_blocks, usable, unit, need, out);
      extra += fetched - 2 * p.kv_elements() * e;  // K, V once are in the compulsory bytes
      if (out.spills) out.note = "K+V of the heads a wave streams exceed the usable L2: re-fetched per wave";
    }
    if (bwd) {
      const KernelTiles t = m.bwd_tiles.value();
      const int64_t tc = ceil_div(nkmax, t.block_c), group = p.heads / p.kvh();
      DramPrediction b_out;
      b_out.blocks_per_sm = blocks_per_sm(t.warps * 32, bwd_smem_bytes, gpu);
      b_out.wave_blocks = int64_t(b_out.blocks_per_sm) * gpu.sm_count;
      if (b_out.wave_blocks <= 0) throw std::invalid_argument("DRAM model: the backward kernel does not fit on an SM");
      // Streamed per K/V head: the group's Q, dO (e), L, D (fp32) and dQ accumulator (fp32, read and written back).
      const int64_t per_unit = group * nq * (2 * d * e + 8 + 2 * 4 * d);
      auto unit = [&](int64_t blk) { return blk / tc; };
      auto need = [&](int64_t) { return per_unit; };
      const int64_t fetched = stream_fetches(p.batch * p.kvh() * tc, b_out.wave_blocks, usable, unit, need, b_out);
      extra += fetched - p.batch * p.kvh() * per_unit;
      if (!fwd) out.blocks_per_sm = b_out.blocks_per_sm, out.wave_blocks = b_out.wave_blocks;
      out.waves_per_head = std::max(out.waves_per_head, b_out.waves_per_head);
      out.spills = out.spills || b_out.spills;
      if (b_out.spills)
        out.note += (out.note.empty() ? "" : "; ") + std::string("backward: Q, dO, L, D, dQ re-fetched per wave");
    }
  } else if (m.method == "flash1") {
    // One block per head: a block re-reads its head's Q and fp32 O, ℓ, m (forward) or Q, dO, O,
    // ℓ, m and fp32 dQ (backward) once per K/V tile. They stay in L2 while the resident heads'
    // sets fit; then every re-read is a DRAM read.
    const Traffic sm = predict_sm_l2(m);
    const int64_t heads = p.batch * p.heads;
    if (fwd) {
      const KernelTiles t = m.fwd_tiles.value();
      out.blocks_per_sm = blocks_per_sm(t.warps * 32, fwd_smem_bytes, gpu);
      out.wave_blocks = int64_t(out.blocks_per_sm) * gpu.sm_count;
      const int64_t per_head = nq * (d * e + 4 * d + 8);
      out.spills = double(std::min(heads, out.wave_blocks) * per_head) > usable;
      out.waves_per_head = 1;
      if (out.spills) {
        extra += term_bytes(sm, "Q tiles") - p.q_elements() * e + term_bytes(sm, "O, l, m re-read") +
                 term_bytes(sm, "O, l, m write-back");
        out.note = "resident heads' Q, O, l, m exceed the usable L2: every K/V tile re-reads them from DRAM";
      } else {
        extra += heads * nq * d * 4;  // the fp32 O accumulator, written back once
      }
    }
    if (bwd) {
      const KernelTiles t = m.bwd_tiles.value();
      const int bps = blocks_per_sm(t.warps * 32, bwd_smem_bytes, gpu);
      const int64_t per_head = nq * (3 * d * e + 8 + 4 * d);
      const bool spill = double(std::min(heads, int64_t(bps) * gpu.sm_count) * per_head) > usable;
      if (!fwd) out.blocks_per_sm = bps, out.wave_blocks = int64_t(bps) * gpu.sm_count;
      out.spills = out.spills || spill;
      if (spill) {
        extra += term_bytes(sm, "Q, dO, O tiles") - 3 * p.q_elements() * e + term_bytes(sm, "l, m") +
                 term_bytes(sm, "dQ read-modify-write");
        out.note +=
            (out.note.empty() ? "" : "; ") + std::string("backward: Q, dO, O, dQ re-read from DRAM per K/V tile");
      } else {
        extra += 2 * heads * nq * d * 4;  // dQ accumulator written back and read by the convert kernel
      }
    }
  } else if (m.method == "standard") {
    out.note = "compulsory matrices only (S, P and dP, dS written and read once); cuBLAS tile re-reads not modelled";
  } else {
    throw std::invalid_argument(fmt::format("{}: no DRAM model", m.method));
  }
  out.predicted = out.compulsory + extra;
  return out;
}

}  // namespace flashio::analysis

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

// The fp32 dQ bytes the backward's visits add (rows × d × 4 per visit), whatever the width of
// the instructions that add them: the read-modify-write reads each sector once (a 4-byte pair's
// second load hits L1); an atomic sector carries `dq.atomic` × 16 bytes.
int64_t dq_visit_bytes(const Traffic& sm, DqWidth dq) {
  int64_t bytes = 0;
  for (const auto& x : sm.terms) {
    if (x.name == "dQ read-modify-write") bytes += x.read;
    if (x.name == "dQ accumulate (atomic)") bytes += x.red * dq.atomic / 2;
  }
  return bytes;
}

// Walks the grid in launch order (x fastest) wave by wave. `unit_of(block)` names the operand
// a block streams (a head, or a K/V head) and `bytes_of(block)` how much of it the block needs;
// a unit is fetched from DRAM in a wave when the wave is its first or the wave's working set
// spills out of the usable L2, and again by each further layer of co-resident blocks holding
// it once the layers drift apart (dram_model.h). Returns the bytes fetched and fills the
// prediction's wave data.
template <typename UnitOf, typename BytesOf>
int64_t stream_fetches(int64_t blocks, int64_t wave, int64_t sms, double usable, double drift, UnitOf unit_of,
                       BytesOf bytes_of, DramPrediction& out) {
  std::set<int64_t> seen;
  std::map<int64_t, int64_t> waves_touching;
  const double drift_point = drift > 0 ? usable / (2 * drift) : -1;  // bytes a block streams before layers part
  int64_t fetched = 0;
  for (int64_t w0 = 0; w0 < blocks; w0 += wave) {
    std::map<int64_t, int64_t> need;              // unit → bytes this wave needs of it
    std::map<int64_t, std::set<int64_t>> layers;  // unit → layers of co-resident blocks holding it
    for (int64_t blk = w0; blk < std::min(blocks, w0 + wave); ++blk) {
      const int64_t u = unit_of(blk);
      int64_t& n = need[u];
      n = std::max(n, bytes_of(blk));
      layers[u].insert((blk - w0) / sms);
    }
    int64_t working = 0;
    for (const auto& [u, n] : need) working += n;
    out.bwd_working = std::max(out.bwd_working, working);  // the caller keeps it for the backward only
    const bool spill = double(working) > usable;
    out.spills = out.spills || spill;
    for (const auto& [u, n] : need) {
      ++waves_touching[u];
      if (spill || seen.insert(u).second) fetched += n;
      seen.insert(u);
      if (spill && drift_point >= 0 && double(n) > drift_point && layers[u].size() > 1) {
        const double per_layer = w0 == 0 ? double(n) - drift_point : double(n);
        const int64_t again = int64_t(double(layers[u].size() - 1) * per_layer);
        fetched += again;
        out.drift_bytes += again;
      }
    }
  }
  double sum = 0;
  for (const auto& [u, n] : waves_touching) sum += double(n);
  out.waves_per_head = waves_touching.empty() ? 0 : sum / double(waves_touching.size());
  return fetched;
}

// Every buffer the pass touches, once (inputs, outputs, workspace).
int64_t pass_footprint(const ModelPoint& m) {
  const Problem& p = m.problem;
  const int64_t e = bytes_of(p.dtype), q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t rows = p.batch * p.heads * p.seqlen_q, f32 = 4;
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  int64_t bytes = q + 2 * kv + q + rows * f32;                                         // Q, K, V, O, L
  if (fwd && m.method == "flash1") bytes += rows * p.head_dim * f32 + 2 * rows * f32;  // fp32 O, l, m
  if (bwd) bytes += q + rows * f32 + rows * p.head_dim * f32 + q + 2 * kv;  // dO, D, dQ accumulator, dQ, dK, dV
  return bytes;
}

// Inputs the pass reads that none of its kernels wrote.
int64_t pass_inputs(const ModelPoint& m) {
  const Problem& p = m.problem;
  const int64_t e = bytes_of(p.dtype), q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t rows = p.batch * p.heads * p.seqlen_q;
  if (m.pass == Pass::Fwd) return q + 2 * kv;
  if (m.pass == Pass::FwdBwd) return q + 2 * kv + q;  // + dO
  return q + 2 * kv + 2 * q + rows * 4;               // Q, K, V, O, dO, L
}

}  // namespace

nlohmann::json DramPrediction::to_json() const {
  return {{"compulsory", compulsory},
          {"predicted", predicted},
          {"blocks_per_sm", blocks_per_sm},
          {"wave_blocks", wave_blocks},
          {"waves_per_head", waves_per_head},
          {"spills", spills},
          {"resident", resident},
          {"drift_bytes", drift_bytes},
          {"footprint", footprint},
          {"bwd_working", bwd_working},
          {"out_of_scope", out_of_scope},
          {"note", note},
          {"occupancy", occupancy},
          {"drift", drift}};
}

int blocks_per_sm(int threads, int64_t smem_bytes, const GpuLimits& gpu, int registers_per_thread) {
  if (gpu.blocks_per_sm_override > 0) return gpu.blocks_per_sm_override;
  constexpr int kMaxBlocksPerSm = 32;
  constexpr int64_t kReservedSmemPerBlock = 1024;
  int n = kMaxBlocksPerSm;
  if (threads > 0) n = std::min(n, gpu.max_threads_per_sm / threads);
  if (smem_bytes > 0) n = std::min<int64_t>(n, gpu.smem_per_sm_bytes / (smem_bytes + kReservedSmemPerBlock));
  if (registers_per_thread > 0 && threads > 0) {
    const int per_warp = ceil_div(registers_per_thread * 32, kRegisterAllocationUnit) * kRegisterAllocationUnit;
    const int warps = ceil_div(threads, 32);
    n = std::min(n, (kRegistersPerSm / per_warp) / warps);
  }
  return std::max(n, 0);
}

std::string occupancy_source(const std::optional<KernelResources>& r, const GpuLimits& gpu) {
  if (gpu.blocks_per_sm_override > 0) return "--blocks-per-sm";
  if (r && r->max_blocks_per_sm > 0) return "the occupancy API (recorded)";
  if (r && r->registers_per_thread > 0) return "registers and shared memory (recorded)";
  return "shared memory and threads (registers not recorded)";
}

namespace {

// Resident blocks per SM of a streaming kernel: the recorded occupancy where the record has it,
// else its registers, shared memory and threads.
int resident_blocks(int threads, int64_t smem_bytes, const GpuLimits& gpu, const std::optional<KernelResources>& r) {
  if (gpu.blocks_per_sm_override > 0) return gpu.blocks_per_sm_override;
  if (r && r->max_blocks_per_sm > 0) return r->max_blocks_per_sm;
  return blocks_per_sm(threads, smem_bytes, gpu, r ? r->registers_per_thread : 0);
}

// The co-resident drift applied to a forward kernel (dram_model.h): the fitted value where the
// record says nothing about the kernel (the files the fit came from), and where it says the
// kernel uses local memory (the 128 × 64, d 128 kernel the fit describes: 255 registers and an
// 8-byte stack frame); lock-step layers (0) where it says it uses none (the 128 × 32 kernel:
// 240 registers, no local memory, measured in lock-step to 256k). A hypothesis from two
// kernels (analysis/README.md), tested by the runs listed there.
double forward_drift(const std::optional<KernelResources>& r, const GpuLimits& gpu) {
  if (!r || gpu.drift_all_kernels) return gpu.drift;
  return r->local_bytes_per_thread > 0 ? gpu.drift : 0.0;
}

}  // namespace

DramPrediction predict_dram(const ModelPoint& m, int64_t fwd_smem_bytes, int64_t bwd_smem_bytes, const GpuLimits& gpu,
                            double l2_usable_fraction, const StreamingKernels& kernels) {
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
      out.blocks_per_sm = resident_blocks(t.warps * 32, fwd_smem_bytes, gpu, kernels.fwd);
      out.occupancy = occupancy_source(kernels.fwd, gpu);
      out.drift = forward_drift(kernels.fwd, gpu);
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
      const KernelTiles t = m.bwd_tiles.value();
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
  } else if (m.method == "flash1") {
    // S blocks per head (tiles.splits): forward block z holds its own Q tiles' Q and fp32 O, ℓ, m
    // (1/S of the head's) and re-reads them once per K/V tile; backward blocks each stream the
    // head's Q, dO, O, ℓ, m and fp32 dQ once per K/V tile they hold, the S blocks of a head
    // sharing them through L2 (same order, near lock-step). They stay in L2 while the resident
    // blocks' sets fit; then every re-read is a DRAM read. K/V: the S blocks of a head read the
    // same tiles close together, so L2 serves all but the first.
    const Traffic sm = predict_sm_l2(m);
    const int64_t heads = p.batch * p.heads;
    if (fwd) {
      const KernelTiles t = m.fwd_tiles.value();
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
      const KernelTiles t = m.bwd_tiles.value();
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
        out.note +=
            (out.note.empty() ? "" : "; ") + std::string("backward: Q, dO, O, dQ re-read from DRAM per K/V tile");
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
  } else if (m.method == "standard") {
    out.note = "compulsory matrices only (S, P and dP, dS written and read once); cuBLAS tile re-reads not modelled";
  } else {
    throw std::invalid_argument(fmt::format("{}: no DRAM model", m.method));
  }
  out.predicted = out.compulsory + extra;
  out.footprint = pass_footprint(m);
  if (m.method != "standard" && out.footprint <= gpu.l2_bytes) {
    out.resident = true;
    out.spills = false;
    out.drift_bytes = 0;
    out.predicted = pass_inputs(m);
    out.note = "the pass's buffers fit in L2: inputs read once, outputs stay dirty in L2 past its kernels";
    out.out_of_scope.clear();
    if (double(out.footprint) > usable)
      out.out_of_scope = fmt::format(
          "the pass's buffers ({:.1f} MB) lie between the usable L2 ({:.1f} MB) and the whole L2 ({:.1f} MB): "
          "partial residency is not modelled",
          double(out.footprint) / 1e6, usable / 1e6, double(gpu.l2_bytes) / 1e6);
  }
  return out;
}

}  // namespace flashio::analysis

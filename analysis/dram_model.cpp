// The two-level (L2 ↔ DRAM) model; see dram_model.h.
#include "analysis/dram_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "analysis/l2_sim.h"
#include "analysis/models/model.h"
#include "bench/core/smem.h"

namespace flashio::analysis {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Every buffer the pass touches, once (inputs, outputs, workspace).
int64_t pass_footprint(const ModelPoint& m, const IoModel& model) {
  const Problem& p = m.problem;
  const int64_t e = bytes_of(p.dtype), q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t rows = p.lse_elements(), f32 = 4;  // query rows as stored
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  int64_t bytes = q + 2 * kv + q + rows * f32;                              // Q, K, V, O, L
  if (fwd) bytes += model.forward_workspace_bytes(p);                       // flash1: fp32 O, l, m
  if (bwd) bytes += q + rows * f32 + rows * p.head_dim * f32 + q + 2 * kv;  // dO, D, dQ accumulator, dQ, dK, dV
  return bytes;
}

// Inputs the pass reads that none of its kernels wrote.
int64_t pass_inputs(const ModelPoint& m) {
  const Problem& p = m.problem;
  const int64_t e = bytes_of(p.dtype), q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t rows = p.lse_elements();
  if (m.pass == Pass::Fwd) return q + 2 * kv;
  if (m.pass == Pass::FwdBwd) return q + 2 * kv + q;  // + dO
  return q + 2 * kv + 2 * q + rows * 4;               // Q, K, V, O, dO, L
}

// Tile iterations per simulated step: the smallest power of two that brings the pass within
// kSimStepBudget steps, as long as its longest block keeps at least 32 steps.
int coarsening(const SimTrace& t) {
  int64_t total = 0, longest = 0;
  for (const auto& k : t.kernels)
    for (int64_t b = 0; b < k.blocks; ++b) {
      const int64_t s = k.steps(b);
      total += s, longest = std::max(longest, s);
    }
  int c = 1;
  while (total / c > kSimStepBudget && longest / (2 * c) >= 32) c *= 2;
  return c;
}

// The prediction from the L2 simulation of the pass's trace.
void simulate_pass(const ModelPoint& m, const IoModel& model, const DramContext& ctx, SimTrace trace,
                   DramPrediction& out) {
  const GpuLimits& gpu = ctx.gpu;
  out.coarse = coarsening(trace);
  if (out.coarse > 1) trace = *model.dram_trace(m, ctx, out.coarse);
  out.l2_partitions = gpu.l2_partitions > 0 ? gpu.l2_partitions : 1;
  const L2SimResult r =
      simulate_l2(trace.buffers, trace.kernels, {gpu.l2_bytes, out.l2_partitions, gpu.sm_count, gpu.l2_dirty});
  out.model = "L2 simulation";
  out.predicted = r.dram_read + r.dram_write;
  out.sim_steps = r.steps;
  for (size_t k = 0; k < trace.kernels.size(); ++k)
    if (trace.kernels[k].counted) out.kernels.push_back({trace.kernels[k].name, r.kernel_read[k], r.kernel_write[k]});
  for (size_t b = 0; b < trace.buffers.size(); ++b)
    if (r.read_of[b] + r.write_of[b] > 0) out.terms.add(trace.buffers[b].name, r.read_of[b], r.write_of[b]);
  // The main kernel's occupancy (the forward's where the pass has one).
  for (const auto& k : trace.kernels)
    if (k.name == "forward" || k.name == "backward") {
      out.blocks_per_sm = k.blocks_per_sm;
      out.wave_blocks = int64_t(k.blocks_per_sm) * gpu.sm_count;
      out.occupancy = occupancy_source(k.name == "forward" ? ctx.kernels.fwd : ctx.kernels.bwd, gpu);
      break;
    }
  const Term* top = nullptr;
  for (const auto& t : out.terms.terms)
    if (!top || t.read + t.write > top->read + top->write) top = &t;
  if (top && out.predicted > 0) {
    int64_t size = 0;
    for (const auto& b : trace.buffers)
      if (b.name == top->name) size = b.heads * b.rows * b.row_bytes;
    const bool reads = top->read >= top->write;
    out.dominant = fmt::format("{} {} {:.0f} % ({:.2f}× its bytes)", top->name, reads ? "read" : "written back",
                               100.0 * double(top->read + top->write) / double(out.predicted),
                               size > 0 ? double(reads ? top->read : top->write) / double(size) : 0.0);
  }
  out.spills = r.dram_read > model.compulsory_dram(m).read + model.compulsory_dram(m).read / 50;
  out.footprint = pass_footprint(m, model);
  out.resident = out.footprint <= gpu.l2_bytes;
  out.note = "L2 simulation; dominant: " + out.dominant;
  if (gpu.l2_dirty.share <= 0) out.note += "; no L2 dirty limit (measured on GH100 only)";
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
          {"drift", drift},
          {"model", model},
          {"terms", terms.to_json()},
          {"dominant", dominant},
          {"coarse", coarse},
          {"sim_steps", sim_steps},
          {"l2_partitions", l2_partitions},
          {"kernels", [&] {
             nlohmann::json k = nlohmann::json::array();
             for (const auto& x : kernels) k.push_back({{"kernel", x.kernel}, {"read", x.read}, {"write", x.write}});
             return k;
           }()}};
}

int l2_partitions_of(const std::string& name) {
  for (const char* two : {"A100", "A800", "H100", "H800", "H200", "GH200"})
    if (name.find(two) != std::string::npos) return 2;
  return 1;
}

bool is_gh100(const std::string& name) {
  for (const char* gh100 : {"H100", "H200", "H800"})
    if (name.find(gh100) != std::string::npos) return true;
  return false;
}

L2DirtyRule l2_dirty_rule_of(const std::string& name) { return is_gh100(name) ? kGh100L2Dirty : L2DirtyRule{}; }

int blocks_per_sm(int threads, int64_t smem_bytes, const GpuLimits& gpu, int registers_per_thread) {
  if (gpu.blocks_per_sm_override > 0) return gpu.blocks_per_sm_override;
  constexpr int kMaxBlocksPerSm = 32;
  int n = kMaxBlocksPerSm;
  if (threads > 0) n = std::min(n, gpu.max_threads_per_sm / threads);
  if (smem_bytes > 0) n = std::min<int64_t>(n, gpu.smem_per_sm_bytes / (smem_bytes + kSmemReservedPerBlock));
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

DramPrediction predict_dram(const ModelPoint& m, int64_t fwd_smem_bytes, int64_t bwd_smem_bytes, const GpuLimits& gpu,
                            double l2_usable_fraction, const StreamingKernels& kernels) {
  if (gpu.sm_count <= 0 || gpu.l2_bytes <= 0)
    throw std::invalid_argument("DRAM model: the result file's device block lacks sm_count or l2_bytes");
  const IoModel& model = model_of(m);
  const double usable = l2_usable_fraction * double(gpu.l2_bytes);
  DramPrediction out;
  out.compulsory = model.compulsory_dram(m).total();
  if (!gpu.wave_model) {
    const DramContext ctx{fwd_smem_bytes, bwd_smem_bytes, gpu, usable, kernels};
    if (auto trace = model.dram_trace(m, ctx, 1)) {
      simulate_pass(m, model, ctx, std::move(*trace), out);
      return out;
    }
  }
  out.model = "waves";
  const int64_t extra =
      model.dram_beyond_compulsory(m, DramContext{fwd_smem_bytes, bwd_smem_bytes, gpu, usable, kernels}, out);
  out.predicted = out.compulsory + extra;
  out.footprint = pass_footprint(m, model);
  if (model.dram_residency() && out.footprint <= gpu.l2_bytes) {
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

// The second level of the IO model: L2 ↔ DRAM bytes. Two models:
//
// * the L2 simulation (default, issue 19; analysis/l2_sim.h): the method's schedule
//   (IoModel::dram_trace: its launches, blocks in launch order, each block's tile steps) run
//   through a model of the device's L2 — capacity from the record, two partitions on GA100 and
//   GH100 (l2_partitions_of), LRU, dirty write-back — with one time unit per tile iteration,
//   so causal blocks that end early free their slots early. Nothing in it is fitted: the
//   inputs are the record's device (L2 bytes, SMs), tiles and occupancy. A large pass is
//   simulated coarsened (`coarse` tile iterations per step and chunks `coarse` times the
//   tiles' rows, a power of two chosen so that at most kSimStepBudget steps run; the analysis
//   tests bound what that changes against the full simulation);
// * the wave model (`--dram-model waves`, kept for comparison; the text below): closed-form
//   waves with a usable-L2 share and a fitted co-resident drift.
//
// The wave model: L2 as the fast memory, a wave of resident thread blocks as
// the tile (DESIGN.md "Where DRAM traffic does grow"). The thread blocks resident together
// stream the same K/V (forward) or Q/dO (backward) in near lock-step, so L2 serves every
// re-read inside a wave. While the operand set a wave streams fits in the L2 share one stream
// can use, every byte comes from DRAM once (compulsory); once it does not, each wave that
// touches a head fetches that head's streamed operand again:
//   forward  DRAM ≈ Q + O + L + Σ_heads (K+V of the head) × (waves touching the head)
//   backward DRAM ≈ compulsory + Σ_heads (Q, dO, L, D and the dQ accumulator) × (waves − 1)
// The wave size is blocks per SM × the GPU's SM count; blocks per SM from the streaming
// kernel's recorded occupancy (counters.kernels[].resources), else its recorded registers,
// shared memory and threads, else — files before the records carried resources — shared memory
// and threads alone, which over-counts a register-bound kernel (the 128 × 32, d 128 forward:
// 240 registers allow 2 blocks, its shared memory 3). The usable share of L2 is a parameter (default one half: the L2
// is two partitions, and data homed in the far one is cached again in the near one).
//
// Two refinements:
// * Residency: a pass whose buffers (inputs, outputs, workspace, each once) fit in the L2
//   reads its inputs once and writes nothing back within its kernels (outputs stay dirty in
//   L2). The H100 sweep: forward N ≤ 32k measure 1.00 of the inputs' bytes.
// * Co-resident drift (flash2 forward, fitted): the b blocks an SM holds are b layers of a wave
//   (blocks k·SMs … (k+1)·SMs − 1 of it) that drift apart by `drift` × the K/V bytes a block
//   streams. A layer behind the one that fetched a line misses it once its lag exceeds half
//   the usable L2 (LRU: both layers touch new lines meanwhile), i.e. once a block streams
//   more than usable / (2·drift): then every further layer of a spilling wave fetches the
//   unit again (in the kernel's first wave, only the part of the pass beyond that point, as
//   the lag grows from 0). drift = 0.21 is fitted, not derived, from three points that
//   bracket it — H100 (ours, 2 blocks/SM): 64k holds as one window (K+V = 1.28 ×
//   usable), 128k needs the layers (2.56 ×); H200 (PyTorch's FA-2, DESIGN.md): 128k stays
//   one window (2.13 ×): drift ∈ (0.196, 0.235). It is not a constant of the GPU: the 128 × 32
//   kernel, at the same 2 blocks/SM, stays in lock-step to 256k (drift < 0.098). It is applied
//   to forward kernels recorded with local memory (the 128 × 64 kernel: 255 registers, an 8-byte
//   stack frame) or without resources, not to those recorded without local memory — a
//   hypothesis from these two kernels (analysis/README.md), `drift_all_kernels` to drop it.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/io_model.h"
#include "analysis/l2_sim.h"
#include "bench/core/counters.h"

namespace flashio::analysis {

inline constexpr double kDefaultCoResidentDrift = 0.21;

struct GpuLimits {
  int sm_count = 0;
  int64_t smem_per_sm_bytes = 0;
  int64_t l2_bytes = 0;
  int max_threads_per_sm = 2048;
  int blocks_per_sm_override = 0;          // > 0: the resident blocks per SM a wave assumes (a hypothesis to test)
  double drift = kDefaultCoResidentDrift;  // co-resident drift (see above); 0 = layers in lock-step
  bool drift_all_kernels = false;          // apply it also to kernels recorded without local memory
  int l2_partitions = 0;                   // the simulation's L2 partitions; 0: l2_partitions_of the device
  L2DirtyRule l2_dirty;                    // the simulation's dirty rule (l2_sim.h); none by default (l2_dirty_rule_of)
  bool wave_model = false;                 // predict with the wave model instead of the L2 simulation
};

// The L2 partitions of a GPU by its name: two on GA100 and GH100 (A100, H100, H200, H800, A800 —
// the A100 and H100 whitepapers: "the L2 cache is divided into two partitions", each serving
// the GPCs directly connected to it), one otherwise.
int l2_partitions_of(const std::string& device_name);

// How an L2 partition writes dirty lines back, by the GPU's name: kGh100L2Dirty on GH100 (H100,
// H200, H800, GH200: measured by scripts/l2_probe.sh on both), none (no limit: not measured)
// elsewhere.
L2DirtyRule l2_dirty_rule_of(const std::string& device_name);
bool is_gh100(const std::string& device_name);

// The simulation's step budget: a pass with more tile iterations is coarsened (above).
inline constexpr int64_t kSimStepBudget = 2'000'000;

struct DramPrediction {
  int64_t compulsory = 0;
  int64_t predicted = 0;
  int blocks_per_sm = 0;
  int64_t wave_blocks = 0;    // resident thread blocks of the streaming kernel
  double waves_per_head = 0;  // mean over heads of the waves that touch a head
  bool spills = false;        // the streamed working set exceeds the usable L2
  bool resident = false;      // the pass's buffers fit in L2 (inputs read once, nothing written back)
  int64_t drift_bytes = 0;    // of `predicted`: fetched again by co-resident layers that drifted apart
  int64_t footprint = 0;      // every buffer of the pass once
  int64_t bwd_working = 0;    // the backward's largest per-wave streamed set
  std::string occupancy;      // where blocks_per_sm came from (occupancy_source)
  double drift = 0;           // the co-resident drift the forward walk used (0: lock-step layers)
  // Non-empty: the point lies outside what the model claims to describe (why, in words); its
  // prediction is printed, not judged. Two regions (`dram_scope`):
  // * a backward whose streamed unit (one K/V head's Q, dO, L, D, fp32 dQ; flash1 with S > 1
  //   blocks per head: the head's Q, dO, O, l, m, dQ) alone exceeds the usable L2: every block
  //   of the unit walks the whole of it, and how far apart they drift, so how often the unit is
  //   fetched again, is not modelled (H100, one head, d 128: 2.1×, 6.9×, 45× the wave model at
  //   64k, 128k, 256k). A wave of several units that each fit is modelled (one fetch per wave);
  // * a pass whose buffers lie between the usable share and the whole L2: the residency rule
  //   (whole L2) and the streaming rule (usable share) disagree there; partial residency is
  //   not modelled.
  std::string out_of_scope;
  std::string note;
  // The L2 simulation (empty `model`: the wave model gave the prediction):
  std::string model;      // "L2 simulation" or "waves"
  Traffic terms;          // DRAM bytes per buffer (read: fetched, write: written back)
  std::string dominant;   // the largest term, its share of the prediction and its fetches per byte
  int coarse = 0;         // tile iterations per simulated step
  int64_t sim_steps = 0;  // simulated block steps
  int l2_partitions = 0;
  struct KernelBytes {
    std::string kernel;
    int64_t read = 0, write = 0;
  };
  std::vector<KernelBytes> kernels;  // per launch (counted ones), as the records' counters.kernels[]
  nlohmann::json to_json() const;
};

inline constexpr double kDefaultL2UsableFraction = 0.5;

// Registers per SM (64 K 32-bit registers on every architecture from sm_70 to sm_90 and
// sm_100/sm_120: CUDA C++ Programming Guide, "Technical Specifications per Compute
// Capability"), allocated per warp in units of 256 registers (the same table's allocation
// granularity; the occupancy calculator's "warp" allocation).
inline constexpr int kRegistersPerSm = 65536;
inline constexpr int kRegisterAllocationUnit = 256;

// Resident thread blocks per SM for a kernel of `threads` threads and `smem_bytes` of dynamic
// shared memory (1 KiB reserved per block, as on sm_80 and later), and — when known
// (`registers_per_thread` > 0) — its registers.
int blocks_per_sm(int threads, int64_t smem_bytes, const GpuLimits& gpu, int registers_per_thread = 0);

// What the records say about the streaming kernels beyond their tiles (counters.kernels[].resources,
// bench/core/counters.h): the occupancy API's resident blocks, registers and local memory. Absent in
// the files written before the records carried them.
struct StreamingKernels {
  std::optional<KernelResources> fwd, bwd;
};

// How the wave's resident blocks per SM were found, in words (DramPrediction::occupancy).
std::string occupancy_source(const std::optional<KernelResources>& r, const GpuLimits& gpu);

DramPrediction predict_dram(const ModelPoint& m, int64_t fwd_smem_bytes, int64_t bwd_smem_bytes, const GpuLimits& gpu,
                            double l2_usable_fraction = kDefaultL2UsableFraction, const StreamingKernels& kernels = {});

}  // namespace flashio::analysis

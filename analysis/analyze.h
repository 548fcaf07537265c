// `flashio analyze`: per record, predicted and measured bytes at both levels (SM↔L2 against
// the exact model, L2↔DRAM against the two-level model) with their ratio and a verdict; per
// sweep, the fitted exponents of measured SM↔L2 traffic in N, d and tile size against the
// model's, with R²; the L2 hit rate that explains the gap between the levels.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/dram_model.h"
#include "analysis/io_model.h"

namespace flashio::analysis {

// How the backward kernels that produced a record add into dQ (io_model.h, DqWidth). `Auto`: as
// the record's `tiles_bwd.dq_adds` says ("pairs" or "scalar"; "tiles", flash3's bulk reductions
// of whole tiles, is read into ModelTiles::dq_whole_tiles whatever this says); in files written before that
// field existed, scalar for the kernels before 9077f49 (scalar_dq_revision: the committed
// results/ files; records without `tiles_bwd` get no backward model anyway), pairs otherwise.
// Pairs' atomics are vectorised when the kernels ran as sm_90 or later (kernel_sm_arch).
enum class DqAdds { Auto, Scalar, Pairs };

struct AnalyzeOptions {
  double l2_tolerance = 0.03;        // |measured / exact model − 1| for fused kernels
  double dram_tolerance = 0.25;      // |measured / DRAM model − 1| for fused kernels
  double exponent_tolerance = 0.10;  // |measured exponent − model exponent|
  double l2_usable_fraction = kDefaultL2UsableFraction;
  bool require_counters = false;           // fail when no record could be judged
  int blocks_per_sm = 0;                   // > 0: override the wave's resident blocks per SM (DRAM model)
  double drift = kDefaultCoResidentDrift;  // DRAM model: co-resident drift (dram_model.h)
  bool drift_all_kernels = false;          // ... also for kernels recorded without local memory
  DqAdds dq_adds = DqAdds::Auto;
  bool wave_model = false;  // DRAM: the wave model (usable share, drift) instead of the L2 simulation
  int l2_partitions = 0;    // DRAM simulation: L2 partitions; 0: from the device (l2_partitions_of)
  double l2_dirty_share = -1;  // DRAM simulation: dirty share of a partition; < 0: from the device, 0: none
};

// The architecture a file's fused kernels ran as (__CUDA_ARCH__ / 10): the highest of the
// build's `cuda_architectures` at or below the device's compute capability (a lower one runs
// as its own PTX, JIT-compiled), else the device's; 90 when the file says neither.
int kernel_sm_arch(const nlohmann::json& file);
// Whether a record's backward kernel added dQ one float at a time: its `tiles_bwd.dq_adds`, else
// (older files) scalar_dq_revision of the file's `build.git_revision`; nullopt for a value the
// model does not know.
std::optional<bool> scalar_dq_adds(const nlohmann::json& record, const nlohmann::json& file);
// COMPATIBILITY, for files without tiles_bwd.dq_adds only: revisions (prefixes of
// `build.git_revision`) whose kernels added dQ one float at a time (kPreVectorDqRevisions).
bool scalar_dq_revision(const std::string& git_revision);

// A kernel of the record that uses local memory (counters.kernels[].resources).
struct LocalMemoryUse {
  std::string kernel;
  int64_t bytes_per_thread = 0;
  int registers_per_thread = 0;
};

// A record's model inputs, or why it has none (a sentence).
struct RecordModel {
  std::optional<ModelPoint> point;
  std::string why_not;
  std::string tiles_from;  // where the tiles came from: the record's, or (peers) its launches
  int64_t fwd_smem = 0, bwd_smem = 0;
  StreamingKernels kernels;           // the forward and backward main kernels' recorded resources
  std::vector<LocalMemoryUse> local;  // every kernel of the call with local_bytes_per_thread > 0
};

// The recorded resources of a record's kernels (name → resources, first-launch order kept),
// and which of them are the streaming (main) forward and backward kernels: the kernel whose
// block has the tiles' warps × 32 threads and whose shared memory is the tiles' smem_bytes, else
// the one whose name says fwd / bwd (not preprocess or convert).
std::vector<std::pair<std::string, KernelResources>> kernel_resources_of(const nlohmann::json& record);
StreamingKernels streaming_kernels_of(const nlohmann::json& record);
// A result file's device block as the DRAM model sees the GPU (SMs, shared memory, L2, threads per SM);
// the simulation's partitions and dirty rule are the caller's.
GpuLimits gpu_limits_of(const nlohmann::json& device);
// `file`: the result file's top level (device, build), for the dQ add width.
RecordModel model_point_of(const nlohmann::json& record, const nlohmann::json& file = nlohmann::json::object(),
                           DqAdds dq_adds = DqAdds::Auto);

// How a record's `l2_red` counter reads the reduction sectors the SMs send (the model's `red`).
// `lts__t_sectors_op_red.sum` counts every L2 slice's lookups from every source unit. On the
// chips whose L2 is two partitions joined by a fabric (GA100, GH100), a reduction is performed
// where its address is homed; one homed in the far partition is looked up at the near slice
// (source TEX) and again at the home slice (source LTC fabric): counted twice. With addresses
// hashed evenly over the two partitions that is 1 + 1/2 = 1.5× the sectors sent. The H100 files
// measure exactly 1.5 × the model at every N (the SASS sends what the model counts:
// io_model.h, dq_sectors_per_row). `lts__t_sectors_srcunit_tex_op_red.sum` (TEX only,
// as `l2_write` is read) would count each sector once: factor 1. Measured on GH100 (H100 and
// H200 files, and Nsight Compute's srcunit split: results/crosscheck/nvidia-h100-ncu-red-scope.md).
// Applied there only: on every other chip (GA100 has the same two partitions, but nobody has
// measured its counter) `l2_red` is compared with the sectors sent (1 ×), and the record's note
// and `l2_red_counter_scope` ("unmeasured") say so.
inline constexpr double kL2FabricRedFactor = 1.5;
inline constexpr const char* kRedScopeMeasuredChip = "GH100";
struct RedCounterScope {
  double factor = 1.0;
  bool measured = true;  // false: the record's counter scope was never measured on its chip
  std::string why;       // empty when the metric counts the SMs' sectors alone
};
RedCounterScope red_counter_scope(const nlohmann::json& counters);

// Least squares of log y = log c + k·log x.
struct PowerFit {
  double exponent = 0, constant = 0, r2 = 0;
  int points = 0;
};
PowerFit fit_power(const std::vector<double>& x, const std::vector<double>& y);
// Least squares through the origin of y = c·f: the asymptotic form's constant.
double fit_constant(const std::vector<double>& f, const std::vector<double>& y);

struct AnalyzeReport {
  nlohmann::json json;        // everything, for --json
  std::string markdown;       // for the terminal
  int judged = 0;             // verdicts given
  int failed = 0;             // verdicts that do not hold
  int dram_judged = 0;        // of `judged`: DRAM verdicts
  int dram_out_of_scope = 0;  // DRAM measured and predicted, outside the model's scope: not judged
  bool ok(const AnalyzeOptions& o) const { return failed == 0 && (!o.require_counters || judged > 0); }
};

// Reads every file (throws std::runtime_error on an unreadable one).
AnalyzeReport analyze_files(const std::vector<std::string>& paths, const AnalyzeOptions& opt);
AnalyzeReport analyze_documents(const std::vector<std::pair<std::string, nlohmann::json>>& docs,
                                const AnalyzeOptions& opt);

std::string format_bytes(double bytes);  // 1.23 GB, 45.6 MB (SI)

}  // namespace flashio::analysis

// Record: the outcome of one point (problem × method × pass), and the result file that
// holds a run's records with its device, build and command line. One schema for every
// producer (the flashio runner, scripts/peers_sdpa.py, merged shard files); documented in
// results/README.md and checked by results/schema.json.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/core/device_info.h"
#include "bench/core/method.h"
#include "bench/core/problem.h"

namespace flashio {

inline constexpr int kSchemaVersion = 1;

enum class Status { Ok, Skipped, Oom, Error };
const char* to_string(Status s);
std::optional<Status> parse_status(const std::string& s);

// Timing statistics of the timed repetitions, in seconds.
struct TimeStats {
  double median_s = 0, min_s = 0, max_s = 0, mean_s = 0, stddev_s = 0;
  int reps = 0;
  int warmup = 0;
  bool l2_flushed = true;           // L2 cleaned (read-only pass) before every repetition
  std::string clock = "cuda_events";
  // Every timed repetition, in the order run (empty in files written before it existed): what
  // `flashio compare --baseline` bootstraps its intervals from.
  std::vector<double> samples_s;
};

// One tensor's comparison with the reference (o, lse, dq, dk, dv).
struct TensorCheck {
  std::string name;
  double max_abs_err = 0, max_rel_err = 0, worst_ratio = 0;
  double atol = 0, rtol = 0;
  int64_t elements = 0;
  bool nan = false;  // a NaN (or a mismatched infinity) was seen
};

// Correctness check against the float64 reference, run before timing. The overall
// figures are the worst over `tensors`; atol/rtol are those of O.
struct CheckResult {
  bool passed = false;
  double max_abs_err = 0;     // max |out - ref| over checked elements of O (and LSE)
  double max_rel_err = 0;     // max |out - ref| / max(|ref|, 1e-6)
  double worst_ratio = 0;     // max |out - ref| / (atol + rtol·|ref|): pass iff <= 1, no NaN
  double atol = 0, rtol = 0;
  int64_t rows_checked = 0;   // query rows compared
  int64_t rows_total = 0;
  bool lse_checked = false;
  std::string scope;          // "all rows" or "sampled rows"
  std::string grad_scope;     // backward passes: which gradients were checked, and where
  std::string reference;      // where the float64 reference was made: "gpu" or "host" (empty: files before it was said)
  std::vector<TensorCheck> tensors;
};

// Device memory of the call, measured through the suite's allocator.
struct MemoryStats {
  int64_t inputs_bytes = 0;     // Q, K, V (and dO for backward)
  int64_t outputs_bytes = 0;    // O, LSE (and dQ, dK, dV)
  int64_t workspace_bytes = 0;  // peak bytes the method allocated beyond inputs and outputs
  int64_t total_bytes = 0;      // inputs + outputs + workspace: the footprint as the
                                // FlashAttention paper's Table 26 counts it (for fwdbwd:
                                // Q, K, V, dO, O, L, dQ, dK, dV and the intermediates)
  int64_t library_bytes = 0;    // device memory libraries took on their own beyond that
                                // (cuBLAS's handle), via cudaMemGetInfo: ±one 2 MiB page
};

// Where a point's wall time went (seconds, host steady clock), so a sweep's time can be
// accounted for: generating the inputs and copying them to the GPU, the float64 reference,
// preparing the method (plan, workspace), the correctness checks (the checked run and the
// compare, before and after timing), the timed repetitions, the counter pass. Inputs and
// reference are 0 when the point reuses the previous point's problem (same inputs). total: the
// whole point, so total − the parts is what the runner spent elsewhere. started_s: when the point
// began, seconds from the sweep's start (a sweep's timeline per GPU: its start, its idle gaps).
struct PhaseTimes {
  double inputs_s = 0, reference_s = 0, plan_s = 0, check_s = 0, timed_s = 0, counters_s = 0, total_s = 0;
  std::optional<double> started_s;  // set by a sweep (sweep_runner.h); absent for a point run alone
};

// DRAM bandwidth of a timed point: what it moved against what it must move, both against the
// GPU's peak DRAM bandwidth (DeviceInfo::peak_bandwidth_bytes_per_s). Compulsory bytes are the
// pass's tensors read and written once (compulsory_bytes in problem.h); the DRAM bytes are the
// counters' dram_read + dram_write, where the counter pass measured them.
struct BandwidthStats {
  int64_t compulsory_bytes = 0;
  double peak_bytes_per_s = 0;
  double ideal_s = 0;         // compulsory_bytes / peak: the time at the peak, moving nothing twice
  double ideal_fraction = 0;  // ideal_s / the median time: the fraction of the ideal reached
  std::optional<int64_t> dram_bytes;
  std::optional<double> achieved_bytes_per_s;  // dram_bytes / the median time
  std::optional<double> peak_fraction;         // achieved / peak
};

struct Record {
  std::string method;
  Pass pass = Pass::Fwd;
  Problem problem;
  Status status = Status::Ok;
  std::string reason;  // why skipped / the error message; empty when ok
  int device_index = 0;
  int64_t point_index = -1;  // position in the expanded sweep (before sharding); -1 = not known
  std::optional<Tiles> tiles;
  std::optional<Tiles> tiles_bwd;  // bwd, fwdbwd: the backward kernel's tiles where they differ
  std::optional<CheckResult> check;
  std::optional<TimeStats> time;
  std::optional<MemoryStats> memory;
  std::optional<BandwidthStats> bandwidth;  // timed points (bandwidth_of)
  std::optional<PhaseTimes> phases;  // absent in files written before it existed, and for non-flashio producers
  nlohmann::json counters = {{"status", "not_collected"}, {"reason", "counter collection is not enabled"}};

  std::string name() const { return point_name(method, pass, problem); }
  double flops() const { return flashio::flops(problem, pass); }
  std::optional<double> tflops() const;  // from the median time; nullopt without timing
};

// The bandwidth figures of a timed record on a GPU of `peak_bytes_per_s` (nullopt without a
// time or a peak). Reads the DRAM bytes from the record's counters.
std::optional<BandwidthStats> bandwidth_of(const Record& r, double peak_bytes_per_s);

struct ResultFile {
  int schema_version = kSchemaVersion;
  std::string run_id;
  std::string created;       // ISO 8601 UTC
  std::string command_line;
  std::string producer = "flashio";
  nlohmann::json build;      // git revision, dirty flag, architectures, compilers
  nlohmann::json device;     // DeviceInfo as JSON (absent fields for non-GPU producers)
  nlohmann::json devices = nlohmann::json::array();  // every GPU that ran records, when more than one
  std::optional<double> wall_s;  // the run's wall time, start to file (a resumed run adds its earlier runs')
  // merge: each input's file name, run id and wall_s; empty otherwise.
  nlohmann::json merged_from = nlohmann::json::array();
  // flashio profile: the profiled command, its exit and one record per kernel launch or NVTX
  // range (bench/core/profile_log.h); null otherwise. `records` is then empty.
  nlohmann::json profile;
  std::vector<Record> records;
};

nlohmann::json to_json(const Record& r);
Record record_from_json(const nlohmann::json& j);  // throws std::runtime_error
nlohmann::json to_json(const ResultFile& f);
ResultFile result_file_from_json(const nlohmann::json& j);

// Writes atomically (a unique temporary file in path's folder, fsync, rename: safe_write.h).
// Without `overwrite`, an existing path is left alone (InputError).
void write_result_file(const ResultFile& f, const std::string& path, bool overwrite = true);
ResultFile read_result_file(const std::string& path);  // throws std::runtime_error

std::string utc_timestamp();  // 2026-11-22T01:02:03Z
std::string new_run_id();     // random 16 hex digits

}  // namespace flashio

// CUPTI as the suite's two counter front ends use it: the in-process counter pass
// (cupti_profiler.cpp, user replay) and the injection library of `flashio profile` (inject.cpp,
// kernel replay in a program the suite did not write). Here, once: loading CUPTI with dlopen,
// the one checking macro, the launch callbacks' parameters, the metric set's configuration for a
// chip, the range profiler of a context, and the kernel resources read from the driver.
//
// No CUDA runtime call is made here: the driver's entry points are looked up in the driver
// library the process already loaded, because an injected program brings its own runtime
// (PyTorch's may be another version than the suite's).
#pragma once
#include <cuda.h>
#include <cupti_callbacks.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/core/counters.h"

namespace flashio::cupti {

// A CUPTI call that failed: the record's `unavailable` reason.
struct Failure : std::runtime_error {
  explicit Failure(const std::string& what, bool retry = false) : std::runtime_error(what), retry(retry) {}
  bool retry;  // a pass that lost its ranges: worth running again
};

// CUPTI's entry points, resolved from the library with dlsym (never linked: a machine without
// CUPTI still runs the suite).
struct Api {
  void* handle = nullptr;
  std::string path;  // the file the library was loaded from
                     // clang-format off
#define FLASHIO_CUPTI_FN(name) decltype(&::name) name = nullptr;
#define FLASHIO_CUPTI_FUNCTIONS(X)                                                                     \
  X(cuptiGetResultString) X(cuptiSubscribe) X(cuptiEnableCallback) X(cuptiEnableDomain)                \
  X(cuptiProfilerInitialize) X(cuptiDeviceGetChipName) X(cuptiProfilerGetCounterAvailability)          \
  X(cuptiProfilerHostInitialize) X(cuptiProfilerHostDeinitialize) X(cuptiProfilerHostGetBaseMetrics)   \
  X(cuptiProfilerHostConfigAddMetrics) X(cuptiProfilerHostGetConfigImageSize)                          \
  X(cuptiProfilerHostGetConfigImage) X(cuptiProfilerHostGetNumOfPasses)                                \
  X(cuptiProfilerHostEvaluateToGpuValues) X(cuptiRangeProfilerEnable) X(cuptiRangeProfilerDisable)     \
  X(cuptiRangeProfilerGetCounterDataSize) X(cuptiRangeProfilerCounterDataImageInitialize)              \
  X(cuptiRangeProfilerSetConfig) X(cuptiRangeProfilerStart) X(cuptiRangeProfilerStop)                  \
  X(cuptiRangeProfilerDecodeData) X(cuptiRangeProfilerGetCounterDataInfo)
  // clang-format on
  FLASHIO_CUPTI_FUNCTIONS(FLASHIO_CUPTI_FN)
#undef FLASHIO_CUPTI_FN
};

std::string result_string(const Api& api, CUptiResult r);

// The one checking macro for CUPTI calls (file, line, call, CUPTI's message); throws Failure.
#define FLASHIO_CUPTI_CHECK(api, call)                                                                            \
  do {                                                                                                            \
    const CUptiResult flashio_r_ = (api).call;                                                                    \
    if (flashio_r_ != CUPTI_SUCCESS) ::flashio::cupti::throw_failure(api, flashio_r_, #call, __FILE__, __LINE__); \
  } while (0)
[[noreturn]] void throw_failure(const Api& api, CUptiResult r, const char* call, const char* file, int line);

// Turns on the callbacks the caller's subscriber needs (called once, right after subscribing).
using EnableCallbacks = void (*)(const Api& api, CUpti_SubscriberHandle subscriber);

// Loads CUPTI once per process: resolves its entry points and subscribes `callback` (CUPTI allows
// one subscriber per process; without it — another tool holds it — `subscribed()` is false and
// kernels are not named). A library that cannot be opened is not remembered (a later call may
// name another); one that opens but lacks an entry point is. Throws Failure with the reason.
const Api& load(const std::string& library, CUpti_CallbackFunc callback, EnableCallbacks enable);
// Initialises CUPTI's profiler once per process (after load); throws Failure, remembered.
void initialize_profiler(const Api& api);
bool subscribed();

// The launch callbacks the suite reads names and shapes from.
extern const std::vector<CUpti_CallbackId> kDriverLaunches;
extern const std::vector<CUpti_CallbackId> kRuntimeLaunches;
bool is_driver_launch(CUpti_CallbackId id);

// One kernel launch as its API callback saw it: the symbol's name, and where the callback's
// parameters say it, the launched function and its launch shape.
struct Launch {
  std::string name;                    // the mangled symbol (kernel_name() makes it readable)
  CUfunction function = nullptr;       // driver launches
  const void* runtime_func = nullptr;  // runtime launches by host stub (cudaGetFuncBySymbol)
  void* runtime_kernel = nullptr;      // CUDA 13's <<<>>> (__cudaLaunchKernel): a cudaKernel_t
  unsigned grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  size_t dynamic_smem = 0;
  bool has_shape = false;
  CUstream stream = nullptr;  // driver launches: the launch's stream (CU_STREAM_PER_THREAD for a _ptsz
                              // launch into the default stream)
};
// The launch's function (or kernel handle) and shape from the callback's parameters.
void read_launch(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* params, Launch& l);

// A CUDA driver entry point from the driver library already loaded in this process, or null.
void* driver_entry(const char* name);
// The context current on this thread; throws Failure where there is none.
CUcontext current_context();

// The resources of a launch (its function's attributes and the occupancy its launch shape
// allows), read from the driver outside the callbacks; nullopt where the function is unknown.
std::optional<KernelResources> resolve_resources(const Launch& l);

// The metric set of `set` configured for one GPU: the table's metrics this chip has (the rest
// recorded absent with the reason), extras kept only where they add no replay pass, the
// configuration image, its pass count, and the host object that evaluates counter data.
class MetricConfig {
 public:
  // `device_index`: the CUDA ordinal of `ctx`'s device. Throws Failure (no permission, …).
  MetricConfig(const Api& api, CUcontext ctx, int device_index, int cc_major, int cc_minor, CounterSet set);
  ~MetricConfig();
  MetricConfig(const MetricConfig&) = delete;
  MetricConfig& operator=(const MetricConfig&) = delete;

  const MetricTable& table() const { return table_; }
  CounterSet set() const { return set_; }
  const std::string& chip() const { return chip_; }
  const std::vector<std::string>& metrics() const { return metrics_; }
  const std::map<std::string, std::string>& absent() const { return absent_; }
  int passes() const { return passes_; }
  const std::vector<uint8_t>& image() const { return config_; }
  // The metrics' values in range `range` of a decoded counter data image, by metric name.
  std::map<std::string, double> evaluate(const std::vector<uint8_t>& data, size_t range) const;

 private:
  CUpti_Profiler_Host_Object* new_host();
  void release_host(CUpti_Profiler_Host_Object*& h);
  std::vector<std::string> available_bases();
  std::pair<std::vector<uint8_t>, int> configure(CUpti_Profiler_Host_Object* h, const std::vector<std::string>& names);

  const Api& api_;
  CounterSet set_;
  MetricTable table_;
  std::string chip_;
  std::vector<uint8_t> availability_;
  CUpti_Profiler_Host_Object* host_ = nullptr;  // configured with metrics_, used to evaluate
  std::vector<uint8_t> config_;
  std::vector<std::string> metrics_;
  std::map<std::string, std::string> absent_;
  int passes_ = 0;
};

// CUPTI's range profiler on one context in auto-range mode (one range per kernel launch):
// enabled on construction, disabled on destruction. Outside start()/stop() it profiles nothing.
class RangeProfiler {
 public:
  RangeProfiler(const Api& api, CUcontext ctx, const MetricConfig& config, size_t max_ranges);
  ~RangeProfiler();
  RangeProfiler(const RangeProfiler&) = delete;
  RangeProfiler& operator=(const RangeProfiler&) = delete;

  // A fresh counter data image and the configuration: user replay (the caller reruns its launch
  // sequence per pass) or kernel replay (CUPTI replays each kernel, saving and restoring memory).
  void configure(CUpti_ProfilerReplayMode replay);
  void start();
  bool stop();            // true when every pass has been submitted
  size_t decode();        // the ranges dropped
  size_t ranges() const;  // ranges in the decoded image
  const std::vector<uint8_t>& data() const { return data_; }

 private:
  const Api& api_;
  const MetricConfig& config_;
  CUpti_RangeProfiler_Object* object_ = nullptr;
  size_t max_ranges_;
  std::vector<uint8_t> data_;
};

}  // namespace flashio::cupti

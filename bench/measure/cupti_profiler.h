// The in-process counter pass: CUPTI's range profiler (CUDA 12.6+, `cupti_range_profiler.h`
// with `cupti_profiler_host.h`) in auto-range mode — one range per kernel launch — with
// user replay: when the metric set needs several passes, the caller's whole launch
// sequence runs once per pass, after `prepare` (the L2 flush) each time. Kernel names
// come from CUPTI's launch callbacks. CUPTI is loaded with dlopen, so a machine without
// it (or without permission to read counters) still times: open() says why not, and
// every record then carries `counters: unavailable` with that reason.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/core/counters.h"
#include "bench/core/device_info.h"

typedef struct CUstream_st* cudaStream_t;

namespace flashio {

// Runs `launch` (which only enqueues work on `stream`) with CUPTI's launch callbacks on and
// returns the `kernels` array of a counters object without counter values: name, launches and
// resources (registers, local memory, shared memory, block, grid, occupancy) per kernel. For the
// points whose counters are unavailable (no permission: the callbacks need none): the runner
// passes the correctness check's launch, so nothing runs twice. An empty array where CUPTI
// cannot be loaded or another tool holds its callbacks (`launch` still runs). Never called with
// `--counters off`, which keeps CUPTI out of the process (ncu and nsys need it to themselves).
nlohmann::json capture_kernels(const std::function<void()>& launch, cudaStream_t stream,
                               const std::string& library = "libcupti.so.13");

class CounterSession {
 public:
  // The library CUPTI is loaded from: $FLASHIO_CUPTI_LIBRARY, else libcupti.so.13 / libcupti.so.
  static std::string default_library();

  // Loads CUPTI, checks the device and the metric set, builds the configuration. Returns
  // null with `why_not` set when counters cannot be read here (no library, no permission,
  // unsupported GPU, another profiler attached); never throws for those.
  static std::unique_ptr<CounterSession> open(const DeviceInfo& dev, CounterSet set, std::string& why_not,
                                              const std::string& library = default_library());
  ~CounterSession();

  // Profiles `launch` (which only enqueues work on `stream`): per replay pass, `prepare`
  // (the L2 flush) then `launch` inside the profiled span; prepare's kernels are left out. Returns the record's
  // counters object; a failure during collection returns `unavailable` with the reason (the point is still timed).
  nlohmann::json profile(const std::function<void()>& prepare, const std::function<void()>& launch,
                         cudaStream_t stream);

  int passes() const;                                        // replay passes of the configured set
  const std::vector<std::string>& metrics() const;           // the metrics collected
  const std::map<std::string, std::string>& absent() const;  // table metrics not collected, why
  std::string describe() const;                              // one line for --verbose

 private:
  struct Impl;
  explicit CounterSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashio

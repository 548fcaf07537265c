#include "bench/measure/cupti_profiler.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <set>

#include "bench/cuda/cuda_check.h"

#if __has_include(<cupti_range_profiler.h>)
#define FLASHIO_HAVE_RANGE_PROFILER 1
#include "bench/measure/cupti_api.h"
#else
#define FLASHIO_HAVE_RANGE_PROFILER 0
#endif

namespace flashio {

std::string CounterSession::default_library() {
  if (const char* env = std::getenv("FLASHIO_CUPTI_LIBRARY"); env && *env) return env;
  return "libcupti.so.13";
}

#if !FLASHIO_HAVE_RANGE_PROFILER

struct CounterSession::Impl {};
CounterSession::CounterSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CounterSession::~CounterSession() = default;
std::unique_ptr<CounterSession> CounterSession::open(const DeviceInfo&, CounterSet, std::string& why_not,
                                                     const std::string&) {
  why_not = "built without CUPTI's range profiler (cupti_range_profiler.h needs CUDA 12.6 or newer)";
  return nullptr;
}
nlohmann::json CounterSession::profile(const std::function<void()>&, const std::function<void()>&, cudaStream_t) {
  return counters_unavailable("built without CUPTI's range profiler");
}
int CounterSession::passes() const { return 0; }
const std::vector<std::string>& CounterSession::metrics() const {
  static std::vector<std::string> none;
  return none;
}
const std::map<std::string, std::string>& CounterSession::absent() const {
  static std::map<std::string, std::string> none;
  return none;
}
std::string CounterSession::describe() const { return "counters: unavailable"; }
nlohmann::json capture_kernels(const std::function<void()>& launch, cudaStream_t, const std::string&) {
  launch();
  return nlohmann::json::array();
}

#else

namespace {

using cupti::Launch;
using CuptiFailure = cupti::Failure;

constexpr size_t kMaxRanges = 512;  // kernel launches one call may make in a counter pass
constexpr int kMaxPasses = 64;

// The launches made on this thread while a capture is active, from CUPTI's driver and runtime
// launch callbacks (auto-range ranges are numbered, not named). No CUDA call is made inside a
// callback: resources are read after the launches (resources_of).
struct LaunchNames {
  std::vector<Launch> driver, runtime;
};
thread_local LaunchNames* t_capture = nullptr;

void CUPTIAPI on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  LaunchNames* capture = t_capture;
  if (!capture || !data) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  Launch l;
  l.name = cb->symbolName ? cb->symbolName : "?";
  cupti::read_launch(domain, id, cb->functionParams, l);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cupti::is_driver_launch(id)) capture->driver.push_back(l);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) capture->runtime.push_back(l);
}

void enable_launch_callbacks(const cupti::Api& api, CUpti_SubscriberHandle subscriber) {
  for (CUpti_CallbackId id : cupti::kDriverLaunches)
    api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  for (CUpti_CallbackId id : cupti::kRuntimeLaunches)
    api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
}

// Loads CUPTI and initialises its profiler (subscribed first, so that the callbacks still name
// kernels where the profiler refuses).
const cupti::Api& load(const std::string& library) {
  const cupti::Api& api = cupti::load(library, on_launch, enable_launch_callbacks);
  cupti::initialize_profiler(api);
  return api;
}

// A captured launch's resources; runtime launches by host stub are resolved to their function
// through this process's runtime first.
std::optional<KernelResources> resources_of(Launch l) {
  if (!l.function && l.runtime_func) {
    cudaFunction_t rf = nullptr;
    if (cudaGetFuncBySymbol(&rf, l.runtime_func) == cudaSuccess) l.function = reinterpret_cast<CUfunction>(rf);
  }
  return cupti::resolve_resources(l);
}

// The launches' names and resources, from the driver's callbacks where they saw every launch,
// else the runtime's; each list is used only where it counts `n` launches (n < 0: any).
const std::vector<Launch>* pick_launches(const LaunchNames& l, long n) {
  if (!l.driver.empty() && (n < 0 || long(l.driver.size()) == n)) return &l.driver;
  if (!l.runtime.empty() && (n < 0 || long(l.runtime.size()) == n)) return &l.runtime;
  return nullptr;
}

}  // namespace

struct CounterSession::Impl {
  const cupti::Api* api = nullptr;
  DeviceInfo dev;
  CounterSet set = CounterSet::Full;
  std::unique_ptr<cupti::MetricConfig> config;
  CUcontext ctx = nullptr;
  // The range profiler of the context, enabled when the session opens and kept until it ends:
  // enabling and disabling it around every pass cost about 0.7 s a point on an H200 and, with two
  // GPUs profiling at once, lost a pass's ranges now and then. Outside Start/Stop it profiles
  // nothing.
  std::unique_ptr<cupti::RangeProfiler> profiler;

  void setup() {
    FLASHIO_CUDA_CHECK(cudaSetDevice(dev.index));
    FLASHIO_CUDA_CHECK(cudaFree(nullptr));  // make the primary context current
    ctx = cupti::current_context();
    config = std::make_unique<cupti::MetricConfig>(*api, ctx, dev.index, dev.cc_major, dev.cc_minor, set);
  }

  // Enables the range profiler on this session's context, once: it stays on until the session
  // ends or a pass fails (about 0.7 s an enable on an H200, so it is done when the session opens,
  // while the worker's first problem is prepared on the host, not on a point's counter pass).
  void enable() {
    if (!profiler) profiler = std::make_unique<cupti::RangeProfiler>(*api, ctx, *config, kMaxRanges);
  }

  nlohmann::json profile(const std::function<void()>& prepare, const std::function<void()>& launch,
                         cudaStream_t stream) {
    enable();
    struct DisableOnFailure {  // a failed pass leaves the profiler off, to be enabled afresh
      Impl* impl;
      bool ok = false;
      ~DisableOnFailure() {
        if (!ok) impl->profiler.reset();
      }
    } guard{this};
    profiler->configure(CUPTI_UserReplay);  // we rerun the whole launch sequence per pass

    LaunchNames prepared, launches;
    int pass = 0;
    for (bool done = false; !done; ++pass) {
      if (pass == kMaxPasses) throw CuptiFailure(fmt::format("more than {} replay passes", kMaxPasses));
      // Each pass sees the same work: the L2 cleaned as before a timed repetition, and
      // the launch sequence is self-contained (it resets its own accumulators; the
      // runner's re-check after repetition proves it). `prepare` runs inside the profiled
      // span, right before the launch, as a timed repetition's flush does; its ranges are
      // dropped below. (Flushing before cuptiRangeProfilerStart left about 25 MB of extra
      // DRAM writes in the next kernel's count on an H100, which ncu did not see.)
      profiler->start();
      if (pass == 0) t_capture = &prepared;
      prepare();
      t_capture = pass == 0 ? &launches : nullptr;
      launch();
      t_capture = nullptr;
      FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
      done = profiler->stop();
    }
    if (const size_t dropped = profiler->decode(); dropped > 0)
      throw CuptiFailure(
          fmt::format("{} kernel ranges dropped (more than {} launches in one call)", dropped, kMaxRanges));
    const size_t total = profiler->ranges();

    // The first ranges are `prepare`'s kernels (one flush kernel where the callbacks
    // cannot count them). Names: the driver's launch callbacks, else the runtime's, when
    // they count the same launches as the ranges; otherwise the range index.
    const bool by_driver = !launches.driver.empty() || !prepared.driver.empty();
    const size_t skip = by_driver ? prepared.driver.size() : !prepared.runtime.empty() ? prepared.runtime.size() : 1;
    if (total < skip) {
      guard.ok = true;  // the pass itself completed: the profiler stays on for the retry
      throw CuptiFailure("fewer profiled ranges than launches", true);
    }
    const size_t n = total - skip;
    const std::vector<Launch>* named = pick_launches(launches, long(n));
    std::vector<RangeValues> ranges(n);
    for (size_t i = 0; i < n; ++i) {
      ranges[i].values = config->evaluate(profiler->data(), skip + i);
      ranges[i].kernel = named ? kernel_name((*named)[i].name) : fmt::format("range {}", i);
      if (named) ranges[i].resources = resources_of((*named)[i]);
    }
    nlohmann::json j = counters_json(config->table(), set, pass, ranges, config->absent());
    j["chip"] = config->chip();
    guard.ok = true;
    return j;
  }
};

nlohmann::json capture_kernels(const std::function<void()>& launch, cudaStream_t stream, const std::string& library) {
  bool subscribed = false;
  try {
    load(library);
    subscribed = cupti::subscribed();
  } catch (const CuptiFailure&) {
    subscribed = cupti::subscribed();  // loaded and subscribed; the profiler refused
  }
  if (!subscribed) {
    launch();
    return nlohmann::json::array();
  }
  LaunchNames captured;
  t_capture = &captured;
  try {
    launch();
  } catch (...) {
    t_capture = nullptr;
    throw;
  }
  t_capture = nullptr;
  FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<Launch>* launches = pick_launches(captured, -1);
  std::vector<RangeValues> out;
  if (launches)
    for (const auto& l : *launches) out.push_back({kernel_name(l.name), {}, resources_of(l)});
  return kernels_without_counters(out);
}

CounterSession::CounterSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CounterSession::~CounterSession() = default;

std::unique_ptr<CounterSession> CounterSession::open(const DeviceInfo& dev, CounterSet set, std::string& why_not,
                                                     const std::string& library) {
  if (set == CounterSet::Off) {
    why_not = "counter collection is off (--counters off)";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->dev = dev;
  impl->set = set;
  try {
    impl->api = &load(library);
    impl->setup();
    impl->enable();
  } catch (const std::exception& e) {
    why_not = e.what();
    return nullptr;
  }
  return std::unique_ptr<CounterSession>(new CounterSession(std::move(impl)));
}

nlohmann::json CounterSession::profile(const std::function<void()>& prepare, const std::function<void()>& launch,
                                       cudaStream_t stream) {
  // With several GPUs profiled at once (one session per sweep worker), a pass now and then comes
  // back without its ranges (measured: one or three of fa2-figure4's 72 points on two H200s,
  // none on one GPU). Such a pass is run again, with every other session's passes held off.
  static std::mutex alone;
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    try {
      std::unique_lock<std::mutex> lock(alone, std::defer_lock);
      if (attempt > 1) lock.lock();
      return impl_->profile(prepare, launch, stream);
    } catch (const CuptiFailure& e) {
      t_capture = nullptr;
      if (attempt == kAttempts || !e.retry) return counters_unavailable(e.what());
    }
  }
}

int CounterSession::passes() const { return impl_->config->passes(); }
const std::vector<std::string>& CounterSession::metrics() const { return impl_->config->metrics(); }
const std::map<std::string, std::string>& CounterSession::absent() const { return impl_->config->absent(); }

std::string CounterSession::describe() const {
  const cupti::MetricConfig& c = *impl_->config;
  std::string absent;
  for (const auto& [m, why] : c.absent()) absent += fmt::format("; absent {}: {}", m, why);
  return fmt::format("counters: {} set on {} ({}), {} metrics, {} replay pass{}{}", to_string(impl_->set), c.chip(),
                     c.table().family, c.metrics().size(), c.passes(), c.passes() == 1 ? "" : "es", absent);
}

#endif  // FLASHIO_HAVE_RANGE_PROFILER

}  // namespace flashio

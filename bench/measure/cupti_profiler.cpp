#include "bench/measure/cupti_profiler.h"

#include <cuda_runtime_api.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <set>

#include "bench/cuda/cuda_check.h"

#if __has_include(<cupti_range_profiler.h>)
#define FLASHIO_HAVE_RANGE_PROFILER 1
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_runtime_cbid.h>
#include <cupti_target.h>
#include <generated_cuda_runtime_api_meta.h>
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

constexpr size_t kMaxRanges = 512;  // kernel launches one call may make in a counter pass
constexpr int kMaxPasses = 64;

// Thrown inside this file when a CUPTI call fails; becomes the `unavailable` reason.
struct CuptiFailure : std::runtime_error {
  explicit CuptiFailure(const std::string& what, bool retry = false) : std::runtime_error(what), retry(retry) {}
  bool retry;  // a pass that lost its ranges: worth running again
};

// CUPTI's entry points, resolved from the library with dlsym (never linked: a machine
// without CUPTI still runs the suite).
struct CuptiApi {
  void* handle = nullptr;
// clang-format off
#define FLASHIO_CUPTI_FN(name) decltype(&::name) name = nullptr;
#define FLASHIO_CUPTI_FUNCTIONS(X)                                                                     \
  X(cuptiGetResultString) X(cuptiSubscribe) X(cuptiEnableCallback) X(cuptiProfilerInitialize)          \
  X(cuptiDeviceGetChipName) X(cuptiProfilerGetCounterAvailability) X(cuptiProfilerHostInitialize)      \
  X(cuptiProfilerHostDeinitialize) X(cuptiProfilerHostGetBaseMetrics) X(cuptiProfilerHostConfigAddMetrics) \
  X(cuptiProfilerHostGetConfigImageSize) X(cuptiProfilerHostGetConfigImage) X(cuptiProfilerHostGetNumOfPasses) \
  X(cuptiProfilerHostEvaluateToGpuValues) X(cuptiRangeProfilerEnable) X(cuptiRangeProfilerDisable)     \
  X(cuptiRangeProfilerGetCounterDataSize) X(cuptiRangeProfilerCounterDataImageInitialize)              \
  X(cuptiRangeProfilerSetConfig) X(cuptiRangeProfilerStart) X(cuptiRangeProfilerStop)                  \
  X(cuptiRangeProfilerDecodeData) X(cuptiRangeProfilerGetCounterDataInfo)
  // clang-format on
  FLASHIO_CUPTI_FUNCTIONS(FLASHIO_CUPTI_FN)
#undef FLASHIO_CUPTI_FN
};

std::string result_string(const CuptiApi& api, CUptiResult r) {
  const char* s = nullptr;
  if (api.cuptiGetResultString && api.cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return fmt::format("CUPTI error {}", int(r));
}

// The one checking macro for CUPTI calls (file, line, call, CUPTI's message).
#define FLASHIO_CUPTI_CHECK(api, call)                                                                 \
  do {                                                                                                 \
    const CUptiResult flashio_r_ = (api).call;                                                         \
    if (flashio_r_ != CUPTI_SUCCESS)                                                                   \
      throw CuptiFailure(fmt::format("{} failed: {}{} ({}:{})", #call, result_string(api, flashio_r_), \
                                     flashio_r_ == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES                 \
                                         ? " — reading counters needs root or the driver option "    \
                                           "NVreg_RestrictProfilingToAdminUsers=0"                     \
                                         : "",                                                         \
                                     __FILE__, __LINE__));                                             \
  } while (0)

// The launches made on this thread while a capture is active, from CUPTI's driver and runtime
// launch callbacks (auto-range ranges are numbered, not named): the kernel's name, and where the
// callback's parameters say it, the launched function and its launch shape, from which
// resolve_resources() reads the kernel's resources after the launches (no CUDA call is made
// inside a callback).
struct Launch {
  std::string name;
  CUfunction function = nullptr;          // driver launches
  const void* runtime_func = nullptr;     // runtime launches by host stub (cudaGetFuncBySymbol)
  cudaKernel_t runtime_kernel = nullptr;  // CUDA 13's <<<>>> (__cudaLaunchKernel): cuKernelGetFunction
  unsigned grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  size_t dynamic_smem = 0;
  bool has_shape = false;
};
struct LaunchNames {
  std::vector<Launch> driver, runtime;
};
thread_local LaunchNames* t_capture = nullptr;

constexpr CUpti_CallbackId kRuntimeLaunches[] = {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
                                                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
                                                 CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                                                 CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000};
constexpr CUpti_CallbackId kDriverLaunches[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                                                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                                                CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
                                                CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};

bool is_driver_launch(CUpti_CallbackId id) {
  return std::find(std::begin(kDriverLaunches), std::end(kDriverLaunches), id) != std::end(kDriverLaunches);
}

// The driver launch callbacks' parameter structs, as CUDA 13's generated_cuda_meta.h declares
// them (that header needs cuda.h's legacy _v1 types, which a plain build does not declare).
struct CuLaunchKernelParams {  // cuLaunchKernel_params, cuLaunchCooperativeKernel_params (same prefix)
  CUfunction f;
  unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
};
struct CuLaunchKernelExParams {  // cuLaunchKernelEx_params
  const CUlaunchConfig* config;
  CUfunction f;
};

template <typename Dims>
void set_shape(Launch& l, const Dims& grid, const Dims& block, size_t smem) {
  l.grid[0] = grid.x, l.grid[1] = grid.y, l.grid[2] = grid.z;
  l.block[0] = block.x, l.block[1] = block.y, l.block[2] = block.z;
  l.dynamic_smem = smem;
  l.has_shape = true;
}

// CUDA 13's `<<<>>>` goes through __cudaLaunchKernel(cudaKernel_t, …), whose parameter struct
// CUPTI does not publish: it is read as the function's parameters in order, the layout of every
// struct that is published (e.g. cudaLaunchKernel_v7000_params), and used only where no driver
// callback saw the launches (pick_launches prefers the driver's).
struct RuntimeKernelLaunchParams {
  cudaKernel_t kernel;
  dim3 gridDim, blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};

// The launch's function (or kernel handle) and shape from the callback's parameters.
void read_launch(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* params, Launch& l) {
  if (!params) return;
  struct Dim3 {
    unsigned x, y, z;
  };
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) {
      const auto* p = static_cast<const CuLaunchKernelParams*>(params);
      l.function = p->f;
      set_shape(l, Dim3{p->gridDimX, p->gridDimY, p->gridDimZ}, Dim3{p->blockDimX, p->blockDimY, p->blockDimZ},
                p->sharedMemBytes);
    } else if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
      const auto* p = static_cast<const CuLaunchKernelExParams*>(params);
      l.function = p->f;
      if (p->config)
        set_shape(l, Dim3{p->config->gridDimX, p->config->gridDimY, p->config->gridDimZ},
                  Dim3{p->config->blockDimX, p->config->blockDimY, p->config->blockDimZ}, p->config->sharedMemBytes);
    } else {
      const auto* p = static_cast<const CuLaunchKernelParams*>(params);
      l.function = p->f;
      set_shape(l, Dim3{p->gridDimX, p->gridDimY, p->gridDimZ}, Dim3{p->blockDimX, p->blockDimY, p->blockDimZ},
                p->sharedMemBytes);
    }
    return;
  }
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
      const auto* p = static_cast<const cudaLaunchKernel_v7000_params*>(params);  // the same fields
      l.runtime_func = p->func;
      set_shape(l, p->gridDim, p->blockDim, p->sharedMem);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      const auto* p = static_cast<const cudaLaunchKernelExC_v11060_params*>(params);
      l.runtime_func = p->func;
      if (p->config) set_shape(l, p->config->gridDim, p->config->blockDim, p->config->dynamicSmemBytes);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: {
      const auto* p = static_cast<const RuntimeKernelLaunchParams*>(params);
      l.runtime_kernel = p->kernel;
      set_shape(l, p->gridDim, p->blockDim, p->sharedMem);
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  LaunchNames* capture = t_capture;
  if (!capture || !data) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  Launch l;
  l.name = cb->symbolName ? cb->symbolName : "?";
  read_launch(domain, id, cb->functionParams, l);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && is_driver_launch(id)) capture->driver.push_back(l);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) capture->runtime.push_back(l);
}

// A driver entry point through the runtime (no libcuda link), or null.
void* driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  return fn;
}

// The resources of a captured launch (outside the callbacks): the function's attributes and
// the occupancy its launch shape allows. Nullopt where the launch's function is unknown.
std::optional<KernelResources> resolve_resources(const Launch& l) {
  using GetAttribute = CUresult (*)(int*, CUfunction_attribute, CUfunction);
  using Occupancy = CUresult (*)(int*, CUfunction, int, size_t);
  static const auto get_attribute = reinterpret_cast<GetAttribute>(driver_entry("cuFuncGetAttribute"));
  static const auto occupancy =
      reinterpret_cast<Occupancy>(driver_entry("cuOccupancyMaxActiveBlocksPerMultiprocessor"));
  using KernelGetFunction = CUresult (*)(CUfunction*, CUkernel);
  static const auto kernel_function = reinterpret_cast<KernelGetFunction>(driver_entry("cuKernelGetFunction"));
  CUfunction f = l.function;
  if (!f && l.runtime_func) {
    cudaFunction_t rf = nullptr;
    if (cudaGetFuncBySymbol(&rf, l.runtime_func) == cudaSuccess) f = reinterpret_cast<CUfunction>(rf);
  }
  if (!f && l.runtime_kernel && kernel_function &&
      kernel_function(&f, reinterpret_cast<CUkernel>(l.runtime_kernel)) != CUDA_SUCCESS)
    f = nullptr;
  if (!f || !get_attribute || !l.has_shape) return std::nullopt;
  // Since CUDA 12 the runtime's launches hand cuLaunchKernel a CUkernel cast as CUfunction
  // (the driver accepts either); cuFuncGetAttribute refuses it (CUDA_ERROR_INVALID_HANDLE,
  // measured on CUDA 13 / H100), so it is turned into this context's function first.
  if (int probe = 0; get_attribute(&probe, CU_FUNC_ATTRIBUTE_NUM_REGS, f) == CUDA_ERROR_INVALID_HANDLE) {
    CUfunction g = nullptr;
    if (!kernel_function || kernel_function(&g, reinterpret_cast<CUkernel>(f)) != CUDA_SUCCESS) return std::nullopt;
    f = g;
  }
  auto attr = [&](CUfunction_attribute a) {
    int v = 0;
    return get_attribute(&v, a, f) == CUDA_SUCCESS ? std::optional<int>(v) : std::nullopt;
  };
  const auto regs = attr(CU_FUNC_ATTRIBUTE_NUM_REGS), local = attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  const auto smem = attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  if (!regs || !local || !smem) return std::nullopt;
  KernelResources r;
  r.registers_per_thread = *regs;
  r.local_bytes_per_thread = *local;
  r.static_smem_bytes = *smem;
  r.dynamic_smem_bytes = int64_t(l.dynamic_smem);
  for (int i = 0; i < 3; ++i) r.block[i] = int(l.block[i]), r.grid[i] = int(l.grid[i]);
  int blocks = 0;
  if (occupancy && occupancy(&blocks, f, r.threads(), l.dynamic_smem) == CUDA_SUCCESS) r.max_blocks_per_sm = blocks;
  return r;
}

// The launches' names and resources, from the driver's callbacks where they saw every launch,
// else the runtime's; each list is used only where it counts `n` launches (n < 0: any).
const std::vector<Launch>* pick_launches(const LaunchNames& l, long n) {
  if (!l.driver.empty() && (n < 0 || long(l.driver.size()) == n)) return &l.driver;
  if (!l.runtime.empty() && (n < 0 || long(l.runtime.size()) == n)) return &l.runtime;
  return nullptr;
}

// `void ns::kernel<T, 64>(Params)` → `ns::kernel<T, 64>`: readable, still unique enough.
std::string kernel_name(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string s = (status == 0 && d) ? d : mangled;
  std::free(d);
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (s[i] == '(' && depth == 0) return s.substr(0, i);
  }
  return s;
}

// Process-wide state: the library, CUPTI's profiler initialisation and the one
// callback subscriber CUPTI allows, set up once.
struct Global {
  std::mutex mu;
  bool tried = false;
  std::string error;  // why CUPTI is unusable in this process
  CuptiApi api;
  std::string library;  // the one loaded
  CUpti_SubscriberHandle subscriber = nullptr;
};
Global& global() {
  static Global g;
  return g;
}

void* open_library(const std::string& library) {
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h && library == "libcupti.so.13") h = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    throw CuptiFailure(fmt::format("CUPTI library not loadable: {}", e ? e : library));
  }
  return h;
}

// Loads CUPTI once per process. A library that cannot be opened is not remembered (a
// later call may name another); one that opens but cannot initialise is.
const CuptiApi& load(const std::string& library) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.tried) {
    if (!g.error.empty()) throw CuptiFailure(g.error);
    if (library != g.library) dlclose(open_library(library));  // asked for another: it must exist too
    return g.api;
  }
  g.api.handle = open_library(library);
  g.tried = true;
  g.library = library;
  try {
#define FLASHIO_CUPTI_RESOLVE(name)                                                \
  g.api.name = reinterpret_cast<decltype(g.api.name)>(dlsym(g.api.handle, #name)); \
  if (!g.api.name) throw CuptiFailure("CUPTI library " + library + " lacks " #name " (CUDA 12.6+ needed)");
    FLASHIO_CUPTI_FUNCTIONS(FLASHIO_CUPTI_RESOLVE)
#undef FLASHIO_CUPTI_RESOLVE
    // Kernel names and resources are a convenience: without the subscriber (another tool
    // holds it), ranges are named by their launch index. Subscribed before the profiler is
    // initialised, so that the callbacks serve capture_kernels() where counters are refused.
    if (g.api.cuptiSubscribe(&g.subscriber, on_launch, nullptr) == CUPTI_SUCCESS) {
      for (CUpti_CallbackId id : kDriverLaunches)
        g.api.cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
      for (CUpti_CallbackId id : kRuntimeLaunches)
        g.api.cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id);
    } else {
      g.subscriber = nullptr;
    }
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    FLASHIO_CUPTI_CHECK(g.api, cuptiProfilerInitialize(&init));
  } catch (const CuptiFailure& e) {
    g.error = e.what();
    throw;
  }
  return g.api;
}

// The current CUcontext through the runtime's driver entry point (no libcuda link).
CUcontext current_context() {
  using GetCurrent = CUresult (*)(CUcontext*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  FLASHIO_CUDA_CHECK(cudaFree(nullptr));  // make the primary context current
  FLASHIO_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q));
  if (!fn || q != cudaDriverEntryPointSuccess) throw CuptiFailure("cuCtxGetCurrent not found in the CUDA driver");
  CUcontext ctx = nullptr;
  if (reinterpret_cast<GetCurrent>(fn)(&ctx) != 0 || !ctx) throw CuptiFailure("no current CUDA context");
  return ctx;
}

std::string base_name(const std::string& metric) { return metric.substr(0, metric.find('.')); }

}  // namespace

struct CounterSession::Impl {
  const CuptiApi* api = nullptr;
  DeviceInfo dev;
  CounterSet set = CounterSet::Full;
  MetricTable table;
  std::string chip;
  CUcontext ctx = nullptr;
  std::vector<uint8_t> availability;
  CUpti_Profiler_Host_Object* host = nullptr;  // configured with `metrics`, used to evaluate
  std::vector<uint8_t> config;
  std::vector<std::string> metrics;
  std::map<std::string, std::string> absent;
  int passes = 0;
  // The range profiler of the context, enabled on the first counter pass and kept until the
  // session ends: enabling and disabling it around every pass cost about 0.7 s a point on an
  // H200 and, with two GPUs profiling at once, lost a pass's ranges now and then. Outside
  // Start/Stop it profiles nothing.
  CUpti_RangeProfiler_Object* profiler = nullptr;
  std::vector<uint8_t> data;  // the counter data image, initialised again for each pass

  ~Impl() {
    disable();
    release_host(host);
  }

  void disable() {
    if (!profiler) return;
    CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = profiler;
    api->cuptiRangeProfilerDisable(&p);
    profiler = nullptr;
  }

  CUpti_Profiler_Host_Object* new_host() {
    CUpti_Profiler_Host_Initialize_Params p{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = availability.data();
    FLASHIO_CUPTI_CHECK(*api, cuptiProfilerHostInitialize(&p));
    return p.pHostObject;
  }
  void release_host(CUpti_Profiler_Host_Object*& h) {
    if (!h) return;
    CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    p.pHostObject = h;
    api->cuptiProfilerHostDeinitialize(&p);
    h = nullptr;
  }

  // The base metrics this chip exposes (all metric types).
  std::set<std::string> available_bases() {
    std::set<std::string> out;
    CUpti_Profiler_Host_Object* h = new_host();
    for (CUpti_MetricType t : {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
      CUpti_Profiler_Host_GetBaseMetrics_Params p{CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
      p.pHostObject = h;
      p.metricType = t;
      if (api->cuptiProfilerHostGetBaseMetrics(&p) != CUPTI_SUCCESS) continue;
      for (size_t i = 0; i < p.numMetrics; ++i) out.insert(p.ppMetricNames[i]);
    }
    release_host(h);
    return out;
  }

  // Configuration image and pass count of a metric list, on host object `h`.
  std::pair<std::vector<uint8_t>, int> configure(CUpti_Profiler_Host_Object* h, const std::vector<std::string>& names) {
    std::vector<const char*> c;
    for (const auto& n : names) c.push_back(n.c_str());
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = h;
    add.ppMetricNames = c.data();
    add.numMetrics = c.size();
    FLASHIO_CUPTI_CHECK(*api, cuptiProfilerHostConfigAddMetrics(&add));
    CUpti_Profiler_Host_GetConfigImageSize_Params sz{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    sz.pHostObject = h;
    FLASHIO_CUPTI_CHECK(*api, cuptiProfilerHostGetConfigImageSize(&sz));
    std::vector<uint8_t> image(sz.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params img{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    img.pHostObject = h;
    img.configImageSize = image.size();
    img.pConfigImage = image.data();
    FLASHIO_CUPTI_CHECK(*api, cuptiProfilerHostGetConfigImage(&img));
    CUpti_Profiler_Host_GetNumOfPasses_Params np{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    np.configImageSize = image.size();
    np.pConfigImage = image.data();
    FLASHIO_CUPTI_CHECK(*api, cuptiProfilerHostGetNumOfPasses(&np));
    return {std::move(image), int(np.numOfPasses)};
  }

  void setup() {
    table = metric_table(dev.cc_major, dev.cc_minor);
    FLASHIO_CUDA_CHECK(cudaSetDevice(dev.index));
    ctx = current_context();
    CUpti_Device_GetChipName_Params cn{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cn.deviceIndex = size_t(dev.index);
    FLASHIO_CUPTI_CHECK(*api, cuptiDeviceGetChipName(&cn));
    chip = cn.pChipName;
    CUpti_Profiler_GetCounterAvailability_Params av{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    av.ctx = ctx;
    FLASHIO_CUPTI_CHECK(*api, cuptiProfilerGetCounterAvailability(&av));
    availability.resize(av.counterAvailabilityImageSize);
    av.pCounterAvailabilityImage = availability.data();
    FLASHIO_CUPTI_CHECK(*api, cuptiProfilerGetCounterAvailability(&av));

    // The table's metrics this chip has; the rest are recorded absent with the reason.
    const std::set<std::string> have = available_bases();
    std::vector<std::string> core, extras;
    for (const auto& d : table.defs) {
      if (d.metric.empty()) {
        absent[d.key] = d.absent_reason;
        continue;
      }
      if (set == CounterSet::Dram && !d.in_dram_set) continue;
      if (!have.empty() && !have.count(base_name(d.metric))) {
        absent[d.metric] = fmt::format("not exposed by CUPTI on {}", chip);
        continue;
      }
      (d.extra ? extras : core).push_back(d.metric);
    }
    // Extras stay only where they cost no extra replay pass.
    host = new_host();
    auto [image, n] = configure(host, core);
    if (!extras.empty()) {
      std::vector<std::string> all = core;
      all.insert(all.end(), extras.begin(), extras.end());
      CUpti_Profiler_Host_Object* h = new_host();
      auto [image_all, n_all] = configure(h, all);
      if (n_all == n) {
        release_host(host);
        host = h;
        image = std::move(image_all);
        core = all;
      } else {
        release_host(h);
        for (const auto& m : extras)
          absent[m] = fmt::format("left out: with it the set needs {} replay passes instead of {}", n_all, n);
      }
    }
    config = std::move(image);
    metrics = core;
    passes = n;
  }

  // Enables the range profiler on this session's context, once: it stays on until the session
  // ends or a pass fails (about 0.7 s an enable on an H200, so it is done when the session opens,
  // while the worker's first problem is prepared on the host, not on a point's counter pass).
  void enable() {
    if (profiler) return;
    std::vector<const char*> names;
    for (const auto& m : metrics) names.push_back(m.c_str());
    CUpti_RangeProfiler_Enable_Params en{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    en.ctx = ctx;
    FLASHIO_CUPTI_CHECK(*api, cuptiRangeProfilerEnable(&en));
    profiler = en.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params ds{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    ds.pRangeProfilerObject = profiler;
    ds.pMetricNames = names.data();
    ds.numMetrics = names.size();
    ds.maxNumOfRanges = kMaxRanges;
    ds.maxNumRangeTreeNodes = kMaxRanges;
    FLASHIO_CUPTI_CHECK(*api, cuptiRangeProfilerGetCounterDataSize(&ds));
    data.assign(ds.counterDataSize, 0);
  }

  nlohmann::json profile(const std::function<void()>& prepare, const std::function<void()>& launch,
                         cudaStream_t stream) {
    std::vector<const char*> names;
    for (const auto& m : metrics) names.push_back(m.c_str());
    enable();
    CUpti_RangeProfiler_Object* obj = profiler;
    struct DisableOnFailure {  // a failed pass leaves the profiler off, to be enabled afresh
      Impl* impl;
      bool ok = false;
      ~DisableOnFailure() {
        if (!ok) impl->disable();
      }
    } guard{this};

    CUpti_RangeProfiler_CounterDataImage_Initialize_Params di{
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    di.pRangeProfilerObject = obj;
    di.counterDataSize = data.size();
    di.pCounterData = data.data();
    FLASHIO_CUPTI_CHECK(*api, cuptiRangeProfilerCounterDataImageInitialize(&di));

    CUpti_RangeProfiler_SetConfig_Params sc{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = obj;
    sc.configSize = config.size();
    sc.pConfig = config.data();
    sc.counterDataImageSize = data.size();
    sc.pCounterDataImage = data.data();
    sc.range = CUPTI_AutoRange;        // one range per kernel launch
    sc.replayMode = CUPTI_UserReplay;  // we rerun the whole launch sequence per pass
    sc.maxRangesPerPass = kMaxRanges;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    FLASHIO_CUPTI_CHECK(*api, cuptiRangeProfilerSetConfig(&sc));

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
      CUpti_RangeProfiler_Start_Params st{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
      st.pRangeProfilerObject = obj;
      FLASHIO_CUPTI_CHECK(*api, cuptiRangeProfilerStart(&st));
      if (pass == 0) t_capture = &prepared;
      prepare();
      t_capture = pass == 0 ? &launches : nullptr;
      launch();
      t_capture = nullptr;
      FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
      CUpti_RangeProfiler_Stop_Params sp{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
      sp.pRangeProfilerObject = obj;
      FLASHIO_CUPTI_CHECK(*api, cuptiRangeProfilerStop(&sp));
      done = sp.isAllPassSubmitted != 0;
    }
    CUpti_RangeProfiler_DecodeData_Params dd{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    dd.pRangeProfilerObject = obj;
    FLASHIO_CUPTI_CHECK(*api, cuptiRangeProfilerDecodeData(&dd));
    if (dd.numOfRangeDropped > 0)
      throw CuptiFailure(fmt::format("{} kernel ranges dropped (more than {} launches in one call)",
                                     dd.numOfRangeDropped, kMaxRanges));
    CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = data.data();
    info.counterDataImageSize = data.size();
    FLASHIO_CUPTI_CHECK(*api, cuptiRangeProfilerGetCounterDataInfo(&info));

    // The first ranges are `prepare`'s kernels (one flush kernel where the callbacks
    // cannot count them). Names: the driver's launch callbacks, else the runtime's, when
    // they count the same launches as the ranges; otherwise the range index.
    const bool by_driver = !launches.driver.empty() || !prepared.driver.empty();
    const size_t skip = by_driver ? prepared.driver.size() : !prepared.runtime.empty() ? prepared.runtime.size() : 1;
    if (info.numTotalRanges < skip) {
      guard.ok = true;  // the pass itself completed: the profiler stays on for the retry
      throw CuptiFailure("fewer profiled ranges than launches", true);
    }
    const size_t n = info.numTotalRanges - skip;
    const std::vector<Launch>* named = pick_launches(launches, long(n));
    std::vector<RangeValues> ranges(n);
    std::vector<double> values(names.size());
    for (size_t i = 0; i < n; ++i) {
      const size_t r = skip + i;
      CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
      ev.pHostObject = host;
      ev.pCounterDataImage = data.data();
      ev.counterDataImageSize = data.size();
      ev.rangeIndex = r;
      ev.ppMetricNames = names.data();
      ev.numMetrics = names.size();
      ev.pMetricValues = values.data();
      FLASHIO_CUPTI_CHECK(*api, cuptiProfilerHostEvaluateToGpuValues(&ev));
      ranges[i].kernel = named ? kernel_name((*named)[i].name) : fmt::format("range {}", i);
      if (named) ranges[i].resources = resolve_resources((*named)[i]);
      for (size_t m = 0; m < names.size(); ++m) ranges[i].values[metrics[m]] = values[m];
    }
    nlohmann::json j = counters_json(table, set, pass, ranges, absent);
    j["chip"] = chip;
    guard.ok = true;
    return j;
  }
};

nlohmann::json capture_kernels(const std::function<void()>& launch, cudaStream_t stream, const std::string& library) {
  bool subscribed = false;
  try {
    load(library);
    subscribed = global().subscriber != nullptr;
  } catch (const CuptiFailure&) {
    subscribed = global().subscriber != nullptr;  // loaded and subscribed; the profiler refused
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
    for (const auto& l : *launches) out.push_back({kernel_name(l.name), {}, resolve_resources(l)});
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

int CounterSession::passes() const { return impl_->passes; }
const std::vector<std::string>& CounterSession::metrics() const { return impl_->metrics; }
const std::map<std::string, std::string>& CounterSession::absent() const { return impl_->absent; }

std::string CounterSession::describe() const {
  std::string absent;
  for (const auto& [m, why] : impl_->absent) absent += fmt::format("; absent {}: {}", m, why);
  return fmt::format("counters: {} set on {} ({}), {} metrics, {} replay pass{}{}", to_string(impl_->set), impl_->chip,
                     impl_->table.family, impl_->metrics.size(), impl_->passes, impl_->passes == 1 ? "" : "es", absent);
}

#endif  // FLASHIO_HAVE_RANGE_PROFILER

}  // namespace flashio

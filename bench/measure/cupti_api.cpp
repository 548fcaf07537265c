#include "bench/measure/cupti_api.h"

#include <cuda_runtime_api.h>  // types only (dim3, cudaLaunchConfig_t) for the runtime callbacks' parameters
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_target.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <generated_cuda_runtime_api_meta.h>

#include <algorithm>
#include <mutex>
#include <set>

namespace flashio::cupti {

std::string result_string(const Api& api, CUptiResult r) {
  const char* s = nullptr;
  if (api.cuptiGetResultString && api.cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return fmt::format("CUPTI error {}", int(r));
}

void throw_failure(const Api& api, CUptiResult r, const char* call, const char* file, int line) {
  throw Failure(fmt::format("{} failed: {}{} ({}:{})", call, result_string(api, r),
                            r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                                ? " — reading counters needs root or the driver option "
                                  "NVreg_RestrictProfilingToAdminUsers=0"
                                : "",
                            file, line));
}

namespace {

// Process-wide state: the library, CUPTI's profiler initialisation and the one callback
// subscriber CUPTI allows, set up once.
struct Global {
  std::mutex mu;
  bool tried = false;
  std::string error;  // why CUPTI is unusable in this process
  Api api;
  std::string library;  // the one loaded
  CUpti_SubscriberHandle subscriber = nullptr;
  bool profiler_initialized = false;
  std::string profiler_error;  // why cuptiProfilerInitialize failed
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
    throw Failure(fmt::format("CUPTI library not loadable: {}", e ? e : library));
  }
  return h;
}

std::string base_name(const std::string& metric) { return metric.substr(0, metric.find('.')); }

}  // namespace

const Api& load(const std::string& library, CUpti_CallbackFunc callback, EnableCallbacks enable) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.tried) {
    if (!g.error.empty()) throw Failure(g.error);
    if (library != g.library) dlclose(open_library(library));  // asked for another: it must exist too
    return g.api;
  }
  g.api.handle = open_library(library);
  g.tried = true;
  g.library = library;
  try {
#define FLASHIO_CUPTI_RESOLVE(name)                                                \
  g.api.name = reinterpret_cast<decltype(g.api.name)>(dlsym(g.api.handle, #name)); \
  if (!g.api.name) throw Failure("CUPTI library " + library + " lacks " #name " (CUDA 12.6+ needed)");
    FLASHIO_CUPTI_FUNCTIONS(FLASHIO_CUPTI_RESOLVE)
#undef FLASHIO_CUPTI_RESOLVE
    Dl_info info{};
    g.api.path =
        dladdr(reinterpret_cast<void*>(g.api.cuptiSubscribe), &info) && info.dli_fname ? info.dli_fname : library;
    // Kernel names and resources are a convenience: without the subscriber (another tool holds
    // it), ranges are named by their launch index. Subscribed before the profiler is initialised,
    // so that the callbacks still name kernels where the counters are refused.
    if (g.api.cuptiSubscribe(&g.subscriber, callback, nullptr) == CUPTI_SUCCESS)
      enable(g.api, g.subscriber);
    else
      g.subscriber = nullptr;
  } catch (const Failure& e) {
    g.error = e.what();
    throw;
  }
  return g.api;
}

void initialize_profiler(const Api& api) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.profiler_initialized) return;
  if (!g.profiler_error.empty()) throw Failure(g.profiler_error);
  try {
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    FLASHIO_CUPTI_CHECK(api, cuptiProfilerInitialize(&init));
    g.profiler_initialized = true;
  } catch (const Failure& e) {
    g.profiler_error = e.what();
    throw;
  }
}

bool subscribed() { return global().subscriber != nullptr; }

const std::vector<CUpti_CallbackId> kRuntimeLaunches = {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                                                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                                                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                                                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
                                                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
                                                        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                                                        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000};
const std::vector<CUpti_CallbackId> kDriverLaunches = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
                                                       CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};

bool is_driver_launch(CUpti_CallbackId id) {
  return std::find(kDriverLaunches.begin(), kDriverLaunches.end(), id) != kDriverLaunches.end();
}

namespace {

// The driver launch callbacks' parameter structs, as CUDA 13's generated_cuda_meta.h declares
// them (that header needs cuda.h's legacy _v1 types, which a plain build does not declare).
struct CuLaunchKernelParams {  // cuLaunchKernel_params, cuLaunchCooperativeKernel_params (same prefix)
  CUfunction f;
  unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
};
struct CuLaunchKernelExParams {  // cuLaunchKernelEx_params
  const CUlaunchConfig* config;
  CUfunction f;
};

// CUDA 13's `<<<>>>` goes through __cudaLaunchKernel(cudaKernel_t, …), whose parameter struct
// CUPTI does not publish: it is read as the function's parameters in order, the layout of every
// struct that is published (e.g. cudaLaunchKernel_v7000_params), and used only where no driver
// callback saw the launches (the in-process pass prefers the driver's).
struct RuntimeKernelLaunchParams {
  cudaKernel_t kernel;
  dim3 gridDim, blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};

template <typename Dims>
void set_shape(Launch& l, const Dims& grid, const Dims& block, size_t smem) {
  l.grid[0] = grid.x, l.grid[1] = grid.y, l.grid[2] = grid.z;
  l.block[0] = block.x, l.block[1] = block.y, l.block[2] = block.z;
  l.dynamic_smem = smem;
  l.has_shape = true;
}

}  // namespace

void read_launch(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* params, Launch& l) {
  if (!params) return;
  struct Dim3 {
    unsigned x, y, z;
  };
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    if (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
      const auto* p = static_cast<const CuLaunchKernelExParams*>(params);
      l.function = p->f;
      if (p->config) {
        set_shape(l, Dim3{p->config->gridDimX, p->config->gridDimY, p->config->gridDimZ},
                  Dim3{p->config->blockDimX, p->config->blockDimY, p->config->blockDimZ}, p->config->sharedMemBytes);
        l.stream = p->config->hStream;
      }
    } else {  // cuLaunchKernel, cuLaunchCooperativeKernel and their _ptsz forms
      const auto* p = static_cast<const CuLaunchKernelParams*>(params);
      l.function = p->f;
      set_shape(l, Dim3{p->gridDimX, p->gridDimY, p->gridDimZ}, Dim3{p->blockDimX, p->blockDimY, p->blockDimZ},
                p->sharedMemBytes);
      l.stream = p->hStream;
    }
    const bool ptsz = id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
                      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
                      id == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
    if (ptsz && !l.stream) l.stream = CU_STREAM_PER_THREAD;
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

void* driver_entry(const char* name) {
  // The driver the process uses is loaded already (CUDA initialised it, or injected us from it);
  // RTLD_NOLOAD finds it without loading a second one.
  static void* const driver = [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return h ? h : dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  }();
  return driver ? dlsym(driver, name) : nullptr;
}

CUcontext current_context() {
  using GetCurrent = CUresult (*)(CUcontext*);
  static const auto get = reinterpret_cast<GetCurrent>(driver_entry("cuCtxGetCurrent"));
  if (!get) throw Failure("cuCtxGetCurrent not found in the CUDA driver");
  CUcontext ctx = nullptr;
  if (get(&ctx) != CUDA_SUCCESS || !ctx) throw Failure("no current CUDA context");
  return ctx;
}

std::optional<KernelResources> resolve_resources(const Launch& l) {
  using GetAttribute = CUresult (*)(int*, CUfunction_attribute, CUfunction);
  using Occupancy = CUresult (*)(int*, CUfunction, int, size_t);
  using KernelGetFunction = CUresult (*)(CUfunction*, CUkernel);
  static const auto get_attribute = reinterpret_cast<GetAttribute>(driver_entry("cuFuncGetAttribute"));
  static const auto occupancy =
      reinterpret_cast<Occupancy>(driver_entry("cuOccupancyMaxActiveBlocksPerMultiprocessor"));
  static const auto kernel_function = reinterpret_cast<KernelGetFunction>(driver_entry("cuKernelGetFunction"));
  CUfunction f = l.function;
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

// ---- MetricConfig --------------------------------------------------------------------------

MetricConfig::MetricConfig(const Api& api, CUcontext ctx, int device_index, int cc_major, int cc_minor, CounterSet set)
    : api_(api), set_(set) {
  try {
    table_ = metric_table(cc_major, cc_minor);
  } catch (const std::invalid_argument& e) {
    throw Failure(e.what());
  }
  CUpti_Device_GetChipName_Params cn{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  cn.deviceIndex = size_t(device_index);
  FLASHIO_CUPTI_CHECK(api_, cuptiDeviceGetChipName(&cn));
  chip_ = cn.pChipName;
  CUpti_Profiler_GetCounterAvailability_Params av{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  av.ctx = ctx;
  FLASHIO_CUPTI_CHECK(api_, cuptiProfilerGetCounterAvailability(&av));
  availability_.resize(av.counterAvailabilityImageSize);
  av.pCounterAvailabilityImage = availability_.data();
  FLASHIO_CUPTI_CHECK(api_, cuptiProfilerGetCounterAvailability(&av));

  // The table's metrics this chip has; the rest are recorded absent with the reason.
  const std::set<std::string> have = [&] {
    const auto v = available_bases();
    return std::set<std::string>(v.begin(), v.end());
  }();
  std::vector<std::string> core, extras;
  for (const auto& d : table_.defs) {
    if (d.metric.empty()) {
      absent_[d.key] = d.absent_reason;
      continue;
    }
    if (set_ == CounterSet::Dram && !d.in_dram_set) continue;
    if (!have.empty() && !have.count(base_name(d.metric))) {
      absent_[d.metric] = fmt::format("not exposed by CUPTI on {}", chip_);
      continue;
    }
    (d.extra ? extras : core).push_back(d.metric);
  }
  // Extras stay only where they cost no extra replay pass.
  host_ = new_host();
  auto [image, n] = configure(host_, core);
  if (!extras.empty()) {
    std::vector<std::string> all = core;
    all.insert(all.end(), extras.begin(), extras.end());
    CUpti_Profiler_Host_Object* h = new_host();
    auto [image_all, n_all] = configure(h, all);
    if (n_all == n) {
      release_host(host_);
      host_ = h;
      image = std::move(image_all);
      core = all;
    } else {
      release_host(h);
      for (const auto& m : extras)
        absent_[m] = fmt::format("left out: with it the set needs {} replay passes instead of {}", n_all, n);
    }
  }
  config_ = std::move(image);
  metrics_ = core;
  passes_ = n;
}

MetricConfig::~MetricConfig() { release_host(host_); }

CUpti_Profiler_Host_Object* MetricConfig::new_host() {
  CUpti_Profiler_Host_Initialize_Params p{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  p.pChipName = chip_.c_str();
  p.pCounterAvailabilityImage = availability_.data();
  FLASHIO_CUPTI_CHECK(api_, cuptiProfilerHostInitialize(&p));
  return p.pHostObject;
}

void MetricConfig::release_host(CUpti_Profiler_Host_Object*& h) {
  if (!h) return;
  CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  p.pHostObject = h;
  api_.cuptiProfilerHostDeinitialize(&p);
  h = nullptr;
}

// The base metrics this chip exposes (all metric types).
std::vector<std::string> MetricConfig::available_bases() {
  std::vector<std::string> out;
  CUpti_Profiler_Host_Object* h = new_host();
  for (CUpti_MetricType t : {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
    CUpti_Profiler_Host_GetBaseMetrics_Params p{CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
    p.pHostObject = h;
    p.metricType = t;
    if (api_.cuptiProfilerHostGetBaseMetrics(&p) != CUPTI_SUCCESS) continue;
    for (size_t i = 0; i < p.numMetrics; ++i) out.push_back(p.ppMetricNames[i]);
  }
  release_host(h);
  return out;
}

// Configuration image and pass count of a metric list, on host object `h`.
std::pair<std::vector<uint8_t>, int> MetricConfig::configure(CUpti_Profiler_Host_Object* h,
                                                             const std::vector<std::string>& names) {
  std::vector<const char*> c;
  for (const auto& n : names) c.push_back(n.c_str());
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = h;
  add.ppMetricNames = c.data();
  add.numMetrics = c.size();
  FLASHIO_CUPTI_CHECK(api_, cuptiProfilerHostConfigAddMetrics(&add));
  CUpti_Profiler_Host_GetConfigImageSize_Params sz{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  sz.pHostObject = h;
  FLASHIO_CUPTI_CHECK(api_, cuptiProfilerHostGetConfigImageSize(&sz));
  std::vector<uint8_t> image(sz.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params img{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  img.pHostObject = h;
  img.configImageSize = image.size();
  img.pConfigImage = image.data();
  FLASHIO_CUPTI_CHECK(api_, cuptiProfilerHostGetConfigImage(&img));
  CUpti_Profiler_Host_GetNumOfPasses_Params np{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  np.configImageSize = image.size();
  np.pConfigImage = image.data();
  FLASHIO_CUPTI_CHECK(api_, cuptiProfilerHostGetNumOfPasses(&np));
  return {std::move(image), int(np.numOfPasses)};
}

std::map<std::string, double> MetricConfig::evaluate(const std::vector<uint8_t>& data, size_t range) const {
  std::vector<const char*> names;
  for (const auto& m : metrics_) names.push_back(m.c_str());
  std::vector<double> values(names.size());
  CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
  ev.pHostObject = host_;
  ev.pCounterDataImage = data.data();
  ev.counterDataImageSize = data.size();
  ev.rangeIndex = range;
  ev.ppMetricNames = names.data();
  ev.numMetrics = names.size();
  ev.pMetricValues = values.data();
  FLASHIO_CUPTI_CHECK(api_, cuptiProfilerHostEvaluateToGpuValues(&ev));
  std::map<std::string, double> out;
  for (size_t m = 0; m < names.size(); ++m) out[metrics_[m]] = values[m];
  return out;
}

// ---- RangeProfiler -------------------------------------------------------------------------

RangeProfiler::RangeProfiler(const Api& api, CUcontext ctx, const MetricConfig& config, size_t max_ranges)
    : api_(api), config_(config), max_ranges_(max_ranges) {
  std::vector<const char*> names;
  for (const auto& m : config_.metrics()) names.push_back(m.c_str());
  CUpti_RangeProfiler_Enable_Params en{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  en.ctx = ctx;
  FLASHIO_CUPTI_CHECK(api_, cuptiRangeProfilerEnable(&en));
  object_ = en.pRangeProfilerObject;
  try {
    CUpti_RangeProfiler_GetCounterDataSize_Params ds{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    ds.pRangeProfilerObject = object_;
    ds.pMetricNames = names.data();
    ds.numMetrics = names.size();
    ds.maxNumOfRanges = max_ranges_;
    ds.maxNumRangeTreeNodes = max_ranges_;
    FLASHIO_CUPTI_CHECK(api_, cuptiRangeProfilerGetCounterDataSize(&ds));
    data_.assign(ds.counterDataSize, 0);
  } catch (...) {
    CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = object_;
    api_.cuptiRangeProfilerDisable(&p);
    throw;
  }
}

RangeProfiler::~RangeProfiler() {
  CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
  p.pRangeProfilerObject = object_;
  api_.cuptiRangeProfilerDisable(&p);
}

void RangeProfiler::configure(CUpti_ProfilerReplayMode replay) {
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params di{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  di.pRangeProfilerObject = object_;
  di.counterDataSize = data_.size();
  di.pCounterData = data_.data();
  FLASHIO_CUPTI_CHECK(api_, cuptiRangeProfilerCounterDataImageInitialize(&di));

  CUpti_RangeProfiler_SetConfig_Params sc{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  sc.pRangeProfilerObject = object_;
  sc.configSize = config_.image().size();
  sc.pConfig = config_.image().data();
  sc.counterDataImageSize = data_.size();
  sc.pCounterDataImage = data_.data();
  sc.range = CUPTI_AutoRange;  // one range per kernel launch
  sc.replayMode = replay;
  sc.maxRangesPerPass = max_ranges_;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  FLASHIO_CUPTI_CHECK(api_, cuptiRangeProfilerSetConfig(&sc));
}

void RangeProfiler::start() {
  CUpti_RangeProfiler_Start_Params st{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  st.pRangeProfilerObject = object_;
  FLASHIO_CUPTI_CHECK(api_, cuptiRangeProfilerStart(&st));
}

bool RangeProfiler::stop() {
  CUpti_RangeProfiler_Stop_Params sp{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  sp.pRangeProfilerObject = object_;
  FLASHIO_CUPTI_CHECK(api_, cuptiRangeProfilerStop(&sp));
  return sp.isAllPassSubmitted != 0;
}

size_t RangeProfiler::decode() {
  CUpti_RangeProfiler_DecodeData_Params dd{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  dd.pRangeProfilerObject = object_;
  FLASHIO_CUPTI_CHECK(api_, cuptiRangeProfilerDecodeData(&dd));
  return dd.numOfRangeDropped;
}

size_t RangeProfiler::ranges() const {
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = data_.data();
  info.counterDataImageSize = data_.size();
  FLASHIO_CUPTI_CHECK(api_, cuptiRangeProfilerGetCounterDataInfo(&info));
  return info.numTotalRanges;
}

}  // namespace flashio::cupti

// libflashio_inject.so: the suite's CUPTI range profiler injected into any CUDA program by
// `flashio profile` (bench/cli/profile_command.cpp), through CUDA's injection mechanism: the
// driver loads the library named by CUDA_INJECTION64_PATH when the program initialises CUDA and
// calls InitializeInjection(). A program the suite did not write cannot be replayed by us, so
// CUPTI replays each kernel itself (kernel replay: memory saved and restored between the passes
// of a multi-pass set) in auto-range mode, one range per launch — the metric set, its
// configuration and evaluation are the in-process counter pass's (cupti_api.h).
//
// Per context, on its first launch: the metric set is configured and the range profiler enabled
// and started. Every FLASHIO_PROFILE_BATCH launches (default 1: each launch's counters are
// decoded when the next one starts, so a crash loses at most one) the profiler is stopped, the
// ranges decoded and written to the log (FLASHIO_PROFILE_LOG, JSON Lines: bench/core/profile_log.h)
// with one write(), and started again; the rest at context destruction and at exit. Only the
// first process of the command that initialises CUDA writes the log (it holds a lock on it). NVTX
// push/pop ranges reach CUPTI's NVTX callbacks where NVTX_INJECTION64_PATH names the CUPTI
// library (flashio profile sets it); each launch carries the ranges open on its thread, or, where
// none is, those of the thread that pushed last (PyTorch launches backward kernels from its
// autograd thread, inside a range the main thread pushed).
//
// Where counters cannot be read (no permission, another profiler, CUPTI missing parts) the
// program still runs and each launch is logged with its name and resources and the reason. A
// launch's resources (its function's attributes, grid and block) are read in its own callback:
// read later, at the next launch or at exit, a function of a module unloaded meanwhile (cuDNN's
// runtime-compiled kernels, unloaded with their handle before exit) has none.
//
// The L2 before each profiled launch (FLASHIO_PROFILE_CACHE_CONTROL, `flashio profile
// --cache-control all|none`, default all): with `all`, cleaned as Nsight Compute's default
// (--cache-control all) flushes it, so that a kernel's DRAM bytes do not depend on what the
// kernels before it left dirty in L2 (written back during the next kernel: the ncu cross-check
// at 09fd193 missed by up to 22 % on DRAM writes that way). CUPTI's range profiler has no cache
// control, so the library does it: the context synchronised, then the suite's read-only pass over
// twice the L2 (bench/cuda/l2_flush.cuh, as PTX loaded into the context: the library links no
// CUDA runtime), which writes back what was dirty. (A second pass that discarded the flush buffer's
// clean lines from sm_80 on, as ncu's flush leaves the L2 empty, changed no count — the DRAM counts of
// 36 SDPA launches the same with and without it, H100 — and was dropped.) It runs on a stream of
// its own with the range profiler stopped (so it is no range), waited for before the profiled
// launch goes on. The
// profiler's first start in a context is made once, empty, before the first clean: what it wrote
// had been evicted during the first profiled kernel (15-17 MB of DRAM writes in a kernel that
// writes 16.8 MB, against ncu's 0.04 MB; 0 after: scripts/profile_fresh_writes.py). The clean's
// launches reach these callbacks like any other: a thread-local flag keeps them out of the log,
// the records and the launch count. With `all` each launch's counters are decoded before the
// next starts (FLASHIO_PROFILE_BATCH is ignored).
//
// CUDA graphs: nothing may be synchronised, launched elsewhere or profiled while a stream captures
// a graph (PyTorch's CUDA graphs, torch.compile's mode="reduce-overhead"), so the profiler is
// stopped when a capture begins and a launch into a capturing stream is left alone (it runs later,
// inside a graph launch); a graph launch runs with the profiler stopped, unprofiled. A note at the
// end counts both: a graph's kernels have no records.
#include <cupti_driver_cbid.h>
#include <cupti_nvtx_cbid.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <generated_nvtx_meta.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>
#include <vector>

#include "bench/core/profile_log.h"
#include "bench/cuda/device_util.h"
#include "bench/measure/cupti_api.h"

namespace flashio {

extern const char* const kL2CleanPtx;  // bench/measure/l2_clean.cu as PTX, compute_75 (generated, CMakeLists.txt)

namespace {

using cupti::Launch;

// A driver entry point by its cuda.h name, the header's macros (cuMemAlloc → cuMemAlloc_v2)
// expanded first: the symbol that has the header's prototype.
#define FLASHIO_STR(x) #x
#define FLASHIO_XSTR(x) FLASHIO_STR(x)
#define FLASHIO_DRIVER_FN(fn) reinterpret_cast<decltype(&::fn)>(cupti::driver_entry(FLASHIO_XSTR(fn)))

// The L2 clean of a context (see the file's comment), set up on its first profiled launch.
struct L2Clean {
  CUfunction kernel = nullptr;
  CUdeviceptr buffer = 0, sink = 0;
  size_t bytes = 0;
  CUstream stream = nullptr;
};
thread_local bool t_cleaning = false;  // this thread is launching the clean: not the program's launch

// Room in the counter data image beyond the batch, for ranges CUPTI makes of launches the
// callbacks did not report (they are paired in launch order and a note says so).
constexpr size_t kRangeSlack = 64;

// The library's state: one per process, guarded by `mu` (callbacks come from any thread; CUPTI
// calls made while flushing may call back on the same thread, hence recursive).
struct Context {
  int device = 0;  // the CUDA ordinal (0 where the driver would not say: noted as unavailable)
  std::unique_ptr<cupti::MetricConfig> config;
  std::unique_ptr<cupti::RangeProfiler> profiler;  // null where counters are unavailable
  bool running = false;                            // between the profiler's start and stop
  bool started_once = false;                       // the profiler was started and stopped once, empty
  std::vector<ProfiledLaunch> pending;             // launched, not yet decoded
  std::unique_ptr<L2Clean> clean;                  // --cache-control all, once set up
  bool clean_failed = false;                       // set up or run failed: not cleaned (a note says why)
};
struct State {
  std::recursive_mutex mu;
  int fd = -1;
  CounterSet set = CounterSet::Full;
  size_t batch = 1;
  std::string library;
  const cupti::Api* api = nullptr;
  std::string unavailable;          // why no context gets counters (empty: try each context)
  std::optional<std::regex> range;  // --range: only launches inside a matching NVTX range are profiled
  bool clean_l2 = true;             // --cache-control all: the L2 cleaned before each profiled launch
  int64_t captured_launches = 0;    // launches into a stream capturing a CUDA graph: they run inside graph launches
  int64_t graph_launches = 0;       // CUDA graph launches: their kernels run unprofiled
  std::map<CUcontext, Context> contexts;
  int64_t launches = 0;
  uint64_t nvtx_pushes = 0;
  std::map<std::thread::id, std::vector<NvtxRange>> nvtx;  // open ranges per thread
  std::thread::id last_pusher;
};
State& state() {
  static State* s = new State;  // never destroyed: callbacks may come during the program's exit
  return *s;
}

void write_lines(const std::vector<nlohmann::json>& lines) {
  State& s = state();
  if (s.fd < 0 || lines.empty()) return;
  std::string text;
  for (const auto& j : lines) text += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(s.fd, text.data() + done, text.size() - done);
    if (n <= 0) return;  // the log is lost; the program must go on
    done += size_t(n);
  }
}

template <typename F>
F driver(const char* name) {
  return reinterpret_cast<F>(cupti::driver_entry(name));
}

// The device ordinal and compute capability of the current context (a launch callback runs in
// the launch's context).
void current_device(int& device, int& major, int& minor) {
  using CtxGetDevice = CUresult (*)(CUdevice*);
  using DeviceGetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  static const auto get_device = driver<CtxGetDevice>("cuCtxGetDevice");
  static const auto attribute = driver<DeviceGetAttribute>("cuDeviceGetAttribute");
  if (!get_device || !attribute) throw cupti::Failure("the CUDA driver lacks cuCtxGetDevice or cuDeviceGetAttribute");
  CUdevice dev = 0;
  if (get_device(&dev) != CUDA_SUCCESS) throw cupti::Failure("cuCtxGetDevice failed in a launch callback");
  device = int(dev);
  if (attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != CUDA_SUCCESS ||
      attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != CUDA_SUCCESS)
    throw cupti::Failure("cuDeviceGetAttribute failed");
}

// A context's counters, set up on its first launch: configured and enabled (started by the first
// launch to profile).
Context& context(CUcontext ctx) {
  State& s = state();
  auto [it, fresh] = s.contexts.try_emplace(ctx);
  Context& c = it->second;
  if (!fresh) return c;
  int major = 0, minor = 0;
  try {
    current_device(c.device, major, minor);
  } catch (const cupti::Failure& e) {
    write_lines({unavailable_line(-1, e.what())});
    return c;
  }
  if (!s.unavailable.empty()) {
    write_lines({unavailable_line(c.device, s.unavailable)});
    return c;
  }
  try {
    cupti::initialize_profiler(*s.api);
    c.config = std::make_unique<cupti::MetricConfig>(*s.api, ctx, c.device, major, minor, s.set);
    c.profiler = std::make_unique<cupti::RangeProfiler>(*s.api, ctx, *c.config, s.batch + kRangeSlack);
    ProfiledDevice d;
    d.device = c.device;
    d.cc_major = major, d.cc_minor = minor;
    d.chip = c.config->chip();
    d.set = s.set;
    d.passes = c.config->passes();
    d.metrics = c.config->metrics();
    d.absent = c.config->absent();
    write_lines({counters_line(d)});
  } catch (const cupti::Failure& e) {
    c.profiler.reset();
    c.config.reset();
    write_lines({unavailable_line(c.device, e.what())});
  }
  return c;
}

// Starts profiling the context's next launches (a fresh counter data image).
void start(Context& c) {
  if (!c.profiler || c.running) return;
  try {
    c.profiler->configure(CUPTI_KernelReplay);
    c.profiler->start();
    c.running = true;
  } catch (const cupti::Failure& e) {
    write_lines({unavailable_line(c.device, e.what())});
    c.profiler.reset();
  }
}

// Stops profiling, decodes the context's pending launches and writes them; with `restart`,
// profiling goes on.
void flush(Context& c, bool restart) {
  std::vector<nlohmann::json> lines;
  size_t decoded = 0;
  if (c.profiler && c.running) {
    try {
      c.profiler->stop();
      c.running = false;
      if (!c.pending.empty()) {
        const size_t dropped = c.profiler->decode();
        const size_t ranges = c.profiler->ranges();
        for (; decoded < c.pending.size() && decoded < ranges; ++decoded)
          c.pending[decoded].values = c.config->evaluate(c.profiler->data(), decoded);
        if (ranges != c.pending.size() || dropped > 0)
          lines.push_back(note_line(fmt::format(
              "GPU {}: CUPTI returned {} ranges ({} dropped) for {} kernel launches; they were paired in launch order",
              c.device, ranges, dropped, c.pending.size())));
      }
    } catch (const cupti::Failure& e) {
      lines.push_back(unavailable_line(c.device, e.what()));
      c.profiler.reset();
      c.running = false;
    }
  }
  for (size_t i = 0; i < c.pending.size(); ++i) {
    if (i >= decoded) c.pending[i].values.reset();
    lines.push_back(kernel_line(c.pending[i]));
  }
  write_lines(lines);
  c.pending.clear();
  if (restart) start(c);
}

void driver_check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) throw cupti::Failure(fmt::format("{} failed (CUresult {})", call, int(r)));
}

// The context's L2 clean: the PTX loaded, a buffer of twice the L2 (written once), a sink and a
// stream of its own. Throws cupti::Failure.
std::unique_ptr<L2Clean> set_up_clean(int device) {
  static const auto load = FLASHIO_DRIVER_FN(cuModuleLoadData);
  static const auto get_function = FLASHIO_DRIVER_FN(cuModuleGetFunction);
  static const auto attribute = FLASHIO_DRIVER_FN(cuDeviceGetAttribute);
  static const auto alloc = FLASHIO_DRIVER_FN(cuMemAlloc);
  static const auto memset = FLASHIO_DRIVER_FN(cuMemsetD8);
  static const auto create_stream = FLASHIO_DRIVER_FN(cuStreamCreate);
  static const auto synchronize = FLASHIO_DRIVER_FN(cuCtxSynchronize);
  if (!load || !get_function || !attribute || !alloc || !memset || !create_stream || !synchronize)
    throw cupti::Failure("the CUDA driver lacks an entry point the L2 clean needs");
  auto clean = std::make_unique<L2Clean>();
  CUmodule module = nullptr;
  driver_check(load(&module, kL2CleanPtx), "cuModuleLoadData (the L2 clean's PTX)");
  driver_check(get_function(&clean->kernel, module, "flashio_l2_clean"), "cuModuleGetFunction(flashio_l2_clean)");
  int l2 = 0;
  driver_check(attribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, CUdevice(device)), "cuDeviceGetAttribute(L2 size)");
  clean->bytes = l2_flush_bytes(l2);
  driver_check(alloc(&clean->buffer, clean->bytes), "cuMemAlloc (the L2 clean's buffer)");
  driver_check(alloc(&clean->sink, sizeof(unsigned)), "cuMemAlloc (the L2 clean's sink)");
  driver_check(memset(clean->buffer, 0x5a, clean->bytes), "cuMemsetD8 (the L2 clean's buffer)");
  driver_check(create_stream(&clean->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  driver_check(synchronize(), "cuCtxSynchronize");
  return clean;
}

// Cleans the L2 before a launch (the range profiler stopped): see the file's comment.
void clean_l2(Context& c) {
  State& s = state();
  if (!s.clean_l2 || !c.profiler || c.clean_failed) return;
  static const auto synchronize = FLASHIO_DRIVER_FN(cuCtxSynchronize);
  static const auto launch = FLASHIO_DRIVER_FN(cuLaunchKernel);
  static const auto stream_synchronize = FLASHIO_DRIVER_FN(cuStreamSynchronize);
  try {
    if (!synchronize || !launch || !stream_synchronize)
      throw cupti::Failure("the CUDA driver lacks an entry point the L2 clean needs");
    if (!c.clean) c.clean = set_up_clean(c.device);
    L2Clean& k = *c.clean;
    driver_check(synchronize(), "cuCtxSynchronize");  // what the kernels before wrote is in L2 now
    size_t n = k.bytes / 16;
    unsigned magic = kL2FlushMagic;
    void* args[] = {&k.buffer, &n, &k.sink, &magic};
    t_cleaning = true;
    const CUresult r = launch(k.kernel, kL2FlushBlocks, 1, 1, kL2FlushThreads, 1, 1, 0, k.stream, args, nullptr);
    t_cleaning = false;
    driver_check(r, "cuLaunchKernel (the L2 clean)");
    driver_check(stream_synchronize(k.stream), "cuStreamSynchronize (the L2 clean)");
  } catch (const cupti::Failure& e) {
    t_cleaning = false;
    c.clean_failed = true;
    write_lines({note_line(fmt::format("GPU {}: the L2 is not cleaned before the profiled launches from launch {} on "
                                       "(--cache-control all): {}",
                                       c.device, s.launches, e.what()))});
  }
}

// The NVTX ranges a launch from this thread runs in (see the file's comment).
std::vector<NvtxRange> open_ranges() {
  State& s = state();
  auto it = s.nvtx.find(std::this_thread::get_id());
  if (it != s.nvtx.end() && !it->second.empty()) return it->second;
  it = s.nvtx.find(s.last_pusher);
  return it != s.nvtx.end() ? it->second : std::vector<NvtxRange>();
}

// The driver calls that begin a stream capture, and those that launch a CUDA graph.
const std::vector<CUpti_CallbackId> kCaptureBegins = {
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,         CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,      CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz};
const std::vector<CUpti_CallbackId> kGraphLaunches = {CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
                                                      CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};
bool is_any_of(CUpti_CallbackId id, const std::vector<CUpti_CallbackId>& ids) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// True when `stream` is capturing a CUDA graph (a launch into it runs later, in a graph launch).
bool capturing(CUstream stream) {
  static const auto is_capturing = FLASHIO_DRIVER_FN(cuStreamIsCapturing);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return is_capturing && is_capturing(stream, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void on_launch(CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  if (t_cleaning) return;  // the L2 clean's own launch: not the program's
  if (cb->callbackSite != CUPTI_API_ENTER || !cupti::is_driver_launch(id) || !cb->context) return;
  State& s = state();
  Context& c = context(cb->context);
  Launch l;
  l.name = cb->symbolName ? cb->symbolName : "?";
  cupti::read_launch(CUPTI_CB_DOMAIN_DRIVER_API, id, cb->functionParams, l);
  if (capturing(l.stream)) {  // nothing runs now; and nothing may be started or synchronised during a capture
    ++s.captured_launches;
    return;
  }
  std::vector<NvtxRange> open = open_ranges();
  if (s.range && matching_range(open, *s.range) < 0) {  // outside the ranges: runs unprofiled, counted
    if (c.running) flush(c, false);
    ++s.launches;
    return;
  }
  if (s.clean_l2 && c.profiler) {
    flush(c, false);  // the launches before decoded, the profiler stopped: the clean is no range
    if (!c.started_once) {  // what the profiler's first start writes is cleaned away too (above)
      start(c);
      flush(c, false);
      c.started_once = true;
    }
    clean_l2(c);
  } else if (c.pending.size() >= s.batch) {
    flush(c, true);
  }
  start(c);
  ProfiledLaunch p;
  p.launch = s.launches++;
  p.device = c.device;
  p.mangled = l.name;
  p.nvtx = std::move(open);
  p.resources = cupti::resolve_resources(l);  // now, while its module is loaded
  c.pending.push_back(std::move(p));
  if (!c.profiler) flush(c, false);  // no counters to wait for: written at once
}

std::string message_of(const nvtxEventAttributes_t* a) {
  if (!a) return "?";
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii) return a->message.ascii;
  return "(NVTX message not in ASCII)";
}

void on_nvtx(CUpti_CallbackId id, const CUpti_NvtxData* d) {
  State& s = state();
  auto& stack = s.nvtx[std::this_thread::get_id()];
  switch (id) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      const auto* p = static_cast<const nvtxRangePushA_params*>(d->functionParams);
      stack.push_back({++s.nvtx_pushes, p && p->message ? p->message : "?"});
      s.last_pusher = std::this_thread::get_id();
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushEx: {
      const auto* p = static_cast<const nvtxRangePushEx_params*>(d->functionParams);
      stack.push_back({++s.nvtx_pushes, message_of(p ? p->eventAttrib : nullptr)});
      s.last_pusher = std::this_thread::get_id();
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      const auto* p = static_cast<const nvtxDomainRangePushEx_params*>(d->functionParams);
      stack.push_back({++s.nvtx_pushes, message_of(p ? p->core.eventAttrib : nullptr)});
      s.last_pusher = std::this_thread::get_id();
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      if (!stack.empty()) stack.pop_back();  // a pop of a push made before CUPTI listened
      break;
    default:
      break;
  }
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (!data) return;
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    if (is_any_of(id, kCaptureBegins) || is_any_of(id, kGraphLaunches)) {
      // A capture is about to begin, or a graph to run: the profiler stopped first (its launches
      // decoded), since nothing may be synchronised during a capture and a graph's kernels are
      // not profiled one by one.
      if (t_cleaning || cb->callbackSite != CUPTI_API_ENTER || !cb->context) return;
      Context& c = context(cb->context);
      if (c.running) flush(c, false);
      if (is_any_of(id, kGraphLaunches)) ++s.graph_launches;
      return;
    }
    on_launch(id, cb);
  } else if (domain == CUPTI_CB_DOMAIN_NVTX) {
    on_nvtx(id, static_cast<const CUpti_NvtxData*>(data));
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    const auto* r = static_cast<const CUpti_ResourceData*>(data);
    auto it = s.contexts.find(r->context);
    if (it == s.contexts.end()) return;
    flush(it->second, false);
    s.contexts.erase(it);
  }
}

void enable_callbacks(const cupti::Api& api, CUpti_SubscriberHandle subscriber) {
  for (const auto* ids : {&cupti::kDriverLaunches, &kCaptureBegins, &kGraphLaunches})
    for (CUpti_CallbackId id : *ids) api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  api.cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  api.cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX);
}

// At exit: every context's pending launches, then the end line.
void at_exit() {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  for (auto& [ctx, c] : s.contexts) flush(c, false);
  if (s.captured_launches > 0 || s.graph_launches > 0)
    write_lines({note_line(fmt::format(
        "{} kernel launches were captured into CUDA graphs and {} graph launches ran: a graph's kernels are not "
        "profiled and have no records (profile the program without CUDA graphs to see them, e.g. torch.compile "
        "without mode=\"reduce-overhead\")",
        s.captured_launches, s.graph_launches))});
  write_lines({end_line(s.launches)});
}

}  // namespace
}  // namespace flashio

// Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names this library. Returns
// 1 (success) even where counters are unavailable: the program must run either way.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace flashio;
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mu);
  if (s.fd >= 0) return 1;  // initialised once per process
  const char* log = std::getenv("FLASHIO_PROFILE_LOG");
  if (!log || !*log) return 1;  // not started by flashio profile: nothing to write to
  s.fd = ::open(log, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (s.fd < 0) return 1;
  // The first process of the command that initialises CUDA profiles; the processes it starts
  // inherit the environment, and find the log taken (one log, one process's launches).
  if (::flock(s.fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(s.fd);
    s.fd = -1;
    return 1;
  }
  if (const char* set = std::getenv("FLASHIO_PROFILE_SET"); set && parse_counter_set(set))
    s.set = *parse_counter_set(set);
  if (const char* cache = std::getenv("FLASHIO_PROFILE_CACHE_CONTROL"); cache && std::string(cache) == "none")
    s.clean_l2 = false;
  if (const char* batch = std::getenv("FLASHIO_PROFILE_BATCH"); batch && std::atoi(batch) > 0)
    s.batch = size_t(std::atoi(batch));
  if (const char* range = std::getenv("FLASHIO_PROFILE_RANGE"); range && *range) {
    try {
      s.range = parse_range_pattern(range);
    } catch (const std::invalid_argument& e) {  // flashio checked it: another caller's
      write_lines({note_line(std::string(e.what()) + ": every launch is profiled")});
    }
  }
  const char* library = std::getenv("FLASHIO_CUPTI_LIBRARY");
  s.library = library && *library ? library : "libcupti.so.13";
  try {
    s.api = &cupti::load(s.library, on_callback, enable_callbacks);
    write_lines({start_line(s.api->path)});
    if (!cupti::subscribed()) s.unavailable = "CUPTI's callbacks are held by another tool (a profiler is attached)";
  } catch (const cupti::Failure& e) {
    write_lines({start_line(s.library), unavailable_line(-1, e.what())});
    s.unavailable = e.what();
  }
  std::atexit(at_exit);
  return 1;
}

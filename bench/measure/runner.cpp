#include "bench/measure/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nvtx3/nvToolsExt.h>

#include "bench/core/method.h"
#include "bench/core/reference.h"
#include "bench/cuda/device_reference.h"
#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_inputs.h"
#include "bench/cuda/device_memory.h"
#include "bench/cuda/device_util.h"
#include "bench/measure/check.h"
#include "bench/measure/first_starts.h"
#include "bench/measure/cupti_profiler.h"
#include "bench/measure/problem_data.h"
#include "bench/measure/timing.h"

namespace flashio {

namespace {

// The words a point's check compares, copied back from the GPU at once into a runner's page-locked
// `staging` (held until its next copy): O's checked rows (`d.rows`, as stored, gathered on the
// GPU in the order of the rows: no copy of the whole tensor, whose host buffer cost page faults at
// every check, more with two GPUs' workers) and their LSE, and for a backward pass dQ's rows and
// the checked K/V heads of dK and dV (all keys).
struct CheckedWords {
  bool backward = false;  // dQ's rows and, where the problem checks any, dK's and dV's heads too
  const uint16_t* o = nullptr;
  std::optional<std::vector<double>> lse;  // none: the plan writes no LSE
  const uint16_t *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

CheckedWords copy_checked_words(const Problem& p, const Plan& plan, const DeviceSide& d, const DeviceBuffer& o,
                                const DeviceBuffer& lse, const DeviceBuffer& dq, const DeviceBuffer& dk,
                                const DeviceBuffer& dv, bool backward,
                                const std::vector<std::pair<int64_t, int64_t>>* kv_heads, DeviceAllocator& scratch,
                                PinnedBuffer& staging, cudaStream_t stream) {
  const size_t nrows = d.rows.bytes() / sizeof(int64_t), row = size_t(p.head_dim);
  const size_t head = size_t(p.nk() * p.head_dim), heads = kv_heads ? kv_heads->size() : 0;
  const bool with_lse = plan.writes_lse();
  const size_t words = nrows * (row + (with_lse ? 2 : 0) + (backward ? row : 0)) + 2 * heads * head;
  uint16_t* next = static_cast<uint16_t*>(staging.reserve(words * 2));
  std::vector<DeviceBuffer> packed;  // the gathered rows, until they are copied
  auto rows_of = [&](const void* buf, size_t row_words) {
    packed.emplace_back(scratch, nrows * row_words * 2);
    launch_gather_rows(static_cast<const uint16_t*>(buf), d.rows.as<int64_t>(), int64_t(nrows), int64_t(row_words),
                       packed.back().as<uint16_t>(), stream);
    FLASHIO_CUDA_CHECK(cudaMemcpyAsync(next, packed.back().get(), packed.back().bytes(), cudaMemcpyDeviceToHost, stream));
    return std::exchange(next, next + nrows * row_words);
  };
  auto heads_of = [&](const DeviceBuffer& buf) {  // [B, Hkv, Nk, d]
    const auto* src = static_cast<const uint16_t*>(buf.get());
    for (size_t i = 0; i < heads; ++i) {
      const int64_t first = ((*kv_heads)[i].first * p.kvh() + (*kv_heads)[i].second) * int64_t(head);
      FLASHIO_CUDA_CHECK(cudaMemcpyAsync(next + i * head, src + first, head * 2, cudaMemcpyDeviceToHost, stream));
    }
    return std::exchange(next, next + heads * head);
  };
  CheckedWords w;
  w.backward = backward;
  w.o = rows_of(o.get(), row);
  const uint16_t* lse_words = with_lse ? rows_of(lse.get(), 2) : nullptr;  // fp32: two words a row
  if (backward) w.dq = rows_of(dq.get(), row);
  if (heads) {
    w.dk = heads_of(dk);
    w.dv = heads_of(dv);
  }
  FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (lse_words) {
    w.lse.emplace(nrows);
    for (size_t r = 0; r < nrows; ++r) {
      float v;
      std::memcpy(&v, lse_words + 2 * r, sizeof(float));
      (*w.lse)[r] = v;
    }
  }
  return w;
}

// Adds the seconds from its construction to its destruction to `into` (PhaseTimes).
class PhaseClock {
 public:
  explicit PhaseClock(double& into) : into_(into), start_(std::chrono::steady_clock::now()) {}
  ~PhaseClock() { into_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;

 private:
  double& into_;
  std::chrono::steady_clock::time_point start_;
};

// The steps of a runner's start, each with the seconds since the step before: "context 0.001 s,
// L2 flusher 0.004 s, ...".
class StepClock {
 public:
  void step(const std::string& what) {
    const auto now = std::chrono::steady_clock::now();
    steps_.push_back(fmt::format("{} {:.3f} s", what, std::chrono::duration<double>(now - last_).count()));
    last_ = now;
  }
  std::string text() const { return fmt::format("{}", fmt::join(steps_, ", ")); }

 private:
  std::vector<std::string> steps_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace

struct Runner::State {
  DeviceInfo dev;
  RunOptions opt;
  DeviceAllocator alloc;
  cudaStream_t stream = nullptr;
  std::unique_ptr<L2Flusher> flusher;
  std::unique_ptr<CounterSession> counters;  // null: no counters, for `counters_why`
  std::string counters_why;
  // The current problem's host half (host_side.h): its forward part, and its gradients' part once
  // a point of a backward pass needed it; and its inputs on the GPU.
  std::shared_ptr<const HostForward> host;
  std::shared_ptr<const HostGradients> gradients;
  std::unique_ptr<DeviceSide> device;
  // The current problem's float64 reference where its GPU made it (HostForward::reference_on_gpu):
  // O and LSE of the checked rows, dQ of them, dK and dV of the checked heads.
  struct GpuReference {
    std::vector<double> out, lse, dq, dk, dv;
  } gpu_ref;
  // The host halves of the problems asked for (Runner::prefetch, or the sweep's), made in turn on
  // the host's cores while the GPU runs the current points.
  std::shared_ptr<HostSideMaker> maker;
  DeviceAllocator scratch;  // the checks' packed rows: kept out of the points' memory figures
  PinnedBuffer staging;     // the checks' rows and heads copied back
  // The current problem's tolerances (check.h: a pass over each reference), made at its first check.
  std::optional<double> out_atol;
  std::optional<GradientAtols> grad_atols;
  std::string poisoned;  // set after a sticky CUDA error: the context is unusable
  std::string start_steps;  // where the constructor's time went ("context 0.001 s, ...")
  std::shared_ptr<FirstStarts> starts;  // the sweep's, shared by its workers; else the runner's own
  std::map<std::string, std::vector<Point>> deferred;  // methods whose warm-up waits (first_starts.h)

  // A thirty-second of the GPU's memory (4.4 GB on an H200): more than a sweep's inputs and outputs
  // of one problem in the FA-2 setting (16k tokens, d·H = 2048: 64 MiB a tensor), little enough that
  // a library's own allocations (cuBLAS, CUPTI) still find room; our own requests free what is
  // kept when the GPU cannot meet them.
  size_t kept_across_problems() const { return size_t(dev.global_memory_bytes / 32); }

  // The phases' share of a wait for a part the maker made: split between inputs and reference as
  // the part's making was.
  static void add_wait(std::chrono::steady_clock::time_point start, double inputs_s, double reference_s,
                       PhaseTimes& ph) {
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double work = inputs_s + reference_s;
    ph.inputs_s += work > 0 ? waited * inputs_s / work : 0;
    ph.reference_s += work > 0 ? waited * reference_s / work : waited;
  }

  // The current problem's data for a point: its forward part, and for a backward pass its
  // gradients' part, each taken from the maker when it was asked for (waiting while it is being
  // made: a forward point does not wait for the gradients), else made here. The phases get the
  // time this point waited for them.
  void prepare(const Problem& p, bool with_grad, PhaseTimes& ph) {
    const std::string key = problem_key(p);
    if (!host || host->key != key) {
      device.reset();  // the previous problem's device memory first
      // Of the blocks its points kept (device_memory.h), the smaller ones stay for the next
      // problem, which often asks for the same input and output sizes; the largest (S and P of a
      // materialized method) go.
      alloc.trim_to(kept_across_problems());
      scratch.trim_to(kept_across_problems());
      gradients.reset();
      host.reset();
      out_atol.reset();
      grad_atols.reset();
      const auto start = std::chrono::steady_clock::now();
      if ((host = maker->take_forward(key))) {
        add_wait(start, host->inputs_s, host->reference_s, ph);
      } else {  // not asked for
        host = std::make_shared<const HostForward>(make_forward(p, opt));
        ph.inputs_s += host->inputs_s;
        ph.reference_s += host->reference_s;
      }
      {
        PhaseClock clock(ph.inputs_s);
        device = std::make_unique<DeviceSide>(make_device_side(*host, alloc, stream));
        verify_inputs(*host, *device);
      }
      gpu_ref = {};
      if (host->reference_on_gpu) {
        PhaseClock clock(ph.reference_s);
        device_reference_rows(p, device_tensors(), host->rows, gpu_ref.out, gpu_ref.lse, scratch, stream);
      }
    }
    if (with_grad && !gradients) {
      const auto start = std::chrono::steady_clock::now();
      if ((gradients = maker->take_gradients(key))) {
        add_wait(start, gradients->inputs_s, gradients->reference_s, ph);
      } else {  // not asked for with gradients
        gradients = std::make_shared<const HostGradients>(make_gradients(host, opt));
        ph.inputs_s += gradients->inputs_s;
        ph.reference_s += gradients->reference_s;
      }
      {
        PhaseClock clock(ph.inputs_s);
        add_device_gradients(p, *device, alloc, stream);
        verify_inputs(*gradients, *device);  // dO, and the heads the gradients added
      }
      if (host->reference_on_gpu) {
        PhaseClock clock(ph.reference_s);
        const DeviceTensors t = device_tensors();
        device_reference_dq_rows(p, t, host->rows, gpu_ref.dq, scratch, stream);
        device_reference_dkdv_heads(p, t, gradients->kv_heads, gpu_ref.dk, gpu_ref.dv, scratch, stream);
      }
    }
  }

  DeviceTensors device_tensors() const {
    const DeviceSide& d = *device;
    return {d.q.as<uint16_t>(), d.k.as<uint16_t>(), d.v.as<uint16_t>(), d.d_o.as<uint16_t>(), d.key_lengths.as<int32_t>()};
  }

  void measure(const Method& method, const Point& pt, Record& rec, const Runner::Timer& timer, PhaseTimes& ph) {
    const Problem& p = pt.problem;
    const bool backward = pt.pass != Pass::Fwd;
    prepare(p, backward, ph);
    const DeviceSide& d = *device;

    DeviceBuffer o(alloc, size_t(p.q_elements()) * 2);
    DeviceBuffer lse(alloc, size_t(p.lse_elements()) * sizeof(float));
    DeviceBuffer dq, dk, dv;
    if (backward) {
      dq = DeviceBuffer(alloc, size_t(p.q_elements()) * 2);
      dk = DeviceBuffer(alloc, size_t(p.kv_elements()) * 2);
      dv = DeviceBuffer(alloc, size_t(p.kv_elements()) * 2);
    }
    const int64_t in_bytes =
        int64_t(d.q.bytes() + d.k.bytes() + d.v.bytes() + d.block_table.bytes() + d.cu_seqlens.bytes() +
                (backward ? d.d_o.bytes() : 0));
    const int64_t out_bytes = int64_t(o.bytes() + lse.bytes() + dq.bytes() + dk.bytes() + dv.bytes());

    const int64_t before = alloc.current_bytes();
    const int64_t external_before = alloc.external_bytes();
    alloc.reset_peak();
    alloc.reset_external_peak();
    std::unique_ptr<Plan> plan;
    {
      PhaseClock clock(ph.plan_s);
      plan = method.plan(p, pt.pass, dev, alloc);
    }
    rec.tiles = plan->tiles();
    if (pt.pass != Pass::Fwd) rec.tiles_bwd = plan->backward_tiles();
    AttentionBuffers buf;
    buf.q = d.q.get();
    buf.k = d.k.get();
    buf.v = d.v.get();
    buf.o = o.get();
    buf.lse = lse.as<float>();
    buf.key_lengths = d.key_lengths.as<int>();
    buf.block_table = d.block_table.as<int>();
    buf.cu_seqlens = d.cu_seqlens.as<int>();
    buf.d_o = d.d_o.get();
    buf.dq = dq.get();
    buf.dk = dk.get();
    buf.dv = dv.get();

    // Check first: poison the outputs (0xFF.. is NaN in fp16, bf16 and fp32), run once, copy the
    // checked words back, compare them with the reference. A failed check gets no timing. On a
    // GPU timed here (time_gpu), the comparison runs while the GPU runs the warm-up calls, and the
    // timed ones follow once it has passed: the host's part of a check no longer holds the GPU idle
    // (issue 22, docs/sweep-time.md step 17). Its seconds count as check, not timed.
    std::optional<PhaseClock> check_clock(std::in_place, ph.check_s);
    for (DeviceBuffer* out : {&o, &lse, &dq, &dk, &dv})
      if (out->bytes()) FLASHIO_CUDA_CHECK(cudaMemsetAsync(out->get(), 0xFF, out->bytes(), stream));
    // Counters unavailable (not off): the launch callbacks still name this pass's kernels and
    // read their resources (registers, local memory, occupancy) on this run, which runs anyway.
    const bool capture = opt.counters != CounterSet::Off && !counters && method.info().where != "cpu";
    nlohmann::json kernels = nlohmann::json::array();
    auto check_run = [&](const std::function<void()>& part, bool of_the_pass) {
      if (!capture || !of_the_pass) return part();
      const std::string library = opt.cupti_library.empty() ? CounterSession::default_library() : opt.cupti_library;
      for (auto& k : capture_kernels(part, stream, library)) kernels.push_back(k);
    };
    check_run([&] { plan->forward(buf, stream); }, pt.pass != Pass::Bwd);
    if (backward) check_run([&] { plan->backward(buf, stream); }, true);
    const CheckedWords first = copy_checked(p, *plan, o, lse, dq, dk, dv, backward);
    const int64_t workspace = alloc.peak_bytes() - before;
    rec.memory = MemoryStats{in_bytes, out_bytes, workspace, in_bytes + out_bytes + workspace,
                             alloc.external_peak_bytes() - external_before};
    double compared_s = 0;  // the first comparison's seconds
    auto compare_first = [&] {
      PhaseClock clock(compared_s);
      rec.check = compare_checked(p, first);
      return rec.check->passed;
    };
    auto check_failed = [&] {
      rec.status = Status::Error;
      rec.reason = fmt::format("correctness check failed (|err|/tol per tensor:{}); not timed", failing(*rec.check));
    };
    const bool overlap = !timer && method.info().where != "cpu";
    if (!overlap && !compare_first()) return check_failed();
    check_clock.reset();

    std::function<void()> launch;
    switch (pt.pass) {
      case Pass::Fwd: launch = [&] { plan->forward(buf, stream); }; break;
      case Pass::Bwd: launch = [&] { plan->backward(buf, stream); }; break;  // from the saved forward above
      case Pass::FwdBwd: launch = [&] { plan->forward(buf, stream); plan->backward(buf, stream); }; break;
    }
    starts->wait_quiet(dev.index);  // no first start being made on this GPU (first_starts.h)
    {
      PhaseClock clock(ph.timed_s);
      if (timer) {
        rec.time = timer(launch, stream, opt.flush_l2 ? flusher.get() : nullptr);
      } else if (method.info().where == "cpu") {
        rec.time = time_host(launch, 0, std::min(opt.reps, 3));
      } else {
        rec.time = time_gpu(launch, opt.warmup, opt.reps, opt.flush_l2 ? flusher.get() : nullptr, stream, compare_first);
      }
    }
    if (overlap) {
      ph.check_s += compared_s;
      ph.timed_s -= compared_s;
      if (!rec.check->passed) return check_failed();
    }
    // The outputs of the last repetition must still be right: catches a pass that is not
    // repeatable (an accumulator not reset) and races that show only under repetition.
    check_clock.emplace(ph.check_s);
    const CheckResult after = compare_checked(p, copy_checked(p, *plan, o, lse, dq, dk, dv, backward));
    check_clock.reset();
    if (!after.passed) {
      rec.status = Status::Error;
      rec.reason = fmt::format("outputs wrong after the timed repetitions (|err|/tol per tensor:{})", failing(after));
      rec.time.reset();
      return;
    }
    rec.status = Status::Ok;
    starts->wait_quiet(dev.index);
    PhaseClock clock(ph.counters_s);
    rec.counters = collect_counters(method, pt.name(), launch);
    if (!kernels.empty() && !rec.counters.contains("kernels")) rec.counters["kernels"] = kernels;
    rec.bandwidth = bandwidth_of(rec, dev.peak_bandwidth_bytes_per_s());
  }

  // Runs each method and pass of `points` once on a one-sequence, one-KV-head copy of their
  // problem, unchecked and untimed. The first launch of a method's kernels in
  // a context loads their module (CUDA loads modules lazily) and the first cuBLAS handle loads
  // cuBLAS: about 0.15 s on the first point of the 64-point sweep of issue 22 (an H200, 038a03a),
  // paid by every GPU worker while its host made the first problem. Made here, in the runner's
  // start, while the host makes it (the prefetch). A method whose first start the sweep's own
  // thread is making (cuBLAS's: first_starts.h) is left for later: its points go to `deferred`,
  // and warm_up_deferred() warms it up before its first point.
  void warm_up(const std::vector<Point>& points, StepClock& clock) {
    std::set<std::pair<std::string, bool>> done;  // (method, with backward)
    for (const Point& pt : points) {
      const Method* method = builtin_registry().find(pt.method);
      const bool backward = pt.pass != Pass::Fwd;
      if (!method || method->info().where == "cpu" || !done.insert({pt.method, backward}).second) continue;
      const bool later = deferred.count(pt.method) > 0;
      if (later || starts->busy(pt.method)) {
        if (!later) clock.step(fmt::format("warm-up of {} left for later (the sweep is making cuBLAS's start)", pt.method));
        deferred[pt.method].push_back(pt);
        continue;
      }
      warm_up_one(*method, pt, backward);
      clock.step(fmt::format("warm-up of {}/{}", pt.method, backward ? "fwdbwd" : "fwd"));
    }
  }

  // Before the first point of a method warm_up() left for later: waits until the sweep's thread
  // has started it, then warms it up here (module loads of this GPU's context).
  void warm_up_deferred(const std::string& name) {
    const auto it = deferred.find(name);
    if (it == deferred.end()) return;
    const std::vector<Point> points = std::move(it->second);
    deferred.erase(it);
    starts->wait(name);
    StepClock unused;
    warm_up(points, unused);
  }

  // One unchecked, untimed run of `pt`'s method and pass on a one-sequence, one-KV-head copy of
  // its problem. Best effort: a method that fails here fails again, with its record, at its point
  // (a sticky CUDA error poisons the runner, as a point's would).
  void warm_up_one(const Method& method, const Point& pt, bool backward) {
    Problem p = pt.problem;
    p.heads = p.heads / p.kvh();
    p.kv_heads = p.kv_heads > 0 ? 1 : 0;
    p.batch = 1;
    p.padding = Padding::None;
    p.kv_page = 0;  // contiguous: the same kernels, no block table to make
    p.seqlens.clear();  // dense (a varlen point's kernels differ: their modules load at the point)
    p.seq_lengths.clear();
    p.varlen_padded = false;
    if (!method.supports(p, pt.pass, dev)) return;
    try {
      DeviceAllocator warm;
      auto zeros = [&](int64_t bytes) {
        DeviceBuffer b(warm, size_t(bytes));
        FLASHIO_CUDA_CHECK(cudaMemsetAsync(b.get(), 0, b.bytes(), stream));
        return b;
      };
      auto input = [&](int64_t elements, InputTensor which) {  // as the points' inputs are made
        DeviceBuffer b(warm, size_t(elements) * 2);
        generate_inputs_on_device(b.as<uint16_t>(), size_t(elements), p.dtype, p.seed, which, stream);
        return b;
      };
      DeviceBuffer q = input(p.q_elements(), InputTensor::Q), k = input(p.kv_elements(), InputTensor::K),
                   v = input(p.kv_elements(), InputTensor::V);
      DeviceBuffer o = zeros(p.q_elements() * 2), lse = zeros(p.batch * p.heads * p.seqlen_q * 4);
      DeviceBuffer d_o, dq, dk, dv;
      if (backward) {
        d_o = input(p.q_elements(), InputTensor::dO);
        dq = zeros(p.q_elements() * 2);
        dk = zeros(p.kv_elements() * 2);
        dv = zeros(p.kv_elements() * 2);
      }
      AttentionBuffers buf;
      buf.q = q.get();
      buf.k = k.get();
      buf.v = v.get();
      buf.o = o.get();
      buf.lse = lse.as<float>();
      buf.d_o = d_o.get();
      buf.dq = dq.get();
      buf.dk = dk.get();
      buf.dv = dv.get();
      auto plan = method.plan(p, backward ? Pass::FwdBwd : Pass::Fwd, dev, warm);
      plan->forward(buf, stream);
      if (backward) plan->backward(buf, stream);
      DeviceBuffer row = zeros(sizeof(int64_t)), packed(warm, size_t(p.head_dim) * 2);  // as the checks gather rows
      launch_gather_rows(o.as<uint16_t>(), row.as<int64_t>(), 1, p.head_dim, packed.as<uint16_t>(), stream);
      FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
    } catch (const CudaError& e) {
      if (e.sticky()) poisoned = fmt::format("in the warm-up launch of {}: {}", pt.method, e.what());
      cudaGetLastError();
    } catch (const std::exception&) {
    }
  }

  // The counter pass: its own run of the launch sequence after timing, L2 cleaned first. Its
  // launches (not the flush) run inside an NVTX range named like the record, so that a tool
  // outside selects the point's one counted call: `ncu --nvtx --nvtx-include 'flash2/fwd/.../'`,
  // `flashio profile --range`. Where no counter pass runs here (--counters off: the tool counts;
  // counters unavailable), the call is made for the tool alone, once, after the same flush, when
  // a tool is there to see it: `flashio profile` (CUDA_INJECTION64_PATH) or an Nsight tool
  // (NV_NSIGHT_INJECTION_TRANSPORT_TYPE, which ncu sets in its target, measured with ncu 2025.3);
  // a plain run makes no call it neither times nor counts.
  nlohmann::json collect_counters(const Method& method, const std::string& name, const std::function<void()>& launch) {
    const bool gpu = method.info().where != "cpu";
    auto marked = [&] {
      nvtxRangePushA(name.c_str());
      launch();
      nvtxRangePop();
    };
    if (opt.counters != CounterSet::Off && gpu && counters)
      return counters->profile([&] { flusher->flush(stream); }, marked, stream);
    static const bool tool_attached = [] {
      for (const char* var : {"CUDA_INJECTION64_PATH", "NV_NSIGHT_INJECTION_TRANSPORT_TYPE"})
        if (const char* v = std::getenv(var); v && *v) return true;
      return false;
    }();
    if (gpu && tool_attached) {
      flusher->flush(stream);
      marked();
      FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    if (opt.counters == CounterSet::Off) return counters_not_collected(counters_why);
    if (!gpu) return counters_not_collected("a CPU method has no GPU counters");
    return counters_unavailable(counters_why);
  }

  // A check in two steps: the words it compares copied back (the checked run's errors surface
  // here), then compared with the reference. O (and LSE), and for backward passes dQ on the
  // checked rows and dK, dV on the checked heads.
  CheckedWords copy_checked(const Problem& p, const Plan& plan, const DeviceBuffer& o, const DeviceBuffer& lse,
                            const DeviceBuffer& dq, const DeviceBuffer& dk, const DeviceBuffer& dv, bool backward) {
    FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
    const bool heads = backward && !gradients->kv_heads.empty();
    return copy_checked_words(p, plan, *device, o, lse, dq, dk, dv, backward, heads ? &gradients->kv_heads : nullptr,
                              scratch, staging, stream);
  }

  CheckResult compare_checked(const Problem& p, const CheckedWords& w) {
    const HostForward& d = *host;
    const bool on_gpu = d.reference_on_gpu;
    const std::vector<double>& ref_out = on_gpu ? gpu_ref.out : d.ref_out;
    if (!out_atol) out_atol = output_atol(p.dtype, ref_out);
    CheckResult c = compare_row_words_with_reference(p, d.rows.size(), ref_out, *out_atol,
                                                     on_gpu ? gpu_ref.lse : d.ref_lse, w.o, w.lse ? &*w.lse : nullptr);
    if (w.backward) {
      const HostGradients& g = *gradients;
      const std::vector<double>& ref_dq = on_gpu ? gpu_ref.dq : g.ref_dq;
      const std::vector<double>& ref_dk = on_gpu ? gpu_ref.dk : g.ref_dk;
      const std::vector<double>& ref_dv = on_gpu ? gpu_ref.dv : g.ref_dv;
      if (!grad_atols) grad_atols = gradient_atols(p.dtype, ref_dq, ref_dk, ref_dv);
      const double rtol = gradient_tolerance_for(p.dtype).rtol;
      add_tensor(c, compare_words("dq", w.dq, p.dtype, ref_dq, grad_atols->dq, rtol, true));
      if (w.dk) {
        add_tensor(c, compare_words("dk", w.dk, p.dtype, ref_dk, grad_atols->dk, rtol, true));
        add_tensor(c, compare_words("dv", w.dv, p.dtype, ref_dv, grad_atols->dv, rtol, true));
      }
      c.grad_scope = g.grad_scope;
    }
    c.reference = on_gpu ? "gpu" : "host";
    return c;
  }

  static std::string failing(const CheckResult& c) {
    std::string s;
    for (const auto& t : c.tensors)
      if (std::isnan(t.worst_ratio) || t.worst_ratio > 1.0) s += fmt::format(" {}: {:.3g}", t.name, t.worst_ratio);
    return s;
  }
};

Runner::Runner(const DeviceInfo& dev, RunOptions opt, const std::vector<Point>& first,
               std::shared_ptr<HostSideMaker> maker, std::shared_ptr<FirstStarts> starts)
    : state_(std::make_unique<State>()) {
  state_->dev = dev;
  state_->opt = opt;
  state_->starts = starts ? std::move(starts) : std::make_shared<FirstStarts>();
  // The host makes the first problem while the GPU's context, counters and warm-up start (a
  // sweep's maker: the problems it was asked for, in its order).
  if (maker) {
    state_->maker = std::move(maker);
  } else {
    state_->maker = std::make_shared<HostSideMaker>(opt);
    prefetch(first);
  }
  StepClock clock;
  FLASHIO_CUDA_CHECK(cudaSetDevice(dev.index));
  FLASHIO_CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
  clock.step("context");
  state_->flusher = std::make_unique<L2Flusher>(state_->alloc, dev.l2_bytes);
  clock.step("L2 flusher");
  state_->counters = CounterSession::open(
      dev, opt.counters, state_->counters_why,
      opt.cupti_library.empty() ? CounterSession::default_library() : opt.cupti_library);
  clock.step("counters");
  state_->warm_up(first, clock);
  state_->start_steps = clock.text();
}

std::string Runner::start_description() const { return state_->start_steps; }

std::set<std::string> Runner::deferred_methods() const {
  std::set<std::string> out;
  for (const auto& [name, points] : state_->deferred) out.insert(name);
  return out;
}

std::string Runner::counters_description() const {
  if (state_->counters) return state_->counters->describe();
  return "counters: unavailable: " + state_->counters_why;
}

Runner::~Runner() {
  state_->maker.reset();
  state_->device.reset();
  state_->flusher.reset();
  if (state_->stream) cudaStreamDestroy(state_->stream);
}

bool Runner::poisoned() const { return !state_->poisoned.empty(); }

Record Runner::run(const Point& pt) { return run(pt, Timer()); }

void Runner::prefetch(const std::vector<Point>& points) {
  if (points.empty() || poisoned()) return;
  const std::optional<bool> with_grad = host_work_of(points, state_->dev);
  if (!with_grad) return;
  const Problem& p = points.front().problem;
  if (state_->host && state_->host->key == problem_key(p)) return;  // the current problem
  state_->maker->ask(p, *with_grad);
}

Record Runner::run(const Point& pt, const Timer& timer) {
  Record rec;
  rec.method = pt.method;
  rec.pass = pt.pass;
  rec.problem = pt.problem;
  rec.device_index = state_->dev.index;
  const Method* method = builtin_registry().find(pt.method);
  if (!method) {
    rec.status = Status::Error;
    rec.reason = fmt::format("unknown method '{}'", pt.method);
    return rec;
  }
  if (!state_->poisoned.empty()) {
    rec.status = Status::Error;
    rec.reason = "not run: the CUDA context was lost after an earlier error (" + state_->poisoned + ")";
    return rec;
  }
  const Support s = method->supports(pt.problem, pt.pass, state_->dev);
  if (!s) {
    rec.status = Status::Skipped;
    rec.reason = s.reason;
    rec.counters = counters_not_collected("the point was skipped");
    return rec;
  }
  PhaseTimes phases;
  const auto start = std::chrono::steady_clock::now();
  try {
    state_->warm_up_deferred(pt.method);
    state_->measure(*method, pt, rec, timer, phases);
  } catch (const CudaError& e) {
    rec.status = e.out_of_memory() ? Status::Oom : Status::Error;
    rec.reason = e.what();
    rec.time.reset();
    if (e.sticky()) state_->poisoned = e.what();
    state_->device.reset();
    state_->gradients.reset();
    state_->host.reset();
    cudaGetLastError();
  } catch (const std::exception& e) {
    rec.status = Status::Error;
    rec.reason = e.what();
    rec.time.reset();
  }
  if (rec.status != Status::Ok) rec.counters = counters_not_collected("the point did not run to completion");
  phases.total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rec.phases = phases;
  return rec;
}

std::vector<Record> Runner::run_all(const std::vector<Point>& points,
                                    const std::function<void(const Record&, size_t, size_t)>& on_record) {
  std::vector<Record> out;
  for (size_t i = 0; i < points.size(); ++i) {
    out.push_back(run(points[i]));
    if (on_record) on_record(out.back(), i, points.size());
  }
  return out;
}

}  // namespace flashio

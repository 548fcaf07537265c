#include "bench/measure/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "bench/core/reference.h"
#include "bench/measure/check.h"
#include "bench/cuda/cuda_check.h"
#include "bench/measure/cupti_profiler.h"
#include "bench/cuda/device_memory.h"
#include "bench/core/inputs.h"
#include "bench/core/method.h"
#include "bench/measure/timing.h"

namespace flashio {

namespace {

// Inputs, their device copies and the reference values of the current problem, kept while
// consecutive points share it. Gradient inputs and references are made on first need.
struct ProblemData {
  std::string key;
  HostInputs host;
  DeviceBuffer q, k, v, d_o, key_lengths;
  std::vector<RowId> rows;
  std::vector<double> ref_out, ref_lse;
  bool have_grad_ref = false;
  std::vector<double> ref_dq;                       // rows × d
  std::vector<std::pair<int64_t, int64_t>> kv_heads;  // (b, hk) whose dK, dV are checked
  std::vector<double> ref_dk, ref_dv;               // kv_heads × Nk × d
  std::string grad_scope;

  HostTensors tensors(const Problem& p) const {
    return {host.q.data(), host.k.data(), host.v.data(), p.padding != Padding::None ? host.key_lengths.data() : nullptr};
  }
};

// The checked rows of a [B, H, Nq, d] device tensor of 16-bit words, at their places in a
// host array of the tensor's size; the other rows are neither copied nor touched. `rows` in
// BHND order, as rows_to_check gives them; runs of consecutive rows are one copy each.
std::unique_ptr<uint16_t[]> download_rows(const DeviceBuffer& buf, const Problem& p, const std::vector<RowId>& rows) {
  const size_t elements = buf.bytes() / 2;
  std::unique_ptr<uint16_t[]> out(new uint16_t[elements]);
  const auto* src = static_cast<const uint16_t*>(buf.get());
  auto flat = [&](const RowId& r) { return (r.b * p.heads + r.h) * p.seqlen_q + r.i; };
  const int64_t d = p.head_dim;
  std::vector<std::pair<int64_t, int64_t>> runs;  // (first row, rows)
  for (size_t r = 0; r < rows.size();) {
    size_t end = r + 1;
    while (end < rows.size() && flat(rows[end]) == flat(rows[end - 1]) + 1) ++end;
    runs.push_back({flat(rows[r]), int64_t(end - r)});
    r = end;
  }
  // Measured on two H200s (results/crosscheck/issue22-scaling): copying each run, thousands of
  // scattered rows at long N included, beat one pageable copy of the whole tensor (the checks
  // of the 64-point sweep: 6.0-6.4 s against 9.1-10.4 s).
  for (auto [first, count] : runs)
    FLASHIO_CUDA_CHECK(cudaMemcpy(out.get() + first * d, src + first * d, size_t(count * d) * 2, cudaMemcpyDeviceToHost));
  return out;
}

// The checked K/V heads (b, hk: all keys) of a [B, Hkv, Nk, d] device tensor, one after the other.
std::vector<double> download_kv_heads(const DeviceBuffer& buf, const Problem& p,
                                      const std::vector<std::pair<int64_t, int64_t>>& heads) {
  const int64_t per_head = p.nk() * p.head_dim;
  std::vector<uint16_t> words(heads.size() * size_t(per_head));
  const auto* src = static_cast<const uint16_t*>(buf.get());
  for (size_t i = 0; i < heads.size(); ++i) {
    const int64_t base = (heads[i].first * p.kvh() + heads[i].second) * per_head;
    FLASHIO_CUDA_CHECK(cudaMemcpy(words.data() + i * size_t(per_head), src + base, size_t(per_head) * 2,
                                  cudaMemcpyDeviceToHost));
  }
  std::vector<double> out(words.size());
  for (size_t e = 0; e < words.size(); ++e) out[e] = to_float(p.dtype, words[e]);
  return out;
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

}  // namespace

struct Runner::State {
  DeviceInfo dev;
  RunOptions opt;
  DeviceAllocator alloc;
  cudaStream_t stream = nullptr;
  std::unique_ptr<L2Flusher> flusher;
  std::unique_ptr<CounterSession> counters;  // null: no counters, for `counters_why`
  std::string counters_why;
  std::unique_ptr<ProblemData> data;
  std::string poisoned;  // set after a sticky CUDA error: the context is unusable

  ProblemData& prepare(const Problem& p, bool with_grad, PhaseTimes& ph) {
    Problem inputs_of = p;  // deterministic changes how a method runs, not its inputs or reference
    inputs_of.deterministic = false;
    const std::string key = inputs_of.name() + fmt::format("/seed:{}", p.seed);
    if (!data || data->key != key) {
      data.reset();  // free the previous problem's device memory first
      auto d = std::make_unique<ProblemData>();
      d->key = key;
      {
        PhaseClock clock(ph.inputs_s);
        d->host = make_inputs(p, false);
        d->q = upload(d->host.q);
        d->k = upload(d->host.k);
        d->v = upload(d->host.v);
        if (p.padding != Padding::None) {
          d->key_lengths = DeviceBuffer(alloc, d->host.key_lengths.size() * sizeof(int32_t));
          FLASHIO_CUDA_CHECK(cudaMemcpy(d->key_lengths.get(), d->host.key_lengths.data(),
                                        d->host.key_lengths.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
        }
      }
      {
        PhaseClock clock(ph.reference_s);
        d->rows = rows_to_check(p, opt.check_budget_macs);
        reference_rows(p, d->tensors(p), d->rows, d->ref_out, d->ref_lse, opt.host_threads);
      }
      data = std::move(d);
    }
    if (with_grad && !data->have_grad_ref) make_grad_reference(p, *data, ph);
    return *data;
  }

  DeviceBuffer upload(const std::vector<uint16_t>& host) {
    DeviceBuffer buf(alloc, host.size() * 2);
    FLASHIO_CUDA_CHECK(cudaMemcpy(buf.get(), host.data(), buf.bytes(), cudaMemcpyHostToDevice));
    return buf;
  }

  // dO, and the reference dQ on the checked rows and dK, dV on the K/V heads the budget allows.
  void make_grad_reference(const Problem& p, ProblemData& d, PhaseTimes& ph) {
    {
      PhaseClock clock(ph.inputs_s);
      d.host.d_o.resize(size_t(p.q_elements()));
      fill_normal(d.host.d_o, p.dtype, p.seed, 4);
      d.d_o = upload(d.host.d_o);
    }
    PhaseClock clock(ph.reference_s);
    reference_dq_rows(p, d.tensors(p), d.host.d_o.data(), d.rows, d.ref_dq, opt.host_threads);
    const int64_t all_heads = p.batch * p.kvh();
    const double cost = reference_dkdv_cost(p);
    if (cost * double(all_heads) <= opt.check_budget_macs) {
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t hk = 0; hk < p.kvh(); ++hk) d.kv_heads.push_back({b, hk});
    } else if (cost * 2 <= opt.check_budget_macs) {
      d.kv_heads = {{0, 0}};
      if (all_heads > 1) d.kv_heads.push_back({p.batch - 1, p.kvh() - 1});
    }
    for (auto [b, hk] : d.kv_heads) {
      std::vector<double> dk, dv;
      reference_dkdv_head(p, d.tensors(p), d.host.d_o.data(), b, hk, dk, dv, opt.host_threads);
      d.ref_dk.insert(d.ref_dk.end(), dk.begin(), dk.end());
      d.ref_dv.insert(d.ref_dv.end(), dv.begin(), dv.end());
    }
    d.grad_scope = fmt::format("dq: {} rows; dk, dv: ", d.rows.size() == size_t(p.batch * p.heads * p.seqlen_q) ? "all" : "sampled");
    d.grad_scope += d.kv_heads.empty()
                        ? fmt::format("not checked (one K/V head needs {:.2g} multiply-adds, over the budget)", cost)
                        : fmt::format("{} of {} K/V heads", d.kv_heads.size(), all_heads);
    d.have_grad_ref = true;
  }

  void measure(const Method& method, const Point& pt, Record& rec, const Runner::Timer& timer, PhaseTimes& ph) {
    const Problem& p = pt.problem;
    const bool backward = pt.pass != Pass::Fwd;
    ProblemData& d = prepare(p, backward, ph);

    DeviceBuffer o(alloc, size_t(p.q_elements()) * 2);
    DeviceBuffer lse(alloc, size_t(p.batch * p.heads * p.seqlen_q) * sizeof(float));
    DeviceBuffer dq, dk, dv;
    if (backward) {
      dq = DeviceBuffer(alloc, size_t(p.q_elements()) * 2);
      dk = DeviceBuffer(alloc, size_t(p.kv_elements()) * 2);
      dv = DeviceBuffer(alloc, size_t(p.kv_elements()) * 2);
    }
    const int64_t in_bytes = int64_t(d.q.bytes() + d.k.bytes() + d.v.bytes() + (backward ? d.d_o.bytes() : 0));
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
    buf.d_o = d.d_o.get();
    buf.dq = dq.get();
    buf.dk = dk.get();
    buf.dv = dv.get();

    // Check first: poison the outputs (0xFF.. is NaN in fp16, bf16 and fp32), run once,
    // compare with the reference. A failed check gets no timing.
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
    FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
    const int64_t workspace = alloc.peak_bytes() - before;
    rec.memory = MemoryStats{in_bytes, out_bytes, workspace, in_bytes + out_bytes + workspace,
                             alloc.external_peak_bytes() - external_before};
    rec.check = check_outputs(p, d, *plan, o, lse, dq, dk, dv, backward);
    if (!rec.check->passed) {
      rec.status = Status::Error;
      rec.reason = fmt::format("correctness check failed (|err|/tol per tensor:{}); not timed", failing(*rec.check));
      return;
    }
    check_clock.reset();

    std::function<void()> launch;
    switch (pt.pass) {
      case Pass::Fwd: launch = [&] { plan->forward(buf, stream); }; break;
      case Pass::Bwd: launch = [&] { plan->backward(buf, stream); }; break;  // from the saved forward above
      case Pass::FwdBwd: launch = [&] { plan->forward(buf, stream); plan->backward(buf, stream); }; break;
    }
    {
      PhaseClock clock(ph.timed_s);
      if (timer) {
        rec.time = timer(launch, stream, opt.flush_l2 ? flusher.get() : nullptr);
      } else if (method.info().where == "cpu") {
        rec.time = time_host(launch, 0, std::min(opt.reps, 3));
      } else {
        rec.time = time_gpu(launch, opt.warmup, opt.reps, opt.flush_l2 ? flusher.get() : nullptr, stream);
      }
    }
    // The outputs of the last repetition must still be right: catches a pass that is not
    // repeatable (an accumulator not reset) and races that show only under repetition.
    check_clock.emplace(ph.check_s);
    const CheckResult after = check_outputs(p, d, *plan, o, lse, dq, dk, dv, backward);
    check_clock.reset();
    if (!after.passed) {
      rec.status = Status::Error;
      rec.reason = fmt::format("outputs wrong after the timed repetitions (|err|/tol per tensor:{})", failing(after));
      rec.time.reset();
      return;
    }
    rec.status = Status::Ok;
    PhaseClock clock(ph.counters_s);
    rec.counters = collect_counters(method, launch);
    if (!kernels.empty() && !rec.counters.contains("kernels")) rec.counters["kernels"] = kernels;
  }

  // The counter pass: its own run of the launch sequence after timing, L2 cleaned first.
  nlohmann::json collect_counters(const Method& method, const std::function<void()>& launch) {
    if (opt.counters == CounterSet::Off) return counters_not_collected(counters_why);
    if (method.info().where == "cpu") return counters_not_collected("a CPU method has no GPU counters");
    if (!counters) return counters_unavailable(counters_why);
    return counters->profile([&] { flusher->flush(stream); }, launch, stream);
  }

  // O (and LSE), and for backward passes dQ on the checked rows and dK, dV on the checked heads.
  CheckResult check_outputs(const Problem& p, const ProblemData& d, const Plan& plan, const DeviceBuffer& o,
                            const DeviceBuffer& lse, const DeviceBuffer& dq, const DeviceBuffer& dk,
                            const DeviceBuffer& dv, bool backward) {
    FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<float> lse_host;
    if (plan.writes_lse()) {
      lse_host.resize(size_t(p.batch * p.heads * p.seqlen_q));
      FLASHIO_CUDA_CHECK(cudaMemcpy(lse_host.data(), lse.get(), lse.bytes(), cudaMemcpyDeviceToHost));
    }
    CheckResult c = compare_with_reference(p, d.rows, d.ref_out, d.ref_lse, download_rows(o, p, d.rows).get(),
                                           plan.writes_lse() ? &lse_host : nullptr);
    if (backward) {
      // dS = P∘(dP − D) cancels where a row sees few keys (exactly, with one: dQ = dK = 0),
      // yet D comes from the O rounded to the element type, so those rows carry an error of
      // the rounding of O times |dO·V|, not of their own (tiny) size: atol is floored at a
      // tenth of the largest gradient RMS, taken over non-zero elements (keys a mask hides
      // have exactly zero gradients and would shrink it).
      const Tolerance tol = gradient_tolerance_for(p.dtype);
      const double floor =
          0.1 * std::max({rms(d.ref_dq, true), rms(d.ref_dk, true), rms(d.ref_dv, true)});
      auto atol = [&](const std::vector<double>& ref) { return tol.atol_rms * std::max({rms(ref), floor, 1e-6}); };
      add_tensor(c, compare_tensor("dq", gather_rows(p, download_rows(dq, p, d.rows).get(), d.rows), d.ref_dq, atol(d.ref_dq), tol.rtol, true));
      if (!d.kv_heads.empty()) {
        add_tensor(c, compare_tensor("dk", download_kv_heads(dk, p, d.kv_heads), d.ref_dk, atol(d.ref_dk), tol.rtol, true));
        add_tensor(c, compare_tensor("dv", download_kv_heads(dv, p, d.kv_heads), d.ref_dv, atol(d.ref_dv), tol.rtol, true));
      }
      c.grad_scope = d.grad_scope;
    }
    return c;
  }

  static std::string failing(const CheckResult& c) {
    std::string s;
    for (const auto& t : c.tensors)
      if (std::isnan(t.worst_ratio) || t.worst_ratio > 1.0) s += fmt::format(" {}: {:.3g}", t.name, t.worst_ratio);
    return s;
  }
};

Runner::Runner(const DeviceInfo& dev, RunOptions opt) : state_(std::make_unique<State>()) {
  state_->dev = dev;
  state_->opt = opt;
  FLASHIO_CUDA_CHECK(cudaSetDevice(dev.index));
  FLASHIO_CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
  state_->flusher = std::make_unique<L2Flusher>(state_->alloc, dev.l2_bytes);
  state_->counters = CounterSession::open(
      dev, opt.counters, state_->counters_why,
      opt.cupti_library.empty() ? CounterSession::default_library() : opt.cupti_library);
}

std::string Runner::counters_description() const {
  if (state_->counters) return state_->counters->describe();
  return "counters: unavailable: " + state_->counters_why;
}

Runner::~Runner() {
  state_->data.reset();
  state_->flusher.reset();
  if (state_->stream) cudaStreamDestroy(state_->stream);
}

bool Runner::poisoned() const { return !state_->poisoned.empty(); }

Record Runner::run(const Point& pt) { return run(pt, Timer()); }

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
    state_->measure(*method, pt, rec, timer, phases);
  } catch (const CudaError& e) {
    rec.status = e.out_of_memory() ? Status::Oom : Status::Error;
    rec.reason = e.what();
    rec.time.reset();
    if (e.sticky()) state_->poisoned = e.what();
    state_->data.reset();
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

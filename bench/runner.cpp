#include "bench/runner.h"

#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "baselines/reference/reference.h"
#include "bench/check.h"
#include "bench/cuda_check.h"
#include "bench/device_memory.h"
#include "bench/inputs.h"
#include "bench/method.h"
#include "bench/timing.h"

namespace flashio {

// Inputs, their device copies and the reference rows of the current problem, kept while
// consecutive points share it.
struct ProblemData {
  std::string key;
  HostInputs host;
  DeviceBuffer q, k, v, key_lengths;
  std::vector<RowId> rows;
  std::vector<double> ref_out, ref_lse;
};

struct Runner::State {
  DeviceInfo dev;
  RunOptions opt;
  DeviceAllocator alloc;
  cudaStream_t stream = nullptr;
  std::unique_ptr<L2Flusher> flusher;
  std::unique_ptr<ProblemData> data;
  std::string poisoned;  // set after a sticky CUDA error: the context is unusable

  ProblemData& prepare(const Problem& p) {
    const std::string key = p.name() + fmt::format("/seed:{}", p.seed);
    if (data && data->key == key) return *data;
    data.reset();  // free the previous problem's device memory first
    auto d = std::make_unique<ProblemData>();
    d->key = key;
    d->host = make_inputs(p, false);
    const size_t qb = d->host.q.size() * 2, kvb = d->host.k.size() * 2;
    d->q = DeviceBuffer(alloc, qb);
    d->k = DeviceBuffer(alloc, kvb);
    d->v = DeviceBuffer(alloc, kvb);
    FLASHIO_CUDA_CHECK(cudaMemcpy(d->q.get(), d->host.q.data(), qb, cudaMemcpyHostToDevice));
    FLASHIO_CUDA_CHECK(cudaMemcpy(d->k.get(), d->host.k.data(), kvb, cudaMemcpyHostToDevice));
    FLASHIO_CUDA_CHECK(cudaMemcpy(d->v.get(), d->host.v.data(), kvb, cudaMemcpyHostToDevice));
    if (p.padding != Padding::None) {
      d->key_lengths = DeviceBuffer(alloc, d->host.key_lengths.size() * sizeof(int32_t));
      FLASHIO_CUDA_CHECK(cudaMemcpy(d->key_lengths.get(), d->host.key_lengths.data(),
                                    d->host.key_lengths.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    }
    d->rows = rows_to_check(p, opt.check_budget_macs);
    HostTensors t{d->host.q.data(), d->host.k.data(), d->host.v.data(),
                  p.padding != Padding::None ? d->host.key_lengths.data() : nullptr};
    reference_rows(p, t, d->rows, d->ref_out, d->ref_lse);
    data = std::move(d);
    return *data;
  }

  void measure(const Method& method, const Point& pt, Record& rec) {
    const Problem& p = pt.problem;
    ProblemData& d = prepare(p);
    if (pt.pass != Pass::Fwd) throw std::runtime_error("the runner cannot check gradients yet: backward passes are not measured");

    const int64_t in_bytes = int64_t(d.q.bytes() + d.k.bytes() + d.v.bytes());
    DeviceBuffer o(alloc, size_t(p.q_elements()) * 2);
    DeviceBuffer lse(alloc, size_t(p.batch * p.heads * p.seqlen_q) * sizeof(float));
    const int64_t out_bytes = int64_t(o.bytes() + lse.bytes());

    const int64_t before = alloc.current_bytes();
    alloc.reset_peak();
    auto plan = method.plan(p, pt.pass, dev, alloc);
    rec.tiles = plan->tiles();
    AttentionBuffers buf;
    buf.q = d.q.get();
    buf.k = d.k.get();
    buf.v = d.v.get();
    buf.o = o.get();
    buf.lse = lse.as<float>();
    buf.key_lengths = d.key_lengths.as<int>();

    // Check first: poison the outputs (0xFF.. is NaN in fp16, bf16 and fp32), run once,
    // compare with the reference. A failed check gets no timing.
    FLASHIO_CUDA_CHECK(cudaMemsetAsync(o.get(), 0xFF, o.bytes(), stream));
    FLASHIO_CUDA_CHECK(cudaMemsetAsync(lse.get(), 0xFF, lse.bytes(), stream));
    plan->forward(buf, stream);
    FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
    rec.memory = MemoryStats{in_bytes, out_bytes, alloc.peak_bytes() - before};
    std::vector<uint16_t> out(size_t(p.q_elements()));
    FLASHIO_CUDA_CHECK(cudaMemcpy(out.data(), o.get(), o.bytes(), cudaMemcpyDeviceToHost));
    std::vector<float> lse_host;
    if (plan->writes_lse()) {
      lse_host.resize(size_t(p.batch * p.heads * p.seqlen_q));
      FLASHIO_CUDA_CHECK(cudaMemcpy(lse_host.data(), lse.get(), lse.bytes(), cudaMemcpyDeviceToHost));
    }
    rec.check = compare_with_reference(p, d.rows, d.ref_out, d.ref_lse, out, plan->writes_lse() ? &lse_host : nullptr);
    if (!rec.check->passed) {
      rec.status = Status::Error;
      rec.reason = fmt::format("correctness check failed: worst |err|/tol = {:.3g} (max abs err {:.3g}, atol {:.3g}, rtol {:.3g}); not timed",
                               rec.check->worst_ratio, rec.check->max_abs_err, rec.check->atol, rec.check->rtol);
      return;
    }

    auto launch = [&] { plan->forward(buf, stream); };
    if (method.info().where == "cpu") {
      rec.time = time_host(launch, 0, std::min(opt.reps, 3));
    } else {
      rec.time = time_gpu(launch, opt.warmup, opt.reps, opt.flush_l2 ? flusher.get() : nullptr, stream);
    }
    rec.status = Status::Ok;
  }
};

Runner::Runner(const DeviceInfo& dev, RunOptions opt) : state_(std::make_unique<State>()) {
  state_->dev = dev;
  state_->opt = opt;
  FLASHIO_CUDA_CHECK(cudaSetDevice(dev.index));
  FLASHIO_CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
  state_->flusher = std::make_unique<L2Flusher>(state_->alloc, dev.l2_bytes);
}

Runner::~Runner() {
  state_->data.reset();
  state_->flusher.reset();
  if (state_->stream) cudaStreamDestroy(state_->stream);
}

Record Runner::run(const Point& pt) {
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
    return rec;
  }
  try {
    state_->measure(*method, pt, rec);
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

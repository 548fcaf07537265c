#include "bench/measure/host_side.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <tuple>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "bench/core/method.h"
#include "bench/measure/check.h"

namespace flashio {

namespace {

// Puts the calling thread, and the threads it starts (they inherit it), below the GPU workers:
// nice 10, so that on a machine whose cores the lanes fill (two lanes of every core each, with two
// GPUs) a worker that must launch, synchronise or compare is not kept waiting behind them. Best
// effort: raising one's own nice value needs no privilege.
void run_below_the_workers() {
#if defined(__linux__)
  setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), 10);
#endif
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Query heads (b·H + h) of the checked rows, and of every query head of the given K/V heads.
std::vector<int64_t> query_heads(const Problem& p, const std::vector<RowId>& rows,
                                 const std::vector<std::pair<int64_t, int64_t>>& kv_heads) {
  std::set<int64_t> heads;
  for (const auto& r : rows) heads.insert(r.b * p.heads + r.h);
  const int64_t group = p.heads / p.kvh();
  for (auto [b, hk] : kv_heads)
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h) heads.insert(b * p.heads + h);
  return {heads.begin(), heads.end()};
}

std::vector<int64_t> key_value_heads(const Problem& p, const std::vector<RowId>& rows,
                                     const std::vector<std::pair<int64_t, int64_t>>& kv_heads) {
  std::set<int64_t> heads;
  const int64_t group = p.heads / p.kvh();
  for (const auto& r : rows) heads.insert(r.b * p.kvh() + r.h / group);
  for (auto [b, hk] : kv_heads) heads.insert(b * p.kvh() + hk);
  return {heads.begin(), heads.end()};
}

// True when `t` lacks one of `heads`.
bool lacks(const HostTensor& t, const std::vector<int64_t>& heads) {
  return std::any_of(heads.begin(), heads.end(), [&](int64_t h) { return !t.has(h); });
}

}  // namespace

void HostTensor::make(const Problem& p, InputTensor which, const std::vector<int64_t>& heads, const HostTensor* from) {
  const bool query_side = which == InputTensor::Q || which == InputTensor::dO;
  const int64_t count = p.batch * (query_side ? p.heads : p.kvh());
  if (!words) {
    head_words = (query_side ? p.seqlen_q : p.nk()) * p.head_dim;
    words.reset(new uint16_t[size_t(count * head_words)]);  // not initialised: untouched pages cost nothing
    present.assign(size_t(count), 0);
  }
  std::vector<int64_t> missing;
  for (int64_t h : heads) {
    if (present[size_t(h)]) continue;
    if (from && from->has(h)) {
      std::memcpy(words.get() + h * head_words, from->words.get() + h * head_words, size_t(head_words) * 2);
      present[size_t(h)] = 1;
    } else {
      missing.push_back(h);
    }
  }
  fill_normal_heads(words.get(), head_words, missing, p.dtype, p.seed, which);
  for (int64_t h : missing) present[size_t(h)] = 1;
}

HostTensors HostForward::tensors() const {
  return {q.words.get(), k.words.get(), v.words.get(),
          problem.key_padded() || problem.varlen() ? key_lengths.data() : nullptr};
}

HostTensors HostGradients::tensors() const {
  HostTensors t = forward->tensors();
  t.q = q_of().words.get();
  t.k = k_of().words.get();
  t.v = v_of().words.get();
  return t;
}

HostForward make_forward(const Problem& p, const RunOptions& opt) {
  HostForward h;
  h.problem = p;
  h.key = problem_key(p);
  auto start = std::chrono::steady_clock::now();
  h.rows = rows_to_check(p, opt.check_budget_macs);
  h.q.make(p, InputTensor::Q, query_heads(p, h.rows, {}));
  const auto kv = key_value_heads(p, h.rows, {});
  h.k.make(p, InputTensor::K, kv);
  h.v.make(p, InputTensor::V, kv);
  h.key_lengths = key_lengths(p);
  if (p.paged()) h.pages = kv_pages_of(p);
  h.inputs_s += seconds_since(start);
  h.reference_on_gpu = opt.reference_on_gpu && device_reference_covers(p);
  if (h.reference_on_gpu) return h;
  start = std::chrono::steady_clock::now();
  reference_rows(p, h.tensors(), h.rows, h.ref_out, h.ref_lse, opt.host_threads);
  h.reference_s += seconds_since(start);
  return h;
}

HostGradients make_gradients(std::shared_ptr<const HostForward> forward, const RunOptions& opt) {
  HostGradients g;
  g.forward = std::move(forward);
  const HostForward& f = *g.forward;
  const Problem& p = f.problem;
  const int64_t all_heads = p.batch * p.kvh();
  const double cost = reference_dkdv_cost(p);
  if (cost * double(all_heads) <= opt.check_budget_macs) {
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t hk = 0; hk < p.kvh(); ++hk) g.kv_heads.push_back({b, hk});
  } else if (cost * 2 <= opt.check_budget_macs) {
    g.kv_heads = {{0, 0}};
    if (all_heads > 1) g.kv_heads.push_back({p.batch - 1, p.kvh() - 1});
  }
  auto start = std::chrono::steady_clock::now();
  const auto queries = query_heads(p, f.rows, g.kv_heads);
  const auto kv = key_value_heads(p, f.rows, g.kv_heads);
  // Heads the forward part lacks go into copies of its tensors (it is never written once made).
  if (lacks(f.q, queries)) g.q.make(p, InputTensor::Q, queries, &f.q);
  if (lacks(f.k, kv)) g.k.make(p, InputTensor::K, kv, &f.k);
  if (lacks(f.v, kv)) g.v.make(p, InputTensor::V, kv, &f.v);
  g.d_o.make(p, InputTensor::dO, queries);
  g.inputs_s += seconds_since(start);

  if (!f.reference_on_gpu) {
    start = std::chrono::steady_clock::now();
    const HostTensors t = g.tensors();
    reference_dq_rows(p, t, g.d_o.words.get(), f.rows, g.ref_dq, opt.host_threads);
    for (auto [b, hk] : g.kv_heads) {
      std::vector<double> dk, dv;
      reference_dkdv_head(p, t, g.d_o.words.get(), b, hk, dk, dv, opt.host_threads);
      g.ref_dk.insert(g.ref_dk.end(), dk.begin(), dk.end());
      g.ref_dv.insert(g.ref_dv.end(), dv.begin(), dv.end());
    }
    g.reference_s += seconds_since(start);
  }
  g.grad_scope =
      fmt::format("dq: {} rows; dk, dv: ", f.rows.size() == size_t(p.batch * p.heads * p.seqlen_q) ? "all" : "sampled");
  g.grad_scope += g.kv_heads.empty()
                      ? fmt::format("not checked (one K/V head needs {:.2g} multiply-adds, over the budget)", cost)
                      : fmt::format("{} of {} K/V heads", g.kv_heads.size(), all_heads);
  return g;
}

std::optional<bool> host_work_of(const std::vector<Point>& points, const DeviceInfo& dev) {
  std::optional<bool> with_grad;
  for (const auto& pt : points) {
    const Method* method = builtin_registry().find(pt.method);
    if (!method || !method->supports(pt.problem, pt.pass, dev)) continue;
    with_grad = with_grad.value_or(false) || pt.pass != Pass::Fwd;
  }
  return with_grad;
}

// ---- the maker ------------------------------------------------------------------------------

std::optional<NextPart> next_part(const std::vector<PartsState>& jobs, int takers) {
  std::optional<NextPart> best;
  std::tuple<bool, int64_t, bool, int64_t> best_key;  // (not waited for, needed at, forward, order): least first
  for (size_t i = 0; i < jobs.size(); ++i) {
    const PartsState& j = jobs[i];
    std::tuple<bool, int64_t, bool, int64_t> key;
    bool gradients = false;
    if (!j.forward_started) {
      key = {!j.forward_waited, j.order, true, j.order};
    } else if (j.with_grad && !j.gradients_started && j.forward_made) {
      key = {!j.gradients_waited, std::max<int64_t>(j.order, takers - 1), false, j.order};
      gradients = true;
    } else {
      continue;
    }
    if (!best || key < best_key) best = NextPart{i, gradients}, best_key = key;
  }
  return best;
}

struct HostSideMaker::Job {
  std::string key;
  Problem problem;
  PartsState state;
  bool taken = false;  // taken whole: no later take finds it
  std::promise<std::shared_ptr<const HostForward>> forward_made;
  std::shared_future<std::shared_ptr<const HostForward>> forward = forward_made.get_future().share();
  std::promise<std::shared_ptr<const HostGradients>> gradients_made;
  std::shared_future<std::shared_ptr<const HostGradients>> gradients = gradients_made.get_future().share();

  bool made() const { return state.forward_made && (!state.with_grad || state.gradients_started); }
};

HostSideMaker::HostSideMaker(RunOptions opt, int takers, Hook before_part)
    : opt_(std::move(opt)), takers_(std::max(1, takers)), before_part_(std::move(before_part)) {
  for (int i = 0; i < takers_; ++i) lanes_.emplace_back([this] { lane(); });
}

HostSideMaker::~HostSideMaker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : lanes_) t.join();
}

std::shared_ptr<HostSideMaker::Job> HostSideMaker::find(const std::string& key) const {
  for (const auto& j : jobs_)
    if (!j->taken && j->key == key) return j;
  return nullptr;
}

void HostSideMaker::ask(const Problem& p, bool with_grad) {
  const std::string key = problem_key(p);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto job = find(key)) {
      job->state.with_grad = job->state.with_grad || with_grad;
    } else {
      job = std::make_shared<Job>();
      job->key = key;
      job->problem = p;
      job->state.order = asked_++;
      job->state.with_grad = with_grad;
      jobs_.push_back(std::move(job));
    }
  }
  wake_.notify_all();
}

std::shared_ptr<const HostForward> HostSideMaker::take_forward(const std::string& key) {
  std::shared_future<std::shared_ptr<const HostForward>> made;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto job = find(key);
    if (!job) return nullptr;
    made = job->forward;
    job->state.forward_waited = true;
    job->taken = !job->state.with_grad;
  }
  wake_.notify_all();
  return made.get();
}

std::shared_ptr<const HostGradients> HostSideMaker::take_gradients(const std::string& key) {
  std::shared_future<std::shared_ptr<const HostGradients>> made;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto job = find(key);
    if (!job || !job->state.with_grad) return nullptr;
    made = job->gradients;
    job->state.forward_waited = job->state.gradients_waited = true;
    job->taken = true;
  }
  wake_.notify_all();
  return made.get();
}

size_t HostSideMaker::pending() {
  std::lock_guard<std::mutex> lock(mu_);
  return size_t(std::count_if(jobs_.begin(), jobs_.end(), [](const auto& j) { return !j->taken; }));
}

size_t HostSideMaker::waited() {
  std::lock_guard<std::mutex> lock(mu_);
  return size_t(std::count_if(jobs_.begin(), jobs_.end(), [](const auto& j) {
    const PartsState& s = j->state;
    return (s.forward_waited && !s.forward_started) || (s.gradients_waited && !s.gradients_started);
  }));
}

void HostSideMaker::lane() {
  run_below_the_workers();
  for (;;) {
    std::shared_ptr<Job> job;
    bool gradients = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        if (stop_) return;
        std::vector<PartsState> states;
        states.reserve(jobs_.size());
        for (const auto& j : jobs_) states.push_back(j->state);
        if (const auto next = next_part(states, takers_)) {
          job = jobs_[next->job];
          gradients = next->gradients;
          break;
        }
        wake_.wait(lock);
      }
      (gradients ? job->state.gradients_started : job->state.forward_started) = true;
    }
    if (before_part_) before_part_(job->problem, gradients);
    if (!gradients) {
      try {
        job->forward_made.set_value(std::make_shared<const HostForward>(make_forward(job->problem, opt_)));
      } catch (...) {
        job->forward_made.set_exception(std::current_exception());
      }
    } else {
      try {
        auto forward = job->forward.get();  // made before (its exception, if it threw, is the gradients' too)
        job->gradients_made.set_value(std::make_shared<const HostGradients>(make_gradients(std::move(forward), opt_)));
      } catch (...) {
        job->gradients_made.set_exception(std::current_exception());
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!gradients) job->state.forward_made = true;  // its gradients' part may start now
      // A job taken whole with all its parts made is done: its runner holds what it needs.
      jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(), [](const auto& j) { return j->taken && j->made(); }),
                  jobs_.end());
    }
    wake_.notify_all();
  }
}

}  // namespace flashio

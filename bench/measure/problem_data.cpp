#include "bench/measure/problem_data.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_inputs.h"
#include "bench/cuda/device_util.h"
#include "bench/core/varlen.h"
#include "bench/measure/check.h"

namespace flashio {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Calls f(first, count) for each run of consecutive heads in the sorted list.
template <typename F>
void for_each_run(const std::vector<int64_t>& heads, F f) {
  for (size_t i = 0; i < heads.size();) {
    size_t end = i + 1;
    while (end < heads.size() && heads[end] == heads[end - 1] + 1) ++end;
    f(heads[i], int64_t(end - i));
    i = end;
  }
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

DeviceBuffer generate(const Problem& p, InputTensor which, int64_t elements, DeviceAllocator& alloc,
                      cudaStream_t stream) {
  DeviceBuffer buf(alloc, size_t(elements) * 2);
  generate_inputs_on_device(buf.as<uint16_t>(), size_t(elements), p.dtype, p.seed, which, stream);
  return buf;
}

// Compares the heads of `host` not yet compared with the device copy; marks them compared.
void verify_tensor(const char* name, const HostTensor& host, const DeviceBuffer& dev, std::vector<char>& checked) {
  if (!host.words) return;
  checked.resize(host.present.size(), 0);
  std::vector<int64_t> todo;
  for (size_t h = 0; h < host.present.size(); ++h)
    if (host.present[h] && !checked[h]) todo.push_back(int64_t(h));
  std::vector<uint16_t> got;
  for_each_run(todo, [&](int64_t first, int64_t count) {
    const size_t offset = size_t(first * host.head_words), n = size_t(count * host.head_words);
    got.resize(n);
    FLASHIO_CUDA_CHECK(cudaMemcpy(got.data(), dev.as<uint16_t>() + offset, n * 2, cudaMemcpyDeviceToHost));
    if (std::memcmp(got.data(), host.words.get() + offset, n * 2) != 0) {
      size_t e = 0;
      while (got[e] == host.words[offset + e]) ++e;
      throw std::runtime_error(fmt::format(
          "the GPU's input generator differs from the host's: {} element {} is 0x{:04x} on the GPU, 0x{:04x} on "
          "the host, so the reference would not read what the methods read",
          name, offset + e, got[e], host.words[offset + e]));
    }
    for (int64_t h = first; h < first + count; ++h) checked[size_t(h)] = 1;
  });
}

// The paged twin of verify_tensor: each head of `host` not yet compared, gathered from its pages
// on the GPU (the block table read on the host) and compared with the logical head.
void verify_paged_tensor(const char* name, const Problem& p, const KvPages& pages, const HostTensor& host,
                         const DeviceBuffer& dev, std::vector<char>& checked) {
  if (!host.words) return;
  checked.resize(host.present.size(), 0);
  DeviceAllocator scratch;
  const int64_t slab = pages.page * p.head_dim;  // one head's rows of one page, 16-bit words
  DeviceBuffer slabs(scratch, size_t(pages.pages_per_seq) * sizeof(int64_t));
  DeviceBuffer gathered(scratch, size_t(pages.pages_per_seq * slab) * 2);
  std::vector<int64_t> index(size_t(pages.pages_per_seq));
  std::vector<uint16_t> got(size_t(pages.pages_per_seq * slab));
  for (size_t bh = 0; bh < host.present.size(); ++bh) {
    if (!host.present[bh] || checked[bh]) continue;
    const int64_t b = int64_t(bh) / p.kvh(), hk = int64_t(bh) % p.kvh();
    for (int64_t j = 0; j < pages.pages_per_seq; ++j)
      index[size_t(j)] = int64_t(pages.table[size_t(b * pages.pages_per_seq + j)]) * p.kvh() + hk;
    FLASHIO_CUDA_CHECK(cudaMemcpy(slabs.get(), index.data(), slabs.bytes(), cudaMemcpyHostToDevice));
    launch_gather_rows(dev.as<uint16_t>(), slabs.as<int64_t>(), pages.pages_per_seq, slab, gathered.as<uint16_t>(),
                       nullptr);
    FLASHIO_CUDA_CHECK(cudaMemcpy(got.data(), gathered.get(), gathered.bytes(), cudaMemcpyDeviceToHost));
    const uint16_t* want = host.words.get() + int64_t(bh) * host.head_words;
    if (std::memcmp(got.data(), want, size_t(host.head_words) * 2) != 0) {
      size_t e = 0;
      while (got[e] == want[e]) ++e;
      throw std::runtime_error(fmt::format(
          "the paged {} differs from the logical one: head {} element {} is 0x{:04x} in the pages, 0x{:04x} on the "
          "host, so the reference would not read what the methods read",
          name, bh, e, got[e], want[e]));
    }
    checked[bh] = 1;
  }
}

// The packed twin of verify_tensor: each head (b, h) of `host` not yet compared, its length's
// rows read from the packed [heads, T, d] tensor (rows cu[b] .. cu[b+1] of head h) and compared
// with the first rows of the logical head.
void verify_packed_tensor(const char* name, const Problem& p, const HostTensor& host, const DeviceBuffer& dev,
                          int64_t heads, std::vector<char>& checked) {
  if (!host.words) return;
  checked.resize(host.present.size(), 0);
  const std::vector<int64_t> cu = cu_seqlens(p);
  std::vector<uint16_t> got;
  for (size_t bh = 0; bh < host.present.size(); ++bh) {
    if (!host.present[bh] || checked[bh]) continue;
    const int64_t b = int64_t(bh) / heads, h = int64_t(bh) % heads;
    const size_t n = size_t((cu[size_t(b) + 1] - cu[size_t(b)]) * p.head_dim);
    got.resize(n);
    if (n)
      FLASHIO_CUDA_CHECK(cudaMemcpy(got.data(), dev.as<uint16_t>() + (h * cu.back() + cu[size_t(b)]) * p.head_dim,
                                    n * 2, cudaMemcpyDeviceToHost));
    const uint16_t* want = host.words.get() + int64_t(bh) * host.head_words;
    if (n && std::memcmp(got.data(), want, n * 2) != 0) {
      size_t e = 0;
      while (got[e] == want[e]) ++e;
      throw std::runtime_error(fmt::format(
          "the packed {} differs from the logical one: head {} element {} is 0x{:04x} packed, 0x{:04x} on the host, "
          "so the reference would not read what the methods read",
          name, bh, e, got[e], want[e]));
    }
    checked[bh] = 1;
  }
}

}  // namespace

void HostTensor::make(const Problem& p, InputTensor which, const std::vector<int64_t>& heads) {
  const bool query_side = which == InputTensor::Q || which == InputTensor::dO;
  const int64_t count = p.batch * (query_side ? p.heads : p.kvh());
  if (!words) {
    head_words = (query_side ? p.seqlen_q : p.nk()) * p.head_dim;
    words.reset(new uint16_t[size_t(count * head_words)]);  // not initialised: untouched pages cost nothing
    present.assign(size_t(count), 0);
  }
  std::vector<int64_t> missing;
  for (int64_t h : heads)
    if (!present[size_t(h)]) missing.push_back(h);
  for_each_run(missing, [&](int64_t first, int64_t n) {
    fill_normal(words.get() + first * head_words, size_t(first * head_words), size_t(n * head_words), p.dtype,
                p.seed, which);
    for (int64_t h = first; h < first + n; ++h) present[size_t(h)] = 1;
  });
}

HostTensors HostSide::tensors() const {
  return {q.words.get(), k.words.get(), v.words.get(),
          problem.key_padded() || problem.varlen() ? key_lengths.data() : nullptr};
}

std::string problem_key(const Problem& p) {
  Problem inputs_of = p;
  inputs_of.deterministic = false;
  return inputs_of.name() + fmt::format("/seed:{}", p.seed);
}

HostSide make_host_side(const Problem& p, bool with_grad, const RunOptions& opt) {
  HostSide h;
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
  start = std::chrono::steady_clock::now();
  reference_rows(p, h.tensors(), h.rows, h.ref_out, h.ref_lse, opt.host_threads);
  h.reference_s += seconds_since(start);
  if (with_grad) add_gradients(h, opt);
  return h;
}

void add_gradients(HostSide& h, const RunOptions& opt) {
  if (h.have_grad) return;
  const Problem& p = h.problem;
  const int64_t all_heads = p.batch * p.kvh();
  const double cost = reference_dkdv_cost(p);
  if (cost * double(all_heads) <= opt.check_budget_macs) {
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t hk = 0; hk < p.kvh(); ++hk) h.kv_heads.push_back({b, hk});
  } else if (cost * 2 <= opt.check_budget_macs) {
    h.kv_heads = {{0, 0}};
    if (all_heads > 1) h.kv_heads.push_back({p.batch - 1, p.kvh() - 1});
  }
  auto start = std::chrono::steady_clock::now();
  const auto queries = query_heads(p, h.rows, h.kv_heads);
  const auto kv = key_value_heads(p, h.rows, h.kv_heads);
  h.q.make(p, InputTensor::Q, queries);
  h.d_o.make(p, InputTensor::dO, queries);
  h.k.make(p, InputTensor::K, kv);
  h.v.make(p, InputTensor::V, kv);
  h.inputs_s += seconds_since(start);

  start = std::chrono::steady_clock::now();
  reference_dq_rows(p, h.tensors(), h.d_o.words.get(), h.rows, h.ref_dq, opt.host_threads);
  for (auto [b, hk] : h.kv_heads) {
    std::vector<double> dk, dv;
    reference_dkdv_head(p, h.tensors(), h.d_o.words.get(), b, hk, dk, dv, opt.host_threads);
    h.ref_dk.insert(h.ref_dk.end(), dk.begin(), dk.end());
    h.ref_dv.insert(h.ref_dv.end(), dv.begin(), dv.end());
  }
  h.reference_s += seconds_since(start);
  h.grad_scope = fmt::format("dq: {} rows; dk, dv: ",
                             h.rows.size() == size_t(p.batch * p.heads * p.seqlen_q) ? "all" : "sampled");
  h.grad_scope += h.kv_heads.empty()
                      ? fmt::format("not checked (one K/V head needs {:.2g} multiply-adds, over the budget)", cost)
                      : fmt::format("{} of {} K/V heads", h.kv_heads.size(), all_heads);
  h.have_grad = true;
}

DeviceSide make_device_side(const HostSide& h, bool with_grad, DeviceAllocator& alloc, cudaStream_t stream) {
  const Problem& p = h.problem;
  DeviceSide d;
  if (p.packed()) {  // [H, T, d] and [Hkv, T, d], the padded tensors' values at the real tokens
    const std::vector<int64_t> cu64 = cu_seqlens(p);
    const std::vector<int32_t> cu(cu64.begin(), cu64.end());
    d.cu_seqlens = DeviceBuffer(alloc, cu.size() * sizeof(int32_t));
    FLASHIO_CUDA_CHECK(
        cudaMemcpyAsync(d.cu_seqlens.get(), cu.data(), d.cu_seqlens.bytes(), cudaMemcpyHostToDevice, stream));
    for (auto [buf, which, heads] :
         {std::tuple<DeviceBuffer*, InputTensor, int64_t>{&d.q, InputTensor::Q, p.heads},
          {&d.k, InputTensor::K, p.kvh()}, {&d.v, InputTensor::V, p.kvh()}}) {
      *buf = DeviceBuffer(alloc, size_t(heads * p.total_tokens() * p.head_dim) * 2);
      const VarlenGeometry g{p.batch, heads, p.total_tokens(), p.seqlen_q, p.head_dim};
      generate_varlen_inputs_on_device(buf->as<uint16_t>(), d.cu_seqlens.as<int32_t>(), g, p.dtype, p.seed, which,
                                       stream);
    }
    FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));  // `cu`
  } else {
    d.q = generate(p, InputTensor::Q, p.q_elements(), alloc, stream);
  }
  if (p.paged()) {  // the pages, in the block table's order; the last pages' slots past Nk are zeros
    d.block_table = DeviceBuffer(alloc, h.pages.table.size() * sizeof(int32_t));
    FLASHIO_CUDA_CHECK(cudaMemcpyAsync(d.block_table.get(), h.pages.table.data(), d.block_table.bytes(),
                                       cudaMemcpyHostToDevice, stream));
    const PagedKvGeometry g{p.batch, p.kvh(), p.nk(), p.head_dim, h.pages.page, h.pages.pages_per_seq};
    for (auto [buf, which] : {std::pair<DeviceBuffer*, InputTensor>{&d.k, InputTensor::K}, {&d.v, InputTensor::V}}) {
      *buf = DeviceBuffer(alloc, size_t(h.pages.elements()) * 2);
      FLASHIO_CUDA_CHECK(cudaMemsetAsync(buf->get(), 0, buf->bytes(), stream));
      generate_paged_inputs_on_device(buf->as<uint16_t>(), d.block_table.as<int32_t>(), g, p.dtype, p.seed, which,
                                      stream);
    }
  } else if (!p.packed()) {
    d.k = generate(p, InputTensor::K, p.kv_elements(), alloc, stream);
    d.v = generate(p, InputTensor::V, p.kv_elements(), alloc, stream);
  }
  if (p.key_padded()) {
    d.key_lengths = DeviceBuffer(alloc, h.key_lengths.size() * sizeof(int32_t));
    FLASHIO_CUDA_CHECK(cudaMemcpyAsync(d.key_lengths.get(), h.key_lengths.data(), d.key_lengths.bytes(),
                                       cudaMemcpyHostToDevice, stream));
  }
  std::vector<int64_t> flat(h.rows.size());
  const std::vector<int64_t> cu = cu_seqlens(p);
  for (size_t r = 0; r < h.rows.size(); ++r) flat[r] = stored_row(p, cu, h.rows[r]);
  d.rows = DeviceBuffer(alloc, flat.size() * sizeof(int64_t));
  FLASHIO_CUDA_CHECK(cudaMemcpyAsync(d.rows.get(), flat.data(), d.rows.bytes(), cudaMemcpyHostToDevice, stream));
  if (with_grad) add_device_gradients(h, d, alloc, stream);
  FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));  // `flat` and the verification's copies
  return d;
}

void add_device_gradients(const HostSide& h, DeviceSide& d, DeviceAllocator& alloc, cudaStream_t stream) {
  if (d.d_o.get()) return;
  const Problem& p = h.problem;
  if (p.packed()) {  // as Q (no method has a packed backward yet; the inputs are right all the same)
    d.d_o = DeviceBuffer(alloc, size_t(p.q_elements()) * 2);
    const VarlenGeometry g{p.batch, p.heads, p.total_tokens(), p.seqlen_q, p.head_dim};
    generate_varlen_inputs_on_device(d.d_o.as<uint16_t>(), d.cu_seqlens.as<int32_t>(), g, p.dtype, p.seed,
                                     InputTensor::dO, stream);
  } else {
    d.d_o = generate(p, InputTensor::dO, p.q_elements(), alloc, stream);
  }
  FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void verify_inputs(const HostSide& h, DeviceSide& d) {
  if (h.problem.packed()) {
    verify_packed_tensor("Q", h.problem, h.q, d.q, h.problem.heads, d.q_checked);
    verify_packed_tensor("K", h.problem, h.k, d.k, h.problem.kvh(), d.k_checked);
    verify_packed_tensor("V", h.problem, h.v, d.v, h.problem.kvh(), d.v_checked);
    return;  // no dO: a packed problem has no backward
  }
  verify_tensor("Q", h.q, d.q, d.q_checked);
  if (h.problem.paged()) {
    verify_paged_tensor("K", h.problem, h.pages, h.k, d.k, d.k_checked);
    verify_paged_tensor("V", h.problem, h.pages, h.v, d.v, d.v_checked);
  } else {
    verify_tensor("K", h.k, d.k, d.k_checked);
    verify_tensor("V", h.v, d.v, d.v_checked);
  }
  if (d.d_o.get()) verify_tensor("dO", h.d_o, d.d_o, d.d_o_checked);
}

HostSideMaker::HostSideMaker(RunOptions opt) : opt_(std::move(opt)), thread_([this] { loop(); }) {}

HostSideMaker::~HostSideMaker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool HostSideMaker::asked(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& j) { return j->key == key; });
}

void HostSideMaker::ask(const Problem& p, bool with_grad) {
  auto job = std::make_shared<Job>();
  job->key = problem_key(p);
  job->problem = p;
  job->with_grad = with_grad;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_all();
}

std::optional<HostSide> HostSideMaker::take(const std::string& key) {
  std::future<HostSide> made;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(jobs_.begin(), jobs_.end(), [&](const auto& j) { return j->key == key; });
    if (it == jobs_.end()) return std::nullopt;
    made = std::move((*it)->result);
    jobs_.erase(jobs_.begin(), it + 1);
  }
  return made.get();
}

void HostSideMaker::loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto unstarted = [&] {
        return std::find_if(jobs_.begin(), jobs_.end(), [](const auto& j) { return !j->started; });
      };
      wake_.wait(lock, [&] { return stop_ || unstarted() != jobs_.end(); });
      if (stop_) return;
      job = *unstarted();
      job->started = true;
    }
    try {
      job->made.set_value(make_host_side(job->problem, job->with_grad, opt_));
    } catch (...) {
      job->made.set_exception(std::current_exception());
    }
  }
}

}  // namespace flashio

#include "bench/measure/problem_data.h"

#include <algorithm>
#include <cstring>
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
// on the GPU (the block table read on the host) and compared with the logical head (a paged
// varlen decode: sequence b's pages, and the first L_b keys of the logical head).
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
    const int64_t used = pages.used[size_t(b)];
    const int64_t words = p.paged_varlen() ? p.seq_lengths[size_t(b)] * p.head_dim : host.head_words;
    for (int64_t j = 0; j < used; ++j)
      index[size_t(j)] = int64_t(pages.table[size_t(b * pages.pages_per_seq + j)]) * p.kvh() + hk;
    if (used > 0) {
      FLASHIO_CUDA_CHECK(cudaMemcpy(slabs.get(), index.data(), size_t(used) * sizeof(int64_t), cudaMemcpyHostToDevice));
      launch_gather_rows(dev.as<uint16_t>(), slabs.as<int64_t>(), used, slab, gathered.as<uint16_t>(), nullptr);
      FLASHIO_CUDA_CHECK(cudaMemcpy(got.data(), gathered.get(), size_t(used * slab) * 2, cudaMemcpyDeviceToHost));
    }
    const uint16_t* want = host.words.get() + int64_t(bh) * host.head_words;
    if (words > 0 && std::memcmp(got.data(), want, size_t(words) * 2) != 0) {
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

DeviceSide make_device_side(const HostForward& h, DeviceAllocator& alloc, cudaStream_t stream) {
  const Problem& p = h.problem;
  DeviceSide d;
  if (p.packed()) {  // [H, T, d] and [Hkv, T, d], the padded tensors' values at the real tokens
    const std::vector<int64_t> cu64 = cu_seqlens(p);
    const std::vector<int32_t> cu(cu64.begin(), cu64.end());
    d.cu_seqlens = DeviceBuffer(alloc, cu.size() * sizeof(int32_t));
    FLASHIO_CUDA_CHECK(
        cudaMemcpyAsync(d.cu_seqlens.get(), cu.data(), d.cu_seqlens.bytes(), cudaMemcpyHostToDevice, stream));
    for (auto [buf, which, heads, padded_to] :
         {std::tuple<DeviceBuffer*, InputTensor, int64_t, int64_t>{&d.q, InputTensor::Q, p.heads, p.seqlen_q},
          {&d.k, InputTensor::K, p.kvh(), p.nk()}, {&d.v, InputTensor::V, p.kvh(), p.nk()}}) {
      if (which == InputTensor::Q && !p.packed_q()) continue;  // a varlen decode's Q is dense
      if (which != InputTensor::Q && p.paged()) continue;      // a paged varlen decode's K/V: pages, below
      *buf = DeviceBuffer(alloc, size_t(heads * p.total_tokens() * p.head_dim) * 2);
      const VarlenGeometry g{p.batch, heads, p.total_tokens(), padded_to, p.head_dim};
      generate_varlen_inputs_on_device(buf->as<uint16_t>(), d.cu_seqlens.as<int32_t>(), g, p.dtype, p.seed, which,
                                       stream);
    }
    FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));  // `cu`
  }
  if (!p.packed_q()) d.q = generate(p, InputTensor::Q, p.q_elements(), alloc, stream);
  if (p.paged()) {  // the pages, in the block table's order; the last pages' slots past Nk are zeros
    d.block_table = DeviceBuffer(alloc, h.pages.table.size() * sizeof(int32_t));
    FLASHIO_CUDA_CHECK(cudaMemcpyAsync(d.block_table.get(), h.pages.table.data(), d.block_table.bytes(),
                                       cudaMemcpyHostToDevice, stream));
    DeviceBuffer lengths;  // a paged varlen decode: each sequence's keys (its pages), past them nothing
    if (p.paged_varlen()) {
      lengths = DeviceBuffer(alloc, p.seq_lengths.size() * sizeof(int32_t));
      FLASHIO_CUDA_CHECK(
          cudaMemcpyAsync(lengths.get(), p.seq_lengths.data(), lengths.bytes(), cudaMemcpyHostToDevice, stream));
    }
    PagedKvGeometry g{p.batch, p.kvh(), p.nk(), p.head_dim, h.pages.page, h.pages.pages_per_seq};
    g.key_lengths = lengths.as<int32_t>();
    for (auto [buf, which] : {std::pair<DeviceBuffer*, InputTensor>{&d.k, InputTensor::K}, {&d.v, InputTensor::V}}) {
      *buf = DeviceBuffer(alloc, size_t(h.pages.elements()) * 2);
      FLASHIO_CUDA_CHECK(cudaMemsetAsync(buf->get(), 0, buf->bytes(), stream));
      generate_paged_inputs_on_device(buf->as<uint16_t>(), d.block_table.as<int32_t>(), g, p.dtype, p.seed, which,
                                      stream);
    }
    FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));  // `lengths`, freed at the end of this block
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
  FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));  // `flat` and the verification's copies
  return d;
}

void add_device_gradients(const Problem& p, DeviceSide& d, DeviceAllocator& alloc, cudaStream_t stream) {
  if (d.d_o.get()) return;
  if (p.packed_q()) {  // as Q (no method has a packed backward yet; the inputs are right all the same)
    d.d_o = DeviceBuffer(alloc, size_t(p.q_elements()) * 2);
    const VarlenGeometry g{p.batch, p.heads, p.total_tokens(), p.seqlen_q, p.head_dim};
    generate_varlen_inputs_on_device(d.d_o.as<uint16_t>(), d.cu_seqlens.as<int32_t>(), g, p.dtype, p.seed,
                                     InputTensor::dO, stream);
  } else {
    d.d_o = generate(p, InputTensor::dO, p.q_elements(), alloc, stream);
  }
  FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
}

namespace {

// The heads of q, k, v (and d_o, when given) not yet compared.
void verify(const HostForward& f, const HostTensor& q, const HostTensor& k, const HostTensor& v,
            const HostTensor* d_o, DeviceSide& d) {
  const Problem& p = f.problem;
  if (p.packed()) {
    if (p.packed_q()) {
      verify_packed_tensor("Q", p, q, d.q, p.heads, d.q_checked);
    } else {  // a varlen decode: Q dense
      verify_tensor("Q", q, d.q, d.q_checked);
    }
    if (p.paged()) {  // a paged varlen decode: each sequence's own pages
      verify_paged_tensor("K", p, f.pages, k, d.k, d.k_checked);
      verify_paged_tensor("V", p, f.pages, v, d.v, d.v_checked);
    } else {
      verify_packed_tensor("K", p, k, d.k, p.kvh(), d.k_checked);
      verify_packed_tensor("V", p, v, d.v, p.kvh(), d.v_checked);
    }
    return;  // no dO: a packed problem has no backward
  }
  verify_tensor("Q", q, d.q, d.q_checked);
  if (p.paged()) {
    verify_paged_tensor("K", p, f.pages, k, d.k, d.k_checked);
    verify_paged_tensor("V", p, f.pages, v, d.v, d.v_checked);
  } else {
    verify_tensor("K", k, d.k, d.k_checked);
    verify_tensor("V", v, d.v, d.v_checked);
  }
  if (d_o) verify_tensor("dO", *d_o, d.d_o, d.d_o_checked);
}

}  // namespace

void verify_inputs(const HostForward& h, DeviceSide& d) { verify(h, h.q, h.k, h.v, nullptr, d); }

void verify_inputs(const HostGradients& h, DeviceSide& d) {
  verify(*h.forward, h.q_of(), h.k_of(), h.v_of(), d.d_o.get() ? &h.d_o : nullptr, d);
}

}  // namespace flashio

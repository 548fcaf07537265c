#include "bench/core/method.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace flashio {

nlohmann::json Tiles::to_json() const {
  nlohmann::json j = {{"block_r", block_r}, {"block_c", block_c}, {"warps", warps}, {"stages", stages},
                      {"smem_bytes", smem_bytes}};
  if (splits > 0) j["splits"] = splits;
  if (!mma.empty()) j["mma"] = mma;
  if (!smem_layout.empty()) j["smem_layout"] = smem_layout;
  if (!elementwise.empty()) j["elementwise"] = elementwise;
  if (!dq_adds.empty()) j["dq_adds"] = dq_adds;
  return j;
}

void Plan::backward(const AttentionBuffers&, cudaStream_t) {
  throw std::logic_error("this method has no backward pass");
}

template <typename T>
static bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

Support check_common(const MethodInfo& info, const Problem& p, Pass pass, const DeviceInfo& dev) {
  if (!contains(info.passes, pass))
    return Support::no(fmt::format("{} has no {} pass yet", info.name, to_string(pass)));
  if (!contains(info.dtypes, p.dtype)) return Support::no(fmt::format("{} does not support {}", info.name, to_string(p.dtype)));
  if (!info.head_dims.empty() && !contains(info.head_dims, int(p.head_dim)))
    return Support::no(fmt::format("{} supports head dims {} only (got {})", info.name,
                                   fmt::join(info.head_dims, ", "), p.head_dim));
  if (p.causal && !contains(info.masks, std::string("causal")))
    return Support::no(fmt::format("{} has no causal mask yet", info.name));
  if (p.key_padded() && !contains(info.masks, std::string("padding")))
    return Support::no(fmt::format("{} has no key-padding mask yet", info.name));
  if (p.sparse() && !contains(info.masks, std::string("blocksparse")))
    return Support::no(fmt::format("{} has no block-sparse mask (pattern {}); see blocksparse_flash, blocksparse_standard",
                                   info.name, p.pattern));
  if (p.dropout > 0.0 && !info.dropout) return Support::no(fmt::format("{} has no dropout yet", info.name));
  if (p.deterministic && pass != Pass::Fwd && !info.deterministic)
    return Support::no(fmt::format("{} has no deterministic backward (its dQ is accumulated with atomics)", info.name));
  if (!p.mma.empty() && !contains(info.mma, p.mma))
    return Support::no(info.mma.empty() ? fmt::format("{} has no fused kernels: --mma {} does not apply", info.name, p.mma)
                                        : fmt::format("{} has no {} kernels (it has: {})", info.name, p.mma,
                                                      fmt::join(info.mma, ", ")));
  if (p.paged() && !info.paged_kv)
    return Support::no(fmt::format("{} cannot read a paged K/V cache ({}): it reads contiguous K/V [B, Hkv, Nk, d]",
                                   info.name, kv_layout_name(p)));
  if (p.packed() && p.key_varlen() && !info.varlen_decode)
    return Support::no(
        fmt::format("{} cannot read a packed varlen decode (--seqlens {} --seqlen-q {}: K/V packed "
                    "[Hkv, T, d], Q dense; flash_decode can); --varlen-as padded runs the same "
                    "sequences padded to the longest",
                    info.name, p.seqlens, p.seqlen_q));
  if (p.packed_q() && !info.varlen)
    return Support::no(fmt::format("{} cannot read packed variable-length input (--seqlens {}): it reads [B, H, N, d] "
                                   "tensors; --varlen-as padded runs the same sequences padded to the longest",
                                   info.name, p.seqlens));
  if (p.kvh() != p.heads && !info.gqa) return Support::no(fmt::format("{} does not support GQA/MQA (kv-heads != heads)", info.name));
  if (info.where == "gpu") {
    if (dev.compute_capability() < 75)
      return Support::no(fmt::format("needs compute capability 7.5 or newer (this GPU: {}.{})", dev.cc_major, dev.cc_minor));
    if (p.dtype == DType::BF16 && dev.compute_capability() < 80)
      return Support::no(fmt::format("bf16 needs bf16 tensor cores (sm_80+); this GPU is sm_{}", dev.compute_capability()));
  }
  return Support::yes();
}

Support check_fused_kernels(const Problem& p, const DeviceInfo& dev) {
  if (p.dtype == DType::BF16 && dev.kernel_ptx_arch > 0 && dev.kernel_ptx_arch < 80)
    return Support::no(fmt::format(
        "bf16 needs kernels generated for compute_80 or newer; this binary's are compute_{} code (JIT-compiled "
        "to sm_{}), where bf16 mma traps (rebuild with CMAKE_CUDA_ARCHITECTURES >= 80)",
        dev.kernel_ptx_arch, dev.kernel_binary_arch));
  return Support::yes();
}

std::unique_ptr<Plan> Method::plan(const Problem& p, Pass pass, const DeviceInfo& dev, DeviceAllocator& alloc) const {
  if (!planner_) throw std::runtime_error(name() + ": flashio was built without CUDA (FLASHIO_CUDA=OFF)");
  return planner_(p, pass, dev, alloc);
}

void Registry::add(std::unique_ptr<Method> m, PlanFactory planner) {
  if (find(m->name())) throw std::logic_error("method registered twice: " + m->name());
  m->planner_ = planner;
  methods_.push_back(std::move(m));
}

const Method* Registry::find(const std::string& name) const {
  for (const auto& m : methods_)
    if (m->name() == name) return m.get();
  return nullptr;
}

std::vector<const Method*> Registry::all() const {
  std::vector<const Method*> out;
  for (const auto& m : methods_) out.push_back(m.get());
  return out;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (const auto& m : methods_) out.push_back(m->name());
  return out;
}

}  // namespace flashio

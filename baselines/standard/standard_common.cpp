// What `standard` and `standard_fused` share besides their plan: the workspace they need, their
// common MethodInfo fields and supports(). Plain C++ (the plan is standard_plan.cpp).
#include <fmt/format.h>

#include "baselines/common/cublas_workspace.h"
#include "baselines/standard/standard_plan.h"

namespace flashio {

const char* to_string(StandardKernels k) { return k == StandardKernels::Separate ? "separate" : "fused"; }

StandardWorkspace standard_workspace(const Problem& p, Pass pass, StandardKernels k) {
  const bool dropout = p.dropout > 0.0;
  const int64_t elements = p.batch * p.heads * p.seqlen_q * p.nk();
  StandardWorkspace w;
  w.score_bytes = elements * bytes_of(p.dtype);
  w.score_buffers = pass != Pass::Fwd && dropout ? 3 : 2;
  w.mask_bytes = k == StandardKernels::Separate && dropout ? elements : 0;
  return w;
}

MethodInfo standard_common_info() {
  MethodInfo i;
  i.where = "gpu";
  i.passes = {Pass::Fwd, Pass::Bwd, Pass::FwdBwd};
  i.dtypes = {DType::F16, DType::BF16};
  i.head_dims = {};  // any head dim cuBLAS accepts
  i.masks = {"none", "causal", "padding"};
  i.dropout = true;
  i.gqa = true;
  i.deterministic = true;  // no atomics: cuBLAS GEMMs (atomics mode off) and row-wise / elementwise kernels
  i.cublas = true;
  return i;
}

Support standard_supports(const MethodInfo& info, const Problem& p, Pass pass, const DeviceInfo& dev,
                          StandardKernels k) {
  if (Support s = check_common(info, p, pass, dev); !s) return s;
  if (p.head_dim % 8 != 0) return Support::no(info.name + " needs head_dim % 8 == 0 (16-byte aligned GEMM rows)");
  // S alone, before the workspace's int64 products: B·H·Nq·Nk of valid extents can pass 2^63.
  const double score_bytes = double(p.batch) * double(p.heads) * double(p.seqlen_q) * double(p.nk()) * bytes_of(p.dtype);
  if (score_bytes > double(dev.global_memory_bytes))
    return Support::no(fmt::format("S alone (B·H·Nq·Nk elements) needs {:.3g} GiB; the GPU has {:.1f} GiB",
                                   score_bytes / (1 << 30), double(dev.global_memory_bytes) / (1 << 30)));
  const StandardWorkspace w = standard_workspace(p, pass, k);
  const double need = double(w.total()) + double(kCublasWorkspaceBytes);
  if (need > double(dev.global_memory_bytes))
    return Support::no(fmt::format("{} workspace ({} score-sized buffers{}) needs {:.1f} GiB; the GPU has {:.1f} GiB",
                                   to_string(pass), w.score_buffers, w.mask_bytes ? " and the dropout mask" : "",
                                   need / (1 << 30), double(dev.global_memory_bytes) / (1 << 30)));
  if (double(p.heads / p.kvh()) * double(p.seqlen_q) * double(p.nk()) > 2147483647.0)
    return Support::no("one GEMM's S exceeds 2^31 elements (cuBLAS int dimensions)");
  return Support::yes();
}

}  // namespace flashio

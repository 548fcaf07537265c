// The `reference` method: float64 attention on the CPU (baselines/reference/reference.h),
// exposed as a method so it can be listed and run like the others on small shapes. Its
// forward copies Q, K, V to the host, computes, and copies O and LSE back.
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "baselines/reference/reference.h"
#include "bench/cuda_check.h"
#include "bench/method.h"

namespace flashio {
namespace {

constexpr double kMaxMacs = 2e9;  // about a second of float64 work on a few cores

class ReferencePlan final : public Plan {
 public:
  explicit ReferencePlan(const Problem& p) : p_(p) {}
  bool writes_lse() const override { return true; }
  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<uint16_t> q(size_t(p_.q_elements())), k(size_t(p_.kv_elements())), v(k.size());
    std::vector<int32_t> lengths;
    FLASHIO_CUDA_CHECK(cudaMemcpy(q.data(), buf.q, q.size() * 2, cudaMemcpyDeviceToHost));
    FLASHIO_CUDA_CHECK(cudaMemcpy(k.data(), buf.k, k.size() * 2, cudaMemcpyDeviceToHost));
    FLASHIO_CUDA_CHECK(cudaMemcpy(v.data(), buf.v, v.size() * 2, cudaMemcpyDeviceToHost));
    if (buf.key_lengths) {
      lengths.resize(size_t(p_.batch));
      FLASHIO_CUDA_CHECK(cudaMemcpy(lengths.data(), buf.key_lengths, lengths.size() * 4, cudaMemcpyDeviceToHost));
    }
    std::vector<double> out, lse;
    reference_rows(p_, {q.data(), k.data(), v.data(), buf.key_lengths ? lengths.data() : nullptr}, all_rows(p_), out, lse);
    std::vector<uint16_t> o16(out.size());
    for (size_t i = 0; i < out.size(); ++i) o16[i] = from_float(p_.dtype, float(out[i]));
    std::vector<float> lse32(lse.begin(), lse.end());
    FLASHIO_CUDA_CHECK(cudaMemcpy(buf.o, o16.data(), o16.size() * 2, cudaMemcpyHostToDevice));
    FLASHIO_CUDA_CHECK(cudaMemcpy(buf.lse, lse32.data(), lse32.size() * 4, cudaMemcpyHostToDevice));
  }

 private:
  Problem p_;
};

class Reference final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i;
    i.name = "reference";
    i.summary = "float64 attention on the CPU: the ground truth of every check (small shapes only)";
    i.where = "cpu";
    i.passes = {Pass::Fwd};
    i.dtypes = {DType::F16, DType::BF16};
    i.head_dims = {};
    i.masks = {"none", "causal", "padding", "blocksparse"};
    i.dropout = true;  // the shared Philox mask (kernels/common/philox.h)
    i.gqa = true;
    i.deterministic = true;  // rows computed independently on the CPU
    i.notes = fmt::format("at most {:.0e} multiply-adds per call; timed with the host clock", kMaxMacs);
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    const double macs = reference_cost(p, p.batch * p.heads * p.seqlen_q);
    if (macs > kMaxMacs)
      return Support::no(fmt::format("the CPU reference is for small shapes: this one needs {:.2g} multiply-adds (limit {:.0e})",
                                     macs, kMaxMacs));
    return Support::yes();
  }
  std::unique_ptr<Plan> plan(const Problem& p, Pass, const DeviceInfo&, DeviceAllocator&) const override {
    return std::make_unique<ReferencePlan>(p);
  }
};

}  // namespace

std::unique_ptr<Method> make_reference() { return std::make_unique<Reference>(); }

}  // namespace flashio

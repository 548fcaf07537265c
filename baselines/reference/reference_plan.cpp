// The `reference` method's launch side: its forward copies Q, K, V to the host, computes in
// float64 (bench/core/reference.h), and copies O and LSE back. Description: reference_method.cpp.
#include <cuda_runtime_api.h>

#include <vector>

#include "bench/core/method.h"
#include "bench/core/reference.h"
#include "bench/cuda/cuda_check.h"

namespace flashio {
namespace {

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
    reference_rows(p_, {q.data(), k.data(), v.data(), buf.key_lengths ? lengths.data() : nullptr}, all_rows(p_), out,
                   lse);
    std::vector<uint16_t> o16(out.size());
    for (size_t i = 0; i < out.size(); ++i) o16[i] = from_float(p_.dtype, float(out[i]));
    std::vector<float> lse32(lse.begin(), lse.end());
    FLASHIO_CUDA_CHECK(cudaMemcpy(buf.o, o16.data(), o16.size() * 2, cudaMemcpyHostToDevice));
    FLASHIO_CUDA_CHECK(cudaMemcpy(buf.lse, lse32.data(), lse32.size() * 4, cudaMemcpyHostToDevice));
  }

 private:
  Problem p_;
};

}  // namespace

std::unique_ptr<Plan> plan_reference(const Problem& p, Pass, const DeviceInfo&, DeviceAllocator&) {
  return std::make_unique<ReferencePlan>(p);
}

}  // namespace flashio

// The `reference` method: float64 attention on the CPU (bench/core/reference.h), exposed as a
// method so it can be listed and run like the others on small shapes (its launch side, which
// copies Q, K, V to the host and O, LSE back, is reference_plan.cpp).
#include <memory>

#include <fmt/format.h>

#include "bench/core/method.h"
#include "bench/core/reference.h"

namespace flashio {
namespace {

constexpr double kMaxMacs = 2e9;  // about a second of float64 work on a few cores

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
    i.dropout = true;  // the shared Philox mask (bench/core/philox.h)
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
};

}  // namespace

std::unique_ptr<Method> make_reference() { return std::make_unique<Reference>(); }

}  // namespace flashio

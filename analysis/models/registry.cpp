// The model registry (model.h) and the defaults of IoModel. builtin_models() is generated
// (builtin_models.cpp.in) from the flashio_add_method() lines: a registered method with a file
// analysis/models/<method>.cpp has its register_<method>_model() called there.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "analysis/models/model.h"

namespace flashio::analysis {

void ModelRegistry::add(std::unique_ptr<IoModel> m) {
  if (find(m->method())) throw std::logic_error("two IO models registered for " + m->method());
  models_.push_back(std::move(m));
}

const IoModel* ModelRegistry::find(const std::string& method) const {
  for (const auto& m : models_)
    if (m->method() == method) return m.get();
  return nullptr;
}

std::vector<std::string> ModelRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& m : models_) out.push_back(m->method());
  std::sort(out.begin(), out.end());
  return out;
}

const IoModel* find_model(const std::string& method) { return builtin_models().find(method); }

const IoModel& model_of(const ModelPoint& m) {
  const IoModel* model = find_model(m.method);
  if (!model)
    throw std::invalid_argument(
        fmt::format("{}: no IO model (peers and the CPU reference are not modelled)", m.method));
  return *model;
}

Traffic IoModel::simulate_sm_l2(const ModelPoint& m) const {
  throw std::invalid_argument(m.method + ": no schedule simulator");
}

double IoModel::asymptotic_form(const ModelPoint& m) const {
  const Problem& p = m.problem;
  const double n = double(p.seqlen_q), nk = double(p.nk()), d = double(p.head_dim);
  const double heads = double(p.batch * p.heads);
  const double s = m.mask.density() * (p.causal ? 0.5 : 1.0);
  double v = 0;
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  if (fwd && m.fwd_tiles) {
    const double tile = reread_tile(*m.fwd_tiles);
    v += n * d + s * n * nk * d / tile;
  }
  if (bwd && m.bwd_tiles)
    v += n * d + m.bwd_mask.density() * (p.causal ? 0.5 : 1.0) * n * nk * d / double(m.bwd_tiles->block_c);
  return heads * v;
}

std::string IoModel::asymptotic_formula(const ModelPoint& m) const {
  const std::string s = m.mask.empty() ? "" : "s·";
  if (m.pass == Pass::Bwd) return "N·d + " + s + "N²·d/Bc  (Theorem 5: Θ(N²d²/M))";
  return "forward + backward forms  (Theorems 2 and 5)";
}

PredictedTiles IoModel::predict_tiles(const Problem&, int64_t) const {
  PredictedTiles none;
  none.bwd_kernel = false;
  return none;
}

}  // namespace flashio::analysis

// standard (Algorithm 0 and its backward; baselines/standard/): S = QKᵀ and O = PV through
// cuBLAS, the elementwise steps as kernels of their own, S and P in HBM. Modelled by its
// compulsory matrix traffic only — every kernel reads its operands and writes its result once;
// cuBLAS's own re-reads of operand tiles are not modelled, so its verdicts are informational.
#include "analysis/models/standard.h"

#include "analysis/models/model_parts.h"

namespace flashio::analysis {

using namespace parts;

namespace {

// Which elementwise kernels a `standard` record ran: its tiles.elementwise; absent, the fused
// code for flashio's own files (`standard` was the fused code until tiles.elementwise existed)
// and the separate kernels for a `"producer": "published"` file (the paper's PyTorch, one kernel
// per step).
Elementwise standard_elementwise(const nlohmann::json& record, const nlohmann::json& file) {
  const nlohmann::json tiles = record.value("tiles", nlohmann::json::object());
  const std::string e = tiles.is_object() ? tiles.value("elementwise", std::string()) : std::string();
  if (e == "separate") return Elementwise::Separate;
  if (e == "fused") return Elementwise::Fused;
  return file.is_object() && file.value("producer", std::string()) == "published" ? Elementwise::Separate
                                                                                  : Elementwise::Fused;
}

}  // namespace

// Standard attention: compulsory operand reads and result writes of each kernel.
Traffic standard_fwd_traffic(const Problem& p, Elementwise k) {
  const int64_t e = bytes_of(p.dtype);
  const int64_t q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t elements = p.batch * p.heads * p.seqlen_q * p.nk(), s = elements * e;
  const bool dropout = p.dropout > 0, masked = p.causal || p.key_padded();
  Traffic out;
  out.add("S = Q·Kᵀ (GEMM)", q + kv, s);
  if (k == Elementwise::Fused) {
    out.add(dropout ? "P, P_drop = softmax(S) (+dropout)" : "P = softmax(S)", s, dropout ? 2 * s : s);
  } else {
    if (masked) out.add("S = mask(S) (in place)", s, s);
    out.add("P = softmax(S)", s, s);
    if (dropout) out.add("P_drop, mask = dropout(P)", s, s + elements);  // the mask: one byte per element
  }
  out.add("O = P·V (GEMM)", s + kv, q);
  return out;
}

Traffic standard_bwd_traffic(const Problem& p, Elementwise k) {
  const int64_t e = bytes_of(p.dtype);
  const int64_t q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t elements = p.batch * p.heads * p.seqlen_q * p.nk(), s = elements * e;
  Traffic out;
  out.add("dV = P_dropᵀ·dO (GEMM)", s + q, kv);
  out.add("dP = dO·Vᵀ (GEMM)", q + kv, s);
  if (k == Elementwise::Separate && p.dropout > 0) out.add("dP = dropout backward(dP_drop, mask)", s + elements, s);
  out.add("dS = softmax backward", 2 * s, s);
  out.add("dQ = dS·K (GEMM)", s + kv, q);
  out.add("dK = dSᵀ·Q (GEMM)", s + q, kv);
  return out;
}

IoModel::Reading StandardModel::read_record(const nlohmann::json& rec, const nlohmann::json& file, ModelPoint& m) const {
  m.elementwise = standard_elementwise(rec, file);
  return {};
}

// A `standard` record of the fused code (flashio files from before standard_fused existed) is
// matched with standard_fused, not with the separate-kernel `standard` of newer files or the
// paper's PyTorch, and labelled as such in the papers' tables.
std::string StandardModel::matched_as(const nlohmann::json& rec, const nlohmann::json& file) const {
  return standard_elementwise(rec, file) == Elementwise::Fused ? "standard_fused" : "";
}

std::string StandardModel::label_note(const nlohmann::json& rec, const nlohmann::json& file) const {
  return standard_elementwise(rec, file) == Elementwise::Fused ? " (fused kernels)" : "";
}

Traffic StandardModel::sm_l2(const ModelPoint& m) const {
  Traffic out;
  if (m.pass != Pass::Bwd) out += standard_fwd_traffic(m.problem, elementwise(m));
  if (m.pass != Pass::Fwd) out += standard_bwd_traffic(m.problem, elementwise(m));
  return out;
}

// S and P (and dP, dS) are N² matrices that no L2 holds beyond small N: written and read back.
Traffic StandardModel::compulsory_dram(const ModelPoint& m) const {
  const Problem& p = m.problem;
  const int64_t e = bytes_of(p.dtype);
  const int64_t q = p.q_elements() * e, kv = p.kv_elements() * e;
  const int64_t rows = p.batch * p.heads * p.seqlen_q;
  const int64_t elements = p.batch * p.heads * p.seqlen_q * p.nk(), s = elements * e;
  const Elementwise k = elementwise(m);
  Traffic out;
  if (m.pass != Pass::Bwd) {
    add_forward_compulsory(p, out);
    out.add("S, P", 2 * s, (p.dropout > 0 ? 3 : 2) * s);
    if (k == Elementwise::Separate) {  // the passes the fused kernel saves
      if (p.causal || p.key_padded()) out.add("masking: S read and written back", s, s);
      if (p.dropout > 0) out.add("dropout: P read, mask written", s, elements);
    }
  }
  if (m.pass != Pass::Fwd) {
    if (m.pass == Pass::Bwd) out.add("Q, K, V", q + 2 * kv, 0);
    out.add("O, dO, L", 2 * q + rows * kF32, 0);
    out.add("dQ, dK, dV", 0, q + 2 * kv);
    out.add("P, dP, dS", 4 * s, 2 * s);
    if (k == Elementwise::Separate && p.dropout > 0)
      out.add("dropout backward: dP_drop and mask read, dP written", s + elements, s);
  }
  return out;
}

int64_t StandardModel::dram_beyond_compulsory(const ModelPoint&, const DramContext&, DramPrediction& out) const {
  out.note = "compulsory matrices only (S, P and dP, dS written and read once); cuBLAS tile re-reads not modelled";
  return 0;
}

double StandardModel::asymptotic_form(const ModelPoint& m) const {
  const Problem& p = m.problem;
  const double n = double(p.seqlen_q), nk = double(p.nk()), d = double(p.head_dim);
  const double heads = double(p.batch * p.heads);
  const bool fwd = m.pass != Pass::Bwd, bwd = m.pass != Pass::Fwd;
  return heads * (n * d + n * nk) * (bwd && fwd ? 2 : 1);
}

std::string StandardModel::asymptotic_formula(const ModelPoint&) const { return "N·d + N²  (Θ(Nd + N²))"; }

void register_standard_model(ModelRegistry& r) { r.add(std::make_unique<StandardModel>()); }

}  // namespace flashio::analysis

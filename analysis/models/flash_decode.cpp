// flash_decode (kernels/flash_decode/): split-KV decoding. Per (batch, K/V head) a thread block
// per (row tile, split) reads its 16 query rows (Q once per split), streams its split's keys of
// K and V (each key once per row tile: once where the GQA group's rows G·Nq fit one tile of 16),
// and, with more than one split, writes its rows' fp32 O (d floats) and L (one float) per split,
// which the combine kernel reads back to write O and L; with one split the blocks write O and L.
// Modelled by these bytes (SM↔L2) and the compulsory DRAM bytes — Q, K, V read, O, L written,
// and the splits' partials written and read once — not by an exact schedule walk: reported, not
// judged (the padded shared rows' crossbar deliveries of flash2's model are not applied here).
#include <fmt/format.h>

#include "analysis/models/model.h"
#include "analysis/models/model_parts.h"

namespace flashio::analysis {

namespace {

using namespace parts;

// The splits' partial O and L (fp32), written by the split kernel and read by the combine.
int64_t partial_bytes(const Problem& p, int splits) {
  if (splits <= 1) return 0;
  return int64_t(splits) * p.batch * p.heads * p.seqlen_q * (p.head_dim + 1) * kF32;
}

int splits_of(const ModelPoint& m) {
  require(m.pass == Pass::Fwd, "flash_decode has a forward kernel only");
  return need_tiles(m.fwd_tiles, m, "forward").splits;
}

class FlashDecodeModel final : public IoModel {
 public:
  std::string method() const override { return "flash_decode"; }
  bool exact() const override { return false; }
  std::string unjudged_note() const override {
    return "flash_decode: compulsory bytes and the splits' partials (no exact schedule model yet)";
  }
  Traffic sm_l2(const ModelPoint& m) const override {
    const Problem& p = m.problem;
    const int splits = splits_of(m);
    const int64_t e = bytes_of(p.dtype);
    const int64_t q = p.q_elements() * e, kv = p.kv_elements() * e;
    const int64_t rows = p.batch * p.heads * p.seqlen_q;
    const int64_t row_tiles = ceil_div(p.heads / p.kvh() * p.seqlen_q, 16);
    Traffic out;
    out.add("split: Q (once per split)", int64_t(splits) * q, 0);
    out.add("split: K, V (once per row tile)", row_tiles * 2 * kv, 0);
    if (splits > 1) {
      out.add("split: partial O, L (fp32)", 0, partial_bytes(p, splits));
      out.add("combine: partial O, L; O, L", partial_bytes(p, splits), q + rows * kF32);
    } else {
      out.add("split: O, L", 0, q + rows * kF32);
    }
    return out;
  }
  Traffic compulsory_dram(const ModelPoint& m) const override {
    const int splits = splits_of(m);
    Traffic out;
    add_forward_compulsory(m.problem, out);
    if (splits > 1) {
      const int64_t partials = partial_bytes(m.problem, splits);
      out.add("partial O, L (fp32): written, read by the combine", partials, partials);
    }
    return out;
  }
  int64_t dram_beyond_compulsory(const ModelPoint&, const DramContext&, DramPrediction& out) const override {
    out.note = "compulsory bytes and the splits' partials, each once: every key is read once per row tile";
    return 0;
  }
  double asymptotic_form(const ModelPoint& m) const override {
    const Problem& p = m.problem;  // K, V of every K/V head, Q and O of every query head: Θ(Hkv·Nk·d + H·Nq·d)
    return double(p.batch) * (double(p.kvh()) * double(p.nk()) + double(p.heads) * double(p.seqlen_q)) *
           double(p.head_dim);
  }
  std::string asymptotic_formula(const ModelPoint&) const override { return "Hkv·Nk·d + H·Nq·d  (each byte once)"; }
};

}  // namespace

void register_flash_decode_model(ModelRegistry& r) { r.add(std::make_unique<FlashDecodeModel>()); }

}  // namespace flashio::analysis

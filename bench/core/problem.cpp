#include "bench/core/problem.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/core/json_input.h"
#include "bench/core/rng.h"
#include "bench/core/sparsity.h"
#include "bench/core/varlen.h"

namespace flashio {

const char* to_string(Pass p) {
  switch (p) {
    case Pass::Fwd: return "fwd";
    case Pass::Bwd: return "bwd";
    case Pass::FwdBwd: return "fwdbwd";
  }
  return "?";
}

std::optional<Pass> parse_pass(const std::string& s) {
  if (s == "fwd") return Pass::Fwd;
  if (s == "bwd") return Pass::Bwd;
  if (s == "fwdbwd" || s == "fwd+bwd") return Pass::FwdBwd;
  return std::nullopt;
}

const char* to_string(Padding p) { return p == Padding::None ? "none" : "random"; }

std::optional<DType> parse_dtype(const std::string& s) {
  if (s == "fp16" || s == "f16" || s == "half" || s == "float16") return DType::F16;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  return std::nullopt;
}

int64_t Problem::total_tokens() const {
  if (!varlen()) return batch * seqlen_q;
  int64_t t = 0;
  for (int32_t len : seq_lengths) t += len;
  return t;
}

double Problem::scale() const {
  return softmax_scale > 0.0 ? softmax_scale : 1.0 / std::sqrt(double(head_dim));
}

std::string Problem::name() const {
  std::string s = fmt::format("b:{}/h:{}", batch, heads);
  if (kvh() != heads) s += fmt::format("/kvh:{}", kvh());
  s += fmt::format("/n:{}", seqlen_q);
  if (nk() != seqlen_q) s += fmt::format("/nk:{}", nk());
  s += fmt::format("/d:{}/{}", head_dim, to_string(dtype));
  if (causal) s += "/causal";
  if (padding != Padding::None) s += "/pad";
  if (dropout > 0.0) s += fmt::format("/drop:{}", dropout);
  if (deterministic) s += "/det";
  if (block_r > 0 || block_c > 0) s += fmt::format("/tile:{}x{}", block_r, block_c);
  if (!mma.empty()) s += "/mma:" + mma;
  if (paged()) s += "/" + kv_layout_name(*this);  // contiguous adds nothing: older names unchanged
  if (varlen()) s += "/varlen:" + varlen_name(seqlens) + (varlen_padded ? "/padded" : "");  // likewise
  if (sparse()) {
    const auto kind = parse_pattern(pattern);
    if (kind == PatternKind::File) {  // the file's base name: a path's slashes would split the name
      const auto slash = pattern.find_last_of('/');
      s += "/sparse:file:" + (slash == std::string::npos ? pattern.substr(5) : pattern.substr(slash + 1));
    } else {
      s += "/sparse:" + pattern;
    }
    if (kind == PatternKind::Random) s += fmt::format("/s:{}", sparse_density);
    if (kind == PatternKind::Local) s += fmt::format("/w:{}/g:{}", sparse_window, sparse_global);
    s += fmt::format("/bs:{}", sparse_block);
  }
  return s;
}

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Why the sizes are beyond the bounds (problem.h), or nullopt; assumes each extent >= 0.
static std::optional<std::string> size_reason(const Problem& p) {
  const std::pair<const char*, int64_t> extents[] = {{"batch", p.batch},       {"heads", p.heads},
                                                     {"kv-heads", p.kv_heads}, {"seqlen", p.seqlen_q},
                                                     {"seqlen-k", p.seqlen_k}, {"head-dim", p.head_dim}};
  for (const auto& [name, v] : extents)
    if (v > kMaxExtent) return fmt::format("{} {} is more than flashio's bound {}", name, v, kMaxExtent);
  auto elements = [](int64_t b, int64_t h, int64_t n, int64_t d) {
    auto x = checked_mul(b, h);
    if (x) x = checked_mul(*x, n);
    if (x) x = checked_mul(*x, d);
    return x;
  };
  const auto q = elements(p.batch, p.heads, p.seqlen_q, p.head_dim);
  const auto kv = elements(p.batch, p.kvh(), p.nk(), p.head_dim);
  if (!q || !kv || *q > kMaxTensorElements || *kv > kMaxTensorElements)
    return fmt::format("b:{} h:{} n:{} nk:{} d:{}: a tensor of more than 2^40 elements (beyond any GPU's memory)",
                       p.batch, p.heads, p.seqlen_q, p.nk(), p.head_dim);
  return std::nullopt;
}

std::optional<std::string> Problem::invalid_reason() const {
  if (batch < 1) return fmt::format("batch must be >= 1 (got {})", batch);
  if (heads < 1) return fmt::format("heads must be >= 1 (got {})", heads);
  if (kv_heads < 0) return fmt::format("kv-heads must be >= 0 (got {})", kv_heads);
  if (heads % kvh() != 0) return fmt::format("heads ({}) must be divisible by kv-heads ({})", heads, kvh());
  if (seqlen_q < 1) return fmt::format("seqlen must be >= 1 (got {})", seqlen_q);
  if (seqlen_k < 0) return fmt::format("seqlen-k must be >= 0 (got {})", seqlen_k);
  if (head_dim < 1) return fmt::format("head-dim must be >= 1 (got {})", head_dim);
  if (!(dropout >= 0.0 && dropout < 1.0)) return fmt::format("dropout must be in [0, 1) (got {})", dropout);
  if (softmax_scale < 0.0) return fmt::format("softmax-scale must be > 0 (got {})", softmax_scale);
  if (block_r < 0 || block_c < 0) return "block sizes must be >= 0";
  if (auto why = size_reason(*this)) return why;
  if (!mma.empty() && mma != "mma.sync" && mma != "wgmma")
    return fmt::format("mma must be mma.sync or wgmma (got '{}')", mma);
  if (auto why = pattern_invalid_reason(*this)) return why;
  if (auto why = varlen_invalid_reason(*this)) return why;
  if (kv_page < 0 || kv_page % kKvPageMultiple != 0)
    return fmt::format("kv page size {} is not a positive multiple of {} (allowed: {}, {}, {}, ...)", kv_page,
                       kKvPageMultiple, kKvPageMultiple, 2 * kKvPageMultiple, 4 * kKvPageMultiple);
  if (paged() && batch * ((nk() + kv_page - 1) / kv_page) > kMaxExtent)
    return fmt::format("b:{} nk:{} in pages of {}: more pages than an int32 block table holds", batch, nk(), kv_page);
  return std::nullopt;
}

std::string kv_layout_name(const Problem& p) {
  return p.paged() ? fmt::format("paged:{}", p.kv_page) : std::string("contiguous");
}

std::optional<int> parse_kv_layout(const std::string& s, std::string* why) {
  const std::string allowed =
      fmt::format("contiguous or paged:P with P a positive multiple of {} (paged:{}, paged:{}, ...)", kKvPageMultiple,
                  kKvPageMultiple, 2 * kKvPageMultiple);
  if (s == "contiguous") return 0;
  const std::string prefix = "paged:";
  if (s.compare(0, prefix.size(), prefix) != 0) {
    if (why) *why = fmt::format("'{}' is not a K/V layout: {}", s, allowed);
    return std::nullopt;
  }
  const std::string digits = s.substr(prefix.size());
  int64_t page = 0;
  bool ok = !digits.empty() && digits.size() <= 9;
  for (char c : digits) {
    if (c < '0' || c > '9') ok = false;
    if (ok) page = page * 10 + (c - '0');
  }
  if (!ok || page <= 0 || page % kKvPageMultiple != 0) {
    if (why) *why = fmt::format("'{}': the page size must be {}", s, allowed);
    return std::nullopt;
  }
  return int(page);
}

KvPages kv_pages_of(const Problem& p) {
  KvPages k;
  k.page = p.kv_page;
  k.pages_per_seq = (p.nk() + k.page - 1) / k.page;
  k.page_elements = p.kvh() * k.page * p.head_dim;
  k.used.assign(size_t(p.batch), int32_t(k.pages_per_seq));
  if (p.paged_varlen())  // sequence b's own pages only
    for (size_t b = 0; b < k.used.size(); ++b) k.used[b] = int32_t((p.seq_lengths[b] + k.page - 1) / k.page);
  for (int32_t n : k.used) k.pages += n;
  // A seeded Fisher-Yates shuffle of the physical pages: no two logical neighbours are adjacent
  // by construction, so no accidental contiguity helps a kernel. Dealt to the sequences' logical
  // pages in order (dense: the permutation is the table).
  std::vector<int32_t> perm(size_t(k.pages));
  for (int64_t i = 0; i < k.pages; ++i) perm[size_t(i)] = int32_t(i);
  SplitMix64 rng(p.seed ^ 0x9a6e5ull);
  for (int64_t i = k.pages - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[size_t(rng.next() % uint64_t(i + 1))]);
  k.table.assign(size_t(p.batch * k.pages_per_seq), -1);
  size_t next = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int32_t j = 0; j < k.used[size_t(b)]; ++j) k.table[size_t(b * k.pages_per_seq + j)] = perm[next++];
  return k;
}

std::vector<int32_t> key_lengths(const Problem& p) {
  if (p.varlen()) return p.seq_lengths;
  std::vector<int32_t> lengths(size_t(p.batch), int32_t(p.nk()));
  if (p.padding == Padding::Random) {
    SplitMix64 rng(p.seed ^ 0x9ad0ull);
    const int64_t lo = std::max<int64_t>(1, p.nk() - 20);
    for (auto& len : lengths) len = int32_t(lo + int64_t(rng.next() % uint64_t(p.nk() - lo + 1)));
  }
  return lengths;
}

// The measured density s of the problem's block mask; 1 when the pattern cannot be made
// (an invalid problem is rejected before it runs, but its record still needs a number).
static double sparse_density_or_one(const Problem& p) {
  if (p.from_record && p.recorded_density) return *p.recorded_density;  // the record's measurement: no mask made
  try {
    return make_block_mask(p).density();
  } catch (const std::exception&) {
    return 1.0;
  }
}

double flops(const Problem& p, Pass pass) {
  double fwd = 4.0 * double(p.batch) * double(p.heads) * double(p.seqlen_q) * double(p.nk()) * double(p.head_dim);
  if (p.varlen()) {  // the real tokens' work only, packed or padded: Σ_b 4·H·Nq_b·L_b·d
    double sq = 0.0;    // Nq_b = L_b (self-attention) or seqlen_q (varlen decode)
    for (int32_t len : p.seq_lengths) sq += double(p.key_varlen() ? p.seqlen_q : len) * double(len);
    fwd = 4.0 * double(p.heads) * sq * double(p.head_dim);
  }
  if (p.causal) fwd *= 0.5;
  if (p.sparse()) fwd *= sparse_density_or_one(p);
  switch (pass) {
    case Pass::Fwd: return fwd;
    case Pass::Bwd: return 2.5 * fwd;
    case Pass::FwdBwd: return 3.5 * fwd;
  }
  return fwd;
}

int64_t compulsory_bytes(const Problem& p, Pass pass) {
  const int64_t e = bytes_of(p.dtype);
  const int64_t q = p.q_elements() * e, kv = p.kv_elements() * e, lse = p.lse_elements() * 4;
  const int64_t fwd = q + 2 * kv + q + lse;               // Q, K, V in; O, L out
  const int64_t bwd = 3 * q + 2 * kv + lse + q + 2 * kv;  // Q, O, dO, K, V, L in; dQ, dK, dV out
  switch (pass) {
    case Pass::Fwd:
      return fwd;
    case Pass::Bwd:
      return bwd;
    case Pass::FwdBwd:
      return fwd + bwd;
  }
  return fwd;
}

std::string point_name(const std::string& method, Pass pass, const Problem& p) {
  return fmt::format("{}/{}/{}", method, to_string(pass), p.name());
}

nlohmann::json to_json(const Problem& p) {
  nlohmann::json j = {{"batch", p.batch},
          {"heads", p.heads},
          {"kv_heads", p.kvh()},
          {"seqlen_q", p.seqlen_q},
          {"seqlen_k", p.nk()},
          {"head_dim", p.head_dim},
          {"dtype", to_string(p.dtype)},
          {"causal", p.causal},
          {"padding", to_string(p.padding)},
          {"dropout", p.dropout},
          {"seed", p.seed},
          {"softmax_scale", p.scale()},
          {"block_r", p.block_r},
          {"block_c", p.block_c}};
  if (p.deterministic) j["deterministic"] = true;  // only when set, so other records are unchanged
  if (!p.mma.empty()) j["mma"] = p.mma;             // likewise
  if (p.paged()) j["kv_layout"] = kv_layout_name(p);  // likewise: absent = contiguous
  if (p.varlen()) {  // likewise; the lengths themselves, so a record is self-contained
    j["seqlens"] = p.seqlens;
    j["seq_lengths"] = p.seq_lengths;
    j["varlen_layout"] = p.varlen_padded ? "padded" : "packed";
  }
  auto mask_rows = [](const std::string& text) {  // a mask in the pattern-file format, without its header
    nlohmann::json rows = nlohmann::json::array();
    for (size_t at = text.find('\n') + 1; at > 0 && at < text.size();) {
      const size_t end = std::min(text.find('\n', at), text.size());
      rows.push_back(text.substr(at, end - at));
      at = end + 1;
    }
    return rows;
  };
  if (p.sparse() && p.from_record && p.recorded_density && p.recorded_blocks) {
    // Written back as read (merge): what the record measured, its mask not made again.
    j["pattern"] = p.pattern;
    j["sparse_block"] = p.sparse_block;
    j["density"] = *p.recorded_density;
    j["sparse_blocks"] = {p.recorded_blocks->first, p.recorded_blocks->second};
    if (!p.pattern_mask.empty()) j["pattern_mask"] = mask_rows(p.pattern_mask);
  } else if (p.sparse()) {  // only with a pattern, so dense records are unchanged
    j["pattern"] = p.pattern;
    j["sparse_block"] = p.sparse_block;
    try {
      const BlockMask m = make_block_mask(p);
      j["density"] = m.density();  // measured: the fraction s of non-zero blocks
      j["sparse_blocks"] = {m.rows, m.cols};
      if (parse_pattern(p.pattern) == PatternKind::File)  // the mask itself: a record never names a path to read
        j["pattern_mask"] = mask_rows(block_mask_text(m));
    } catch (const std::exception&) {
      // a record's file: pattern without an embedded mask: what the record said
      j["density"] = p.recorded_density ? nlohmann::json(*p.recorded_density) : nlohmann::json(nullptr);
      if (p.recorded_blocks) j["sparse_blocks"] = {p.recorded_blocks->first, p.recorded_blocks->second};
    }
  }
  if (p.sparse()) {
    const auto kind = parse_pattern(p.pattern);
    if (kind == PatternKind::Random) j["sparse_target_density"] = p.sparse_density;
    if (kind == PatternKind::Local) {
      j["sparse_window"] = p.sparse_window;
      j["sparse_global"] = p.sparse_global;
    }
  }
  return j;
}

Problem problem_from_json(const nlohmann::json& j) {
  Problem p;
  p.from_record = true;
  try {
    if (!j.is_object()) throw std::runtime_error("the problem is not an object");
    for (const char* key : {"batch", "heads", "seqlen_q", "head_dim", "dtype"})
      if (!j.contains(key)) throw std::runtime_error(fmt::format("the problem has no \"{}\"", key));
    p.batch = int_field(j, "batch", p.batch);
    p.heads = int_field(j, "heads", p.heads);
    p.kv_heads = int_field(j, "kv_heads", p.heads);
    p.seqlen_q = int_field(j, "seqlen_q", p.seqlen_q);
    p.seqlen_k = int_field(j, "seqlen_k", p.seqlen_q);
    p.head_dim = int_field(j, "head_dim", p.head_dim);
    const auto dt = parse_dtype(j.at("dtype").get<std::string>());
    if (!dt) throw std::runtime_error("unknown dtype " + j.at("dtype").dump());
    p.dtype = *dt;
    p.causal = j.value("causal", false);
    p.padding = j.value("padding", std::string("none")) == "random" ? Padding::Random : Padding::None;
    p.dropout = number_field(j, "dropout", 0.0);
    p.deterministic = j.value("deterministic", false);
    if (j.contains("seed"))  // the full uint64 range: seeds are written unsigned
      p.seed = j["seed"].is_number_unsigned() ? j["seed"].get<uint64_t>() : uint64_t(int_field(j, "seed", int64_t(0)));
    p.softmax_scale = number_field(j, "softmax_scale", 0.0);
    p.block_r = int_field(j, "block_r", 0);
    p.block_c = int_field(j, "block_c", 0);
    p.mma = j.value("mma", std::string());
    if (j.contains("kv_layout")) {
      std::string why;
      const auto page = parse_kv_layout(j.at("kv_layout").get<std::string>(), &why);
      if (!page) throw std::runtime_error("bad kv_layout: " + why);
      p.kv_page = *page;
    }
    if (j.contains("seqlens")) {  // the record's lengths: a file: spec's path is never opened
      p.seqlens = j.at("seqlens").get<std::string>();
      if (!j.contains("seq_lengths") || !j["seq_lengths"].is_array())
        throw std::runtime_error("a varlen problem (\"seqlens\") without its \"seq_lengths\"");
      if (j["seq_lengths"].size() > size_t(kMaxSequences))
        throw std::runtime_error(fmt::format("more than {} seq_lengths", kMaxSequences));
      for (const auto& len : j["seq_lengths"])
        p.seq_lengths.push_back(int32_t(checked_integer(len, 0, kMaxExtent, "seq_lengths")));
      const std::string layout = j.value("varlen_layout", std::string("packed"));
      if (layout != "packed" && layout != "padded")
        throw std::runtime_error("varlen_layout must be packed or padded (got '" + layout + "')");
      p.varlen_padded = layout == "padded";
    }
    p.pattern = j.value("pattern", std::string());
    p.sparse_block = int_field(j, "sparse_block", p.sparse_block);
    p.sparse_density = number_field(j, "sparse_target_density", p.sparse_density);
    p.sparse_window = int_field(j, "sparse_window", p.sparse_window);
    p.sparse_global = int_field(j, "sparse_global", p.sparse_global);
    if (j.contains("density") && j["density"].is_number()) p.recorded_density = j["density"].get<double>();
    if (j.contains("sparse_blocks") && j["sparse_blocks"].is_array() && j["sparse_blocks"].size() == 2)
      p.recorded_blocks = std::make_pair(checked_integer(j["sparse_blocks"][0], 0, kMaxExtent, "sparse_blocks"),
                                         checked_integer(j["sparse_blocks"][1], 0, kMaxExtent, "sparse_blocks"));
    if (j.contains("pattern_mask") && p.recorded_blocks) {
      p.pattern_mask = fmt::format("{} {}\n", p.recorded_blocks->first, p.recorded_blocks->second);
      for (const auto& row : j.at("pattern_mask")) p.pattern_mask += row.get<std::string>() + "\n";
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("bad problem in record: ") + e.what());
  }
  if (p.kv_heads == p.heads) p.kv_heads = 0;
  if (p.seqlen_k == p.seqlen_q) p.seqlen_k = 0;
  if (std::abs(p.softmax_scale - 1.0 / std::sqrt(double(p.head_dim))) < 1e-12) p.softmax_scale = 0.0;
  return p;
}

}  // namespace flashio

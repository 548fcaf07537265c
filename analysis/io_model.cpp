// The IO model's shared vocabulary (traffic, tiles, the sector arithmetic every kernel's model
// uses) and the dispatch to each method's model: the closed forms per (batch, head) of what each
// kernel's schedule touches live in analysis/models/<method>.cpp, cross-checked by
// analysis/schedule_sim.cpp.
#include "analysis/io_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "analysis/models/model.h"

namespace flashio::analysis {

namespace {

constexpr int64_t kSector = 32;
constexpr int64_t kF32 = 4;

// Sectors touched by one instruction over values [a, a + n) of 4 bytes (n >= 1).
int64_t run_sectors(int64_t a, int64_t n) { return (a + n - 1) * kF32 / kSector - a * kF32 / kSector + 1; }

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

}  // namespace

void Traffic::add(const std::string& name, int64_t r, int64_t w, int64_t red_bytes, int64_t atom_bytes) {
  read += r;
  write += w;
  red += red_bytes;
  atom += atom_bytes;
  for (auto& t : terms)
    if (t.name == name) {
      t.read += r, t.write += w, t.red += red_bytes, t.atom += atom_bytes;
      return;
    }
  terms.push_back({name, r, w, red_bytes, atom_bytes});
}

Traffic& Traffic::operator+=(const Traffic& o) {
  for (const auto& t : o.terms) add(t.name, t.read, t.write, t.red, t.atom);
  return *this;
}

nlohmann::json Traffic::to_json() const {
  nlohmann::json terms_json = nlohmann::json::array();
  for (const auto& t : terms)
    terms_json.push_back({{"name", t.name}, {"read", t.read}, {"write", t.write}, {"red", t.red}, {"atom", t.atom}});
  return {{"read", read}, {"write", write}, {"red", red}, {"atom", atom}, {"total", total()}, {"terms", terms_json}};
}

double BlockMask::density() const {
  if (keep.empty()) return 1.0;
  return double(std::count(keep.begin(), keep.end(), true)) / double(keep.size());
}

bool has_exact_model(const std::string& method) {
  const IoModel* model = find_model(method);
  return model && model->exact();
}

DqWidth dq_width(int sm_arch, bool scalar_kernel) {
  if (scalar_kernel) return {1, 1};
  return {sm_arch >= 90 ? 2 : 1, 2};  // atomic_add2: red.global.add.v2.f32 from sm_90 (__CUDA_ARCH__ >= 900)
}

const char* to_string(SmemLayout l) { return l == SmemLayout::Swizzle128 ? "swizzle128" : "padded"; }

std::optional<SmemLayout> parse_smem_layout(const std::string& s) {
  if (s.empty() || s == "padded") return SmemLayout::Padded;
  if (s == "swizzle128") return SmemLayout::Swizzle128;
  return std::nullopt;
}

// Padded rows of (d + 8)·e bytes: an odd row starts 16 bytes into a 32-byte shared-memory sector,
// so each of its global sectors is delivered twice (H100: exactly 1.5× on full tiles; the bytes
// requested from L2 are 1×). Swizzle128: the 16-byte chunks of a row are permuted by an XOR of
// their index inside a 128-byte segment, which maps the chunk pair {2k, 2k + 1} of a 32-byte
// global sector onto a pair {2k', 2k' + 1}: one shared sector, one delivery. Through L1, the
// second half of a sector is an L1 hit in either layout: one delivery.
int64_t smem_row_deliveries(int64_t rows, SmemLayout l, CopyPath path) {
  if (path == CopyPath::ThroughL1 || l == SmemLayout::Swizzle128) return rows;
  return rows + rows / 2;
}

int64_t dq_sectors_per_row(int64_t head_dim, int floats_per_lane) {
  require(floats_per_lane == 1 || floats_per_lane == 2, "dQ adds: 1 or 2 floats per lane");
  const int64_t instructions_per_n8_tile = 2 / floats_per_lane;  // (x, x + 1), or one pair
  return (head_dim / 8) * instructions_per_n8_tile;              // one sector per row each
}

int64_t grouped_fp32_sectors(int64_t first, int64_t n, int64_t group) {
  if (n <= 0) return 0;
  const int64_t full = n / group, rest = n % group;
  int64_t s = 0;
  if (full > 0) {
    // Every full group starts at the same offset within its sector iff group is a multiple of 8.
    if (group % 8 == 0) {
      s += full * run_sectors(first, group);
    } else {
      for (int64_t k = 0; k < full; ++k) s += run_sectors(first + k * group, group);
    }
  }
  if (rest > 0) s += run_sectors(first + full * group, rest);
  return s;
}

Traffic predict_sm_l2(const ModelPoint& m) { return model_of(m).sm_l2(m); }

Traffic compulsory_dram(const ModelPoint& m) { return model_of(m).compulsory_dram(m); }

double asymptotic_form(const ModelPoint& m) { return model_of(m).asymptotic_form(m); }

std::string asymptotic_formula(const ModelPoint& m) { return model_of(m).asymptotic_formula(m); }

}  // namespace flashio::analysis

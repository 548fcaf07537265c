// `flashio analyze`; see analyze.h. Verdicts:
//   SM↔L2  fused kernels (flash1, flash2): |measured / exact − 1| <= l2_tolerance (3 %);
//          standard: reported, not judged (cuBLAS's re-reads are not modelled);
//   DRAM   fused kernels: |measured / two-level − 1| <= dram_tolerance (25 %);
//   sweep  fused kernels, >= 3 points with counters along N, d or the tile size:
//          |k_measured − k_model| <= exponent_tolerance (0.1), k_model fitted the same way
//          to the exact model's bytes at the same points (the asymptotic 2, 2, −1 is printed
//          beside it: at small N the O(N·d) terms flatten the local exponent).
#include "analysis/analyze.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

#include "analysis/model_bounds.h"
#include "analysis/models/model.h"
#include "analysis/models/model_parts.h"
#include "analysis/tables.h"
#include "bench/core/sparsity.h"

namespace flashio::analysis {

namespace {

using json = nlohmann::json;

// The kernel's tiles as recorded; `smem_layout` absent (files before it existed) = padded. Throws
// std::invalid_argument for a layout the model does not know.
std::optional<ModelTiles> tiles_of(const json& rec, const char* key, int64_t* smem) {
  if (!rec.contains(key) || !rec[key].is_object()) return std::nullopt;
  const auto& t = rec[key];
  ModelTiles k{{t.value("block_r", 0), t.value("block_c", 0), t.value("warps", 0), t.value("stages", 0)},
               t.value("splits", 1)};
  if (k.block_r <= 0 || k.block_c <= 0) return std::nullopt;
  const std::string layout = t.value("smem_layout", std::string());
  const auto l = parse_smem_layout(layout);
  if (!l) throw std::invalid_argument(fmt::format("{}.smem_layout \"{}\": no IO model for this layout", key, layout));
  k.smem_layout = *l;
  k.dq_whole_tiles = t.value("dq_adds", std::string()) == "tiles";
  if (smem) *smem = t.value("smem_bytes", int64_t(0));
  return k;
}

std::optional<double> byte_counter(const json& counters, const char* key) {
  if (!counters.contains("bytes") || !counters["bytes"].contains(key)) return std::nullopt;
  const json& v = counters["bytes"][key];
  if (!v.is_number()) return std::nullopt;  // null: NaN, no measurement
  return v.get<double>();
}

// A record's measured bytes by counter key (counters.bytes; a key absent where it was not
// measured). Where the record's model leaves some of its kernels outside (a peer's copies around
// its attention kernels: IoModel::outside_model), the bytes of the kernels it describes, summed
// from counters.kernels[], and the others' beside them.
constexpr const char* kByteKeys[] = {"l2_read", "l2_write", "l2_red", "l2_atom", "dram_read", "dram_write"};
struct MeasuredBytes {
  std::map<std::string, double> modelled;  // key → bytes of the kernels the model describes
  std::vector<std::string> outside;        // the other kernels, "name ×launches"
  double outside_sm_l2 = 0, outside_dram = 0;
  std::optional<double> at(const char* key) const {
    const auto it = modelled.find(key);
    return it == modelled.end() ? std::nullopt : std::optional<double>(it->second);
  }
};

// "at::native::elementwise_kernel<128, 4, …>" → "elementwise_kernel<…>".
std::string kernel_base_name(const std::string& name) {
  std::string base = name.substr(0, name.find('<'));
  const size_t colon = base.rfind("::");
  if (colon != std::string::npos) base = base.substr(colon + 2);
  return name.find('<') == std::string::npos ? base : base + "<…>";
}

MeasuredBytes measured_bytes(const json& counters, const IoModel* model) {
  MeasuredBytes m;
  const json kernels = counters.value("kernels", json::array());
  bool split = false;
  for (const auto& k : kernels)
    if (model && k.is_object() && model->outside_model(k.value("name", std::string()))) split = true;
  if (!split) {
    for (const char* key : kByteKeys)
      if (const auto v = byte_counter(counters, key)) m.modelled[key] = *v;
    return m;
  }
  std::map<std::string, bool> missing;  // a key some modelled kernel lacks is not measured
  for (const auto& k : kernels) {
    if (!k.is_object()) continue;
    const std::string name = k.value("name", std::string());
    const bool outside = model->outside_model(name);
    const json bytes = k.value("bytes", json::object());
    if (outside) m.outside.push_back(fmt::format("{} ×{}", kernel_base_name(name), k.value("launches", 0)));
    for (const char* key : kByteKeys) {
      const bool has = bytes.is_object() && bytes.contains(key) && bytes[key].is_number();
      const double v = has ? bytes[key].get<double>() : 0.0;
      if (outside) {
        (std::string(key).rfind("dram", 0) == 0 ? m.outside_dram : m.outside_sm_l2) += v;
      } else if (has) {
        m.modelled[key] += v;
      } else {
        missing[key] = true;
      }
    }
  }
  for (const auto& [key, gone] : missing)
    if (gone) m.modelled.erase(key);
  return m;
}

std::string verdict_word(std::optional<bool> v) { return !v ? "—" : *v ? "holds" : "FAILS"; }

// "flashio::kernels::flash1_fwd_kernel<Traits<…>, true, false>" → "flash1_fwd_kernel<…, true, false>":
// the function name with its template arguments after the first (the traits) kept short.
std::string short_kernel_name(const std::string& name) {
  const size_t lt = name.find('<');
  std::string base = name.substr(0, lt);
  const size_t colon = base.rfind("::");
  if (colon != std::string::npos) base = base.substr(colon + 2);
  if (lt == std::string::npos) return base;
  int depth = 0;
  for (size_t i = lt; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == ',' && depth == 1) return base + "<…" + name.substr(i);
  }
  return base + "<…>";
}

// The note beside a record whose kernels use local memory: spilled registers (or a stack frame)
// move bytes that no IO model counts, so an SM↔L2 excess there has this explanation.
std::string local_memory_note(const std::vector<LocalMemoryUse>& local, bool l2_fails) {
  std::string s;
  for (const auto& u : local)
    s += fmt::format("{}{} uses {} B of local memory per thread ({} registers)", s.empty() ? "" : "; ",
                     short_kernel_name(u.kernel), u.bytes_per_thread, u.registers_per_thread);
  return (l2_fails ? "SM↔L2 excess beside a register spill: " : "spills: ") + s + " — its traffic is not in the model";
}

// The sweep axis a record varies along, and the key of everything else.
struct Axis {
  const char* name;
  double asymptotic;
};
constexpr Axis kAxes[] = {{"N", 2.0}, {"d", 2.0}, {"tile", -1.0}};

// "flash2/fwd/b:1/h:16/n:*/d:64/fp16 (tile 128×64)": the point name with the swept axis as '*'.
std::string sweep_label(std::string name, const std::string& axis, const ModelPoint& m) {
  auto star = [&](const std::string& field) {
    const size_t at = name.find("/" + field + ":");
    if (at == std::string::npos) return;
    const size_t from = at + field.size() + 2, to = name.find('/', from);
    name.replace(from, to == std::string::npos ? std::string::npos : to - from, "*");
  };
  const size_t tile = name.find("/tile:");
  if (tile != std::string::npos) name.erase(tile);
  if (axis == "N") star("n"), star("nk");
  if (axis == "d") star("d");
  if (axis == "N" && m.fwd_tiles) name += fmt::format(" (tile {}×{})", m.fwd_tiles->block_r, m.fwd_tiles->block_c);
  if (axis == "tile") name += fmt::format(" ({} = *)", model_of(m).reread_tile_name());
  return name;
}

}  // namespace

GpuLimits gpu_limits_of(const json& device) {
  GpuLimits g;
  g.sm_count = device.value("sm_count", 0);
  g.smem_per_sm_bytes = device.value("smem_per_sm_bytes", int64_t(0));
  g.l2_bytes = device.value("l2_bytes", int64_t(0));
  g.max_threads_per_sm = device.value("max_threads_per_sm", 2048);
  return g;
}

std::string format_bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.3f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

// ---- COMPATIBILITY: result files written before records carried tiles_bwd.dq_adds ------------
// The one place analysis infers a kernel fact from the producing git revision instead of reading
// it from the record. The committed result files' revisions (results/README.md) all precede
// 9077f49, whose kernels add dQ in pairs; a file from any later revision that lacks the field is
// read as pairs. Records written since carry `tiles_bwd.dq_adds` (bench/core/method.h, Tiles), and
// this list must not grow.
constexpr const char* kPreVectorDqRevisions[] = {"7559f47", "c023967", "87aa547", "a873ad9",
                                                 "67ad155", "68bb4c3", "b0e10ab"};

bool scalar_dq_revision(const std::string& rev) {
  for (const char* r : kPreVectorDqRevisions)
    if (rev.rfind(r, 0) == 0) return true;
  return false;
}
// ---- end of COMPATIBILITY ------------------------------------------------------------------

std::optional<bool> scalar_dq_adds(const json& rec, const json& file) {
  const json tiles = rec.value("tiles_bwd", json::object());
  if (!tiles.is_object() || !tiles.contains("dq_adds"))  // older files: by their revision
    return scalar_dq_revision(file.value("build", json::object()).value("git_revision", std::string()));
  const std::string adds = tiles.value("dq_adds", std::string());
  if (adds == "scalar") return true;
  if (adds == "pairs" || adds == "tiles") return false;  // tiles: ModelTiles::dq_whole_tiles
  return std::nullopt;
}

int kernel_sm_arch(const json& file) {
  const json device = file.value("device", json::object());
  int cc = 0, major = 0, minor = 0;
  if (std::sscanf(device.value("compute_capability", std::string()).c_str(), "%d.%d", &major, &minor) == 2)
    cc = major * 10 + minor;
  const std::string archs = file.value("build", json::object()).value("cuda_architectures", std::string());
  int best = 0;
  for (size_t i = 0; i < archs.size();) {  // "80;90", "90a", "80-virtual"
    if (!std::isdigit(static_cast<unsigned char>(archs[i]))) {
      ++i;
      continue;
    }
    int a = 0;
    while (i < archs.size() && std::isdigit(static_cast<unsigned char>(archs[i]))) a = a * 10 + (archs[i++] - '0');
    while (i < archs.size() && archs[i] != ';' && archs[i] != ',' && archs[i] != ' ') ++i;  // the suffix
    if ((cc == 0 || a <= cc) && a > best) best = a;
  }
  return best > 0 ? best : cc > 0 ? cc : 90;
}

RecordModel model_point_of(const json& rec, const json& file, DqAdds dq_adds) {
  RecordModel out;
  const std::string method = rec.value("method", "");
  const IoModel* model = find_model(method);
  if (!model) {
    out.why_not = method + ": no IO model (peers and the CPU reference are not modelled)";
    return out;
  }
  ModelPoint m;
  m.method = method;
  const auto pass = parse_pass(rec.value("pass", ""));
  if (!pass) {
    out.why_not = "unknown pass";
    return out;
  }
  m.pass = *pass;
  try {
    m.problem = problem_from_json(rec.at("problem"));
  } catch (const std::exception& e) {
    out.why_not = std::string("bad problem: ") + e.what();
    return out;
  }

  try {
    m.fwd_tiles = tiles_of(rec, "tiles", &out.fwd_smem);
    m.bwd_tiles = tiles_of(rec, "tiles_bwd", &out.bwd_smem);
  } catch (const std::exception& e) {
    out.why_not = e.what();
    return out;
  }
  m.sm_arch = kernel_sm_arch(file);
  if (dq_adds == DqAdds::Auto) {
    const auto scalar = scalar_dq_adds(rec, file);
    if (!scalar) {
      out.why_not = fmt::format("tiles_bwd.dq_adds \"{}\": no IO model for these dQ adds",
                                rec["tiles_bwd"].value("dq_adds", std::string()));
      return out;
    }
    m.dq_scalar_kernel = *scalar;
  } else {
    m.dq_scalar_kernel = dq_adds == DqAdds::Scalar;
  }
  const IoModel::Reading reading = model->read_record(rec, file, m);
  if (!reading.why_not.empty()) {
    out.why_not = reading.why_not;
    return out;
  }
  out.tiles_from = !reading.tiles_from.empty() ? reading.tiles_from
                   : m.fwd_tiles || m.bwd_tiles ? "the record's tiles"
                                                : "";
  if (m.problem.sparse()) {
    // The pattern regenerated from the problem (deterministic in its seed), at each kernel's tiles.
    auto at_tiles = [&](const std::optional<ModelTiles>& t) {
      BlockMask bm;
      if (!t) return bm;
      const ::flashio::BlockMask mask = make_block_mask(m.problem, t->block_r, t->block_c);
      bm.rows = mask.rows, bm.cols = mask.cols;
      for (uint8_t bit : mask.bits) bm.keep.push_back(bit != 0);
      return bm;
    };
    try {
      m.mask = at_tiles(m.fwd_tiles);
      m.bwd_mask = at_tiles(m.bwd_tiles);
    } catch (const std::exception& e) {
      out.why_not = std::string("block mask: ") + e.what();
      return out;
    }
  }
  if (model->exact()) {
    if (m.pass != Pass::Bwd && !m.fwd_tiles) out.why_not = "the record carries no forward tiles";
    if (m.pass != Pass::Fwd && !m.bwd_tiles)
      out.why_not = "the record carries no backward tiles (tiles_bwd): the backward kernel's Br, Bc are unknown";
    if (!out.why_not.empty()) return out;
  }
  if (auto why = model_work_reason(m)) {
    out.why_not = *why;
    return out;
  }
  out.kernels = streaming_kernels_of(rec);
  if (m.fwd_tiles) {  // the L1 beside the forward kernel's carve-out, for its resident blocks
    const json device = file.value("device", json::object());
    const int blocks =
        parts::resident_blocks(m.fwd_tiles->warps * 32, out.fwd_smem, gpu_limits_of(device), out.kernels.fwd);
    m.fwd_l1 = l1_reuse_of(device.value("name", std::string()), out.fwd_smem, blocks);
  }
  for (const auto& [name, r] : kernel_resources_of(rec))
    if (r.local_bytes_per_thread > 0) out.local.push_back({name, r.local_bytes_per_thread, r.registers_per_thread});
  out.point = m;
  return out;
}

std::vector<std::pair<std::string, KernelResources>> kernel_resources_of(const json& rec) {
  std::vector<std::pair<std::string, KernelResources>> out;
  const json counters = rec.value("counters", json::object());
  for (const auto& k : counters.value("kernels", json::array())) {
    if (!k.is_object() || !k.contains("resources")) continue;
    try {
      out.emplace_back(k.value("name", std::string()), kernel_resources_from_json(k["resources"]));
    } catch (const std::invalid_argument&) {
      // a malformed entry is no information (the schema test catches it in committed files)
    }
  }
  return out;
}

StreamingKernels streaming_kernels_of(const json& rec) {
  const auto kernels = kernel_resources_of(rec);
  auto pick = [&](const char* tiles_key, const char* word) -> std::optional<KernelResources> {
    if (rec.contains(tiles_key) && rec[tiles_key].is_object()) {
      const json& t = rec[tiles_key];
      const int threads = t.value("warps", 0) * 32;
      const int64_t smem = t.value("smem_bytes", int64_t(0));
      for (const auto& [name, r] : kernels)
        if (threads > 0 && r.threads() == threads && smem > 0 &&
            (r.dynamic_smem_bytes == smem || r.dynamic_smem_bytes + r.static_smem_bytes == smem))
          return r;
    }
    for (const auto& [name, r] : kernels)
      if (name.find(word) != std::string::npos && name.find("preprocess") == std::string::npos &&
          name.find("convert") == std::string::npos)
        return r;
    return std::nullopt;
  };
  StreamingKernels s;
  const auto pass = parse_pass(rec.value("pass", ""));
  if (pass != Pass::Bwd) s.fwd = pick("tiles", "fwd");
  if (pass != Pass::Fwd) s.bwd = pick("tiles_bwd", "bwd");
  return s;
}

RedCounterScope red_counter_scope(const json& counters) {
  RedCounterScope out;
  const json metrics = counters.value("metrics", json::object());
  if (metrics.contains("lts__t_sectors_srcunit_tex_op_red.sum") || !metrics.contains("lts__t_sectors_op_red.sum"))
    return out;
  const std::string chip = counters.value("chip", std::string());
  if (chip == kRedScopeMeasuredChip) {
    out.factor = kL2FabricRedFactor;
    out.why = fmt::format(
        "l2_red (lts__t_sectors_op_red, all source units) counts a far-partition reduction at both L2 "
        "partitions: {} × the sectors sent (measured on {})",
        kL2FabricRedFactor, kRedScopeMeasuredChip);
    return out;
  }
  out.measured = false;
  out.why = fmt::format(
      "l2_red (lts__t_sectors_op_red, all source units) compared with the sectors sent (1 ×): its scope is "
      "measured on {} only ({} ×), not on {}",
      kRedScopeMeasuredChip, kL2FabricRedFactor, chip.empty() ? std::string("this chip") : chip);
  return out;
}

PowerFit fit_power(const std::vector<double>& x, const std::vector<double>& y) {
  PowerFit f;
  std::vector<double> lx, ly;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] > 0 && y[i] > 0) lx.push_back(std::log(x[i])), ly.push_back(std::log(y[i]));
  f.points = int(lx.size());
  if (f.points < 2) return f;
  double mx = 0, my = 0;
  for (size_t i = 0; i < lx.size(); ++i) mx += lx[i], my += ly[i];
  mx /= double(lx.size()), my /= double(ly.size());
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < lx.size(); ++i) {
    sxx += (lx[i] - mx) * (lx[i] - mx);
    sxy += (lx[i] - mx) * (ly[i] - my);
    syy += (ly[i] - my) * (ly[i] - my);
  }
  if (sxx == 0) return f;
  f.exponent = sxy / sxx;
  f.constant = std::exp(my - f.exponent * mx);
  f.r2 = syy == 0 ? 1.0 : (sxy * sxy) / (sxx * syy);
  return f;
}

double fit_constant(const std::vector<double>& f, const std::vector<double>& y) {
  double num = 0, den = 0;
  for (size_t i = 0; i < f.size(); ++i) num += f[i] * y[i], den += f[i] * f[i];
  return den > 0 ? num / den : 0;
}

AnalyzeReport analyze_documents(const std::vector<std::pair<std::string, json>>& docs, const AnalyzeOptions& opt) {
  AnalyzeReport rep;
  std::string& md = rep.markdown;
  json files = json::array();
  const std::string dram_model =
      opt.wave_model ? fmt::format("the wave model (usable L2 = {:.0f} % of L2, co-resident drift {:.2f})",
                                   opt.l2_usable_fraction * 100, opt.drift)
                     : std::string(
                           "the L2 simulation of the schedule (analysis/l2_sim.h; no constant fitted to results, its "
                           "GH100 dirty rule to the L2 probe)");
  md += fmt::format(
      "Verdicts: SM↔L2 against the exact schedule model within ±{:.0f} % (fused kernels), DRAM against {} within "
      "±{:.0f} %, sweep exponents within ±{:.2f} of the model's.\n\n",
      opt.l2_tolerance * 100, dram_model, opt.dram_tolerance * 100, opt.exponent_tolerance);
  bool peers = false;  // a peer's record with counters: say once how peers are judged
  for (const auto& [file, doc] : docs)
    for (const auto& rec : doc.value("records", json::array())) {
      const IoModel* model = find_model(rec.value("method", ""));
      peers = peers || (model && model->tiles_from_launches() &&
                        rec.value("counters", json::object()).value("status", "") == "ok");
    }
  if (peers)
    md +=
        "Peers (scripts/peers_sdpa.py): SM↔L2 against FlashAttention-2's model with the tiles their launches imply "
        "(analysis/models/peers.cpp), their kernels outside it reported beside; their DRAM bytes are measured, not "
        "modelled.\n\n";

  // Sweep points: axis → key → (x, measured, model, asymptotic form, fused)
  struct SweepPoint {
    double x, measured, model, form;
  };
  std::map<std::string, std::map<std::string, std::vector<SweepPoint>>> sweeps;
  std::map<std::string, bool> sweep_fused;
  std::vector<std::string> out_of_scope;  // DRAM points outside the model's scope, with why

  for (const auto& [file, doc] : docs) {
    const std::string& path = file;  // a plain name: lambdas below use it (C++17 cannot capture bindings)
    const json device = doc.value("device", json::object());
    GpuLimits gpu = gpu_limits_of(device);
    gpu.blocks_per_sm_override = opt.blocks_per_sm;
    gpu.drift = opt.drift;
    gpu.drift_all_kernels = opt.drift_all_kernels;
    gpu.wave_model = opt.wave_model;
    gpu.l2_partitions =
        opt.l2_partitions > 0 ? opt.l2_partitions : l2_partitions_of(device.value("name", std::string()));
    gpu.l2_dirty = l2_dirty_rule_of(device.value("name", std::string()));
    if (opt.l2_dirty_share >= 0) {  // the cap alone; a band that would lie above it is dropped
      gpu.l2_dirty.share = opt.l2_dirty_share;
      if (gpu.l2_dirty.band_from >= opt.l2_dirty_share) gpu.l2_dirty.band_from = gpu.l2_dirty.band_rate = 0;
    }
    json recs = json::array();
    md += fmt::format("## {} — {} ({} records)\n\n", path, device.value("name", std::string("unknown device")),
                      doc.value("records", json::array()).size());
    md +=
        "| point | SM↔L2 model | measured | ratio | verdict | DRAM model | measured | ratio | verdict | L2 hit | note "
        "|\n";
    md += "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    int uncounted = 0;
    struct DramPoint {
      ModelPoint m;
      int64_t fwd_smem, bwd_smem;
      StreamingKernels kernels;
      double measured;
    };
    std::vector<DramPoint> dram_points;  // fused, DRAM counted: for the usable-L2 fit below
    for (const auto& rec : doc.value("records", json::array())) {
      if (rec.value("status", "") != "ok") continue;
      json out = {{"name", rec.value("name", "")}};
      const RecordModel rm = model_point_of(rec, doc, opt.dq_adds);
      const json counters = rec.value("counters", json::object());
      const bool counted = counters.value("status", "") == "ok";
      std::optional<Traffic> l2_model;
      std::optional<DramPrediction> dram_model;
      std::string note;
      const IoModel* model = find_model(rec.value("method", ""));
      const std::string dram_unmodelled = model ? model->dram_not_modelled() : std::string();
      if (rm.point) {
        auto tiles_json = [](const std::optional<ModelTiles>& t) {
          return t ? json{{"block_r", t->block_r}, {"block_c", t->block_c}} : json();
        };
        out["tiles"] = {{"fwd", tiles_json(rm.point->fwd_tiles)},
                        {"bwd", tiles_json(rm.point->bwd_tiles)},
                        {"from", rm.tiles_from}};
        try {
          l2_model = predict_sm_l2(*rm.point);
          out["sm_l2_model"] = l2_model->to_json();
          if (!dram_unmodelled.empty()) {
            out["dram_not_modelled"] = dram_unmodelled;
          } else if (gpu.sm_count > 0 && gpu.l2_bytes > 0) {
            dram_model = predict_dram(*rm.point, rm.fwd_smem, rm.bwd_smem, gpu, opt.l2_usable_fraction, rm.kernels);
            out["dram_model"] = dram_model->to_json();
          }
        } catch (const std::exception& e) {
          note = e.what();
        }
      } else {
        note = rm.why_not;
      }
      const bool fused = rm.point && has_exact_model(rm.point->method);
      std::optional<double> l2_meas, dram_meas, hit;
      std::optional<bool> l2_ok, dram_ok;
      std::string beside;  // kernels outside the model, with their bytes
      if (counted) {
        const MeasuredBytes mb = measured_bytes(counters, model);
        const auto r = mb.at("l2_read"), w = mb.at("l2_write"), red = mb.at("l2_red"), atom = mb.at("l2_atom");
        if (r && w) l2_meas = *r + *w + red.value_or(0) + atom.value_or(0);
        const auto dr = mb.at("dram_read"), dw = mb.at("dram_write");
        if (dr && dw) dram_meas = *dr + *dw;
        if (dr && r && *r > 0) hit = 1.0 - *dr / *r;
        out["measured"] = {{"sm_l2", l2_meas ? json(*l2_meas) : json()},
                           {"dram", dram_meas ? json(*dram_meas) : json()},
                           {"l2_hit_rate", hit ? json(*hit) : json()}};
        for (const char* key : kByteKeys)  // the parts, as counters.bytes names them
          if (const auto v = mb.at(key)) out["measured"][key] = *v;
        if (!mb.outside.empty()) {
          out["measured"]["outside_model"] = {
              {"kernels", mb.outside}, {"sm_l2", mb.outside_sm_l2}, {"dram", mb.outside_dram}};
          beside = fmt::format("beside the model: {} ({} SM↔L2, {} DRAM)", fmt::join(mb.outside, ", "),
                               format_bytes(mb.outside_sm_l2), format_bytes(mb.outside_dram));
        }
      } else {
        ++uncounted;
        if (note.empty())
          note = "counters " + counters.value("status", std::string("absent")) + ": " + counters.value("reason", "");
      }
      std::optional<double> l2_ratio, dram_ratio;
      // What the counters should read: the model's bytes, reductions as l2_red counts them.
      const RedCounterScope scope = counted ? red_counter_scope(counters) : RedCounterScope{};
      const double l2_expected =
          l2_model ? double(l2_model->read + l2_model->write + l2_model->atom) + scope.factor * double(l2_model->red)
                   : 0;
      if (l2_model) out["sm_l2_expected"] = l2_expected;  // what the counters should read
      if (l2_model && l2_model->red > 0 && !scope.why.empty()) {
        out["l2_red_counter_factor"] = scope.factor;
        out["l2_red_counter_scope"] = scope.measured ? "measured" : "unmeasured";
        if (note.empty()) note = scope.why;
      }
      if (l2_model && l2_meas && l2_expected > 0) {
        l2_ratio = *l2_meas / l2_expected;
        if (fused) l2_ok = std::abs(*l2_ratio - 1) <= opt.l2_tolerance;
      }
      if (fused && dram_model && dram_meas)
        dram_points.push_back({*rm.point, rm.fwd_smem, rm.bwd_smem, rm.kernels, *dram_meas});
      std::string dram_scope;  // non-empty: measured and predicted, outside the model's scope
      if (dram_model && dram_meas && dram_model->predicted > 0) {
        dram_ratio = *dram_meas / double(dram_model->predicted);
        if (fused && dram_model->out_of_scope.empty()) {
          dram_ok = std::abs(*dram_ratio - 1) <= opt.dram_tolerance;
          ++rep.dram_judged;
        } else if (fused) {
          dram_scope = "not judged: " + dram_model->out_of_scope;
          ++rep.dram_out_of_scope;
          out_of_scope.push_back(fmt::format("{} ({}): DRAM {:.3f} × the model, {}", rec.value("name", ""), path,
                                             *dram_ratio, dram_scope));
        }
        out["dram_over_compulsory"] = *dram_meas / double(dram_model->compulsory);
      }
      if (!fused && rm.point && counted) note = model_of(*rm.point).unjudged_note();
      if (dram_model && !dram_model->note.empty() && note.empty()) note = dram_model->note;
      if (!dram_scope.empty()) note = note.empty() ? dram_scope : dram_scope + "; " + note;
      if (!beside.empty()) note = note.empty() ? beside : note + "; " + beside;
      if (!rm.local.empty()) {
        json local = json::array();
        for (const auto& u : rm.local)
          local.push_back({{"kernel", u.kernel},
                           {"local_bytes_per_thread", u.bytes_per_thread},
                           {"registers_per_thread", u.registers_per_thread}});
        out["local_memory"] = local;
        const std::string spill = local_memory_note(rm.local, l2_ok.has_value() && !*l2_ok);
        note = note.empty() ? spill : spill + "; " + note;
      }
      for (auto v : {l2_ok, dram_ok})
        if (v) ++rep.judged, rep.failed += *v ? 0 : 1;
      out["sm_l2_ratio"] = l2_ratio ? json(*l2_ratio) : json();
      out["sm_l2_verdict"] = l2_ok ? json(*l2_ok) : json();
      out["dram_ratio"] = dram_ratio ? json(*dram_ratio) : json();
      out["dram_verdict"] = dram_ok ? json(*dram_ok) : json();
      out["dram_scope"] = dram_scope.empty() ? json() : json(dram_scope);
      out["note"] = note;
      recs.push_back(out);
      if (counted || l2_model) {
        auto cell = [](std::optional<double> v) { return v ? format_bytes(*v) : std::string("—"); };
        auto ratio = [](std::optional<double> v) { return v ? fmt::format("{:.3f}", *v) : std::string("—"); };
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", rec.value("name", ""),
                          l2_model ? format_bytes(l2_expected) : "—", cell(l2_meas), ratio(l2_ratio),
                          verdict_word(l2_ok), dram_model ? format_bytes(double(dram_model->predicted)) : "—",
                          cell(dram_meas), ratio(dram_ratio), verdict_word(dram_ok),
                          hit ? fmt::format("{:.1f} %", *hit * 100) : "—", note);
      }
      // Sweep membership (measured SM↔L2 and an exact prediction needed).
      if (l2_meas && l2_model && rm.point) {
        const ModelPoint& m = *rm.point;
        const double form = asymptotic_form(m);
        json key_problem = rec["problem"];
        key_problem.erase("seed");
        auto add = [&](const char* axis, double x, json kp, bool with_tiles) {
          // Grouped on everything but the axis; labelled by the point name with the axis as '*'.
          const std::string k = sweep_label(rec.value("name", ""), axis, m) + " @" + path + "\t" + kp.dump() +
                                (with_tiles ? rec.value("tiles", json()).dump() : "");
          sweeps[axis][k].push_back({x, *l2_meas, l2_expected, form});
          sweep_fused[k] = fused;
        };
        json kn = key_problem;
        kn.erase("seqlen_q"), kn.erase("seqlen_k");
        add("N", double(m.problem.seqlen_q), kn, true);
        json kd = key_problem;
        kd.erase("head_dim"), kd.erase("softmax_scale"), kd.erase("block_r"), kd.erase("block_c");
        add("d", double(m.problem.head_dim), kd, false);
        if (m.fwd_tiles && m.pass == Pass::Fwd) {
          json kt = key_problem;
          kt.erase("block_r"), kt.erase("block_c");
          add("tile", double(model_of(m).reread_tile(*m.fwd_tiles)), kt, false);
        }
      }
    }
    // How much of the L2 one stream can use is itself a measurement (DESIGN.md): the share that
    // best explains this file's DRAM bytes (least squares of log ratios, 5 % steps). Informational.
    json l2_fit;
    if (opt.wave_model && dram_points.size() >= 2) {
      double best = 0, best_err = 0;
      for (int k = 4; k <= 20; ++k) {
        const double f = k * 0.05;
        double err = 0;
        for (const auto& dp : dram_points) {
          const double r = std::log(dp.measured /
                                    double(predict_dram(dp.m, dp.fwd_smem, dp.bwd_smem, gpu, f, dp.kernels).predicted));
          err += r * r;
        }
        err = std::sqrt(err / double(dram_points.size()));
        if (best == 0 || err < best_err) best = f, best_err = err;
      }
      l2_fit = {{"usable_fraction", best}, {"rms_log_error", best_err}, {"points", dram_points.size()}};
      md += fmt::format(
          "\nUsable L2 share that best explains the measured DRAM bytes: {:.2f} of {} (rms log error {:.3f} over {} "
          "points; verdicts use {:.2f}).\n",
          best, format_bytes(double(gpu.l2_bytes)), best_err, dram_points.size(), opt.l2_usable_fraction);
    }
    if (uncounted > 0)
      md += fmt::format("\n{} ok records carry no counters: predictions only, nothing to judge there.\n", uncounted);
    md += "\n";
    files.push_back({{"path", path}, {"device", device}, {"records", recs}, {"l2_usable_fit", l2_fit}});
  }

  json fits = json::array();
  md += "## Sweeps: fitted exponents of SM↔L2 bytes\n\n";
  md +=
      "| axis | sweep | points | measured exponent | R² | model exponent | asymptotic | verdict | fitted constant |\n";
  md += "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  int n_fits = 0;
  for (const auto& axis : kAxes) {
    for (const auto& [key, pts] : sweeps[axis.name]) {
      std::map<double, SweepPoint> by_x;  // one point per x (the first)
      for (const auto& p : pts) by_x.emplace(p.x, p);
      if (by_x.size() < 3) continue;
      std::vector<double> x, y, model, form;
      for (const auto& [xv, p] : by_x)
        x.push_back(xv), y.push_back(p.measured), model.push_back(p.model), form.push_back(p.form);
      const PowerFit meas = fit_power(x, y), mod = fit_power(x, model);
      const double c = fit_constant(form, y);
      std::optional<bool> ok;
      if (sweep_fused[key]) {
        ok = std::abs(meas.exponent - mod.exponent) <= opt.exponent_tolerance;
        ++rep.judged, rep.failed += *ok ? 0 : 1;
      }
      ++n_fits;
      const std::string label = key.substr(0, key.find('\t'));
      md += fmt::format("| {} | {} | {} | {:.3f} | {:.4f} | {:.3f} | {:.0f} | {} | {:.4g} |\n", axis.name, label,
                        meas.points, meas.exponent, meas.r2, mod.exponent, axis.asymptotic, verdict_word(ok), c);
      fits.push_back({{"axis", axis.name},
                      {"sweep", label},
                      {"points", meas.points},
                      {"measured_exponent", meas.exponent},
                      {"r2", meas.r2},
                      {"model_exponent", mod.exponent},
                      {"asymptotic_exponent", axis.asymptotic},
                      {"verdict", ok ? json(*ok) : json()},
                      {"asymptotic_constant", c}});
    }
  }
  if (n_fits == 0) md += "| — | no sweep with three or more counted points | | | | | | | |\n";
  md += fmt::format("\nDRAM: {} judged, {} outside the model's scope{}\n", rep.dram_judged, rep.dram_out_of_scope,
                    out_of_scope.empty() ? "." : " (listed):");
  for (const auto& line : out_of_scope) md += "* " + line + "\n";
  md += fmt::format("\n{} verdicts, {} failed.\n", rep.judged, rep.failed);
  if (rep.judged == 0) md += "No record carries counters that the model can judge (run with counters on a GPU).\n";
  rep.json = {
      {"tolerances", {{"sm_l2", opt.l2_tolerance}, {"dram", opt.dram_tolerance}, {"exponent", opt.exponent_tolerance}}},
      {"l2_usable_fraction", opt.l2_usable_fraction},
      {"drift", opt.drift},
      {"dram_model", opt.wave_model ? "waves" : "L2 simulation"},
      {"files", files},
      {"fits", fits},
      {"judged", rep.judged},
      {"failed", rep.failed},
      {"dram_judged", rep.dram_judged},
      {"dram_out_of_scope", rep.dram_out_of_scope}};
  return rep;
}

AnalyzeReport analyze_files(const std::vector<std::string>& paths, const AnalyzeOptions& opt) {
  return analyze_documents(read_documents(paths), opt);
}

}  // namespace flashio::analysis

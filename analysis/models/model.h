// IO models registered by method: one file per method (analysis/models/<method>.cpp) holds its
// exact SM↔L2 model, its simulator hook, its DRAM terms, its asymptotic form and the tiles it
// would pick on a GPU, and registers them under the method's name (DESIGN.md, "Layers": a new
// method = its folder, its model file, one flashio_add_method() line; the model's registration
// is generated from that line when analysis/models/<method>.cpp exists).
// The rest of analysis/ asks the registry (find_model) what a method's records mean and never
// compares method names itself.
//
// Registration is explicit, called from one generated place (builtin_models): a static registrar in a
// static library can be dropped by the linker, and tests/test_analysis.cpp checks that every
// modelled method is registered.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/dram_model.h"
#include "analysis/io_model.h"
#include "analysis/l2_sim.h"

namespace flashio::analysis {

// What the DRAM walk knows beyond the point: the kernels' shared memory as recorded, the GPU,
// the L2 bytes one stream can use and the streaming kernels' recorded resources.
struct DramContext {
  int64_t fwd_smem = 0, bwd_smem = 0;
  const GpuLimits& gpu;
  double usable = 0;
  const StreamingKernels& kernels;
};

// The tiles a method would run on a GPU with a given shared memory per block (`flashio
// predict`), from the kernels' own configuration headers.
struct PredictedTiles {
  std::optional<ModelTiles> fwd;  // none: no forward tile fits
  int64_t fwd_smem = 0;
  ModelTiles bwd;
  int64_t bwd_smem = 0;
  bool bwd_kernel = true;  // the method has a backward kernel at this head dim
};

class IoModel {
 public:
  virtual ~IoModel() = default;
  virtual std::string method() const = 0;

  // An exact schedule model (the fused kernels): needs the record's tiles; its points are
  // judged at SM↔L2 and DRAM and its sweeps fitted. Otherwise compulsory bytes only: reported,
  // not judged, with `unjudged_note` beside a counted point.
  virtual bool exact() const = 0;
  virtual std::string unjudged_note() const { return {}; }

  // --- reading records ---------------------------------------------------------------------
  // What the model takes from a record beyond problem, pass and the recorded tiles (`file`: the
  // result file's top level; called with those already in `m`). Returns why no model applies to
  // the record (a sentence; empty: it applies) and, where the model read the tiles itself (a
  // peer's, from its launches), where from.
  struct Reading {
    std::string why_not;
    std::string tiles_from;
  };
  virtual Reading read_record(const nlohmann::json& /*rec*/, const nlohmann::json& /*file*/,
                              ModelPoint& /*m*/) const {
    return {};
  }
  // A kernel of the record (counters.kernels[].name) the model does not describe — a peer's own
  // copies around its attention kernels: its bytes are reported beside the model, not compared.
  virtual bool outside_model(const std::string& /*kernel*/) const { return false; }
  // Why the method's DRAM bytes are measured but not modelled (empty: they are modelled).
  virtual std::string dram_not_modelled() const { return {}; }
  // The tiles come from a run's launches (a peer's): `flashio predict` has none to offer.
  virtual bool tiles_from_launches() const { return false; }
  // `flashio predict` can model the method from a shape alone (its --method list).
  virtual bool predictable() const { return !tiles_from_launches(); }
  // The method a record is matched as across files (`flashio compare`), when not its own (empty).
  virtual std::string matched_as(const nlohmann::json& /*rec*/, const nlohmann::json& /*file*/) const { return {}; }
  // Appended to the method's name in the papers' tables (`flashio report`), or empty.
  virtual std::string label_note(const nlohmann::json& /*rec*/, const nlohmann::json& /*file*/) const { return {}; }
  // The method the papers' speedups are over (FlashAttention's "standard attention").
  virtual bool speedup_baseline() const { return false; }

  // --- SM↔L2 ---------------------------------------------------------------------------------
  // Throws std::invalid_argument with a sentence when the point lacks what the model needs.
  virtual Traffic sm_l2(const ModelPoint& m) const = 0;
  // The brute-force schedule walk (analysis/schedule_sim.h) the exact model is checked against.
  virtual Traffic simulate_sm_l2(const ModelPoint& m) const;

  // --- DRAM ----------------------------------------------------------------------------------
  virtual Traffic compulsory_dram(const ModelPoint& m) const = 0;
  // Bytes beyond the compulsory ones (the second level's re-fetches); fills the prediction's
  // wave data, note and scope.
  virtual int64_t dram_beyond_compulsory(const ModelPoint& m, const DramContext& c, DramPrediction& out) const = 0;
  // Whether a pass whose buffers fit in the L2 reads its inputs once and writes nothing back
  // (dram_model.h, residency); false for a model of compulsory matrices only.
  virtual bool dram_residency() const { return true; }
  // The pass's launches for the L2 simulation (l2_sim.h): the kernels in stream order, their
  // blocks in launch order, each block's tile steps, `coarse` tile iterations per step and
  // chunks `coarse` times the tiles' common rows (dram_model.h, coarsening). None: the method's
  // DRAM bytes are not simulated (the wave model above applies).
  virtual std::optional<SimTrace> dram_trace(const ModelPoint& /*m*/, const DramContext& /*c*/, int /*coarse*/) const {
    return std::nullopt;
  }
  // The forward's buffers beyond Q, K, V, O, L (its footprint in L2).
  virtual int64_t forward_workspace_bytes(const Problem&) const { return 0; }

  // --- asymptotic form -----------------------------------------------------------------------
  // The form's value without its constant, in elements per (batch, head), summed over heads;
  // the fused kernels' default: N·d + s·N·Nk·d / B per pass, B the tile dimension re-reads
  // divide by (reread_tile: forward Br for flash2, Bc for flash1; backward Bc).
  virtual double asymptotic_form(const ModelPoint& m) const;
  virtual std::string asymptotic_formula(const ModelPoint& m) const;
  virtual int reread_tile(const ModelTiles& fwd) const { return fwd.block_r; }
  virtual const char* reread_tile_name() const { return "Br"; }

  // --- tile pick (`flashio predict`; exact models) ---------------------------------------------
  // The tiles the method's kernels would run for problem p (its head dim; flash3: its length and mask too).
  virtual PredictedTiles predict_tiles(const Problem& p, int64_t smem_optin) const;
};

class ModelRegistry {
 public:
  void add(std::unique_ptr<IoModel> m);  // throws std::logic_error on a second model of a name
  const IoModel* find(const std::string& method) const;
  std::vector<std::string> names() const;  // sorted

 private:
  std::vector<std::unique_ptr<IoModel>> models_;
};

// Every model, registered explicitly: generated from the flashio_add_method() lines, one
// register_<method>_model(ModelRegistry&) per file analysis/models/<method>.cpp.
const ModelRegistry& builtin_models();
const IoModel* find_model(const std::string& method);  // null: the method has no IO model
// The point's model; throws std::invalid_argument "<method>: no IO model (...)" when none.
const IoModel& model_of(const ModelPoint& m);

}  // namespace flashio::analysis

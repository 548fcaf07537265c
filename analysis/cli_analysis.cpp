// flashio analyze | report [--html] | compare | predict | export.
#include "analysis/cli_analysis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "analysis/ab_compare.h"
#include "analysis/analyze.h"
#include "analysis/export.h"
#include "analysis/gpus.h"
#include "analysis/html_report.h"
#include "analysis/models/model.h"
#include "analysis/tables.h"
#include "bench/core/exit_codes.h"
#include "bench/core/json_input.h"
#include "bench/core/safe_write.h"

namespace flashio::analysis {

namespace {

// "5%" or "0.05": a relative threshold in [0, 10).
double parse_threshold(const std::string& s) {
  std::string v = s;
  const bool percent = !v.empty() && v.back() == '%';
  if (percent) v.pop_back();
  double x = 0;
  try {
    size_t pos = 0;
    x = std::stod(v, &pos);
    if (pos != v.size()) throw std::invalid_argument(v);
  } catch (const std::exception&) {
    throw std::invalid_argument(fmt::format("--threshold: '{}' is not a number or a percentage", s));
  }
  if (percent) x /= 100;
  if (!(x >= 0 && x < 10)) throw std::invalid_argument(fmt::format("--threshold: '{}' is not in [0, 1000%)", s));
  return x;
}

class Commands final : public AnalysisCommands {
 public:
  explicit Commands(CLI::App& app) {
    analyze_ = app.add_subcommand(
        "analyze", "IO model check: predicted vs measured bytes at SM↔L2 and DRAM, fitted exponents (no GPU)");
    analyze_->add_option("files", files_, "result files")->required()->check(CLI::ExistingFile);
    analyze_->add_flag("--json", json_, "print JSON instead of Markdown");
    analyze_->add_option("--l2-tolerance", opt_.l2_tolerance,
                         "relative SM↔L2 tolerance for fused kernels (default 0.03)");
    analyze_->add_option("--dram-tolerance", opt_.dram_tolerance, "relative DRAM tolerance (default 0.25)");
    analyze_->add_option("--exponent-tolerance", opt_.exponent_tolerance, "absolute exponent tolerance (default 0.1)");
    analyze_->add_option("--l2-usable", opt_.l2_usable_fraction, "share of L2 one stream can use (default 0.5)")
        ->check(CLI::Range(0.01, 1.0));
    analyze_->add_flag("--require-counters", opt_.require_counters, "exit 1 when no record could be judged");
    analyze_
        ->add_option("--blocks-per-sm", opt_.blocks_per_sm,
                     "DRAM model: resident blocks per SM in a wave (default: the record's occupancy, else its "
                     "registers, shared memory and threads)")
        ->check(CLI::Range(1, 32));
    analyze_
        ->add_option("--drift", opt_.drift,
                     "DRAM model: co-resident blocks' drift as a share of the K/V they stream (default 0.21, "
                     "fitted; 0 = lock-step waves; applied to forward kernels recorded with local memory or "
                     "without resources)")
        ->check(CLI::Range(0.0, 1.0));
    analyze_->add_flag("--drift-all-kernels", opt_.drift_all_kernels,
                       "DRAM model: apply the drift also to kernels recorded without local memory");
    analyze_->add_flag("--dram-waves", opt_.wave_model,
                       "DRAM: the wave model (usable L2 share, fitted drift) instead of the L2 simulation");
    analyze_
        ->add_option("--l2-partitions", opt_.l2_partitions,
                     "DRAM simulation: L2 partitions (default: 2 on A100/H100/H200, else 1)")
        ->check(CLI::Range(1, 8));
    analyze_
        ->add_option("--l2-dirty-share", opt_.l2_dirty_share,
                     "DRAM simulation: the share of an L2 partition that may hold dirty lines, 0 for no limit "
                     "(default: 0.455 on H100/H200, measured by scripts/l2_probe.sh; none elsewhere); the "
                     "victim window and cleaning band stay the device's")
        ->check(CLI::Range(0.0, 1.0));
    analyze_
        ->add_option("--dq-adds", opt_.dq_adds,
                     "how the backward kernels added dQ: auto (from the file's revision), scalar (before 9077f49), "
                     "pairs")
        ->transform(CLI::CheckedTransformer(
            std::map<std::string, DqAdds>{{"auto", DqAdds::Auto}, {"scalar", DqAdds::Scalar}, {"pairs", DqAdds::Pairs}},
            CLI::ignore_case));
    analyze_->footer(exit_status_help("a verdict does not hold (or, with --require-counters, none could be judged)"));

    report_ = app.add_subcommand(
        "report", "the papers' tables (runtime, memory, speedup, TFLOP/s, Figure 2 left) from result files");
    report_->add_option("files", files_, "result files")->required()->check(CLI::ExistingFile);
    add_format(report_);
    report_
        ->add_option("--html", html_out_,
                     "write one self-contained HTML page instead (the tables and SVG figures: TFLOP/s, speedups over "
                     "standard and the peers, memory, model vs measured bytes, GPUs side by side), atomically")
        ->excludes(report_->get_option("--json"))
        ->excludes(report_->get_option("--csv"));
    report_->add_flag("--force", force_, "with --html: replace the file if it exists (never one of the inputs)");
    report_->footer(exit_status_help());

    compare_ =
        app.add_subcommand("compare", "the same points side by side across GPUs (result files of different machines)");
    compare_->add_option("files", files_, "result files (two or more; one or more with --baseline)")
        ->required()
        ->expected(1, -1)
        ->check(CLI::ExistingFile);
    compare_
        ->add_option("--baseline", baseline_,
                     "A/B mode: compare each file with this one: time ratio file / baseline per matched point with a "
                     "bootstrap interval from the repetitions (time.samples_s)")
        ->check(CLI::ExistingFile);
    compare_->add_option("--threshold", threshold_,
                         "with --baseline: a matched point fails when slower than this (5%, or 0.05) with the interval "
                         "above 1 (default 5%)");
    add_format(compare_);
    compare_->footer(
        exit_status_help("with --baseline: a matched point is slower than the threshold and its interval excludes 1 "
                         "(points without samples are listed, not judged)"));

    predict_ =
        app.add_subcommand("predict", "the IO model and a roofline time for a GPU you may not have (no GPU needed)");
    std::vector<std::string> gpu_keys;
    for (const auto& g : gpu_table()) gpu_keys.push_back(g.key);
    predict_->add_option("--gpu", req_.gpus, fmt::format("built-in GPUs: {}", fmt::join(gpu_keys, ", ")))
        ->delimiter(',');
    predict_
        ->add_option("--gpu-spec", gpu_specs_,
                     "a GPU described by a JSON file: `flashio device --json` output with "
                     "\"peak_fp16_tensor_flops\" (dense FLOP/s, datasheet) added")
        ->check(CLI::ExistingFile);
    std::vector<std::string> predictable;
    for (const std::string& name : builtin_models().names())
      if (builtin_models().find(name)->predictable()) predictable.push_back(name);
    predict_->add_option("--method,-m", req_.methods, fmt::format("{} (default flash2)", fmt::join(predictable, ", ")))
        ->delimiter(',');
    predict_->add_option("--pass", req_.passes, "fwd, bwd, fwdbwd (default fwd)")->delimiter(',');
    predict_->add_option("--seqlen,-n", req_.seqlens, "sequence lengths (default 1024..16384)")
        ->delimiter(',')
        ->check(CLI::PositiveNumber);
    predict_->add_option("--batch,-b", req_.batch, "batch (default 1)")->check(CLI::PositiveNumber);
    predict_->add_option("--heads", req_.heads, "heads (default 16)")->check(CLI::PositiveNumber);
    predict_->add_option("--head-dim,-d", req_.head_dim, "head dim: 32, 64, 96, 128, 256 (default 64)")
        ->check(CLI::IsMember({32, 64, 96, 128, 256}));
    predict_->add_flag("--causal", req_.causal, "causal mask");
    predict_
        ->add_option("--l2-usable", req_.l2_usable_fraction,
                     "with --dram-waves: share of L2 one stream can use (default 0.5)")
        ->check(CLI::Range(0.01, 1.0));
    predict_->add_flag("--dram-waves", req_.wave_model, "DRAM: the wave model instead of the L2 simulation");
    add_format(predict_);
    predict_->footer(exit_status_help());

    export_ = app.add_subcommand("export",
                                 "result files as tidy data: one row per record, SI units (CSV, JSON Lines, "
                                 "Google Benchmark JSON)");
    export_->add_option("files", files_, "result files")->required()->check(CLI::ExistingFile);
    export_
        ->add_option("--format", export_format_,
                     "csv (default), jsonl, gbench (Google Benchmark's JSON, for its tools/compare.py)")
        ->transform(CLI::CheckedTransformer(
            std::map<std::string, ExportFormat>{
                {"csv", ExportFormat::Csv}, {"jsonl", ExportFormat::Jsonl}, {"gbench", ExportFormat::Gbench}},
            CLI::ignore_case));
    export_->add_option("--out,-o", export_out_, "write here (atomically) instead of to stdout");
    std::string columns = "Columns (csv, jsonl):\n";
    for (const auto& c : export_columns()) columns += fmt::format("  {:<24} {}\n", c.name, c.what);
    export_->footer(columns + exit_status_help());
  }

  std::optional<int> run() const override {
    try {
      if (analyze_->parsed()) {
        const AnalyzeReport rep = analyze_files(files_, opt_);
        std::fputs(json_ ? (rep.json.dump(1) + "\n").c_str() : rep.markdown.c_str(), stdout);
        return rep.ok(opt_) ? kExitOk : kExitOutcomeFailed;
      }
      if (report_->parsed()) {
        if (html_out_.empty()) {
          if (force_) throw std::invalid_argument("--force: only with --html");
          return print(report_tables(read_documents(files_)));
        }
        check_output(html_out_, files_, force_, "--html");  // before any work: exit 2, nothing written
        const std::string page = render_html_report(read_documents(files_));
        write_file_atomically(html_out_, page, force_);  // a runtime failure here: exit 1, no partial file
        return 0;
      }
      if (compare_->parsed()) {
        if (baseline_.empty()) {
          if (!threshold_.empty()) throw std::invalid_argument("--threshold: only with --baseline");
          if (files_.size() < 2) throw std::invalid_argument("compare: give two or more files (or --baseline A B)");
          return print(compare_tables(read_documents(files_)));
        }
        std::vector<std::string> paths{baseline_};
        paths.insert(paths.end(), files_.begin(), files_.end());
        AbOptions ab;
        if (!threshold_.empty()) ab.threshold = parse_threshold(threshold_);
        const AbReport rep = ab_compare(read_result_files(paths), ab);
        print(rep.tables);
        if (rep.unjudged > 0)
          fmt::print(stderr,
                     "flashio: note: {} matched points have no time samples (files older than time.samples_s): "
                     "ratio only, not judged\n",
                     rep.unjudged);
        if (rep.regressions > 0) {
          fmt::print(stderr, "flashio: {} matched points are slower than the baseline by more than {:g}%\n",
                     rep.regressions, ab.threshold * 100);
          return kExitOutcomeFailed;
        }
        return 0;
      }
      if (export_->parsed()) {
        if (!export_out_.empty()) check_output(export_out_, files_, /*overwrite=*/false, "--out");
        const std::string text = render_export(read_result_files(files_), export_format_);
        if (export_out_.empty())
          std::fputs(text.c_str(), stdout);
        else
          write_text_atomically(export_out_, text);
        return 0;
      }
      if (predict_->parsed()) {
        PredictRequest r = req_;
        for (const auto& path : gpu_specs_) {
          const nlohmann::json spec = parse_json_input(read_input_file(path), "--gpu-spec " + path);  // bounded
          r.specs.push_back(gpu_from_spec(spec, "--gpu-spec " + path));
        }
        if (r.gpus.empty() && r.specs.empty()) throw std::invalid_argument("predict: give --gpu or --gpu-spec");
        if (r.methods.empty()) r.methods = {"flash2"};
        if (r.passes.empty()) r.passes = {"fwd"};
        if (r.seqlens.empty()) r.seqlens = {1024, 2048, 4096, 8192, 16384};
        return print(predict_tables(r));
      }
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "flashio: error: {}\n", e.what());
      return kExitBadInput;
    }
    return std::nullopt;
  }

 private:
  void add_format(CLI::App* sub) {
    sub->add_flag("--json", json_, "JSON: per table its columns with units and typed rows (SI units)");
    sub->add_flag("--csv", csv_, "CSV, one titled table after another (one tidy table: flashio export)");
  }
  int print(const std::vector<Table>& t) const {
    std::fputs(render(t, json_ ? Format::Json : csv_ ? Format::Csv : Format::Markdown).c_str(), stdout);
    return 0;
  }

  CLI::App *analyze_, *report_, *compare_, *predict_, *export_;
  std::vector<std::string> files_;
  bool json_ = false, csv_ = false;
  AnalyzeOptions opt_;
  PredictRequest req_;
  std::vector<std::string> gpu_specs_;
  std::string baseline_, threshold_;
  ExportFormat export_format_ = ExportFormat::Csv;
  std::string export_out_;
  std::string html_out_;
  bool force_ = false;
};

}  // namespace

std::unique_ptr<AnalysisCommands> add_analysis_commands(CLI::App& app) { return std::make_unique<Commands>(app); }

}  // namespace flashio::analysis

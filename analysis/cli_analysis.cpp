// flashio analyze | report | compare | predict.
#include "analysis/cli_analysis.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/gpus.h"
#include "analysis/tables.h"
#include "bench/core/exit_codes.h"

namespace flashio::analysis {

namespace {


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
    report_->footer(exit_status_help());

    compare_ =
        app.add_subcommand("compare", "the same points side by side across GPUs (result files of different machines)");
    compare_->add_option("files", files_, "result files (two or more)")
        ->required()
        ->expected(2, -1)
        ->check(CLI::ExistingFile);
    add_format(compare_);
    compare_->footer(exit_status_help());

    predict_ =
        app.add_subcommand("predict", "the IO model and a roofline time for a GPU you may not have (no GPU needed)");
    predict_->add_option("--gpu", req_.gpus, "GPUs: t4, a100-40gb, a100-80gb, rtx3090, l4, a10, h100-sxm, h200")
        ->delimiter(',')
        ->required();
    predict_->add_option("--method,-m", req_.methods, "flash1, flash2, standard, standard_fused (default flash2)")
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
    predict_->add_option("--l2-usable", req_.l2_usable_fraction, "share of L2 one stream can use (default 0.5)")
        ->check(CLI::Range(0.01, 1.0));
    add_format(predict_);
    predict_->footer(exit_status_help());
  }

  std::optional<int> run() const override {
    try {
      if (analyze_->parsed()) {
        const AnalyzeReport rep = analyze_files(files_, opt_);
        std::fputs(json_ ? (rep.json.dump(1) + "\n").c_str() : rep.markdown.c_str(), stdout);
        return rep.ok(opt_) ? kExitOk : kExitOutcomeFailed;
      }
      if (report_->parsed()) return print(report_tables(read_documents(files_)));
      if (compare_->parsed()) return print(compare_tables(read_documents(files_)));
      if (predict_->parsed()) {
        PredictRequest r = req_;
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
    sub->add_flag("--json", json_, "JSON");
    sub->add_flag("--csv", csv_, "CSV");
  }
  int print(const std::vector<Table>& t) const {
    std::fputs(render(t, json_ ? Format::Json : csv_ ? Format::Csv : Format::Markdown).c_str(), stdout);
    return 0;
  }

  CLI::App *analyze_, *report_, *compare_, *predict_;
  std::vector<std::string> files_;
  bool json_ = false, csv_ = false;
  AnalyzeOptions opt_;
  PredictRequest req_;
};

}  // namespace

std::unique_ptr<AnalysisCommands> add_analysis_commands(CLI::App& app) { return std::make_unique<Commands>(app); }

}  // namespace flashio::analysis

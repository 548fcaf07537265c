#include "bench/cli/commands.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "analysis/cli_analysis.h"
#include "bench/build_info.h"
#include "bench/device_info.h"
#include "bench/method.h"
#include "bench/record.h"
#include "bench/runner.h"
#include "bench/sweep.h"
#include "bench/table.h"

namespace flashio {
namespace {

namespace fs = std::filesystem;

constexpr int kExitRuntime = 1;
constexpr int kExitBadInput = 2;

// Bad input: thrown while turning option strings into axes; becomes one line and exit 2.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int64_t parse_int(const std::string& opt, const std::string& s) {
  try {
    size_t pos = 0;
    const long long v = std::stoll(s, &pos);
    if (pos != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw BadInput(fmt::format("--{}: '{}' is not an integer", opt, s));
  }
}

double parse_double(const std::string& opt, const std::string& s) {
  try {
    size_t pos = 0;
    const double v = std::stod(s, &pos);
    if (pos != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw BadInput(fmt::format("--{}: '{}' is not a number", opt, s));
  }
}

template <typename T, typename F>
std::vector<T> parse_list(const std::string& opt, const std::vector<std::string>& in, F parse_one) {
  std::vector<T> out;
  for (const auto& s : in) {
    if (s.empty()) throw BadInput(fmt::format("--{}: empty value", opt));
    out.push_back(parse_one(s));
  }
  return out;
}

std::vector<int64_t> parse_ints(const std::string& opt, const std::vector<std::string>& in, int64_t min) {
  return parse_list<int64_t>(opt, in, [&](const std::string& s) {
    const int64_t v = parse_int(opt, s);
    if (v < min) throw BadInput(fmt::format("--{}: {} is below the minimum {}", opt, v, min));
    return v;
  });
}

bool parse_bool(const std::string& opt, const std::string& s) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), ::tolower);
  if (l == "1" || l == "true" || l == "on" || l == "yes" || l == "causal") return true;
  if (l == "0" || l == "false" || l == "off" || l == "no" || l == "none") return false;
  throw BadInput(fmt::format("--{}: '{}' is not a boolean (use true/false)", opt, s));
}

// Options of `flashio run` (and the shape options of `flashio list`) as strings.
struct AxisOptions {
  std::vector<std::string> method, pass, batch, heads, kv_heads, seqlen, seqlen_k, head_dim, dtype, causal, padding,
      dropout, block_r, block_c, pattern, density, sparse_block;
  std::string tokens, model_dim, seed, sparse_window, sparse_global;
};

void add_shape_options(CLI::App* app, AxisOptions& a) {
  app->add_option("--batch,-b", a.batch, "batch sizes (overrides --tokens)")->delimiter(',');
  app->add_option("--heads", a.heads, "query heads (overrides --model-dim)")->delimiter(',');
  app->add_option("--kv-heads", a.kv_heads, "K/V heads (GQA/MQA); default: = heads")->delimiter(',');
  app->add_option("--seqlen,-n", a.seqlen, "sequence lengths N (queries)")->delimiter(',');
  app->add_option("--seqlen-k", a.seqlen_k, "key sequence lengths; default: = N")->delimiter(',');
  app->add_option("--head-dim,-d", a.head_dim, "head dimensions d")->delimiter(',');
  app->add_option("--dtype", a.dtype, "fp16, bf16")->delimiter(',');
  app->add_option("--causal", a.causal, "causal mask: false, true (or both: false,true)")->delimiter(',');
  app->add_option("--padding", a.padding, "key padding: none, random (lengths uniform in [N-20, N])")->delimiter(',');
  app->add_option("--dropout", a.dropout, "dropout probabilities")->delimiter(',');
  app->add_option("--block-r", a.block_r, "force the tile rows Br (0 = method's choice)")->delimiter(',');
  app->add_option("--block-c", a.block_c, "force the tile columns Bc (0 = method's choice)")->delimiter(',');
  app->add_option("--tokens", a.tokens, "batch = tokens / N (FlashAttention-2's setting: 16384)");
  app->add_option("--model-dim", a.model_dim, "heads = model-dim / d (FlashAttention-2's setting: 2048)");
  app->add_option("--seed", a.seed, "input and dropout seed");
  // Block sparsity (bench/sparsity.h).
  app->add_option("--pattern", a.pattern, "block-sparse patterns: none, butterfly, local, random, causal_block, file:PATH")
      ->delimiter(',');
  app->add_option("--density", a.density, "random pattern: fractions of non-zero blocks, in (0, 1]")->delimiter(',');
  app->add_option("--sparse-block", a.sparse_block, "pattern block sizes Bs (default 128)")->delimiter(',');
  app->add_option("--sparse-window", a.sparse_window, "local pattern: blocks on each side of the diagonal (default 1)");
  app->add_option("--sparse-global", a.sparse_global, "local pattern: leading all-ones block rows/columns (default 1)");
}

// Axes from options over `s` (the defaults); throws BadInput on the first bad value.
SweepSpec build_spec(const AxisOptions& a, SweepSpec s) {
  if (!a.method.empty()) s.methods = a.method;
  if (!a.pass.empty())
    s.passes = parse_list<Pass>("pass", a.pass, [](const std::string& v) {
      auto p = parse_pass(v);
      if (!p) throw BadInput(fmt::format("--pass: '{}' is not one of fwd, bwd, fwdbwd", v));
      return *p;
    });
  if (!a.batch.empty()) {
    s.batch = parse_ints("batch", a.batch, 1);
    s.tokens.reset();
  }
  if (!a.heads.empty()) {
    s.heads = parse_ints("heads", a.heads, 1);
    s.model_dim.reset();
  }
  if (!a.tokens.empty()) s.tokens = parse_ints("tokens", {a.tokens}, 1)[0];
  if (!a.model_dim.empty()) s.model_dim = parse_ints("model-dim", {a.model_dim}, 1)[0];
  if (!a.kv_heads.empty()) s.kv_heads = parse_ints("kv-heads", a.kv_heads, 1);
  if (!a.seqlen.empty()) s.seqlen = parse_ints("seqlen", a.seqlen, 1);
  if (!a.seqlen_k.empty()) s.seqlen_k = parse_ints("seqlen-k", a.seqlen_k, 1);
  if (!a.head_dim.empty()) s.head_dim = parse_ints("head-dim", a.head_dim, 1);
  if (!a.dtype.empty())
    s.dtypes = parse_list<DType>("dtype", a.dtype, [](const std::string& v) {
      auto d = parse_dtype(v);
      if (!d) throw BadInput(fmt::format("--dtype: '{}' is not one of fp16, bf16", v));
      return *d;
    });
  if (!a.causal.empty())
    s.causal = parse_list<bool>("causal", a.causal, [](const std::string& v) { return parse_bool("causal", v); });
  if (!a.padding.empty())
    s.padding = parse_list<Padding>("padding", a.padding, [](const std::string& v) {
      if (v == "none") return Padding::None;
      if (v == "random") return Padding::Random;
      throw BadInput(fmt::format("--padding: '{}' is not one of none, random", v));
    });
  if (!a.dropout.empty())
    s.dropout = parse_list<double>("dropout", a.dropout, [](const std::string& v) {
      const double p = parse_double("dropout", v);
      if (!(p >= 0.0 && p < 1.0)) throw BadInput(fmt::format("--dropout: {} is not in [0, 1)", v));
      return p;
    });
  auto ints = [](const std::string& opt, const std::vector<std::string>& v) {
    std::vector<int> out;
    for (int64_t x : parse_ints(opt, v, 0)) out.push_back(int(x));
    return out;
  };
  if (!a.block_r.empty()) s.block_r = ints("block-r", a.block_r);
  if (!a.block_c.empty()) s.block_c = ints("block-c", a.block_c);
  if (!a.seed.empty()) s.seed = uint64_t(parse_ints("seed", {a.seed}, 0)[0]);
  if (!a.pattern.empty()) s.pattern = a.pattern;  // checked by expand() (Problem::invalid_reason)
  if (!a.density.empty())
    s.density = parse_list<double>("density", a.density, [](const std::string& v) {
      const double x = parse_double("density", v);
      if (!(x > 0.0 && x <= 1.0)) throw BadInput(fmt::format("--density: {} is not in (0, 1]", v));
      return x;
    });
  if (!a.sparse_block.empty()) s.sparse_block = ints("sparse-block", a.sparse_block);
  if (!a.sparse_window.empty()) s.sparse_window = int(parse_ints("sparse-window", {a.sparse_window}, 0)[0]);
  if (!a.sparse_global.empty()) s.sparse_global = int(parse_ints("sparse-global", {a.sparse_global}, 0)[0]);
  for (const auto& m : s.methods)
    if (!builtin_registry().find(m))
      throw BadInput(fmt::format("--method: unknown method '{}' (known: {})", m, fmt::join(builtin_registry().names(), ", ")));
  try {
    expand(s);  // reject impossible shapes before any GPU work
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  return s;
}

std::string join_command_line(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) {
    if (!s.empty()) s += ' ';
    s += a.find_first_of(" \t'\"") == std::string::npos ? a : "'" + a + "'";
  }
  return s;
}

nlohmann::json build_json() {
  const BuildInfo& b = build_info();
  return {{"git_revision", b.git_revision}, {"git_dirty", b.git_dirty}, {"cuda_architectures", b.cuda_architectures},
          {"build_type", b.build_type},     {"cxx_compiler", b.cxx_compiler}, {"cuda_compiler", b.cuda_compiler}};
}

std::string default_output_path(const DeviceInfo& dev) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char date[16], hms[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
  std::strftime(hms, sizeof hms, "%H%M%S", &tm);
  std::string path = fmt::format("results/{}-{}.json", dev.slug(), date);
  if (fs::exists(path)) path = fmt::format("results/{}-{}-{}.json", dev.slug(), date, hms);  // never overwrite a result
  return path;
}

// Fails early (bad input) when the output file cannot be created, leaving nothing behind.
void check_writable(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw BadInput(fmt::format("--out: directory '{}' does not exist", dir.string()));
  if (fs::is_directory(p, ec)) throw BadInput(fmt::format("--out: '{}' is a directory", path));
  const std::string probe = path + ".tmp";
  std::ofstream f(probe);
  if (!f) throw BadInput(fmt::format("--out: cannot write '{}'", path));
  f.close();
  std::remove(probe.c_str());
}

int cmd_device(int index, bool as_json) {
  std::string why;
  auto dev = query_device(index, &why);
  if (!dev) {
    fmt::print(stderr, "flashio: {}\n", why);
    return kExitRuntime;
  }
  if (as_json) {
    fmt::print("{}\n", to_json(*dev).dump(2));
    return 0;
  }
  const auto& d = *dev;
  fmt::print("GPU {}: {}\n", d.index, d.name);
  fmt::print("  compute capability      {}.{}\n", d.cc_major, d.cc_minor);
  fmt::print("  SMs                     {}\n", d.sm_count);
  fmt::print("  SM clock (peak)         {} MHz\n", d.sm_clock_khz / 1000);
  fmt::print("  shared memory per SM    {} KiB\n", d.smem_per_sm / 1024);
  fmt::print("  shared memory per block {} KiB (opt-in)\n", d.smem_per_block_optin / 1024);
  fmt::print("  L2 cache                {} MiB\n", double(d.l2_bytes) / (1 << 20));
  fmt::print("  global memory           {:.1f} GiB\n", double(d.global_memory_bytes) / (1 << 30));
  fmt::print("  memory clock (peak)     {} MHz\n", d.memory_clock_khz / 1000);
  fmt::print("  memory bus width        {} bits\n", d.bus_width_bits);
  fmt::print("  peak DRAM bandwidth     {:.0f} GB/s (2 x clock x bus width)\n", d.peak_bandwidth_bytes_per_s() / 1e9);
  fmt::print("  ECC                     {}\n", d.ecc ? "on" : "off");
  fmt::print("  driver / runtime        {}.{} / {}.{}\n", d.driver_version / 1000, (d.driver_version % 1000) / 10,
             d.runtime_version / 1000, (d.runtime_version % 1000) / 10);
  return 0;
}

std::string join_passes(const std::vector<Pass>& v) {
  std::vector<std::string> s;
  for (Pass p : v) s.push_back(to_string(p));
  return fmt::format("{}", fmt::join(s, ","));
}

std::string join_dtypes(const std::vector<DType>& v) {
  std::vector<std::string> s;
  for (DType t : v) s.push_back(to_string(t));
  return fmt::format("{}", fmt::join(s, ","));
}

int cmd_list(const AxisOptions& axes, bool shape_given) {
  for (const Method* m : builtin_registry().all()) {
    const MethodInfo i = m->info();
    fmt::print("{:<10} [{}] {}\n", i.name, i.where, i.summary);
    fmt::print("           passes: {}  dtypes: {}  head dims: {}  masks: {}  dropout: {}  GQA: {}\n", join_passes(i.passes),
               join_dtypes(i.dtypes), i.head_dims.empty() ? std::string("any") : fmt::format("{}", fmt::join(i.head_dims, ",")),
               fmt::join(i.masks, ","), i.dropout ? "yes" : "no", i.gqa ? "yes" : "no");
    if (!i.notes.empty()) fmt::print("           {}\n", i.notes);
  }
  if (!shape_given) return 0;

  SweepSpec base;  // batch 1, 16 heads unless given: `list` judges one shape, not the default sweep
  base.methods = builtin_registry().names();
  const SweepSpec spec = build_spec(axes, base);
  std::string why;
  std::optional<DeviceInfo> dev = query_device(0, &why);
  if (!dev) {  // judge for an H100 when there is no GPU here
    DeviceInfo h100;
    h100.name = "NVIDIA H100 (assumed: no GPU here)";
    h100.cc_major = 9;
    h100.sm_count = 132;
    h100.smem_per_sm = 233472;
    h100.smem_per_block_optin = 232448;
    h100.l2_bytes = 50 << 20;
    h100.global_memory_bytes = int64_t(80) << 30;
    dev = h100;
  }
  fmt::print("\nFor {} on {}:\n", spec.methods.size() == 1 ? "this method" : "these points", dev->name);
  for (const Point& pt : expand(spec)) {
    const Method* m = builtin_registry().find(pt.method);
    const Support s = m->supports(pt.problem, pt.pass, *dev);
    fmt::print("  {:<60} {}\n", pt.name(), s.ok ? "supported" : "no: " + s.reason);
  }
  return 0;
}

struct RunArgs {
  AxisOptions axes;
  int reps = 30, warmup = 5, device = 0;
  bool no_flush = false, dry_run = false, quiet = false, verbose = false;
  std::string out;
  std::string counters = "full";
};

int cmd_run(const RunArgs& a, const std::vector<std::string>& argv) {
  if (a.reps < 1) throw BadInput("--reps must be >= 1");
  if (a.warmup < 0) throw BadInput("--warmup must be >= 0");
  const auto counter_set = parse_counter_set(a.counters);
  if (!counter_set) throw BadInput(fmt::format("--counters: '{}' is not one of off, dram, full", a.counters));
  const SweepSpec spec = build_spec(a.axes, default_sweep());
  const std::vector<Point> points = expand(spec);
  if (a.dry_run) {
    for (const auto& p : points) fmt::print("{}\n", p.name());
    fmt::print(stderr, "{} points\n", points.size());
    return 0;
  }
  if (!a.out.empty()) check_writable(a.out);
  std::string why;
  const auto dev = query_device(a.device, &why);
  if (!dev) {
    fmt::print(stderr, "flashio: {}\n", why);
    return kExitRuntime;
  }
  std::string out = a.out;
  if (out.empty()) {
    std::error_code ec;
    fs::create_directories("results", ec);
    out = default_output_path(*dev);
    check_writable(out);
  }

  RunOptions opt;
  opt.device = a.device;
  opt.reps = a.reps;
  opt.warmup = a.warmup;
  opt.flush_l2 = !a.no_flush;
  opt.counters = *counter_set;
  ResultFile file;
  file.run_id = new_run_id();
  file.created = utc_timestamp();
  file.command_line = join_command_line(argv);
  file.build = build_json();
  file.device = to_json(*dev);
  Runner runner(*dev, opt);
  if (a.verbose) fmt::print(stderr, "{}\n", runner.counters_description());
  file.records = runner.run_all(points, [&](const Record& r, size_t i, size_t total) {
    if (a.quiet) return;
    std::string what = r.time ? format_time(r.time->median_s) : r.reason;
    fmt::print(stderr, "[{}/{}] {} {} {}\n", i + 1, total, r.name(), to_string(r.status), what);
  });
  write_result_file(file, out);
  fmt::print("{}", format_records_table(file.records));
  fmt::print("{} on {} — {} points written to {}\n", build_info().git_revision.substr(0, 12), dev->name,
             file.records.size(), out);
  return 0;
}

}  // namespace

int flashio_main(const std::vector<std::string>& args) {
  CLI::App app{"flashio: benchmarks and IO analysis of exact attention (FlashAttention-1/2, baselines)", "flashio"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("flashio 0.1.0 (") + build_info().git_revision + ")");

  AxisOptions list_axes;
  bool list_shape = false;
  CLI::App* list = app.add_subcommand("list", "methods with what they support; with a shape, whether and why not");
  list->add_option("--method,-m", list_axes.method, "only these methods")->delimiter(',');
  add_shape_options(list, list_axes);
  list->add_option("--pass", list_axes.pass, "passes: fwd, bwd, fwdbwd")->delimiter(',');

  RunArgs run_args;
  CLI::App* run = app.add_subcommand("run", "run a sweep on the GPU, write a result file and print a table");
  run->add_option("--method,-m", run_args.axes.method, "methods (default: standard,flash2)")->delimiter(',');
  run->add_option("--pass", run_args.axes.pass, "passes: fwd, bwd, fwdbwd (default: fwd)")->delimiter(',');
  add_shape_options(run, run_args.axes);
  run->add_option("--reps", run_args.reps, "timed repetitions per point (median reported)");
  run->add_option("--warmup", run_args.warmup, "untimed launches before timing");
  run->add_flag("--no-l2-flush", run_args.no_flush, "do not clean L2 before each repetition (hot-cache timing)");
  run->add_option("--out,-o", run_args.out, "result file (default: results/<gpu>-<date>.json)");
  run->add_option("--device", run_args.device, "GPU index");
  run->add_flag("--dry-run", run_args.dry_run, "list the points and exit (no GPU needed)");
  run->add_flag("--quiet,-q", run_args.quiet, "no per-point progress on stderr");
  run->add_flag("--verbose,-v", run_args.verbose, "also print the counter set, its metrics and replay passes");
  run->add_option("--counters", run_args.counters,
                  "hardware counters after timing: off, dram (DRAM bytes, duration), full (both traffic levels; default)");
  run->footer(
      "Axes take comma-separated lists; the sweep is their cartesian product. With no axes,\n"
      "the default sweep is FlashAttention-2's setting: 16384 tokens (batch = 16384/N),\n"
      "model dim 2048 (heads = 2048/d), N = 512..4096, d = 64, 128, fp16, standard and flash2.");

  int device_index = 0;
  bool device_json = false;
  CLI::App* device = app.add_subcommand("device", "describe the GPU: SMs, shared memory, L2, bandwidth, clocks, versions");
  device->add_option("--device", device_index, "GPU index");
  device->add_flag("--json", device_json, "print as JSON");

  const auto analysis_commands = analysis::add_analysis_commands(app);  // analyze, report, compare, predict

  std::vector<const char*> cargs;
  for (const auto& s : args) cargs.push_back(s.c_str());
  try {
    app.parse(int(cargs.size()), cargs.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "flashio: error: {}\n", e.what());
    return kExitBadInput;
  }
  try {
    if (list->parsed()) {
      list_shape = !list_axes.seqlen.empty() || !list_axes.head_dim.empty() || !list_axes.batch.empty() ||
                   !list_axes.heads.empty() || !list_axes.dtype.empty() || !list_axes.causal.empty();
      return cmd_list(list_axes, list_shape);
    }
    if (run->parsed()) return cmd_run(run_args, args);
    if (device->parsed()) return cmd_device(device_index, device_json);
    if (const auto rc = analysis_commands->run()) return *rc;
  } catch (const BadInput& e) {
    fmt::print(stderr, "flashio: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "flashio: {}\n", e.what());
    return kExitRuntime;
  }
  return kExitBadInput;
}

int flashio_main(int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  return flashio_main(args);
}

}  // namespace flashio

#include "bench/cli/commands.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "analysis/cli_analysis.h"
#include "bench/core/build_info.h"
#include "bench/core/exit_codes.h"
#include "bench/core/json_input.h"
#include "bench/core/safe_write.h"
#include "bench/core/sparsity.h"
#include "bench/core/varlen.h"
#include "bench/cli/bad_input.h"
#include "bench/cli/profile_command.h"
#include "bench/cli/run_outputs.h"
#include "bench/cli/sweep_commands.h"
#include "bench/cuda/device_query.h"
#include "bench/sweep/journal.h"
#include "bench/core/method.h"
#include "bench/sweep/presets.h"
#include "bench/sweep/progress.h"
#include "bench/core/record.h"
#include "bench/measure/runner.h"
#include "bench/sweep/shard.h"
#include "bench/sweep/sweep.h"
#include "bench/sweep/sweep_file.h"
#include "bench/measure/sweep_runner.h"
#include "bench/sweep/table.h"

namespace flashio {
namespace {

namespace fs = std::filesystem;

// Exit codes: bench/core/exit_codes.h.

// A string option given with an empty value (--out "", --preset "") is refused, not taken as absent.
const CLI::Validator kNonEmpty([](std::string& v) { return v.empty() ? std::string("an empty value") : std::string(); },
                               "", "NONEMPTY");

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
      dropout, deterministic, block_r, block_c, mma, kv_layout, seqlens, varlen_as, seqlen_q, pattern, density,
      sparse_block;
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
  app->add_option("--deterministic", a.deterministic,
                  "bitwise-reproducible backward (dQ in a fixed order): false, true (or both: false,true)")
      ->delimiter(',');
  app->add_option("--block-r", a.block_r, "force the tile rows Br (0 = method's choice)")->delimiter(',');
  app->add_option("--block-c", a.block_c, "force the tile columns Bc (0 = method's choice)")->delimiter(',');
  app->add_option("--mma", a.mma,
                  "tensor-core instruction of the fused kernels: auto (wgmma on Hopper where compiled), mma.sync, wgmma")
      ->delimiter(',');
  app->add_option("--kv-layout", a.kv_layout,
                  "K/V cache layout: contiguous, paged:P (pages of P tokens, P a positive multiple of 64, in a seeded "
                  "random order through a block table; with --seqlens and --seqlen-q each sequence's keys in pages of "
                  "its own)")
      ->delimiter(',');
  app->add_option("--seqlens", a.seqlens,
                  "variable lengths, packed without padding: uniform:A-B (lengths uniform in [A, B] from --seed; "
                  "--batch sequences, or with --tokens T as many as fill T tokens), file:PATH (integers, white space "
                  "or commas, # comments); N is then the longest sequence")
      ->delimiter(',');
  app->add_option("--varlen-as", a.varlen_as,
                  "layout of --seqlens points: packed (cumulative offsets, no padding), padded (the same sequences "
                  "padded to the longest, key lengths = the lengths), or both: packed,padded")
      ->delimiter(',');
  app->add_option("--seqlen-q", a.seqlen_q,
                  "varlen decode: queries per sequence of --seqlens points (the lengths are then the key lengths, "
                  "K/V packed or, with --kv-layout paged:P, paged per sequence; Q dense [B, H, Nq, d]); default: "
                  "self-attention, each sequence's own tokens")
      ->delimiter(',');
  app->add_option("--tokens", a.tokens, "batch = tokens / N (FlashAttention-2's setting: 16384)");
  app->add_option("--model-dim", a.model_dim, "heads = model-dim / d (FlashAttention-2's setting: 2048)");
  app->add_option("--seed", a.seed, "input and dropout seed");
  // Block sparsity (bench/core/sparsity.h).
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
  // --batch sets the batch, --tokens derives it: both on one command line contradict each other.
  if (!a.batch.empty() && !a.tokens.empty()) throw BadInput("--batch and --tokens both set the batch: give one");
  if (!a.heads.empty() && !a.model_dim.empty()) throw BadInput("--heads and --model-dim both set the heads: give one");
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
  if (!a.deterministic.empty())
    s.deterministic = parse_list<bool>("deterministic", a.deterministic,
                                       [](const std::string& v) { return parse_bool("deterministic", v); });
  auto ints = [](const std::string& opt, const std::vector<std::string>& v) {  // 32-bit: refused, never truncated
    std::vector<int> out;
    for (int64_t x : parse_ints(opt, v, 0)) {
      if (x > std::numeric_limits<int>::max())
        throw BadInput(fmt::format("--{}: {} is above the maximum {}", opt, x, std::numeric_limits<int>::max()));
      out.push_back(int(x));
    }
    return out;
  };
  if (!a.block_r.empty()) s.block_r = ints("block-r", a.block_r);
  if (!a.block_c.empty()) s.block_c = ints("block-c", a.block_c);
  if (!a.mma.empty())
    s.mma = parse_list<std::string>("mma", a.mma, [](const std::string& v) {
      if (v != "auto" && v != "mma.sync" && v != "wgmma")
        throw BadInput(fmt::format("--mma: '{}' is not one of auto, mma.sync, wgmma", v));
      return v == "auto" ? std::string() : v;
    });
  if (!a.kv_layout.empty())
    s.kv_page = parse_list<int>("kv-layout", a.kv_layout, [](const std::string& v) {
      std::string why;
      const auto page = parse_kv_layout(v, &why);
      if (!page) throw BadInput("--kv-layout: " + why);
      return *page;
    });
  if (!a.seqlens.empty())
    s.seqlens = parse_list<std::string>("seqlens", a.seqlens, [](const std::string& v) {
      std::string why;
      if (!parse_seqlens(v, &why)) throw BadInput("--seqlens: " + why);
      return v;
    });
  if (!a.seqlen_q.empty()) {
    if (a.seqlens.empty())
      throw BadInput(
          "--seqlen-q: applies to --seqlens points only (a varlen decode; a dense point's queries: --seqlen)");
    s.varlen_queries = parse_ints("seqlen-q", a.seqlen_q, 1);
  }
  if (!a.varlen_as.empty()) {
    if (a.seqlens.empty()) throw BadInput("--varlen-as: applies to --seqlens points only (give --seqlens)");
    s.varlen_padded = parse_list<bool>("varlen-as", a.varlen_as, [](const std::string& v) {
      if (v == "packed") return false;
      if (v == "padded") return true;
      throw BadInput(fmt::format("--varlen-as: '{}' is not one of packed, padded", v));
    });
  }
  if (!a.seed.empty()) s.seed = uint64_t(parse_ints("seed", {a.seed}, 0)[0]);
  if (!a.pattern.empty()) s.pattern = a.pattern;  // checked by expand() (Problem::invalid_reason)
  if (!a.density.empty())
    s.density = parse_list<double>("density", a.density, [](const std::string& v) {
      const double x = parse_double("density", v);
      if (!(x > 0.0 && x <= 1.0)) throw BadInput(fmt::format("--density: {} is not in (0, 1]", v));
      return x;
    });
  if (!a.sparse_block.empty()) s.sparse_block = ints("sparse-block", a.sparse_block);
  if (!a.sparse_window.empty()) s.sparse_window = ints("sparse-window", {a.sparse_window})[0];
  if (!a.sparse_global.empty()) s.sparse_global = ints("sparse-global", {a.sparse_global})[0];
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

int cmd_device(int index, bool as_json, bool copy_bandwidth) {
  std::string why;
  auto dev = query_device(index, &why);
  if (!dev) {
    fmt::print(stderr, "flashio: {}\n", why);
    return kExitRuntime;
  }
  std::optional<CopyBandwidth> copy;
  if (copy_bandwidth) {  // 1 GiB, median of 20: what a streaming kernel can reach on this GPU
    copy = measure_copy_bandwidth(index, int64_t(1) << 30, 20, &why);
    if (!copy) {
      fmt::print(stderr, "flashio: {}\n", why);
      return kExitRuntime;
    }
  }
  if (as_json) {
    nlohmann::json j = to_json(*dev);
    if (copy)
      j["copy_bandwidth"] = {{"bytes", copy->bytes},
                             {"reps", copy->reps},
                             {"median_s", copy->median_s},
                             {"min_s", copy->min_s},
                             {"max_s", copy->max_s},
                             {"bytes_per_s", copy->bytes_per_s()},
                             {"definition", "cudaMemcpy device to device; 2 x bytes (read + write) / median time"}};
    fmt::print("{}\n", j.dump(2));
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
  if (copy)
    fmt::print("  copy bandwidth          {:.0f} GB/s measured ({:.1f} % of the peak): cudaMemcpy D2D of {} MiB, "
               "2 x bytes / the median of {} ({:.3f} ms)\n",
               copy->bytes_per_s() / 1e9, 100.0 * copy->bytes_per_s() / d.peak_bandwidth_bytes_per_s(),
               copy->bytes >> 20, copy->reps, copy->median_s * 1e3);
  if (d.kernel_ptx_arch > 0)
    fmt::print("  fused kernels           compute_{} code, running as sm_{}{}\n", d.kernel_ptx_arch, d.kernel_binary_arch,
               d.kernel_ptx_arch < d.kernel_binary_arch ? " (PTX JIT-compiled by the driver)" : "");
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
    fmt::print("           passes: {}  dtypes: {}  head dims: {}  masks: {}  dropout: {}  GQA: {}  deterministic: {}\n",
               join_passes(i.passes), join_dtypes(i.dtypes),
               i.head_dims.empty() ? std::string("any") : fmt::format("{}", fmt::join(i.head_dims, ",")),
               fmt::join(i.masks, ","), i.dropout ? "yes" : "no", i.gqa ? "yes" : "no", i.deterministic ? "yes" : "no");
    if (!i.notes.empty()) fmt::print("           {}\n", i.notes);
  }
  if (!shape_given) return 0;

  SweepSpec base;  // batch 1, 16 heads unless given: `list` judges one shape, not the default sweep
  base.methods = builtin_registry().names();
  const SweepSpec spec = build_spec(axes, base);
  std::string why;
  std::optional<DeviceInfo> dev = query_device(0, &why);
  if (!dev) dev = h100_sxm("NVIDIA H100 (assumed: no GPU here)");  // judge for an H100 when there is no GPU here
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
  bool no_flush = false, dry_run = false, json = false, quiet = false, verbose = false, force = false;
  std::string out, preset, sweep, resume, devices, shard;
  std::string csv_out, md_out;  // --csv, --md: the records beside the JSON (bench/cli/run_outputs.h)
  std::string counters = "full";
  std::string reference = "gpu";
};

// The sweeps to run: a preset, a sweep file or the axes over the default sweep; axes given
// with a preset or a sweep file override those axes in each of its sweeps.
std::vector<SweepSpec> run_sweeps(const RunArgs& a) {
  if (!a.preset.empty() && !a.sweep.empty()) throw BadInput("--preset and --sweep: give one of them");
  SweepFile file;
  if (!a.preset.empty()) {
    const Preset* p = find_preset(a.preset);
    if (!p) throw BadInput(fmt::format("--preset: unknown preset '{}' (known: {})", a.preset, fmt::join(preset_names(), ", ")));
    for (const auto& m : p->requires_methods)
      if (!builtin_registry().find(m))
        throw BadInput(fmt::format("--preset {}: needs method '{}', which this build does not have", p->name, m));
    file = p->sweep();
  } else if (!a.sweep.empty()) {
    try {
      file = read_sweep_file(a.sweep);
    } catch (const std::invalid_argument& e) {
      throw BadInput(e.what());
    }
    for (const auto& s : file.sweeps)
      for (const auto& m : s.methods)
        if (!builtin_registry().find(m))
          throw BadInput(fmt::format("{}: unknown method '{}' (known: {})", a.sweep, m, fmt::join(builtin_registry().names(), ", ")));
  } else {
    return {build_spec(a.axes, default_sweep())};
  }
  std::vector<SweepSpec> out;
  for (const auto& s : file.sweeps) out.push_back(build_spec(a.axes, s));
  return out;
}

// --devices 0,1,... or all: the GPU indices (empty = all GPUs of the machine).
std::vector<int> parse_device_list(const std::string& s) {
  if (s == "all") return {};
  std::vector<int> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    const int64_t d = parse_ints("devices", {s.substr(start, comma - start)}, 0)[0];
    if (d > 1024) throw BadInput(fmt::format("--devices: there is no GPU {}", d));
    if (std::find(out.begin(), out.end(), int(d)) != out.end()) throw BadInput(fmt::format("--devices: GPU {} given twice", d));
    out.push_back(int(d));
    start = comma + 1;
  }
  return out;
}

// The records of --resume FILE that this run keeps: ok and skipped records of points in
// the sweep. oom and error records are run again (memory may be free now; an error may
// have come from a context poisoned by another point).
struct Resumed {
  ResultFile file;
  std::map<size_t, Record> kept;  // by point index
  size_t rerun = 0, foreign = 0;
};

Resumed load_resume(const std::string& path, const std::vector<Point>& points) {
  Resumed r;
  try {
    const LoadedResults loaded = read_results_any(path);
    r.file = loaded.file;
    if (loaded.truncated)
      fmt::print(stderr, "flashio: note: {} ends in a cut-short line (the run was killed); its complete records are kept\n", path);
  } catch (const std::exception& e) {
    throw BadInput(fmt::format("--resume: {}", e.what()));
  }
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < points.size(); ++i) index.emplace(points[i].name(), i);
  for (Record rec : r.file.records) {
    const auto it = index.find(rec.name());
    if (it == index.end()) {
      ++r.foreign;
      continue;
    }
    if (rec.status == Status::Oom || rec.status == Status::Error) {
      ++r.rerun;
      continue;
    }
    rec.point_index = int64_t(it->second);
    r.kept[it->second] = rec;
  }
  return r;
}

// A journal beside `out` that this run does not resume from holds an unfinished run's
// records: refuse to overwrite them.
void check_no_unfinished_journal(const std::string& out, const std::string& resume) {
  const std::string journal = journal_path(out);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(journal, ec)) && (resume.empty() || !same_file(journal, resume)))
    throw BadInput(fmt::format("--out: {} exists (an interrupted run?): continue it with --resume {}, or remove it",
                               journal, journal));
}

// SIGINT / SIGTERM during a sweep: the workers finish their current point, the result file
// is written, and flashio exits 128 + the signal. A second signal kills at once (the
// journal still holds every completed point).
std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) {
  g_stop_signal.store(sig);
  std::signal(sig, SIG_DFL);
}

// `--dry-run --json`: the points to run as one JSON document, each with its problem and FLOPs as
// its record would write them (to_json(Problem), flops()), so other producers (scripts/peers_sdpa.py)
// measure the same points under the same names. With block-sparse points, "block_masks" maps each
// sparse problem's name to its mask as make_block_mask() makes it (one 0/1 string per block row of
// sparse_block x sparse_block element blocks, as a record's pattern_mask), once per problem, so a
// peer runs exactly the blocks blocksparse_flash runs; a problem whose mask cannot be made has none.
// The estimates of the points to run, in their order (estimate_sweep_seconds).
std::vector<double> todo_estimates(const std::vector<Point>& points, const std::vector<size_t>& todo, const RunArgs& a) {
  std::vector<Point> run;
  for (size_t i : todo) run.push_back(points[i]);
  return estimate_sweep_seconds(run, a.reps, a.warmup, 0, a.reference == "gpu");
}

nlohmann::json dry_run_json(const std::vector<Point>& points, const std::vector<size_t>& todo,
                            const std::optional<Shard>& shard, const RunArgs& a) {
  nlohmann::json list = nlohmann::json::array();
  const std::vector<double> estimates = todo_estimates(points, todo, a);
  for (size_t k = 0; k < todo.size(); ++k) {
    const size_t i = todo[k];
    const Point& pt = points[i];
    list.push_back({{"point_index", i},
                    {"name", pt.name()},
                    {"method", pt.method},
                    {"pass", to_string(pt.pass)},
                    {"problem", to_json(pt.problem)},
                    {"flops", flops(pt.problem, pt.pass)},
                    {"estimate_s", estimates[k]}});
  }
  nlohmann::json masks = nlohmann::json::object();
  for (size_t i : todo) {
    const Problem& p = points[i].problem;
    if (!p.sparse()) continue;
    const std::string key = p.name();
    if (masks.contains(key)) continue;
    try {
      const BlockMask m = make_block_mask(p);
      nlohmann::json rows = nlohmann::json::array();
      for (int64_t r = 0; r < m.rows; ++r) {
        std::string row(size_t(m.cols), '0');
        for (int64_t c = 0; c < m.cols; ++c)
          if (m.at(r, c)) row[size_t(c)] = '1';
        rows.push_back(std::move(row));
      }
      masks[key] = std::move(rows);
    } catch (const std::exception&) {
      // an unusable pattern: its points are skipped records, and no mask is listed
    }
  }
  nlohmann::json doc = {{"schema", "flashio/points"}, {"schema_version", 1}, {"points_total", points.size()}};
  if (shard) doc["shard"] = fmt::format("{}/{}", shard->index, shard->count);
  doc["points"] = std::move(list);
  if (!masks.empty()) doc["block_masks"] = std::move(masks);
  return doc;
}

int cmd_run(const RunArgs& a, const std::vector<std::string>& argv) {
  if (a.json && !a.dry_run) throw BadInput("--json: only with --dry-run (a run writes its records to --out)");
  if (a.reps < 1) throw BadInput("--reps must be >= 1");
  if (a.warmup < 0) throw BadInput("--warmup must be >= 0");
  const auto counter_set = parse_counter_set(a.counters);
  if (!counter_set) throw BadInput(fmt::format("--counters: '{}' is not one of off, dram, full", a.counters));
  if (a.reference != "gpu" && a.reference != "host")
    throw BadInput(fmt::format("--reference: '{}' is not one of gpu, host", a.reference));
  std::vector<Point> points;
  try {
    points = expand_all(run_sweeps(a));
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  std::vector<size_t> todo(points.size());
  for (size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  std::optional<Shard> shard;
  if (!a.shard.empty()) {
    std::string why;
    shard = parse_shard(a.shard, &why);
    if (!shard) throw BadInput("--shard: " + why);
    todo = shard_indices(points, *shard, a.reps, a.warmup);
  }
  const std::vector<int> device_list =
      !a.devices.empty() ? parse_device_list(a.devices) : std::vector<int>{a.device};
  Resumed resumed;
  if (!a.resume.empty()) {
    resumed = load_resume(a.resume, points);
    const std::set<size_t> mine(todo.begin(), todo.end());  // this shard's points
    for (auto it = resumed.kept.begin(); it != resumed.kept.end();)
      it = mine.count(it->first) ? std::next(it) : resumed.kept.erase(it);
    todo.erase(std::remove_if(todo.begin(), todo.end(), [&](size_t i) { return resumed.kept.count(i) > 0; }), todo.end());
    if (resumed.rerun)
      fmt::print(stderr, "flashio: note: {} oom/error records of {} will be measured again\n", resumed.rerun, a.resume);
    if (resumed.foreign)
      fmt::print(stderr, "flashio: note: {} records of {} are not points of this sweep and are left out\n", resumed.foreign,
                 a.resume);
  }
  // Output: --out, else the resumed file's final name, else results/<gpu>-<date>.json.
  std::string out = a.out;
  if (out.empty() && !a.resume.empty()) {
    out = a.resume;
    if (out.size() > 6 && out.compare(out.size() - 6, 6, ".jsonl") == 0) out.pop_back();
  }

  if (a.dry_run && a.json) {
    fmt::print("{}\n", dry_run_json(points, todo, shard, a).dump(1));
    return 0;
  }
  if (a.dry_run) {
    double total = 0;
    const std::vector<double> estimates = todo_estimates(points, todo, a);
    for (size_t k = 0; k < todo.size(); ++k) {
      total += estimates[k];
      fmt::print("{}  ~{}\n", points[todo[k]].name(), format_duration(estimates[k]));
    }
    std::string scope = fmt::format("{} points", todo.size());
    if (shard) scope += fmt::format(" (shard {}/{} of {})", shard->index, shard->count, points.size());
    if (!resumed.kept.empty()) scope += fmt::format(", {} already in {}", resumed.kept.size(), a.resume);
    // --devices all: the GPU count is unknown without a GPU; say what one GPU would take.
    const size_t workers = device_list.empty() ? 1 : device_list.size();
    fmt::print(stderr, "{}; estimated {} on {} H100/H200-class GPU{}{} (a rough model: each method's TFLOP/s on the committed H200 results, host work on this machine's {} cores)\n",
               scope, format_duration(total / double(workers)), workers == 1 ? "one" : std::to_string(workers),
               workers == 1 ? "" : "s", device_list.empty() ? ", divided among the GPUs of --devices all" : "",
               std::max(1u, std::thread::hardware_concurrency()));
    return 0;
  }

  // Inputs the output must not be: the sweep file, the pattern files; the resumed file is the
  // one output that may be replaced without --force (resuming rewrites it with more records).
  std::vector<std::string> inputs = {a.sweep};
  for (const auto& pat : a.axes.pattern)
    if (pat.rfind("file:", 0) == 0) inputs.push_back(pat.substr(5));
  const bool replaces_resumed = !a.resume.empty() && !out.empty() && same_file(out, a.resume);
  if (!out.empty()) {
    check_writable(out, "--out", inputs, a.force || replaces_resumed);
    check_writable(journal_path(out), "--out (its journal)", inputs, /*overwrite=*/true);
    check_no_unfinished_journal(out, a.resume);
  }
  if (!a.csv_out.empty()) check_writable(a.csv_out, "--csv");
  if (!a.md_out.empty()) check_writable(a.md_out, "--md");
  std::vector<DeviceInfo> devices;
  // The GPUs are queried at once, each on its own thread: the query creates each GPU's context
  // (0.2-0.4 s apiece on the H100 and H200, one after the other before).
  const auto query_start = std::chrono::steady_clock::now();
  {
    std::string why;
    const int count = device_count(&why);
    if (count <= 0) {
      fmt::print(stderr, "flashio: {}\n", why);
      return kExitRuntime;
    }
    std::vector<int> wanted = device_list;
    if (wanted.empty())
      for (int d = 0; d < count; ++d) wanted.push_back(d);
    for (int d : wanted)
      if (d >= count) throw BadInput(fmt::format("--devices: there is no GPU {} (this machine has {})", d, count));
    std::vector<std::optional<DeviceInfo>> found(wanted.size());
    std::vector<std::string> whys(wanted.size());
    std::vector<std::thread> queries;
    for (size_t k = 0; k < wanted.size(); ++k)
      queries.emplace_back([&, k] { found[k] = query_device(wanted[k], &whys[k]); });
    for (auto& t : queries) t.join();
    for (size_t k = 0; k < wanted.size(); ++k) {
      if (!found[k]) {
        fmt::print(stderr, "flashio: {}\n", whys[k]);
        return kExitRuntime;
      }
      devices.push_back(*found[k]);
    }
  }
  for (const auto& d : devices)
    if (d.name != devices[0].name)
      throw BadInput(fmt::format("--devices: GPU {} is a {} but GPU {} a {}; run them separately and merge with --allow-mixed-gpus",
                                 devices[0].index, devices[0].name, d.index, d.name));
  if (!a.resume.empty() && resumed.file.device.is_object() && resumed.file.device.value("name", devices[0].name) != devices[0].name)
    throw BadInput(fmt::format("--resume: {} was measured on {}, this GPU is {}", a.resume,
                               resumed.file.device.value("name", std::string()), devices[0].name));
  if (out.empty()) {
    std::error_code ec;
    fs::create_directories("results", ec);
    out = default_output_path(devices[0]);
    check_writable(out, "--out", inputs);
  }
  const std::string journal = journal_path(out);
  check_no_unfinished_journal(out, a.resume);

  ResultFile file;
  file.run_id = a.resume.empty() || resumed.file.run_id.empty() ? new_run_id() : resumed.file.run_id;
  file.created = utc_timestamp();
  file.command_line = join_command_line(argv);
  file.build = build_json();
  file.device = to_json(devices[0]);
  if (devices.size() > 1)
    for (const auto& d : devices) file.devices.push_back(to_json(d));

  // The journal starts with the kept records, so it alone always holds the whole run so far.
  // (When resuming from this very journal it was read above and is rewritten here.)
  for (const auto& [i, rec] : resumed.kept) file.records.push_back(rec);
  JournalWriter writer(journal, file);

  const std::vector<double> estimates = todo_estimates(points, todo, a);
  std::map<size_t, size_t> position;  // point index → position in todo (progress weights)
  for (size_t k = 0; k < todo.size(); ++k) position[todo[k]] = k;
  Progress progress(Progress::mode_for(a.quiet, stderr), stderr, estimates);
  if (!a.quiet && (shard || !resumed.kept.empty()))
    fmt::print(stderr, "{} of {} points to run{}{}\n", todo.size(), points.size(),
               shard ? fmt::format(" (shard {}/{})", shard->index, shard->count) : std::string(),
               resumed.kept.empty() ? std::string() : fmt::format("; {} kept from {}", resumed.kept.size(), a.resume));

  SweepJob job;
  job.points = &points;
  job.todo = todo;
  job.devices = devices;
  job.options.reps = a.reps;
  job.options.warmup = a.warmup;
  job.options.flush_l2 = !a.no_flush;
  job.options.counters = *counter_set;
  job.options.reference_on_gpu = a.reference == "gpu";
  job.stop = &g_stop_signal;
  const auto sweep_start = std::chrono::steady_clock::now();
  job.start = sweep_start;
  if (a.verbose) {
    fmt::print(stderr, "{} GPU{} queried and the run set up in {:.3f} s\n", devices.size(), devices.size() == 1 ? "" : "s",
               std::chrono::duration<double>(sweep_start - query_start).count());
    job.on_worker_ready = [sweep_start](const DeviceInfo& d, const std::string& counters, const std::string& start) {
      const double at = std::chrono::duration<double>(std::chrono::steady_clock::now() - sweep_start).count();
      fmt::print(stderr, "GPU {}: ready at {:.3f} s ({}); {}\n", d.index, at, start, counters);
    };
  }
  job.on_start = [&](size_t i) { progress.started(position[i], points[i].name()); };
  job.on_record = [&](const Record& r) {
    writer.append(r);
    progress.finished(position[size_t(r.point_index)], r);
    if (a.verbose && r.phases)
      fmt::print(stderr, "  {}: {}\n", r.name(), format_phases(*r.phases));
  };
  g_stop_signal.store(0);
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);
  SweepOutcome outcome = run_sweep(job);
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  progress.close();

  for (auto& rec : outcome.records) file.records.push_back(std::move(rec));
  std::sort(file.records.begin(), file.records.end(),
            [](const Record& x, const Record& y) { return x.point_index < y.point_index; });
  file.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - sweep_start).count() +
                resumed.file.wall_s.value_or(0.0);
  // A file that appeared at `out` during the run is not replaced (exit 2, the journal kept).
  write_result_file(file, out, a.force || replaces_resumed);
  std::remove(journal.c_str());  // this run's own journal (written above): the final file now holds everything it did
  bool outputs_written = true;
  try {
    write_run_outputs(file, out, a.csv_out, a.md_out);
  } catch (const std::exception& e) {
    fmt::print(stderr, "flashio: {} (the records are in {}; flashio export makes the CSV from it)\n", e.what(), out);
    outputs_written = false;
  }

  for (const auto& e : outcome.errors) fmt::print(stderr, "flashio: {}\n", e);
  if (outcome.stopped) {
    const int sig = g_stop_signal.load();
    fmt::print(stderr, "flashio: stopped by signal {}: {} of {} points in {}; continue with --resume {}\n", sig,
               file.records.size(), resumed.kept.size() + todo.size(), out, out);
    return 128 + sig;
  }
  fmt::print("{}", format_records_table(file.records));
  fmt::print("{} on {}{} — {} points written to {}\n", build_info().git_revision.substr(0, 12), devices[0].name,
             devices.size() > 1 ? fmt::format(" (x{})", devices.size()) : std::string(), file.records.size(), out);
  fmt::print("{}\n", format_status_counts(file.records));
  if (!outputs_written) return kExitRuntime;
  if (file.records.size() < resumed.kept.size() + todo.size()) {
    fmt::print(stderr, "flashio: {} points were not run (no GPU worker could start); continue with --resume {}\n",
               resumed.kept.size() + todo.size() - file.records.size(), out);
    return kExitRuntime;
  }
  const auto failed = std::count_if(file.records.begin(), file.records.end(),
                                    [](const Record& r) { return r.status == Status::Error; });
  if (failed > 0) {
    fmt::print(stderr, "flashio: {} of {} points failed (status error: see their reasons above, and {}); exit {}\n",
               failed, file.records.size(), out, kExitOutcomeFailed);
    return kExitOutcomeFailed;
  }
  return kExitOk;
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
  run->add_option("--out,-o", run_args.out, "result file (default: results/<gpu>-<date>.json)")->check(kNonEmpty);
  run->add_flag("--force", run_args.force, "replace --out if it exists (never an input of this run)");
  run->add_option("--csv", run_args.csv_out, "also write the records as tidy CSV (flashio export's columns)")
      ->check(kNonEmpty);
  run->add_option("--md", run_args.md_out, "also write flashio report's Markdown tables of the run")->check(kNonEmpty);
  run->add_option("--device", run_args.device, "GPU index");
  run->add_flag("--dry-run", run_args.dry_run, "list the points and exit (no GPU needed)");
  run->add_flag("--json", run_args.json,
                "with --dry-run: the points as JSON (name, method, pass, problem, flops as records write them)");
  run->add_flag("--quiet,-q", run_args.quiet, "no progress on stderr");
  run->add_flag("--verbose,-v", run_args.verbose, "also print the counter set, its metrics and replay passes");
  run->add_option("--counters", run_args.counters,
                  "hardware counters after timing: off, dram (DRAM bytes, duration), full (both traffic levels; default)")
      ->check(kNonEmpty);
  run->add_option("--reference", run_args.reference,
                  "where the checks' float64 reference is made: gpu (on each point's GPU, between its timed runs; "
                  "default) or host (on the host's cores); packed, paged and block-sparse problems always on the host")
      ->check(kNonEmpty);
  run->add_option("--preset", run_args.preset, "run a paper's experiment (flashio presets lists them)")->check(kNonEmpty);
  run->add_option("--sweep", run_args.sweep, "run the sweep of a JSON sweep file (format: docs/sweeps.md)")
      ->check(kNonEmpty);
  run->add_option("--resume", run_args.resume, "skip the points already in this result file or journal (.json/.jsonl)")
      ->check(kNonEmpty);
  run->add_option("--devices", run_args.devices, "GPUs to run on at once, one worker each: 0,1,... or all")
      ->check(kNonEmpty);
  run->add_option("--shard", run_args.shard, "run slice i of n of the sweep (0 <= i < n); flashio merge joins the slices")
      ->check(kNonEmpty);
  run->footer(
      "Axes take comma-separated lists; the sweep is their cartesian product. With no axes,\n"
      "the default sweep is FlashAttention-2's setting: 16384 tokens (batch = 16384/N),\n"
      "model dim 2048 (heads = 2048/d), N = 512..4096, d = 64, 128, fp16, standard and flash2.\n"
      "Axes given with --preset or --sweep replace those axes of the preset or file.\n"
      "Records are appended to <out>l (JSON Lines) as they are made; Ctrl-C finishes the current\n"
      "point, writes <out> and exits 130; --resume <out> (or <out>l after a kill) continues.\n"
      "A failed point is a record; the sweep goes on. The last line counts ok / skipped / oom / error.\n" +
      exit_status_help("a point's status is error (e.g. its correctness check failed)"));

  std::string presets_show;
  CLI::App* presets = app.add_subcommand("presets", "the papers' experiments that flashio run --preset reproduces");
  presets->add_option("--show", presets_show, "print this preset's sweep as a sweep file")->check(kNonEmpty);
  presets->footer(exit_status_help());

  MergeArgs merge_args;
  CLI::App* merge = app.add_subcommand("merge", "join result files (shards, journals) into one result file");
  merge->add_option("inputs", merge_args.inputs, "result files (.json) or journals (.jsonl)")->required();
  merge->add_option("--out,-o", merge_args.out, "the merged result file")->required()->check(kNonEmpty);
  merge->add_flag("--force", merge_args.force, "replace --out if it exists (never one of the inputs)");
  merge->add_flag("--allow-mixed-gpus", merge_args.allow_mixed_gpus, "merge files measured on different GPU models");
  merge->footer(exit_status_help());

  ProfileArgs profile_args;
  CLI::App* profile = app.add_subcommand(
      "profile", "run any CUDA program with the suite's counters injected: one record per kernel or NVTX range");
  profile->add_option("--counters", profile_args.counters,
                      "dram (DRAM bytes, duration) or full (both traffic levels; default)");
  profile->add_option("--out,-o", profile_args.out, "result file (default: profile-<date>-<time>.json)");
  profile->add_option(
      "--range", profile_args.range,
      "one record per NVTX range whose name matches this regular expression (anywhere: anchor with ^...$), "
      "its kernels' counters summed");
  profile->add_option("--cache-control", profile_args.cache_control,
                      "all (default: the L2 cleaned before each profiled kernel, as ncu's --cache-control all) or none "
                      "(left as the kernels before left it)");
  profile->add_flag("--force", profile_args.force, "replace --out if it exists");
  profile->prefix_command();  // the first word that is not an option starts the command; `--` may precede it
  profile->footer(
      "Usage: flashio profile [options] -- COMMAND ARGS...\n"
      "The program runs with libflashio_inject.so as CUDA_INJECTION64_PATH and CUPTI as NVTX_INJECTION64_PATH;\n"
      "CUPTI replays each kernel for its counters (kernel replay), after a read-only pass over twice the L2\n"
      "(--cache-control all; not a range, not a record). Ranges: NVTX push/pop; a kernel belongs to\n"
      "the innermost matching range open on its thread, or else on the thread that pushed last.\n"
      "Exit status: the program's (128+N if signal N ended it); 1 runtime failure, 2 bad input (one line on stderr,\n"
      "the program not started).");

  int device_index = 0;
  bool device_json = false;
  CLI::App* device = app.add_subcommand("device", "describe the GPU: SMs, shared memory, L2, bandwidth, clocks, versions");
  device->add_option("--device", device_index, "GPU index");
  device->add_flag("--json", device_json, "print as JSON");
  bool device_copy = false;
  device->add_flag("--copy-bandwidth", device_copy,
                   "also measure the device-to-device copy bandwidth (cudaMemcpy of 1 GiB, median of 20)");
  device->footer(exit_status_help());
  list->footer(exit_status_help());
  app.footer(exit_status_help("analyze: a verdict does not hold; run: a point ended in an error record"));

  const auto analysis_commands = analysis::add_analysis_commands(app);  // analyze, report, compare, predict
  // No option takes an empty value (--out "", --tokens "", --device ""): an empty value is refused,
  // never taken as the option being absent.
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    for (CLI::Option* o : sub->get_options([](CLI::Option* o) { return o->get_items_expected_max() > 0; }))
      o->check(kNonEmpty);
  run->get_option("--device")->check(CLI::NonNegativeNumber);
  device->get_option("--device")->check(CLI::NonNegativeNumber);

  // `flashio profile [options] -- COMMAND ARGS...`: what follows `--` is the program's, never parsed here.
  std::vector<std::string> parsed_args = args;
  if (parsed_args.size() > 1 && parsed_args[1] == "profile")
    if (auto dashes = std::find(parsed_args.begin() + 2, parsed_args.end(), "--"); dashes != parsed_args.end()) {
      profile_args.command.assign(dashes + 1, parsed_args.end());
      parsed_args.erase(dashes, parsed_args.end());
    }
  std::vector<const char*> cargs;
  for (const auto& s : parsed_args) cargs.push_back(s.c_str());
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
                   !list_axes.heads.empty() || !list_axes.dtype.empty() || !list_axes.causal.empty() ||
                   !list_axes.deterministic.empty();
      return cmd_list(list_axes, list_shape);
    }
    if (run->parsed()) return cmd_run(run_args, args);
    if (presets->parsed()) return cmd_presets(presets_show);
    if (merge->parsed()) {
      merge_args.command_line = join_command_line(args);
      return cmd_merge(merge_args);
    }
    if (device->parsed()) return cmd_device(device_index, device_json, device_copy);
    if (profile->parsed()) {
      if (profile_args.command.empty()) profile_args.command = profile->remaining();
      profile_args.command_line = join_command_line(args);
      profile_args.build = build_json();
      return cmd_profile(profile_args);
    }
    if (const auto rc = analysis_commands->run()) return *rc;
  } catch (const BadInput& e) {
    fmt::print(stderr, "flashio: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const InputError& e) {  // a file refused by its reader (bench/core/json_input.h)
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

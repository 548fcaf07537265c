// flashio_gbench: the points of a preset, a sweep file or the default sweep as Google
// Benchmark benchmarks, named like flashio's records (flash2/fwd/b:4/h:16/n:4096/d:64/fp16),
// so Google Benchmark's filters, repetitions, JSON output and tools/compare.py work on
// flashio's kernels. Each benchmark runs flashio's Runner: the point is checked against
// the float64 reference first (a failed check, an unsupported point or an OOM skips the
// benchmark with the reason), then timed with CUDA events per iteration (UseManualTime),
// L2 cleaned before each iteration unless --no-l2-flush.
//
//   flashio_gbench --preset fa2-figure5 --benchmark_filter='flash2/.*/d:128'
//       --benchmark_repetitions=5 --benchmark_out=fig5.json --benchmark_out_format=json   (one line)
//
// Without a GPU it prints one line and exits 0 (nothing to benchmark), as the GPU tests skip.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_query.h"
#include "bench/core/method.h"
#include "bench/sweep/presets.h"
#include "bench/measure/runner.h"
#include "bench/sweep/sweep_file.h"
#include "bench/measure/timing.h"

namespace {

using namespace flashio;

constexpr int kExitBadInput = 2;

struct Args {
  std::string preset, sweep;
  int device = 0;
  bool flush_l2 = true;
};

const char* kUsage =
    "usage: flashio_gbench [--preset NAME | --sweep FILE] [--device N] [--no-l2-flush] [--benchmark_* flags]\n"
    "Registers each point of the preset or sweep file (default: flashio run's default sweep) as a\n"
    "Google Benchmark benchmark named like flashio's records; --benchmark_list_tests lists them.\n";

// Flags left after benchmark::Initialize took its own; throws std::invalid_argument.
Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--preset")
      a.preset = value();
    else if (arg == "--sweep")
      a.sweep = value();
    else if (arg == "--device") {
      const std::string v = value();
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument(fmt::format("--device: '{}' is not a GPU index", v));
      a.device = std::stoi(v);
    } else if (arg == "--no-l2-flush")
      a.flush_l2 = false;
    else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else
      throw std::invalid_argument(fmt::format("unknown option '{}' (--help lists them)", arg));
  }
  if (!a.preset.empty() && !a.sweep.empty()) throw std::invalid_argument("--preset and --sweep: give one of them");
  return a;
}

std::vector<Point> points_of(const Args& a) {
  std::vector<SweepSpec> sweeps{default_sweep()};
  if (!a.preset.empty()) {
    const Preset* p = find_preset(a.preset);
    if (!p) throw std::invalid_argument(fmt::format("--preset: unknown preset '{}'", a.preset));
    for (const auto& m : p->requires_methods)
      if (!builtin_registry().find(m))
        throw std::invalid_argument(
            fmt::format("--preset {}: needs method '{}', which this build does not have", p->name, m));
    sweeps = p->sweep().sweeps;
  } else if (!a.sweep.empty()) {
    sweeps = read_sweep_file(a.sweep).sweeps;
  }
  const auto points = expand_all(sweeps);
  for (const auto& pt : points)
    if (!builtin_registry().find(pt.method)) throw std::invalid_argument(fmt::format("unknown method '{}'", pt.method));
  return points;
}

// One iteration = one launch sequence between two CUDA events, L2 cleaned before it.
TimeStats time_iterations(benchmark::State& state, const std::function<void()>& launch, cudaStream_t stream,
                          const L2Flusher* flusher) {
  cudaEvent_t start, stop;
  FLASHIO_CUDA_CHECK(cudaEventCreate(&start));
  FLASHIO_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> seconds;
  for (auto _ : state) {
    if (flusher) flusher->flush(stream);
    FLASHIO_CUDA_CHECK(cudaEventRecord(start, stream));
    launch();
    FLASHIO_CUDA_CHECK(cudaEventRecord(stop, stream));
    FLASHIO_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    FLASHIO_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(ms / 1e3);
    seconds.push_back(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return summarize(seconds, 0, flusher != nullptr, "cuda_events");
}

}  // namespace

// --benchmark_list_tests only lists the names: no GPU needed.
bool only_listing(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--benchmark_list_tests" || a == "--benchmark_list_tests=true") listing = true;
    if (a == "--benchmark_list_tests=false") listing = false;
  }
  return listing;
}

int main(int argc, char** argv) {
  const bool listing = only_listing(argc, argv);
  for (int i = 1; i < argc; ++i)  // Google Benchmark prints its own flags and exits on --help
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") std::fputs(kUsage, stdout);
  benchmark::Initialize(&argc, argv);
  Args args;
  std::vector<Point> points;
  try {
    args = parse_args(argc, argv);
    points = points_of(args);
  } catch (const std::exception& e) {
    fmt::print(stderr, "flashio_gbench: error: {}\n", e.what());
    return kExitBadInput;
  }
  std::string why;
  std::optional<DeviceInfo> dev;
  std::unique_ptr<Runner> runner;
  if (!listing) {
    dev = query_device(args.device, &why);
    if (!dev) {
      fmt::print(stderr, "flashio_gbench: {}: nothing to benchmark\n", why);
      return 0;
    }
    RunOptions opt;
    opt.device = args.device;
    opt.flush_l2 = args.flush_l2;
    runner = std::make_unique<Runner>(*dev, opt);
    benchmark::AddCustomContext("device", dev->name);
  }
  for (const Point& pt : points) {
    benchmark::RegisterBenchmark(
        pt.name().c_str(),
        [&runner, pt](benchmark::State& state) {
          const Record rec = runner->run(
              pt, [&state](const std::function<void()>& launch, cudaStream_t stream, const L2Flusher* flusher) {
                return time_iterations(state, launch, stream, flusher);
              });
          if (rec.status != Status::Ok) {
            state.SkipWithError(fmt::format("{}: {}", to_string(rec.status), rec.reason).c_str());
            return;
          }
          if (auto tf = rec.tflops()) state.counters["TFLOP/s"] = *tf;  // from the median
          if (rec.check) state.counters["check_worst_ratio"] = rec.check->worst_ratio;
          if (rec.memory) state.counters["workspace_bytes"] = double(rec.memory->workspace_bytes);
        })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

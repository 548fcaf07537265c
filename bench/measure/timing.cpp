#include "bench/measure/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "bench/cuda/cuda_check.h"
#include "bench/cuda/device_util.h"

namespace flashio {

L2Flusher::L2Flusher(DeviceAllocator& alloc, int64_t l2_bytes)
    : buffer_(alloc, l2_flush_bytes(l2_bytes)), sink_(alloc, sizeof(unsigned)) {
  FLASHIO_CUDA_CHECK(cudaMemset(buffer_.get(), 0x5a, buffer_.bytes()));  // defined contents, written once
  FLASHIO_CUDA_CHECK(cudaDeviceSynchronize());
}

void L2Flusher::flush(cudaStream_t stream) const {
  launch_l2_flush(buffer_.get(), buffer_.bytes(), sink_.as<unsigned>(), stream);
}

TimeStats summarize(std::vector<double> s, int warmup, bool flushed, const char* clock) {
  TimeStats t;
  t.samples_s = s;  // in the order run, before sorting
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  t.reps = int(n);
  t.warmup = warmup;
  t.l2_flushed = flushed;
  t.clock = clock;
  if (n == 0) return t;
  t.median_s = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  t.min_s = s.front();
  t.max_s = s.back();
  t.mean_s = std::accumulate(s.begin(), s.end(), 0.0) / double(n);
  double var = 0.0;
  for (double x : s) var += (x - t.mean_s) * (x - t.mean_s);
  t.stddev_s = n > 1 ? std::sqrt(var / double(n - 1)) : 0.0;
  return t;
}

std::optional<TimeStats> time_gpu(const std::function<void()>& launch, int warmup, int reps, const L2Flusher* flusher,
                                  cudaStream_t stream, const std::function<bool()>& warming) {
  for (int i = 0; i < warmup; ++i) launch();
  if (warming) {
    bool go_on = false;
    try {
      go_on = warming();
    } catch (...) {
      cudaStreamSynchronize(stream);
      throw;
    }
    if (!go_on) {
      FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
      return std::nullopt;
    }
  }
  std::vector<cudaEvent_t> start(static_cast<size_t>(reps)), stop(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    FLASHIO_CUDA_CHECK(cudaEventCreate(&start[size_t(i)]));
    FLASHIO_CUDA_CHECK(cudaEventCreate(&stop[size_t(i)]));
  }
  for (int i = 0; i < reps; ++i) {
    if (flusher) flusher->flush(stream);
    FLASHIO_CUDA_CHECK(cudaEventRecord(start[size_t(i)], stream));
    launch();
    FLASHIO_CUDA_CHECK(cudaEventRecord(stop[size_t(i)], stream));
  }
  FLASHIO_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> seconds;
  for (int i = 0; i < reps; ++i) {
    float ms = 0.f;
    FLASHIO_CUDA_CHECK(cudaEventElapsedTime(&ms, start[size_t(i)], stop[size_t(i)]));
    seconds.push_back(double(ms) * 1e-3);
    cudaEventDestroy(start[size_t(i)]);
    cudaEventDestroy(stop[size_t(i)]);
  }
  return summarize(std::move(seconds), warmup, flusher != nullptr, "cuda_events");
}

TimeStats time_host(const std::function<void()>& call, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) call();
  std::vector<double> seconds;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return summarize(std::move(seconds), warmup, false, "host_steady_clock");
}

}  // namespace flashio

// Timing: CUDA events around the launch sequence, after warm-up; median, min, max,
// mean and standard deviation of the repetitions; the L2 cleaned before each one.
#pragma once
#include <functional>
#include <optional>

#include "bench/cuda/device_memory.h"
#include "bench/core/record.h"

namespace flashio {

// Owns a buffer of at least twice the L2 size and evicts L2 by reading it.
class L2Flusher {
 public:
  L2Flusher(DeviceAllocator& alloc, int64_t l2_bytes);
  void flush(cudaStream_t stream) const;

 private:
  DeviceBuffer buffer_;
  DeviceBuffer sink_;
};

// The statistics of `seconds`, which are kept as samples_s in the order given.
TimeStats summarize(std::vector<double> seconds, int warmup, bool flushed, const char* clock);

// Times `launch` (which only enqueues work on `stream`): `warmup` untimed calls, then
// `reps` timed calls each preceded (outside the timed region) by an L2 flush. `warming`, when
// given, runs on the host once the warm-up calls are enqueued, while the GPU runs them (host work
// that enqueues nothing on `stream`: a point's check comparison); the timed calls follow only when
// it returns true, else there is no timing (nullopt, the stream synchronised).
std::optional<TimeStats> time_gpu(const std::function<void()>& launch, int warmup, int reps, const L2Flusher* flusher,
                                  cudaStream_t stream, const std::function<bool()>& warming = {});

// Times a host function with the steady clock (the CPU reference).
TimeStats time_host(const std::function<void()>& call, int warmup, int reps);

}  // namespace flashio

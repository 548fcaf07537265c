// Stands in for the GPU query in a build without CUDA (FLASHIO_CUDA=OFF): there is no GPU to
// find, and the reason says why, so `flashio run` and `flashio device` exit 1 with one line.
#include "bench/cuda/device_query.h"

namespace flashio {

namespace {
constexpr const char* kNoCuda = "built without CUDA (FLASHIO_CUDA=OFF): no GPU can be used";
}  // namespace

int device_count(std::string* why) {
  if (why) *why = kNoCuda;
  return 0;
}

std::optional<CopyBandwidth> measure_copy_bandwidth(int, int64_t, int, std::string* why) {
  if (why) *why = kNoCuda;
  return std::nullopt;
}

std::optional<DeviceInfo> query_device(int, std::string* why) {
  if (why) *why = kNoCuda;
  return std::nullopt;
}

}  // namespace flashio

// The suite's device allocator: every buffer a method or the runner needs goes through
// it, so the peak bytes a call needs beyond its inputs and outputs can be measured.
//
// A released block is kept for the next request of the same size (until trim(), trim_to() or
// the allocator's end): the points of a problem ask for the same outputs and workspaces one after
// the other, the problems of a sweep often for the same inputs and outputs (the FA-2 setting keeps
// B·N and H·d fixed), and cudaMalloc/cudaFree cost milliseconds each — more with two GPUs'
// workers, whose calls contend in the driver (issue 22; docs/sweep-time.md). The byte counts are
// of the blocks in use, whatever is kept. A request that finds no memory frees the kept blocks and
// tries once more.
#pragma once
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace flashio {

class DeviceAllocator {
 public:
  DeviceAllocator() = default;
  ~DeviceAllocator() { trim(); }
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  void* allocate(size_t bytes);  // throws CudaError (status oom) on failure
  void release(void* p, size_t bytes);  // kept for a request of the same size
  void trim();                          // frees the kept blocks
  void trim_to(size_t bytes);           // frees the largest kept blocks until at most `bytes` are kept
  size_t kept_bytes() const { return kept_bytes_; }
  int64_t current_bytes() const { return current_; }
  int64_t peak_bytes() const { return peak_; }
  void reset_peak() { peak_ = current_; }
  // Device memory a library allocated on its own (cuBLAS's handle state), measured by the
  // caller with cudaMemGetInfo; negative when it is freed. Kept apart from our buffers:
  // the driver's 2 MiB pages make it vary by a page from one process to the next.
  void account_external(int64_t bytes) {
    external_current_ += bytes;
    external_peak_ = std::max(external_peak_, external_current_);
  }
  int64_t external_bytes() const { return external_current_; }
  int64_t external_peak_bytes() const { return external_peak_; }
  void reset_external_peak() { external_peak_ = external_current_; }

 private:
  int64_t current_ = 0;
  int64_t peak_ = 0;
  int64_t external_current_ = 0;
  int64_t external_peak_ = 0;
  std::multimap<size_t, void*> kept_;  // released blocks by size
  size_t kept_bytes_ = 0;
};

// Page-locked host memory, grown on demand and kept: where the runner's checks copy their rows back
// from the GPU (a copy into pageable memory goes through the driver's staging buffers, and a fresh
// host buffer faults its pages in at every check, both slower with two GPUs' workers and the
// reference's threads at work: issue 22, docs/sweep-time.md step 16).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  // At least `bytes` of it (what it held is not kept when it grows).
  void* reserve(size_t bytes);

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// An owned device buffer (RAII) from a DeviceAllocator.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceAllocator& alloc, size_t bytes) : alloc_(&alloc), bytes_(bytes) {
    ptr_ = bytes ? alloc.allocate(bytes) : nullptr;
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      alloc_ = o.alloc_; ptr_ = o.ptr_; bytes_ = o.bytes_;
      o.ptr_ = nullptr; o.bytes_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void reset() {
    if (ptr_) alloc_->release(ptr_, bytes_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* get() const { return ptr_; }
  template <typename T> T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  DeviceAllocator* alloc_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace flashio

// The methods whose first start in the process a thread of the sweep's own is making. The first
// warm-up of `standard` in a process starts cuBLAS (its heuristics, its kernels): 0.12-0.16 s on
// an H200 of a one-GPU sweep, 0.01 s on a GPU after it was made (issue 22, docs/sweep-time.md
// step 14). A sweep makes it on a thread of its own (start_cublas, step 16), on one of its GPUs,
// for the methods that call cuBLAS (MethodInfo::cublas); that GPU's worker times and counts nothing
// while it is made (its one small GEMM must not fall into a measurement). A worker whose
// first group holds such a method while its start is being made runs the group's other points
// first and the method's warm-up just before the method's first point, when it is cheap
// (Runner::deferred_methods). Every other first start (a method's kernels' modules: a cost of each
// GPU's context) each worker makes itself, in its runner's start.
#pragma once
#include <condition_variable>
#include <mutex>
#include <map>
#include <string>

namespace flashio {

class FirstStarts {
 public:
  // The caller is making the method's first start on GPU `device`; finish() when made, whatever
  // happened.
  void begin(const std::string& method, int device) {
    std::lock_guard<std::mutex> lock(mu_);
    making_[method] = device;
  }

  void finish(const std::string& method) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      making_.erase(method);
    }
    cv_.notify_all();
  }

  // True while the method's first start is being made.
  bool busy(const std::string& method) {
    std::lock_guard<std::mutex> lock(mu_);
    return making_.count(method) > 0;
  }

  // Returns once the method's first start is not being made.
  void wait(const std::string& method) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return making_.count(method) == 0; });
  }

  // Returns once no first start is being made on GPU `device`: before a measurement there.
  void wait_quiet(int device) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      for (const auto& [method, d] : making_)
        if (d == device) return false;
      return true;
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> making_;  // method → the GPU its first start is being made on
};

}  // namespace flashio

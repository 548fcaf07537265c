// Which methods' first start a sweep's GPU workers have made or are making. The first warm-up of
// `standard` in a process starts cuBLAS (its kernels' modules, its heuristics): 0.12-0.16 s on an
// H200 of a one-GPU sweep, 0.01 s on a GPU after another GPU's worker made it (issue 22,
// docs/sweep-time.md step 14). So one worker at a time makes a method's first start; a worker that
// finds another making it runs its other points first and the method's warm-up just before the
// method's first point, when it is cheap (Runner::deferred_methods). With one GPU nothing is ever
// deferred.
#pragma once
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

namespace flashio {

class FirstStarts {
 public:
  enum class Claim { Mine, Busy, Done };

  // Mine: the caller makes the method's first start and calls finish() after it; Busy: another
  // worker is making it; Done: made.
  Claim claim(const std::string& method) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto [it, fresh] = made_.try_emplace(method, false);
    if (fresh) return Claim::Mine;
    return it->second ? Claim::Done : Claim::Busy;
  }

  void finish(const std::string& method) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      made_[method] = true;
    }
    cv_.notify_all();
  }

  // Returns once no worker is making the method's first start.
  void wait(const std::string& method) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      const auto it = made_.find(method);
      return it == made_.end() || it->second;
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, bool> made_;  // method → its first start made (false: being made)
};

}  // namespace flashio

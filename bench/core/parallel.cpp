#include "bench/core/parallel.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <system_error>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace flashio {

namespace {

// The calling thread's nice value (Linux: per thread), 0 elsewhere.
int own_nice() {
#if defined(__linux__)
  return getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)));
#else
  return 0;
#endif
}

// One run_parts call: parts 1 .. count - 1 for the kept threads (the caller takes those none has
// taken once its own is done).
struct Call {
  const std::function<void(int)>* part = nullptr;
  int count = 0;
  int next = 1;  // the next part not taken
  int done = 0;  // parts 1 .. count - 1 returned
  std::condition_variable finished;
};

// Runs part(tid) as a std::thread would: an exception ends the process.
void run_part(const std::function<void(int)>& part, int tid) noexcept { part(tid); }

// Kept threads of one nice value, started by a caller of that value (they inherit it: a sweep's
// host lanes run below its GPU workers, bench/measure/host_side.cpp, and an unprivileged thread
// cannot lower its nice value again). Never destroyed: its threads wait on it until the process
// ends.
class Keeper {
 public:
  void run(int count, const std::function<void(int)>& part) {
    Call call;
    call.part = &part;
    call.count = count;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_.push_back(&call);
      waiting_parts_ += count - 1;
      // Every part taken at once: as many threads free as parts waiting (a thread counts as free
      // from when it is started until it takes a part). Where no more can be started, the parts
      // no thread takes are run by the caller below, one after the other.
      try {
        for (; free_ < waiting_parts_; ++free_) std::thread([this] { serve(); }).detach();
      } catch (const std::system_error&) {
      }
    }
    wake_.notify_all();
    run_part(part, 0);
    std::unique_lock<std::mutex> lock(mu_);
    while (call.next < call.count) {  // parts no thread has taken yet: this one runs them
      const int tid = take(call);
      lock.unlock();
      run_part(part, tid);
      lock.lock();
      ++call.done;
    }
    call.finished.wait(lock, [&] { return call.done == call.count - 1; });
  }

 private:
  int take(Call& call) {  // mu_ held; call has a part not taken
    const int tid = call.next++;
    --waiting_parts_;
    if (call.next == call.count) open_.erase(std::find(open_.begin(), open_.end(), &call));
    return tid;
  }

  void serve() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return !open_.empty(); });
      Call& call = *open_.front();
      const int tid = take(call);
      --free_;
      lock.unlock();
      run_part(*call.part, tid);
      lock.lock();
      ++free_;
      if (++call.done == call.count - 1) call.finished.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Call*> open_;  // calls with parts not taken, oldest first
  int waiting_parts_ = 0;   // parts of open_ not taken
  int free_ = 0;            // threads not running a part
};

}  // namespace

void run_parts(int count, const std::function<void(int)>& part) {
  if (count <= 1) {
    if (count == 1) part(0);
    return;
  }
  static std::mutex mu;
  static std::map<int, Keeper*>* const keepers = new std::map<int, Keeper*>;  // by nice value; never deleted
  Keeper* keeper = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    Keeper*& k = (*keepers)[own_nice()];
    if (!k) k = new Keeper;
    keeper = k;
  }
  keeper->run(count, part);
}

}  // namespace flashio

// The host's kept threads (bench/core/parallel.h): run_parts runs every part once and all of them
// at once, on threads kept from one call to the next (none started for a call that finds enough
// free), at the caller's nice value; calls may nest.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "bench/core/parallel.h"

using namespace flashio;

namespace {

// Parts that each wait until all `count` have arrived (or `patience` has passed): true for a part
// that saw all of them, so a call that ran its parts one after the other returns false somewhere.
class Rendezvous {
 public:
  explicit Rendezvous(int count) : count_(count) {}
  bool arrive(std::chrono::seconds patience = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    ++arrived_;
    cv_.notify_all();
    return cv_.wait_for(lock, patience, [&] { return arrived_ >= count_; });
  }

 private:
  int count_;
  int arrived_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace

TEST(RunParts, RunsEveryPartOnceAndAllAtOnce) {
  constexpr int kCount = 6;
  std::vector<std::atomic<int>> runs(kCount);
  Rendezvous all(kCount);
  std::atomic<int> saw_all{0};
  std::thread::id first_part;
  run_parts(kCount, [&](int tid) {
    ++runs[size_t(tid)];
    if (tid == 0) first_part = std::this_thread::get_id();
    saw_all += all.arrive() ? 1 : 0;
  });
  for (int tid = 0; tid < kCount; ++tid) EXPECT_EQ(runs[size_t(tid)].load(), 1) << "part " << tid;
  EXPECT_EQ(saw_all.load(), kCount) << "some parts ran one after another";
  EXPECT_EQ(first_part, std::this_thread::get_id()) << "part 0 runs on the caller";
}

TEST(RunParts, CallsNestAndParallelForSplitsStatically) {
  std::atomic<int> inner{0};
  run_parts(3, [&](int) { run_parts(4, [&](int) { ++inner; }); });
  EXPECT_EQ(inner.load(), 12);
  // parallel_for's static split: thread tid takes items tid, tid + threads, ...
  std::vector<int> owner(10, -1);
  parallel_for(owner.size(), 3, [&](int tid, int threads) {
    EXPECT_EQ(threads, 3);
    for (size_t i = size_t(tid); i < owner.size(); i += size_t(threads)) owner[i] = tid;
  });
  EXPECT_EQ(owner, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0}));
  // for_each_piece: pieces of 4 of [0, 10), the last one short, each element once.
  std::vector<std::atomic<int>> seen(10);
  std::vector<size_t> ends(3, 0);
  for_each_piece(seen.size(), 4, 3, [&](size_t piece, size_t begin, size_t end) {
    EXPECT_EQ(begin, piece * 4);
    ends[piece] = end;
    for (size_t e = begin; e < end; ++e) ++seen[e];
  });
  EXPECT_EQ(ends, (std::vector<size_t>{4, 8, 10}));
  for (const auto& n : seen) EXPECT_EQ(n.load(), 1);
}

#if defined(__linux__)
namespace {

// Not reused soon after a thread ends, as a std::thread::id may be.
long kernel_thread_id() { return syscall(SYS_gettid); }

std::set<long> threads_of_a_call(int count) {
  std::mutex mu;
  std::set<long> ids;
  Rendezvous all(count);
  run_parts(count, [&](int) {
    all.arrive();
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(kernel_thread_id());
  });
  return ids;
}

}  // namespace

TEST(RunParts, KeepsItsThreadsFromOneCallToTheNext) {
  std::set<long> first, second;
  // On a thread of its own at a nice value no other test uses: threads kept by other tests'
  // calls are not this caller's (they are kept per nice value), so the first call starts 4.
  std::thread([&] {
    setpriority(PRIO_PROCESS, id_t(kernel_thread_id()), 7);
    first = threads_of_a_call(5);
    second = threads_of_a_call(5);
  }).join();
  ASSERT_EQ(first.size(), 5u);
  EXPECT_EQ(second, first) << "a thread was started for the second call";
}

// A sweep's host lanes run at nice 10 below its GPU workers (bench/measure/host_side.cpp): the
// threads that run their parts must too, and a caller at nice 0 must not get those threads.
TEST(RunParts, PartsRunAtTheCallersNiceValue) {
  auto own_nice = [] { return getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid))); };
  const int base = own_nice();
  if (base >= 10) GTEST_SKIP() << "this process already runs at nice " << base;
  std::vector<int> low(4, -100);
  std::thread([&] {
    setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), 10);
    run_parts(4, [&](int tid) { low[size_t(tid)] = own_nice(); });
  }).join();
  EXPECT_EQ(low, std::vector<int>(4, 10));
  std::vector<int> normal(4, -100);
  run_parts(4, [&](int tid) { normal[size_t(tid)] = own_nice(); });
  EXPECT_EQ(normal, std::vector<int>(4, base));
}
#endif

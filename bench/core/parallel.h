// The host's threads for the float64 reference and the input generator: a static split (thread
// tid takes items tid, tid + threads, ...: what a thread sums is fixed, so per-thread partial sums
// give the same bits on every run) and a shared counter (each thread takes the next item when it
// is free: for work whose result per item does not depend on who does it, so a thread the machine
// holds back delays no one). Plain C++.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace flashio {

// Threads for `n` items: `threads`, or every core when 0; at least 1, at most n.
inline int thread_count(size_t n, int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  return int(std::min<size_t>(size_t(threads), std::max<size_t>(1, n)));
}

// Calls work(tid, nthreads) on thread_count(n, threads) threads (the calling one alone when one).
template <typename Work>
void parallel_for(size_t n, int threads, Work work) {
  threads = thread_count(n, threads);
  if (threads == 1) {
    work(0, 1);
    return;
  }
  std::vector<std::thread> pool;
  for (int tid = 0; tid < threads; ++tid) pool.emplace_back(work, tid, threads);
  for (auto& th : pool) th.join();
}

// Calls work(tid, i) for every i in [0, n), on thread_count(n, threads) threads, each taking the
// next i from a shared counter.
template <typename Work>
void for_each_item(size_t n, int threads, Work work) {
  std::atomic<size_t> next{0};
  parallel_for(n, threads, [&](int tid, int) {
    for (size_t i = next++; i < n; i = next++) work(tid, i);
  });
}

}  // namespace flashio

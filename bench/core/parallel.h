// The host's threads for the float64 reference and the input generator: a static split (thread
// tid takes items tid, tid + threads, ...: what a thread sums is fixed, so per-thread partial sums
// give the same bits on every run) and a shared counter (each thread takes the next item when it
// is free: for work whose result per item does not depend on who does it, so a thread the machine
// holds back delays no one). Plain C++.
//
// The threads are the process's own, kept between calls (run_parts): a sweep's host work calls
// these several times per problem part on every core, and starting and ending a thread per core
// each time (a stack mapped and unmapped per thread) cost 15-18 % of each part's time on a 32-core
// H200 host, with one GPU's lane and with two (issue 22, docs/sweep-time.md step 15).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>

namespace flashio {

// Threads for `n` items: `threads`, or every core when 0; at least 1, at most n.
inline int thread_count(size_t n, int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  return int(std::min<size_t>(size_t(threads), std::max<size_t>(1, n)));
}

// Calls part(tid) for tid in [0, count) at once: 0 on the calling thread, the others on threads
// the process keeps (started when fewer are free than asked for, never ended), each running at
// the caller's scheduling priority. Returns when all have returned; `part` must not throw.
void run_parts(int count, const std::function<void(int)>& part);

// Calls work(tid, nthreads) on thread_count(n, threads) threads (the calling one alone when one).
template <typename Work>
void parallel_for(size_t n, int threads, Work work) {
  threads = thread_count(n, threads);
  if (threads == 1) {
    work(0, 1);
    return;
  }
  run_parts(threads, [&](int tid) { work(tid, threads); });
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

// Calls work(piece, begin, end) for the pieces [begin, end) of [0, n), `size` elements each (the
// last one shorter), as for_each_item's items.
template <typename Work>
void for_each_piece(size_t n, size_t size, int threads, Work work) {
  for_each_item((n + size - 1) / size, threads, [&](int, size_t i) { work(i, i * size, std::min(n, (i + 1) * size)); });
}

}  // namespace flashio

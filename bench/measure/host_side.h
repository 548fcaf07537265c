// The host half of a problem: what its points' checks compare with, made on the host's cores
// while the GPU runs earlier points. No GPU here (plain C++), so it is tested on any machine.
//
// Two parts, made one after the other:
// - HostForward: the rows the check compares, the parts of Q, K, V the float64 reference reads
//   (only the heads of those rows: the GPU makes the whole tensors itself, with the same
//   generator, bench/cuda/device_inputs.h) and the reference O and LSE of those rows;
// - HostGradients: dO and the reference dQ of those rows, dK and dV of the K/V heads the budget
//   allows (about three quarters of the reference's work where it samples rows).
// The forward points of a problem need only the first, so they run while the second is made.
// A part is never written once made (the gradients' part adds the heads it needs to copies of
// its own), so a runner never reads what the maker is still writing.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/core/device_info.h"
#include "bench/core/inputs.h"
#include "bench/core/reference.h"
#include "bench/core/varlen.h"
#include "bench/measure/runner.h"
#include "bench/sweep/sweep.h"

namespace flashio {

// One input tensor on the host, [heads][head_words] with heads = B·H (Q, dO) or B·Hkv (K, V):
// the whole tensor's size, but only the heads in `present` written (the rest never touched).
struct HostTensor {
  std::unique_ptr<uint16_t[]> words;
  std::vector<char> present;
  int64_t head_words = 0;

  // Adds those of `heads` not present: copied from `from` where it has them (the generator's
  // bits either way), else generated.
  void make(const Problem& p, InputTensor which, const std::vector<int64_t>& heads, const HostTensor* from = nullptr);
  bool has(int64_t head) const { return words && present[size_t(head)]; }
};

// Calls f(first, count) for each run of consecutive heads in the sorted list `heads`.
template <typename F>
void for_each_run(const std::vector<int64_t>& heads, F f) {
  for (size_t i = 0; i < heads.size();) {
    size_t end = i + 1;
    while (end < heads.size() && heads[end] == heads[end - 1] + 1) ++end;
    f(heads[i], int64_t(end - i));
    i = end;
  }
}

struct HostForward {
  Problem problem;
  std::string key;  // problem_key
  HostTensor q, k, v;
  std::vector<int32_t> key_lengths;
  KvPages pages;  // a paged problem's block table (Problem::kv_page), else empty
  std::vector<RowId> rows;
  // Made here, or left to the GPU that runs the problem (RunOptions::reference_on_gpu, for the
  // problems device_reference_covers): then empty, and the runner makes them there.
  bool reference_on_gpu = false;
  std::vector<double> ref_out, ref_lse;
  double inputs_s = 0, reference_s = 0;  // host seconds spent making it

  HostTensors tensors() const;
};

struct HostGradients {
  std::shared_ptr<const HostForward> forward;         // whose rows these gradients are of
  std::vector<std::pair<int64_t, int64_t>> kv_heads;  // (b, hk) whose dK, dV are checked
  // The forward's Q, K, V heads and those of the checked K/V heads' query groups, where the latter
  // add heads (else empty: the forward's are read); dO of all of them.
  HostTensor q, k, v, d_o;
  // As the forward's: empty when forward->reference_on_gpu.
  std::vector<double> ref_dq;          // rows × d
  std::vector<double> ref_dk, ref_dv;  // kv_heads × Nk × d
  std::string grad_scope;
  double inputs_s = 0, reference_s = 0;

  HostTensors tensors() const;
  const HostTensor& q_of() const { return q.words ? q : forward->q; }
  const HostTensor& k_of() const { return k.words ? k : forward->k; }
  const HostTensor& v_of() const { return v.words ? v : forward->v; }
};

// The checked rows, their inputs and forward reference (not the reference where the GPU makes it).
HostForward make_forward(const Problem& p, const RunOptions& opt);
// dO and the reference dQ of the forward's rows, and dK, dV of the K/V heads the budget allows
// (which heads, and not their reference where the GPU makes it).
HostGradients make_gradients(std::shared_ptr<const HostForward> forward, const RunOptions& opt);

// What the host must make for `points`, one problem group, run on `dev`: nothing (nullopt: no
// point of it runs there), the forward part (false), or the gradients' part too (true: a point
// of a backward pass runs).
std::optional<bool> host_work_of(const std::vector<Point>& points, const DeviceInfo& dev);

// An asked problem's parts as the maker's choice sees them (HostSideMaker, next_part).
struct PartsState {
  int64_t order = 0;  // its place among the asks
  bool with_grad = false;
  bool forward_started = false, forward_made = false, gradients_started = false;
  bool forward_waited = false, gradients_waited = false;  // a runner waits for it
};

// A part to make: the `job`-th of the states given, its gradients' part or its forward part.
struct NextPart {
  size_t job = 0;
  bool gradients = false;
  bool operator==(const NextPart& o) const { return job == o.job && gradients == o.gradients; }
};

// The part a free lane of the maker starts next, of the parts not started: a part a runner waits
// for first; then the least `needed at` (the forward part of the i-th ask at i, its gradients' part
// at the greater of i and takers - 1), the gradients' part first at a tie; then the order asked. A gradients' part only
// once its forward part is made (it reads it). nullopt: none can start now.
std::optional<NextPart> next_part(const std::vector<PartsState>& jobs, int takers);

// Makes problems' host halves while the GPUs run earlier points, on lanes of its own (threads): as
// many as it has takers (a sweep's GPU workers), each making one part at a time with every core;
// a sweep's runners share one, and a free lane takes the part needed first (next_part).
//
// Asks are numbered in the order given, which is the order in which the runners will start the
// problems (a sweep's deal order). The forward part of the i-th counts as needed at i, its
// gradients' part at the greater of i and takers - 1, before a forward part needed at the same
// place. The runners start their first problems at once, so the first `takers` forward parts come
// first, then all of their gradients' parts: a runner needs them once it has run its group's
// forward points, which are short, before any runner finishes a group and takes the next problem.
// Later groups start one by one as runners finish theirs, each problem's gradients needed soon
// after its forward part. (On 2×H200 at 2ba6456, with the gradients at i + takers, the second
// GPU's first group waited 0.1-0.2 s for its gradients while a lane made the third problem's
// forward part, needed 0.2 s later; docs/sweep-time.md step 15.)
// With one taker there is one lane, and the parts are made in the order asked: forward,
// gradients, next forward, ...
//
// With several takers, several parts are made at once (at most one per taker, as when each worker
// made its own): one part keeps the cores only partly busy (a measurement of c3c6e46 on 2×H200,
// docs/sweep-time.md: one lane for two GPUs was busy for the whole 64-point sweep, and most
// groups waited for their gradients), so two at a time make more of them in the same time.
class HostSideMaker {
 public:
  // Called on a lane before it makes each part (tests: to see the order, or hold it).
  using Hook = std::function<void(const Problem&, bool gradients)>;

  // `takers`: how many runners take from it at once (a sweep's GPU workers); as many lanes.
  explicit HostSideMaker(RunOptions opt, int takers = 1, Hook before_part = {});
  ~HostSideMaker();  // waits for the parts being made; drops the rest
  HostSideMaker(const HostSideMaker&) = delete;
  HostSideMaker& operator=(const HostSideMaker&) = delete;

  // Asks for the host half of `p`, with its gradients' part when `with_grad`. Asking for a problem
  // already asked (and not yet taken whole) adds the gradients' part where asked, nothing else.
  void ask(const Problem& p, bool with_grad);
  // The forward part of `key`, waiting until it is made (its exception if making it threw); null
  // when it was not asked. The problem stays asked while its gradients' part is not taken.
  std::shared_ptr<const HostForward> take_forward(const std::string& key);
  // The gradients' part, likewise; null when not asked with gradients. The problem is then taken whole.
  std::shared_ptr<const HostGradients> take_gradients(const std::string& key);
  // Problems asked and not taken whole; parts not started that a runner waits for (tests).
  size_t pending();
  size_t waited();
  int lanes() const { return int(lanes_.size()); }

 private:
  struct Job;
  std::shared_ptr<Job> find(const std::string& key) const;  // asked, not taken whole (mu_ held)
  void lane();

  RunOptions opt_;
  int takers_;
  Hook before_part_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<Job>> jobs_;  // asked, in the order asked, until taken whole and made
  int64_t asked_ = 0;                       // asks so far: the next one's number
  bool stop_ = false;
  std::vector<std::thread> lanes_;
};

}  // namespace flashio

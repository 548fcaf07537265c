// What consecutive points of one problem share, in two halves.
//
// HostSide needs no GPU, so the runner can make the next problem's while the GPU runs this
// one's points: the rows the check compares, the parts of the inputs the float64 reference
// reads (only the heads of those rows: the GPU makes the whole tensors itself, with the same
// generator, bench/cuda/device_inputs.h) and the reference values.
// DeviceSide holds the inputs on the GPU; verify_inputs compares, bit for bit, every head the
// host made with the GPU's, so the reference provably reads what the methods read.
#pragma once
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/core/inputs.h"
#include "bench/core/reference.h"
#include "bench/cuda/device_memory.h"
#include "bench/measure/runner.h"

namespace flashio {

// One input tensor on the host, [heads][head_words] with heads = B·H (Q, dO) or B·Hkv (K, V):
// the whole tensor's size, but only the heads in `present` written (the rest never touched).
struct HostTensor {
  std::unique_ptr<uint16_t[]> words;
  std::vector<char> present;
  int64_t head_words = 0;

  void make(const Problem& p, InputTensor which, const std::vector<int64_t>& heads);  // adds those heads
};

struct HostSide {
  Problem problem;
  std::string key;  // problem_key
  HostTensor q, k, v, d_o;
  std::vector<int32_t> key_lengths;
  KvPages pages;  // a paged problem's block table (Problem::kv_page), else empty
  std::vector<RowId> rows;
  std::vector<double> ref_out, ref_lse;
  bool have_grad = false;
  std::vector<double> ref_dq;                         // rows × d
  std::vector<std::pair<int64_t, int64_t>> kv_heads;  // (b, hk) whose dK, dV are checked
  std::vector<double> ref_dk, ref_dv;                 // kv_heads × Nk × d
  std::string grad_scope;
  double inputs_s = 0, reference_s = 0;  // host seconds spent making it

  HostTensors tensors() const;
};

// Points with the same key share inputs and reference (deterministic changes how a method
// runs, not what it computes).
std::string problem_key(const Problem& p);

// The checked rows, their inputs and forward reference; with `with_grad` also add_gradients.
HostSide make_host_side(const Problem& p, bool with_grad, const RunOptions& opt);
// dO and the reference dQ of the checked rows and dK, dV of the K/V heads the budget allows.
void add_gradients(HostSide& h, const RunOptions& opt);

// Makes problems' host halves on a thread of its own, one after the other in the order they were
// asked for, while the GPU runs earlier points: so the problem after the next one is already being
// made when the next one is done (a runner asks for its first two problem groups at its start, while
// its GPU's context starts). Holds what it was asked for until taken: the caller bounds it (the
// sweep runner asks one group ahead of the one it runs).
class HostSideMaker {
 public:
  explicit HostSideMaker(RunOptions opt);
  ~HostSideMaker();  // waits for the problem being made, drops the rest
  HostSideMaker(const HostSideMaker&) = delete;
  HostSideMaker& operator=(const HostSideMaker&) = delete;

  bool asked(const std::string& key);
  void ask(const Problem& p, bool with_grad);
  // The host half of `key` (waiting until it is made; its exception if making it threw), or
  // nothing when it was not asked for. What was asked before it is dropped: never made if not
  // started (a group another worker took over).
  std::optional<HostSide> take(const std::string& key);

 private:
  struct Job {
    std::string key;
    Problem problem;
    bool with_grad = false;
    bool started = false;
    std::promise<HostSide> made;
    std::future<HostSide> result = made.get_future();
  };
  void loop();

  RunOptions opt_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;  // asked, not taken
  bool stop_ = false;
  std::thread thread_;
};

struct DeviceSide {
  // K, V: contiguous [B, Hkv, Nk, d], or a paged problem's pages [pages, Hkv, P, d] with its
  // block_table [B, ⌈Nk/P⌉].
  // A packed varlen problem: q [H, T, d], k, v [Hkv, T, d], and cu_seqlens [B + 1] (int32).
  DeviceBuffer q, k, v, d_o, key_lengths, block_table, cu_seqlens;
  DeviceBuffer rows;  // the checked rows' indices as stored (check.h stored_row), for launch_gather_rows
  std::vector<char> q_checked, k_checked, v_checked, d_o_checked;  // heads verify_inputs compared
};

// Q, K, V (and dO with `with_grad`) generated on the GPU, key lengths and the checked rows copied.
DeviceSide make_device_side(const HostSide& h, bool with_grad, DeviceAllocator& alloc, cudaStream_t stream);
void add_device_gradients(const HostSide& h, DeviceSide& d, DeviceAllocator& alloc, cudaStream_t stream);
// Throws when a head the host made differs from the GPU's (the generators disagree).
void verify_inputs(const HostSide& h, DeviceSide& d);

}  // namespace flashio

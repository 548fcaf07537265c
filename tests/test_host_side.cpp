// The host half of a problem in two parts (bench/measure/host_side.h): what each part holds, that
// the gradients' part never writes the forward's, and the maker's protocol — the forward part can
// be taken while the gradients' part is still to be made, parts are made in the order of need, a
// lane per taker (several GPUs' parts at once, one GPU's one at a time).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/core/inputs.h"
#include "bench/core/reference.h"
#include "bench/measure/check.h"
#include "bench/measure/first_starts.h"
#include "bench/measure/host_side.h"

using namespace flashio;

namespace {

// Too large to check every row (rows sampled from four heads), small enough that dK, dV of two
// K/V heads fit the budget: GQA, so the gradients need query heads the forward did not.
Problem sampled_problem(bool causal = false) {
  Problem p;
  p.batch = 3;
  p.heads = 8;
  p.kv_heads = 2;
  p.seqlen_q = 301;
  p.head_dim = 32;
  p.causal = causal;
  return p;
}

RunOptions small_budget() {
  RunOptions opt;
  opt.check_budget_macs = 1e8;  // all rows: 1.4e8; one K/V head's dK, dV: 4.6e7
  opt.host_threads = 2;
  opt.reference_on_gpu = false;  // the host's parts with their reference (left to the GPU: below)
  return opt;
}

// The heads a tensor holds and their words.
std::vector<std::vector<uint16_t>> heads_of(const HostTensor& t) {
  std::vector<std::vector<uint16_t>> out;
  for (size_t h = 0; h < t.present.size(); ++h)
    out.push_back(t.present[h] ? std::vector<uint16_t>(t.words.get() + int64_t(h) * t.head_words,
                                                       t.words.get() + int64_t(h + 1) * t.head_words)
                               : std::vector<uint16_t>{});
  return out;
}

// A gate the maker's hook waits at, and the order of the parts it was asked to make.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::vector<std::string> made;  // "<seqlen>/fwd" or "<seqlen>/grad", in the order started
  bool hold_gradients = false;    // hold at every gradients' part instead of the first part
  int64_t hold_seqlen = 0;        // hold at the parts of this problem (seqlen) instead of the first part

  HostSideMaker::Hook hook() {
    return [this](const Problem& p, bool gradients) {
      std::unique_lock<std::mutex> lock(mu);
      made.push_back(std::to_string(p.seqlen_q) + (gradients ? "/grad" : "/fwd"));
      const bool hold = hold_gradients ? gradients : hold_seqlen ? p.seqlen_q == hold_seqlen : made.size() == 1;
      if (hold) cv.wait(lock, [&] { return open; });
    };
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
  std::vector<std::string> order() {
    std::lock_guard<std::mutex> lock(mu);
    return made;
  }
  // Waits until `parts` parts have started (a runner waiting for a part would make it next).
  void wait_for(size_t parts) {
    while (order().size() < parts) std::this_thread::yield();
  }
  // Waits until the part `name` ("<seqlen>/fwd" or "<seqlen>/grad") has started.
  void wait_for(const std::string& name) {
    for (;;) {
      const std::vector<std::string> o = order();
      if (std::find(o.begin(), o.end(), name) != o.end()) return;
      std::this_thread::yield();
    }
  }
};

Problem with_seqlen(int64_t n) {
  Problem p;
  p.heads = 2;
  p.seqlen_q = n;
  p.head_dim = 16;
  return p;
}

// The order in which `lanes` lanes start the parts of problems asked in this order (with their
// gradients' part or not): a free lane starts next_part, and the running part that started first
// finishes first, except the forward part of problem `slow` (when given), which finishes last.
std::vector<std::string> lane_schedule(const std::vector<bool>& with_grad, int lanes, int slow = -1) {
  std::vector<PartsState> s(with_grad.size());
  for (size_t i = 0; i < s.size(); ++i) s[i].order = int64_t(i), s[i].with_grad = with_grad[i];
  std::vector<std::string> started;
  std::deque<NextPart> running;
  for (;;) {
    while (int(running.size()) < lanes) {
      const auto next = next_part(s, lanes);
      if (!next) break;
      PartsState& j = s[next->job];
      (next->gradients ? j.gradients_started : j.forward_started) = true;
      started.push_back(std::to_string(next->job) + (next->gradients ? "/grad" : "/fwd"));
      running.push_back(*next);
    }
    if (running.empty()) return started;
    auto done = running.begin();
    if (running.size() > 1 && int(done->job) == slow && !done->gradients) ++done;
    if (!done->gradients) s[done->job].forward_made = true;
    running.erase(done);
  }
}

}  // namespace

TEST(HostSide, ThePartsHoldTheReferenceOfTheWholeTensors) {
  const Problem p = sampled_problem();
  const RunOptions opt = small_budget();
  const auto forward = std::make_shared<const HostForward>(make_forward(p, opt));
  const HostGradients g = make_gradients(forward, opt);

  const HostInputs in = make_inputs(p, true);
  const HostTensors whole{in.q.data(), in.k.data(), in.v.data(), nullptr};
  const std::vector<RowId> rows = rows_to_check(p, opt.check_budget_macs);
  ASSERT_EQ(forward->rows.size(), rows.size());
  ASSERT_LT(rows.size(), size_t(p.batch * p.heads * p.seqlen_q));  // sampled
  std::vector<double> out, lse, dq;
  reference_rows(p, whole, rows, out, lse, 3);
  reference_dq_rows(p, whole, in.d_o.data(), rows, dq, 3);
  EXPECT_EQ(forward->ref_out, out);
  EXPECT_EQ(forward->ref_lse, lse);
  EXPECT_EQ(g.ref_dq, dq);
  ASSERT_EQ(g.kv_heads.size(), 2u);
  std::vector<double> dk, dv;
  for (auto [b, hk] : g.kv_heads) {
    std::vector<double> k1, v1;
    reference_dkdv_head(p, whole, in.d_o.data(), b, hk, k1, v1, opt.host_threads);
    dk.insert(dk.end(), k1.begin(), k1.end());
    dv.insert(dv.end(), v1.begin(), v1.end());
  }
  EXPECT_EQ(g.ref_dk, dk);
  EXPECT_EQ(g.ref_dv, dv);
  EXPECT_EQ(g.grad_scope, "dq: sampled rows; dk, dv: 2 of 6 K/V heads");
  EXPECT_GT(forward->reference_s, 0.0);
  EXPECT_GT(g.reference_s, 0.0);
}

// With the reference left to the GPU the parts hold the same rows, heads and inputs and no
// reference; a problem the GPU's reference does not cover (block-sparse) still gets the host's.
TEST(HostSide, TheReferenceIsLeftToTheGpuWhereItCoversTheProblem) {
  const Problem p = sampled_problem();
  RunOptions opt = small_budget();
  const auto host = std::make_shared<const HostForward>(make_forward(p, opt));
  const HostGradients host_g = make_gradients(host, opt);
  opt.reference_on_gpu = true;
  const auto gpu = std::make_shared<const HostForward>(make_forward(p, opt));
  const HostGradients gpu_g = make_gradients(gpu, opt);
  EXPECT_FALSE(host->reference_on_gpu);
  EXPECT_TRUE(gpu->reference_on_gpu);
  EXPECT_TRUE(gpu->ref_out.empty() && gpu->ref_lse.empty() && gpu_g.ref_dq.empty() && gpu_g.ref_dk.empty());
  EXPECT_EQ(gpu->reference_s, 0.0);
  EXPECT_EQ(gpu_g.reference_s, 0.0);
  EXPECT_EQ(gpu->rows.size(), host->rows.size());
  EXPECT_EQ(heads_of(gpu->k), heads_of(host->k));
  EXPECT_EQ(gpu_g.kv_heads, host_g.kv_heads);
  EXPECT_EQ(gpu_g.grad_scope, host_g.grad_scope);

  Problem sparse = p;
  sparse.pattern = "local";
  sparse.sparse_block = 16;
  EXPECT_FALSE(device_reference_covers(sparse));
  const HostForward made = make_forward(sparse, opt);
  EXPECT_FALSE(made.reference_on_gpu);
  EXPECT_EQ(made.ref_out.size(), made.rows.size() * size_t(sparse.head_dim));
}

TEST(HostSide, TheGradientsAddHeadsToCopiesNeverToTheForward) {
  const Problem p = sampled_problem();
  const RunOptions opt = small_budget();
  const auto forward = std::make_shared<const HostForward>(make_forward(p, opt));
  const auto q = heads_of(forward->q), k = heads_of(forward->k), v = heads_of(forward->v);
  const HostGradients g = make_gradients(forward, opt);
  EXPECT_EQ(heads_of(forward->q), q);
  EXPECT_EQ(heads_of(forward->k), k);
  EXPECT_EQ(heads_of(forward->v), v);
  // dK, dV of K/V head (0, 0) read the four query heads of its group, which the sampled rows do not all have.
  ASSERT_TRUE(g.q.words);
  for (int64_t h = 0; h < 4; ++h) EXPECT_TRUE(g.q.has(h)) << h;
  for (size_t h = 0; h < q.size(); ++h)
    if (!q[h].empty()) EXPECT_EQ(heads_of(g.q)[h], q[h]) << "head " << h << " copied as it is";
  // Each tensor the reference reads holds the generator's words at every head it has.
  const HostInputs in = make_inputs(p, true);
  for (auto [t, whole] : {std::pair<const HostTensor*, const std::vector<uint16_t>*>{&g.q_of(), &in.q},
                          {&g.k_of(), &in.k},
                          {&g.v_of(), &in.v},
                          {&g.d_o, &in.d_o}})
    for (size_t h = 0; h < t->present.size(); ++h)
      if (t->present[h])
        EXPECT_TRUE(std::equal(t->words.get() + int64_t(h) * t->head_words,
                               t->words.get() + int64_t(h + 1) * t->head_words,
                               whole->begin() + int64_t(h) * t->head_words));
}

TEST(HostSide, WithoutNewHeadsTheGradientsReadTheForwardsTensors) {
  Problem p = sampled_problem();
  p.seqlen_q = 2000;  // no K/V head's dK, dV fits the budget: dQ of the forward's rows only
  const RunOptions opt = small_budget();
  const auto forward = std::make_shared<const HostForward>(make_forward(p, opt));
  const HostGradients g = make_gradients(forward, opt);
  EXPECT_TRUE(g.kv_heads.empty());
  EXPECT_FALSE(g.q.words);
  EXPECT_EQ(g.tensors().q, forward->q.words.get());
  EXPECT_NE(g.grad_scope.find("not checked"), std::string::npos) << g.grad_scope;
}

TEST(HostSideMaker, TheForwardPartIsTakenWhileTheGradientsAreStillToBeMade) {
  Gate gate;
  gate.hold_gradients = true;
  const RunOptions opt = small_budget();
  HostSideMaker maker(opt, 1, gate.hook());
  const Problem p = sampled_problem(true);
  maker.ask(p, true);
  const auto forward = maker.take_forward(problem_key(p));  // returns: the gradients are held
  ASSERT_TRUE(forward);
  EXPECT_EQ(forward->ref_out, make_forward(p, opt).ref_out);
  EXPECT_EQ(maker.pending(), 1u);  // its gradients' part is still to be taken
  std::thread release([&] { gate.release(); });
  const auto gradients = maker.take_gradients(problem_key(p));
  release.join();
  ASSERT_TRUE(gradients);
  EXPECT_EQ(gradients->forward, forward);
  EXPECT_EQ(gradients->ref_dq, make_gradients(forward, opt).ref_dq);
  EXPECT_EQ(maker.pending(), 0u);
  EXPECT_EQ(gate.order(), (std::vector<std::string>{"301/fwd", "301/grad"}));
}

TEST(HostSideMaker, OneTakerGetsThePartsInTheOrderAsked) {
  Gate gate;
  HostSideMaker maker(small_budget(), 1, gate.hook());
  maker.ask(with_seqlen(11), true);  // its forward part is held at the gate while the rest are asked
  maker.ask(with_seqlen(12), false);
  maker.ask(with_seqlen(13), true);
  gate.release();
  gate.wait_for(5);
  for (int64_t n : {11, 12, 13}) EXPECT_TRUE(maker.take_forward(problem_key(with_seqlen(n))));
  EXPECT_TRUE(maker.take_gradients(problem_key(with_seqlen(11))));
  EXPECT_TRUE(maker.take_gradients(problem_key(with_seqlen(13))));
  EXPECT_EQ(gate.order(), (std::vector<std::string>{"11/fwd", "11/grad", "12/fwd", "13/fwd", "13/grad"}));
}

// Two takers, two lanes: the first two forward parts at once (both GPUs start their first groups
// at once), then, as lanes free up (here in the order the parts started), both first groups'
// gradients before the third problem's forward part: each GPU needs its gradients after its
// group's short forward points, the third problem only once a GPU has finished a whole group.
TEST(NextPart, TwoLanesMakeTheFirstGroupsGradientsBeforeTheNextForwardPart) {
  EXPECT_EQ(lane_schedule({true, true, true, true}, 2),
            (std::vector<std::string>{"0/fwd", "1/fwd", "0/grad", "1/grad", "2/fwd", "3/fwd", "2/grad", "3/grad"}));
  // Problems asked without gradients (forward points only) have no gradients' part.
  EXPECT_EQ(lane_schedule({true, false, true}, 2),
            (std::vector<std::string>{"0/fwd", "1/fwd", "0/grad", "2/fwd", "2/grad"}));
  // Eight: the eight first forward parts at once, then their gradients before the ninth problem;
  // later problems one by one, each problem's gradients right after its forward part.
  const auto eight = lane_schedule(std::vector<bool>(10, true), 8);
  ASSERT_EQ(eight.size(), 20u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(eight[size_t(i)], std::to_string(i) + "/fwd");
  for (int i = 0; i < 8; ++i) EXPECT_EQ(eight[size_t(8 + i)], std::to_string(i) + "/grad");
  EXPECT_EQ(std::vector<std::string>(eight.begin() + 16, eight.end()),
            (std::vector<std::string>{"8/fwd", "9/fwd", "8/grad", "9/grad"}));
}

TEST(NextPart, OneLaneMakesThePartsInTheOrderAsked) {
  EXPECT_EQ(lane_schedule({true, false, true}, 1),
            (std::vector<std::string>{"0/fwd", "0/grad", "1/fwd", "2/fwd", "2/grad"}));
}

// A gradients' part reads its forward part: while that is being made on one lane, the other lane
// makes the next problems' parts instead of waiting with it.
TEST(NextPart, AGradientsPartStartsOnlyOnceItsForwardPartIsMade) {
  std::vector<PartsState> s(3);
  for (size_t i = 0; i < s.size(); ++i) s[i].order = int64_t(i), s[i].with_grad = true;
  s[0].forward_started = true;   // being made
  s[0].gradients_waited = true;  // even when a runner waits for the gradients
  EXPECT_EQ(next_part(s, 2), (NextPart{1, false}));
  s[1].forward_started = s[1].forward_made = true;
  EXPECT_EQ(next_part(s, 2), (NextPart{1, true}));  // 1's gradients (needed at 2) before 2's forward part (at 2)
  s[1].gradients_started = true;
  EXPECT_EQ(next_part(s, 2), (NextPart{2, false}));
  s[2].forward_started = true;
  EXPECT_FALSE(next_part(s, 2));  // nothing can start until a forward part is made
  s[0].forward_made = true;
  EXPECT_EQ(next_part(s, 2), (NextPart{0, true}));
  // A lane slower than the other holds only its own part: with problem 0's forward part never
  // done, the other lane makes everything else in order.
  EXPECT_EQ(lane_schedule({true, true, true}, 2, 0),
            (std::vector<std::string>{"0/fwd", "1/fwd", "1/grad", "2/fwd", "2/grad", "0/grad"}));
}

TEST(NextPart, APartARunnerWaitsForComesFirst) {
  std::vector<PartsState> s(3);
  for (size_t i = 0; i < s.size(); ++i) s[i].order = int64_t(i), s[i].with_grad = true;
  EXPECT_EQ(next_part(s, 2), (NextPart{0, false}));
  s[2].forward_waited = true;
  EXPECT_EQ(next_part(s, 2), (NextPart{2, false}));
  s[2].forward_started = s[2].forward_made = true;
  s[0].forward_started = s[0].forward_made = true;
  s[2].gradients_waited = true;
  EXPECT_EQ(next_part(s, 2), (NextPart{2, true}));  // before 1's forward part, needed earlier by the order
}

// Two takers: while one part is held (a slow reference), the other lane makes the next problem's
// forward part, which its runner takes. One part at a time (c3c6e46's one lane) would wait here.
TEST(HostSideMaker, TwoTakersMakeTwoPartsAtOnce) {
  Gate gate;
  gate.hold_seqlen = 11;
  HostSideMaker maker(small_budget(), 2, gate.hook());
  EXPECT_EQ(maker.lanes(), 2);
  maker.ask(with_seqlen(11), false);
  maker.ask(with_seqlen(12), false);
  gate.wait_for("11/fwd");  // held by one lane (on a loaded machine the other may have started first)
  auto second = std::async(std::launch::async, [&] { return maker.take_forward(problem_key(with_seqlen(12))); });
  const bool made_beside = second.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  EXPECT_TRUE(made_beside) << "the second part waited for the first";
  EXPECT_EQ(gate.order().size(), 2u);
  gate.release();
  EXPECT_TRUE(second.get());
  EXPECT_TRUE(maker.take_forward(problem_key(with_seqlen(11))));
}

// One taker (one GPU): one lane, one part at a time, in the order asked.
TEST(HostSideMaker, OneTakerMakesOnePartAtATime) {
  Gate gate;
  HostSideMaker maker(small_budget(), 1, gate.hook());
  EXPECT_EQ(maker.lanes(), 1);
  maker.ask(with_seqlen(11), false);
  maker.ask(with_seqlen(12), false);
  gate.wait_for(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(gate.order().size(), 1u);  // 12's part waits for the lane
  gate.release();
  EXPECT_TRUE(maker.take_forward(problem_key(with_seqlen(12))));
  EXPECT_TRUE(maker.take_forward(problem_key(with_seqlen(11))));
  EXPECT_EQ(gate.order(), (std::vector<std::string>{"11/fwd", "12/fwd"}));
}

// A runner waiting for a part gets it next, before parts needed earlier by the order.
TEST(HostSideMaker, APartARunnerWaitsForIsMadeNext) {
  Gate gate;
  HostSideMaker maker(small_budget(), 1, gate.hook());
  for (int64_t n : {11, 12, 13}) maker.ask(with_seqlen(n), true);
  gate.wait_for(1);  // 11's forward part, held
  std::thread release([&] {
    // Released once the take below waits: the maker sees 13's forward part waited for.
    while (maker.waited() == 0) std::this_thread::yield();
    gate.release();
  });
  EXPECT_TRUE(maker.take_forward(problem_key(with_seqlen(13))));
  release.join();
  EXPECT_EQ(gate.order()[1], "13/fwd");
}

TEST(HostSideMaker, AskingAgainAddsTheGradientsOnly) {
  HostSideMaker maker(small_budget());
  const Problem p = with_seqlen(20);
  EXPECT_FALSE(maker.take_forward(problem_key(p)));  // not asked
  maker.ask(p, false);
  maker.ask(p, true);
  EXPECT_EQ(maker.pending(), 1u);
  EXPECT_TRUE(maker.take_forward(problem_key(p)));
  EXPECT_TRUE(maker.take_gradients(problem_key(p)));
  EXPECT_EQ(maker.pending(), 0u);
  maker.ask(p, false);
  EXPECT_TRUE(maker.take_forward(problem_key(p)));
  EXPECT_FALSE(maker.take_gradients(problem_key(p)));  // asked without: the runner makes them itself
  // deterministic changes how a method runs, not its inputs: the same problem
  Problem det = p;
  det.deterministic = true;
  maker.ask(p, true);
  EXPECT_TRUE(maker.take_forward(problem_key(det)));
  EXPECT_TRUE(maker.take_gradients(problem_key(det)));
}

TEST(HostSideMaker, AFailedForwardPartFailsBothTakes) {
  HostSideMaker maker(small_budget());
  Problem p = with_seqlen(64);
  p.pattern = "file:/nonexistent/mask.txt";  // the reference cannot read its block mask
  maker.ask(p, true);
  EXPECT_ANY_THROW(maker.take_forward(problem_key(p)));
  EXPECT_ANY_THROW(maker.take_gradients(problem_key(p)));
  EXPECT_EQ(maker.pending(), 0u);
}

TEST(HostSideMaker, ItsEndDropsWhatWasNotMade) {
  Gate gate;
  auto maker = std::make_unique<HostSideMaker>(small_budget(), 1, gate.hook());
  for (int64_t n : {30, 31, 32}) maker->ask(with_seqlen(n), true);
  while (gate.order().empty()) std::this_thread::yield();  // the first part is held at the gate
  std::thread release([&] { gate.release(); });
  maker.reset();  // waits for the part being made, makes no other once it sees its end
  release.join();
  EXPECT_GE(gate.order().size(), 1u);
  EXPECT_LE(gate.order().size(), 6u);
}

// A method whose first start the sweep's thread is making (bench/measure/first_starts.h) is busy
// from begin() to finish(); wait() returns once it is not (at once for a method never begun), and
// wait_quiet() once no start is being made on the GPU.
TEST(FirstStarts, AMethodIsBusyWhileItsStartIsMadeAndWaitReturnsAfter) {
  FirstStarts starts;
  EXPECT_FALSE(starts.busy("standard"));
  starts.begin("standard", 1);
  EXPECT_TRUE(starts.busy("standard"));
  EXPECT_FALSE(starts.busy("flash2"));  // each method its own
  starts.wait("flash2");                // nothing to wait for
  starts.wait_quiet(0);                 // nor on another GPU
  std::promise<void> waited, quiet;
  std::thread other([&] {
    starts.wait("standard");
    waited.set_value();
  });
  std::thread measuring([&] {
    starts.wait_quiet(1);
    quiet.set_value();
  });
  auto done = waited.get_future(), done_quiet = quiet.get_future();
  EXPECT_EQ(done.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  EXPECT_EQ(done_quiet.wait_for(std::chrono::milliseconds(1)), std::future_status::timeout);
  starts.finish("standard");
  EXPECT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(done_quiet.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  other.join();
  measuring.join();
  EXPECT_FALSE(starts.busy("standard"));
}

// SweepSpec: the axes of a sweep as data; expand() turns them into points
// (problem × method × pass). Points that share a problem are adjacent, so the runner
// generates each problem's inputs and reference once.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/core/problem.h"

namespace flashio {

struct SweepSpec {
  std::vector<std::string> methods = {"standard", "flash2"};
  std::vector<Pass> passes = {Pass::Fwd};
  std::vector<int64_t> batch = {1};
  std::vector<int64_t> heads = {16};
  std::vector<int64_t> kv_heads = {0};  // 0 = heads
  std::vector<int64_t> seqlen = {1024};
  std::vector<int64_t> seqlen_k = {0};  // 0 = seqlen
  std::vector<int64_t> head_dim = {64};
  std::vector<DType> dtypes = {DType::F16};
  std::vector<bool> causal = {false};
  std::vector<Padding> padding = {Padding::None};
  std::vector<double> dropout = {0.0};
  std::vector<bool> deterministic = {false};
  std::vector<int> block_r = {0};
  std::vector<int> block_c = {0};
  std::vector<std::string> mma = {""};  // "" = the method's choice, "mma.sync", "wgmma"
  std::vector<int> kv_page = {0};       // K/V layout: 0 = contiguous, P = paged:P (Problem::kv_page)
  // Variable lengths (bench/core/varlen.h): "" = none, "uniform:A-B", "file:PATH". A varlen point
  // takes the first seqlen only (its N is its longest sequence); a file: point the first batch
  // (its batch is the file's count); with tokens, uniform lengths fill a pack of that many tokens.
  std::vector<std::string> seqlens = {""};
  std::vector<bool> varlen_padded = {false};  // --varlen-as packed (false), padded (true)
  // --seqlen-q of varlen points: 0 = each sequence's queries are its own tokens (self-attention);
  // Nq > 0 = a varlen decode, Nq queries per sequence over its key length (Problem::key_varlen).
  std::vector<int64_t> varlen_queries = {0};
  // Block sparsity (bench/core/sparsity.h): "" or "none" = dense. density applies to the random
  // pattern only and sparse_block to patterns only, so they add no duplicate dense points.
  std::vector<std::string> pattern = {""};
  std::vector<double> density = {0.5};
  std::vector<int> sparse_block = {128};
  int sparse_window = 1;  // local pattern
  int sparse_global = 1;
  // FlashAttention-2's benchmark ties batch to N and heads to d: when set, these
  // replace the batch and heads axes (batch = tokens / seqlen, heads = model_dim / head_dim).
  std::optional<int64_t> tokens;
  std::optional<int64_t> model_dim;
  uint64_t seed = 0x5eed;
};

struct Point {
  std::string method;
  Pass pass = Pass::Fwd;
  Problem problem;
  std::string name() const { return point_name(method, pass, problem); }
};

// Points whose problems have the same key read the same inputs and reference values, which a
// runner makes once for them: the problem's name and seed, whatever `deterministic` says (it
// changes how a method runs, not what it computes).
std::string problem_key(const Problem& p);

// The order in which a runner runs the points of one problem group (positions into `group`):
// those of the forward pass first, then the others, each kind in the order given. The forward
// points need only the forward part of the problem's host work (bench/measure/host_side.h), so
// they run while its gradients' reference is being made.
std::vector<size_t> run_order(const std::vector<Point>& group);

// Throws std::invalid_argument naming the first impossible value (d = 0, tokens not
// divisible by seqlen, heads not divisible by kv-heads, ...).
// Refuses (std::invalid_argument) a sweep of more than kMaxPoints points before making any.
inline constexpr int64_t kMaxPoints = int64_t(1) << 20;
std::vector<Point> expand(const SweepSpec& spec);

// The default sweep of `flashio run` with no arguments: FlashAttention-2's setting
// (16k tokens, model dim 2048), N = 512 … 4096, d = 64 and 128, standard and flash2, forward.
SweepSpec default_sweep();

}  // namespace flashio

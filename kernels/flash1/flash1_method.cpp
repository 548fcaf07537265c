// The `flash1` method: FlashAttention as published (Dao et al., 2022): Algorithm 2 forward
// (Algorithm 1 with masking and dropout) and Algorithm 4 backward, with the paper's loop order
// (outer loop over K/V tiles, O/ℓ/m re-read and re-written in HBM) and its parallelisation
// over (batch, head), split further over `splits` thread blocks per head when batch × heads
// cannot fill the GPU (as the paper's released kernel does). Kernels:
// kernels/flash1/flash1_kernels.cuh.
//
// Splits: the largest count that keeps one wave, ⌊SMs × resident blocks per SM / (B·H)⌋,
// between 1 and the number of tiles the split loop deals out (Q tiles forward, K/V tiles
// backward); recorded as tiles.splits and tiles_bwd.splits.
//
// Tile sizes: Algorithm 1's rule Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d), M = the GPU's shared
// memory per block in elements, rounded down to a compiled tile that fits (Br first, then Bc);
// --block-r/--block-c force one of the compiled tiles (FlashAttention Figure 2, middle).
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "bench/device_memory.h"
#include "bench/method.h"
#include "kernels/common/problem_params.h"
#include "kernels/flash1/flash1_params.h"

namespace flashio {
namespace {

using kernels::Flash2Tile;

std::vector<Flash2Tile> compiled_tiles(int head_dim) {
  Flash2Tile buf[16];
  const int n = kernels::flash1_fwd_tiles(head_dim, buf, 16);
  return {buf, buf + n};
}

Support choose_tile(const Problem& p, const DeviceInfo& dev, Flash2Tile* out) {
  const auto tiles = compiled_tiles(int(p.head_dim));
  if (p.block_r > 0 || p.block_c > 0) {
    std::vector<std::string> names;
    for (const auto& t : tiles) {
      names.push_back(fmt::format("{}x{}", t.block_m, t.block_n));
      if ((p.block_r > 0 && t.block_m != p.block_r) || (p.block_c > 0 && t.block_n != p.block_c)) continue;
      if (t.smem_bytes > dev.smem_per_block_optin)
        return Support::no(fmt::format("tile {}x{} needs {} bytes of shared memory; this GPU allows {} per block",
                                       t.block_m, t.block_n, t.smem_bytes, dev.smem_per_block_optin));
      *out = t;
      return Support::yes();
    }
    return Support::no(fmt::format("flash1 has no {}x{} tile for d={} (compiled: {})", p.block_r, p.block_c,
                                   p.head_dim, fmt::join(names, ", ")));
  }
  // Algorithm 1, line 1: Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d), M in elements.
  const int64_t m_elements = dev.smem_per_block_optin / bytes_of(p.dtype);
  const int64_t bc_rule = (m_elements + 4 * p.head_dim - 1) / (4 * p.head_dim);
  const int64_t br_rule = std::min<int64_t>(bc_rule, p.head_dim);
  const Flash2Tile* best = nullptr;
  for (const auto& t : tiles) {
    if (t.smem_bytes > dev.smem_per_block_optin || t.block_m > br_rule || t.block_n > bc_rule) continue;
    if (!best || t.block_m > best->block_m || (t.block_m == best->block_m && t.block_n > best->block_n)) best = &t;
  }
  if (!best)
    return Support::no(fmt::format("no flash1 tile for d={} fits Algorithm 1's rule (Br <= {}, Bc <= {}) and {} bytes",
                                   p.head_dim, br_rule, bc_rule, dev.smem_per_block_optin));
  *out = *best;
  return Support::yes();
}

// Thread blocks per head so that B·H·splits fill one wave of the GPU (at most `tiles`).
int one_wave_splits(const Problem& p, const DeviceInfo& dev, int blocks_per_sm, int64_t tiles) {
  const int64_t heads = p.batch * p.heads;
  const int64_t wave = int64_t(dev.sm_count) * std::max(blocks_per_sm, 1);
  return int(std::clamp<int64_t>(wave / heads, 1, std::max<int64_t>(tiles, 1)));
}

class Flash1Plan final : public Plan {
 public:
  Flash1Plan(const Problem& p, Pass pass, Flash2Tile tile, const DeviceInfo& dev, DeviceAllocator& alloc)
      : p_(p), tile_(tile) {
    kernels::Flash1FwdParams f{};
    fill_problem_params(p_, f.base);
    const bool bf16 = p.dtype == DType::BF16;
    fwd_splits_ = one_wave_splits(p, dev, kernels::flash1_fwd_blocks_per_sm(f, tile_, bf16),
                                  (p.seqlen_q + tile_.block_m - 1) / tile_.block_m);
    if (pass != Pass::Fwd) {
      kernels::Flash1BwdParams b{};
      fill_problem_params(p_, b.base);
      kernels::Flash2Tile bt{};
      kernels::flash1_bwd_tile(int(p.head_dim), &bt);
      // Deterministic: one block per head adds dQ without atomics, in K/V-tile order.
      bwd_splits_ = p.deterministic ? 1
                                    : one_wave_splits(p, dev, kernels::flash1_bwd_blocks_per_sm(b, bf16),
                                                      (p.nk() + bt.block_n - 1) / bt.block_n);
    }
    const size_t rows = size_t(p.batch * p.heads * p.seqlen_q);
    o_accum_ = DeviceBuffer(alloc, size_t(p.q_elements()) * sizeof(float));  // O, ℓ, m in HBM (Algorithm 1)
    row_max_ = DeviceBuffer(alloc, rows * sizeof(float));
    row_sum_ = DeviceBuffer(alloc, rows * sizeof(float));
    if (pass != Pass::Fwd) dq_accum_ = DeviceBuffer(alloc, size_t(p.q_elements()) * sizeof(float));
  }
  Tiles tiles() const override {
    return {tile_.block_m, tile_.block_n, tile_.warps, tile_.stages, tile_.smem_bytes, fwd_splits_, "mma.sync", "padded"};
  }
  std::optional<Tiles> backward_tiles() const override {
    kernels::Flash2Tile t{};
    if (!kernels::flash1_bwd_tile(int(p_.head_dim), &t)) return std::nullopt;
    Tiles out{t.block_m, t.block_n, t.warps, t.stages, t.smem_bytes, bwd_splits_, "mma.sync", "padded"};
    out.dq_adds = "pairs";  // float2 read-modify-write (S = 1), atomic_add2 (S > 1)
    return out;
  }
  bool writes_lse() const override { return true; }

  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    kernels::Flash1FwdParams k{};
    k.base.q = buf.q;
    k.base.k = buf.k;
    k.base.v = buf.v;
    k.base.o = buf.o;
    k.base.lse = buf.lse;
    k.base.key_lengths = buf.key_lengths;
    fill_problem_params(p_, k.base);
    k.o_accum = o_accum_.as<float>();
    k.row_max = row_max_.as<float>();
    k.row_sum = row_sum_.as<float>();
    k.splits = fwd_splits_;
    kernels::flash1_fwd(k, tile_, p_.dtype == DType::BF16, stream);
  }

  void backward(const AttentionBuffers& buf, cudaStream_t stream) override {
    kernels::Flash1BwdParams k{};
    k.base.q = buf.q;
    k.base.k = buf.k;
    k.base.v = buf.v;
    k.base.o = buf.o;
    k.base.d_o = buf.d_o;
    k.base.lse = buf.lse;
    k.base.dq_accum = dq_accum_.as<float>();
    k.base.dq = buf.dq;
    k.base.dk = buf.dk;
    k.base.dv = buf.dv;
    k.base.key_lengths = buf.key_lengths;
    fill_problem_params(p_, k.base);
    k.base.scale = float(p_.scale());
    k.row_max = row_max_.as<float>();
    k.row_sum = row_sum_.as<float>();
    k.splits = bwd_splits_;
    kernels::flash1_bwd(k, p_.dtype == DType::BF16, stream);
  }

 private:
  Problem p_;
  Flash2Tile tile_;
  int fwd_splits_ = 1, bwd_splits_ = 1;
  DeviceBuffer o_accum_, row_max_, row_sum_, dq_accum_;
};

class Flash1 final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i;
    i.name = "flash1";
    i.summary = "FlashAttention (Dao et al. 2022, Alg. 2/4): outer loop over K/V tiles, O/l/m re-read and re-written in HBM";
    i.where = "gpu";
    i.passes = {Pass::Fwd, Pass::Bwd, Pass::FwdBwd};
    i.dtypes = {DType::F16, DType::BF16};
    i.head_dims = {32, 64, 96, 128};
    i.masks = {"none", "causal", "padding"};
    i.dropout = true;
    i.gqa = false;
    i.deterministic = true;  // --deterministic: one backward block per (batch, head) adds dQ in K/V-tile order
    i.mma = {"mma.sync"};
    i.notes = "thread blocks per (batch, head) as the paper's kernel, split to fill one wave (tiles.splits; "
              "backward unsplit when deterministic); tiles from Algorithm 1's rule unless forced";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    if (Support s = check_fused_kernels(p, dev); !s) return s;
    if (p.seqlen_q > (int64_t(1) << 30) || p.nk() > (int64_t(1) << 30))
      return Support::no("sequence lengths above 2^30 are not supported (32-bit row indices)");
    if (pass != Pass::Fwd) {
      Flash2Tile bwd{};
      if (!kernels::flash1_bwd_tile(int(p.head_dim), &bwd) || bwd.smem_bytes > dev.smem_per_block_optin)
        return Support::no(fmt::format("flash1 backward needs {} bytes of shared memory; this GPU allows {} per block",
                                       bwd.smem_bytes, dev.smem_per_block_optin));
    }
    Flash2Tile t{};
    return choose_tile(p, dev, &t);
  }
  std::unique_ptr<Plan> plan(const Problem& p, Pass pass, const DeviceInfo& dev, DeviceAllocator& alloc) const override {
    Flash2Tile t{};
    choose_tile(p, dev, &t);
    return std::make_unique<Flash1Plan>(p, pass, t, dev, alloc);
  }
};

}  // namespace

std::unique_ptr<Method> make_flash1() { return std::make_unique<Flash1>(); }

}  // namespace flashio

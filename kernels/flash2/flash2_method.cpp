// The `flash2` method: FlashAttention-2 (forward: Algorithm 1, backward: Algorithm 2).
// Kernels in kernels/flash2/flash2_{fwd,bwd}_kernel.cuh; forward tiles in flash2_fwd_configs.h.
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "bench/device_memory.h"
#include "bench/method.h"
#include "kernels/flash2/flash2_call_params.h"

namespace flashio {
namespace {

using kernels::Flash2Tile;

std::vector<Flash2Tile> compiled_tiles(int head_dim) {
  Flash2Tile buf[16];
  const int n = kernels::flash2_fwd_tiles(head_dim, buf, 16);
  return {buf, buf + n};
}

std::string describe(const std::vector<Flash2Tile>& tiles) {
  std::vector<std::string> s;
  for (const auto& t : tiles) s.push_back(fmt::format("{}x{}", t.block_m, t.block_n));
  return fmt::format("{}", fmt::join(s, ", "));
}

// The tile for this problem on this GPU: the forced one, else the first (fastest) that fits.
Support choose_tile(const Problem& p, const DeviceInfo& dev, Flash2Tile* out) {
  const auto tiles = compiled_tiles(int(p.head_dim));
  for (const auto& t : tiles) {
    if (p.block_r > 0 && t.block_m != p.block_r) continue;
    if (p.block_c > 0 && t.block_n != p.block_c) continue;
    if (t.smem_bytes > dev.smem_per_block_optin) {
      if (p.block_r > 0 || p.block_c > 0)
        return Support::no(fmt::format("tile {}x{} needs {} bytes of shared memory; this GPU allows {} per block",
                                       t.block_m, t.block_n, t.smem_bytes, dev.smem_per_block_optin));
      continue;
    }
    *out = t;
    return Support::yes();
  }
  if (p.block_r > 0 || p.block_c > 0)
    return Support::no(fmt::format("flash2 has no {}x{} tile for d={} (compiled: {})", p.block_r, p.block_c,
                                   p.head_dim, describe(tiles)));
  return Support::no(fmt::format("no flash2 tile for d={} fits in {} bytes of shared memory", p.head_dim,
                                 dev.smem_per_block_optin));
}

class Flash2Plan final : public Plan {
 public:
  Flash2Plan(const Problem& p, Pass pass, Flash2Tile tile, DeviceAllocator& alloc) : p_(p), tile_(tile) {
    if (pass != Pass::Fwd) {  // D and the fp32 dQ accumulator
      d_sum_ = DeviceBuffer(alloc, size_t(p.batch * p.heads * p.seqlen_q) * sizeof(float));
      dq_accum_ = DeviceBuffer(alloc, size_t(p.q_elements()) * sizeof(float));
      kernels::Flash2Tile bwd{};
      if (p.deterministic && kernels::flash2_bwd_tile(int(p.head_dim), &bwd))  // a semaphore per Q tile
        dq_semaphore_ = DeviceBuffer(
            alloc, size_t(p.batch * p.heads * ((p.seqlen_q + bwd.block_m - 1) / bwd.block_m)) * sizeof(int));
    }
  }
  Tiles tiles() const override {
    return {tile_.block_m, tile_.block_n, tile_.warps, tile_.stages, tile_.smem_bytes, 0, "mma.sync", "padded"};
  }
  std::optional<Tiles> backward_tiles() const override {
    kernels::Flash2Tile t{};
    if (!kernels::flash2_bwd_tile(int(p_.head_dim), &t)) return std::nullopt;
    return Tiles{t.block_m, t.block_n, t.warps, t.stages, t.smem_bytes, 0, "mma.sync", "padded"};
  }
  bool writes_lse() const override { return true; }

  void backward(const AttentionBuffers& buf, cudaStream_t stream) override {
    const kernels::Flash2BwdParams k =
        flash2_bwd_params(p_, buf, d_sum_.as<float>(), dq_accum_.as<float>(), dq_semaphore_.as<int>());
    kernels::flash2_bwd(k, p_.dtype == DType::BF16, stream);
  }
  void forward(const AttentionBuffers& buf, cudaStream_t stream) override {
    const kernels::Flash2FwdParams k = flash2_fwd_params(p_, buf);
    kernels::flash2_fwd(k, tile_, p_.dtype == DType::BF16, stream);
  }

 private:
  Problem p_;
  Flash2Tile tile_;
  DeviceBuffer d_sum_, dq_accum_, dq_semaphore_;
};

class Flash2 final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i;
    i.name = "flash2";
    i.summary = "FlashAttention-2 (Dao 2023, Alg. 1): Q tiles across thread blocks, K/V streamed, online softmax";
    i.where = "gpu";
    i.passes = {Pass::Fwd, Pass::Bwd, Pass::FwdBwd};
    i.dtypes = {DType::F16, DType::BF16};
    i.head_dims = {32, 64, 96, 128, 256};
    i.masks = {"none", "causal", "padding"};
    i.dropout = true;
    i.gqa = true;
    i.deterministic = true;
    i.notes =
        "backward: head dims up to 128; dQ accumulated with fp32 atomics (not bitwise reproducible), or with "
        "--deterministic true by K/V tiles in turn (a semaphore per Q tile)";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    if (Support s = check_fused_kernels(p, dev); !s) return s;
    if (p.seqlen_q > (int64_t(1) << 30) || p.nk() > (int64_t(1) << 30))
      return Support::no("sequence lengths above 2^30 are not supported (32-bit row indices)");
    if (pass != Pass::Fwd) {
      Flash2Tile bwd{};
      if (!kernels::flash2_bwd_tile(int(p.head_dim), &bwd))
        return Support::no(fmt::format("flash2 backward supports head dims up to 128 (got {})", p.head_dim));
      if (bwd.smem_bytes > dev.smem_per_block_optin)
        return Support::no(fmt::format("flash2 backward needs {} bytes of shared memory; this GPU allows {} per block",
                                       bwd.smem_bytes, dev.smem_per_block_optin));
    }
    Flash2Tile t{};
    return choose_tile(p, dev, &t);
  }
  std::unique_ptr<Plan> plan(const Problem& p, Pass pass, const DeviceInfo& dev, DeviceAllocator& alloc) const override {
    Flash2Tile t{};
    choose_tile(p, dev, &t);
    return std::make_unique<Flash2Plan>(p, pass, t, alloc);
  }
};

}  // namespace

std::unique_ptr<Method> make_flash2() { return std::make_unique<Flash2>(); }

}  // namespace flashio

// The `flash2` method: FlashAttention-2 (forward: Algorithm 1, backward: Algorithm 2).
// Kernels in kernels/flash2/flash2_{fwd,bwd}_kernel.cuh (mma.sync, every GPU from sm_75) and
// kernels/flash2/hopper/ (wgmma, sm_90a); forward tiles in flash2_fwd_configs.h and
// hopper/flash2_fwd_wgmma_configs.h. On a Hopper GPU the wgmma tiles come first where the
// point's features allow them; --mma forces one instruction path.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/core/method.h"
#include "kernels/flash2/flash2_fwd_configs.h"
#include "kernels/flash2/flash2_method.h"

namespace flashio {
namespace {

using kernels::KernelTile;

// Why this build and GPU have no wgmma kernels, or nothing.
std::optional<std::string> wgmma_absent(const DeviceInfo& dev) {
  if (!kernels::flash2_wgmma_compiled())
    return std::string("this build has no wgmma kernels (CMAKE_CUDA_ARCHITECTURES without 90)");
  if (dev.compute_capability() != 90)
    return fmt::format("wgmma kernels run on compute capability 9.0 only (this GPU: {}.{})", dev.cc_major, dev.cc_minor);
  return std::nullopt;
}

// Why the wgmma forward cannot run this point here, or nothing.
std::optional<std::string> wgmma_refusal(const Problem& p, const DeviceInfo& dev) {
  if (auto why = wgmma_absent(dev)) return why;
  KernelTile buf[1];
  if (kernels::flash2_fwd_wgmma_tiles(int(p.head_dim), p.dropout > 0.0, buf, 1) == 0)
    return fmt::format("no wgmma forward for d={} (64, 128)", p.head_dim);
  return std::nullopt;
}

// Why the wgmma backward cannot run this point here, or nothing.
std::optional<std::string> wgmma_bwd_refusal(const Problem& p, const DeviceInfo& dev) {
  if (auto why = wgmma_absent(dev)) return why;
  if (p.deterministic) return std::string("the wgmma backward has no deterministic mode (the mma.sync kernel has)");
  KernelTile t{};
  if (!kernels::flash2_bwd_wgmma_tile(int(p.head_dim), &t))
    return fmt::format("no wgmma backward for d={} (64, 128)", p.head_dim);
  return std::nullopt;
}

// The forward tiles this point may use, in order of preference: wgmma (Hopper) first unless
// --mma mma.sync, then mma.sync unless --mma wgmma. `why_not_wgmma` says why wgmma is absent.
std::vector<KernelTile> candidate_tiles(const Problem& p, const DeviceInfo& dev, std::string* why_not_wgmma) {
  std::vector<KernelTile> out;
  KernelTile buf[16];
  const auto refusal = wgmma_refusal(p, dev);
  if (refusal) *why_not_wgmma = *refusal;
  if (!refusal && p.mma != "mma.sync") {
    const int n = kernels::flash2_fwd_wgmma_tiles(int(p.head_dim), p.dropout > 0.0, buf, 16);
    out.insert(out.end(), buf, buf + n);
    // A tile of Br rows computes ⌈Nq/Br⌉·Br rows. Where that pads more than Nq/16 rows, a tile
    // that pads less goes first (H100, d = 64: 192 × 128 beats 128 × 128 from N = 2048, where it
    // pads 3 %, and loses at N = 512 and 1024, where it pads 12.5 %).
    auto pads_much = [&](const KernelTile& t) {
      const int64_t rows = (p.seqlen_q + t.block_r - 1) / t.block_r * t.block_r;
      return (rows - p.seqlen_q) * 16 > p.seqlen_q;
    };
    std::stable_sort(out.begin(), out.end(),
                     [&](const KernelTile& a, const KernelTile& b) { return !pads_much(a) && pads_much(b); });
  }
  if (p.mma != "wgmma") {
    const int n = kernels::flash2_fwd_tiles(int(p.head_dim), buf, 16);
    out.insert(out.end(), buf, buf + n);
  }
  return out;
}

std::string describe(const std::vector<KernelTile>& tiles) {
  std::vector<std::string> s;
  for (const auto& t : tiles) s.push_back(fmt::format("{}x{} ({})", t.block_r, t.block_c, t.wgmma ? "wgmma" : "mma.sync"));
  return fmt::format("{}", fmt::join(s, ", "));
}

}  // namespace

// The backward's tile: wgmma where it can run (and --mma allows), else mma.sync; false with
// `why` when neither can.
bool flash2_choose_bwd_tile(const Problem& p, const DeviceInfo& dev, KernelTile* out, std::string* why) {
  const auto refusal = wgmma_bwd_refusal(p, dev);
  if (!refusal && p.mma != "mma.sync") return kernels::flash2_bwd_wgmma_tile(int(p.head_dim), out);
  if (p.mma == "wgmma") {
    *why = "--mma wgmma: " + *refusal;
    return false;
  }
  // The first mma.sync tile that fits this GPU's shared memory; if none does, the smallest
  // (supports() then refuses the point with its bytes).
  if (!kernels::flash2_bwd_tile_for(int(p.head_dim), dev.smem_per_block_optin, out)) {
    *why = fmt::format("flash2 has no backward kernel for d={}", p.head_dim);
    return false;
  }
  return true;
}

// A packed varlen problem's tile: the varlen kernels are compiled for the first (fastest) tile of
// each list only (wgmma on Hopper unless --mma mma.sync, then mma.sync), to bound compile time.
static Support choose_varlen_tile(const Problem& p, const DeviceInfo& dev, KernelTile* out) {
  std::vector<KernelTile> firsts;
  KernelTile buf[16];
  if (!wgmma_refusal(p, dev) && p.mma != "mma.sync" && kernels::flash2_fwd_wgmma_tiles(int(p.head_dim), false, buf, 16) > 0)
    firsts.push_back(buf[0]);
  if (p.mma != "wgmma" && kernels::flash2_fwd_tiles(int(p.head_dim), buf, 16) > 0) firsts.push_back(buf[0]);
  for (const auto& t : firsts) {
    if ((p.block_r > 0 && t.block_r != p.block_r) || (p.block_c > 0 && t.block_c != p.block_c)) continue;
    if (t.smem_bytes > dev.smem_per_block_optin) continue;
    *out = t;
    return Support::yes();
  }
  return Support::no(fmt::format("flash2's varlen kernels are compiled for the first tile of each list only ({}); "
                                 "none matches the forced tile or fits in {} bytes of shared memory",
                                 describe(firsts), dev.smem_per_block_optin));
}

// The tile for this problem on this GPU: the forced one, else the first (fastest) that fits.
Support flash2_choose_tile(const Problem& p, const DeviceInfo& dev, KernelTile* out) {
  if (p.packed()) return choose_varlen_tile(p, dev, out);
  std::string why_not_wgmma;
  const auto tiles = candidate_tiles(p, dev, &why_not_wgmma);
  if (p.mma == "wgmma" && tiles.empty()) return Support::no("--mma wgmma: " + why_not_wgmma);
  const bool forced = p.block_r > 0 || p.block_c > 0;
  for (const auto& t : tiles) {
    if (!forced && !t.wgmma) break;  // mma.sync: flash2_fwd_pick below
    if (p.block_r > 0 && t.block_r != p.block_r) continue;
    if (p.block_c > 0 && t.block_c != p.block_c) continue;
    if (t.smem_bytes > dev.smem_per_block_optin) {
      if (forced)
        return Support::no(fmt::format("tile {}x{} needs {} bytes of shared memory; this GPU allows {} per block",
                                       t.block_r, t.block_c, t.smem_bytes, dev.smem_per_block_optin));
      continue;
    }
    *out = t;
    return Support::yes();
  }
  // The mma.sync tile: the first of the one list that fits (flash2_fwd_pick, as `flashio predict`).
  if (!forced && p.mma != "wgmma" && kernels::flash2_fwd_tile_for(int(p.head_dim), dev.smem_per_block_optin, out))
    return Support::yes();
  if (forced)
    return Support::no(fmt::format("flash2 has no {}x{} tile for d={} (compiled: {})", p.block_r, p.block_c,
                                   p.head_dim, describe(tiles)));
  return Support::no(fmt::format("no flash2 tile for d={} fits in {} bytes of shared memory", p.head_dim,
                                 dev.smem_per_block_optin));
}

namespace {

class Flash2 final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i;
    i.name = "flash2";
    i.summary = "FlashAttention-2 (Dao 2023, Alg. 1): Q tiles across thread blocks, K/V streamed, online softmax";
    i.where = "gpu";
    i.passes = {Pass::Fwd, Pass::Bwd, Pass::FwdBwd};
    i.dtypes = {DType::F16, DType::BF16};
    #define FLASH2_HEAD_DIM_ITEM(D) D,
    i.head_dims = {FLASH2_HEAD_DIMS(FLASH2_HEAD_DIM_ITEM)};
#undef FLASH2_HEAD_DIM_ITEM
    i.masks = {"none", "causal", "padding"};
    i.dropout = true;
    i.gqa = true;
    i.deterministic = true;
    i.varlen = true;
    i.mma = {"mma.sync", "wgmma"};
    i.notes =
        "backward: every head dim (d 256: eight warps, two per 16-key slice); dQ accumulated with fp32 atomics (not bitwise reproducible), or with "
        "--deterministic true by K/V tiles in turn (a semaphore per Q tile); on Hopper, wgmma kernels (d 64, 128; "
        "backward not deterministic), mma.sync otherwise (--mma forces one); packed varlen (--seqlens): forward "
        "only, no dropout, the first tile of each list";
    return i;
  }
  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    if (Support s = check_fused_kernels(p, dev); !s) return s;
    if (p.seqlen_q > (int64_t(1) << 30) || p.nk() > (int64_t(1) << 30))
      return Support::no("sequence lengths above 2^30 are not supported (32-bit row indices)");
    if (p.packed()) {
      if (pass != Pass::Fwd)
        return Support::no("flash2 has no packed varlen backward yet (its backward reads [B, H, N, d]; --varlen-as "
                           "padded runs it on the sequences padded to the longest)");
      if (p.dropout > 0.0) return Support::no("flash2's varlen kernels have no dropout variant (compile-time budget)");
      if (p.batch > 65535) return Support::no(fmt::format("{} sequences: more than a grid's 65535 z-blocks", p.batch));
      if (p.total_tokens() > (int64_t(1) << 30))
        return Support::no("more than 2^30 packed tokens are not supported (32-bit offsets)");
    }
    if (pass != Pass::Fwd) {
      KernelTile bwd{};
      std::string why;
      if (!flash2_choose_bwd_tile(p, dev, &bwd, &why)) return Support::no(why);
      if (bwd.smem_bytes > dev.smem_per_block_optin)
        return Support::no(fmt::format("flash2 backward needs {} bytes of shared memory; this GPU allows {} per block",
                                       bwd.smem_bytes, dev.smem_per_block_optin));
    }
    KernelTile t{};
    return flash2_choose_tile(p, dev, &t);
  }
};

}  // namespace

std::unique_ptr<Method> make_flash2() { return std::make_unique<Flash2>(); }

}  // namespace flashio

// The `flash_decode` method: split-KV attention for decoding (Flash-Decoding), forward only.
// Kernels in kernels/flash_decode/flash_decode_kernel.cuh; tile, stages and split choice in
// flash_decode_configs.h.
#include "kernels/flash_decode/flash_decode_method.h"

#include <fmt/format.h>

#include <string>

#include "bench/core/method.h"

namespace flashio {

kernels::DecodeSplit flash_decode_choose_split(const Problem& p, const DeviceInfo& dev) {
  return kernels::flash_decode_split(p, dev.sm_count, dev.smem_per_sm);
}

namespace {

class FlashDecode final : public Method {
 public:
  MethodInfo info() const override {
    MethodInfo i;
    i.name = "flash_decode";
    i.summary =
        "split-KV decoding (Flash-Decoding): blocks over (batch, K/V head, key split), a GQA group's "
        "queries together, partials combined by log-sum-exp";
    i.where = "gpu";
    i.passes = {Pass::Fwd};
    i.dtypes = {DType::F16, DType::BF16};
#define FLASH_DECODE_HEAD_DIM_ITEM(D) D,
    i.head_dims = {FLASH_DECODE_HEAD_DIMS(FLASH_DECODE_HEAD_DIM_ITEM)};
#undef FLASH_DECODE_HEAD_DIM_ITEM
    i.masks = {"none", "causal", "padding"};
    i.dropout = false;
    i.gqa = true;
    i.paged_kv = true;
    i.varlen_decode = true;
    i.mma = {"mma.sync"};
    i.notes = fmt::format(
        "decoding: at most {} queries per sequence; forward only (decoding has no backward); contiguous or paged "
        "K/V (pages of a multiple of {} tokens), or varlen K/V (--seqlens with --seqlen-q), packed or paged per "
        "sequence; the split count follows the SM count (tiles.splits)",
        kernels::kDecodeMaxQueries, kKvPageMultiple);
    return i;
  }

  Support supports(const Problem& p, Pass pass, const DeviceInfo& dev) const override {
    if (pass != Pass::Fwd)
      return Support::no(fmt::format("flash_decode is forward only: decoding has no {} pass", to_string(pass)));
    if (Support s = check_common(info(), p, pass, dev); !s) return s;
    if (Support s = check_fused_kernels(p, dev); !s) return s;
    if (p.seqlen_q > kernels::kDecodeMaxQueries)
      return Support::no(fmt::format("flash_decode decodes at most {} queries per sequence (got {}): {}",
                                     kernels::kDecodeMaxQueries, p.seqlen_q,
                                     p.packed() ? "a packed varlen decode has no other method; --varlen-as padded "
                                                  "runs the same sequences on flash2"
                                                : "use flash2"));
    if (p.packed() && p.total_tokens() > kMaxExtent)
      return Support::no("packed K/V of more than 2^31 - 1 tokens is not supported (32-bit cu_seqlens)");
    if ((p.block_r > 0 && p.block_r != kernels::kDecodeBlockM) ||
        (p.block_c > 0 && p.block_c != kernels::kDecodeBlockN))
      return Support::no(fmt::format("flash_decode has one tile, {}x{} (asked: {}x{})", kernels::kDecodeBlockM,
                                     kernels::kDecodeBlockN, p.block_r, p.block_c));
    if (p.nk() > (int64_t(1) << 30))
      return Support::no("key lengths above 2^30 are not supported (32-bit key indices)");
    const int64_t smem = kernels::flash_decode_smem_bytes(int(p.head_dim));
    if (smem > dev.smem_per_block_optin)
      return Support::no(
          fmt::format("flash_decode needs {} bytes of shared memory for d={}; this GPU allows {} per block", smem,
                      p.head_dim, dev.smem_per_block_optin));
    const kernels::DecodeSplit s = flash_decode_choose_split(p, dev);
    if (p.batch > 65535 || p.kvh() * s.row_tiles > 65535)
      return Support::no(
          fmt::format("b:{} and {} K/V heads × {} row tiles exceed the grid's 65535 blocks per dimension", p.batch,
                      p.kvh(), s.row_tiles));
    return Support::yes();
  }
};

}  // namespace

std::unique_ptr<Method> make_flash_decode() { return std::make_unique<FlashDecode>(); }

}  // namespace flashio

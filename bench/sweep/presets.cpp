#include "bench/sweep/presets.h"

#include <fmt/format.h>

namespace flashio {

namespace {

// FlashAttention (arXiv:2205.14135), Appendix E.9: 8 heads of dimension 64, batch 16, fp16,
// random Q, K, V; dropout 0.1; "masking" is a key-padding mask with lengths uniform in
// [N − 20, N]; N = 128 … 65536. Table 13 maps dropout × masking × pass to Tables 14–25.
constexpr const char* kFa1Shape =
    R"("batch": 16, "heads": 8, "head_dim": 64, "dtype": "fp16",
       "seqlen": [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536])";

struct Fa1Table {
  int number;
  bool dropout, masking;
  const char* pass;
};
constexpr Fa1Table kFa1Tables[] = {
    {14, true, true, "fwd"},     {15, true, true, "bwd"},     {16, true, true, "fwdbwd"}, {17, false, true, "fwd"},
    {18, false, true, "bwd"},    {19, false, true, "fwdbwd"}, {20, true, false, "fwd"},   {21, true, false, "bwd"},
    {22, true, false, "fwdbwd"}, {23, false, false, "fwd"},   {24, false, false, "bwd"},  {25, false, false, "fwdbwd"},
};

const char* pass_words(const std::string& pass) {
  return pass == "fwd" ? "forward" : pass == "bwd" ? "backward" : "forward + backward";
}

Preset fa1_table(const Fa1Table& t) {
  const std::string config = t.dropout && t.masking ? "with dropout and masking"
                             : t.masking            ? "with masking"
                             : t.dropout            ? "with dropout"
                                                    : "plain";
  return {fmt::format("fa1-table{}", t.number),
          fmt::format("FlashAttention Table {}: {} runtime, {} (b 16, h 8, d 64, N 128-64k)", t.number,
                      pass_words(t.pass), config),
          fmt::format(R"({{"method": ["standard", "standard_fused", "flash1"], "pass": "{}", {}, "dropout": {},
                           "padding": "{}"}})",
                      t.pass, kFa1Shape, t.dropout ? "0.1" : "0", t.masking ? "random" : "none"),
          {"standard", "standard_fused", "flash1"}};
}

// FlashAttention-2 (arXiv:2307.08691), Section 4.1: N = 512 … 16k, batch so that there are
// 16k tokens, hidden dimension 2048, head dimension 64 or 128, without and with a causal
// mask; Figure 4 forward + backward, 5 forward, 6 backward (A100); Figure 7 forward +
// backward on an H100. Methods: the paper's PyTorch baseline (`standard`), FlashAttention
// (`flash1`) and FlashAttention-2 (`flash2`).
std::string fa2_sweep(const char* pass, const char* methods = R"("standard", "flash1", "flash2")") {
  return fmt::format(R"({{"method": [{}], "pass": "{}", "tokens": 16384,
    "model_dim": 2048, "head_dim": [64, 128], "causal": [false, true], "dtype": "fp16",
    "seqlen": [512, 1024, 2048, 4096, 8192, 16384]}})",
                     methods, pass);
}

// Decoding one token against a KV cache (issue 20): Llama 3's attention shapes (8B: 32 query
// heads, 8 K/V heads; 70B: 64 and 8; d 128), one query per sequence, batch 1-128, context
// 1k-128k, the cache contiguous and paged (pages of 64 tokens). Every combination fits in 80 GB:
// K + V take batch · context · 8 heads · 128 · 2 bytes · 2 = 64 GiB at batch 128 and 128k.
// flash2 and standard skip the paged points (they read contiguous K/V only), with the reason.
std::string decode_sweep(int heads) {
  return fmt::format(R"({{"method": ["flash_decode", "flash2", "standard"], "pass": "fwd", "heads": {},
    "kv_heads": 8, "head_dim": 128, "dtype": "fp16", "seqlen": 1, "batch": [1, 8, 32, 128],
    "seqlen_k": [1024, 8192, 32768, 131072], "kv_layout": ["contiguous", "paged:64"]}})",
                     heads);
}

std::vector<Preset> make_presets() {
  std::vector<Preset> p;
  for (const auto& t : kFa1Tables) p.push_back(fa1_table(t));
  p.push_back({"fa1-tables",
               "FlashAttention Tables 14-25 together: the four configurations x fwd, bwd, fwd+bwd",
               fmt::format(R"({{"method": ["standard", "standard_fused", "flash1"], "pass": ["fwd", "bwd", "fwdbwd"],
                  {}, "dropout": [0, 0.1], "padding": ["none", "random"]}})",
                           kFa1Shape),
               {"standard", "standard_fused", "flash1"}});
  p.push_back(
      {"fa1-table26",
       "FlashAttention Table 26: memory (workspace_bytes) of fwd+bwd, no dropout or masking (b 16, h 8, d 64)",
       fmt::format(R"({{"method": ["standard", "standard_fused", "flash1"], "pass": "fwdbwd", {}}})", kFa1Shape),
       {"standard", "standard_fused", "flash1"}});
  // Figure 2 (Section 3.2): N 1024, d 64, 16 heads, batch 64.
  p.push_back({"figure2-left",
               "FlashAttention Figure 2 left: fwd+bwd of standard vs flash1, key padding, no dropout (N 1024, d 64, h "
               "16, b 64)",
               R"({"method": ["standard", "flash1"], "pass": "fwdbwd", "batch": 64, "heads": 16, "seqlen": 1024,
                   "head_dim": 64, "padding": "random", "dtype": "fp16"})",
               {"standard", "flash1"}});
  p.push_back(
      {"figure2-middle",
       "FlashAttention Figure 2 middle: flash1 forward as its block size Bc grows 64-512 (N 1024, d 64, h 16, b 64)",
       R"({"method": "flash1", "pass": "fwd", "batch": 64, "heads": 16, "seqlen": 1024, "head_dim": 64,
                   "dtype": "fp16", "block_c": [64, 128, 256, 512]})",
       {"flash1"}});
  // The paper gives N = 4K and the sparsity; the shape is Appendix E.9's (b 16, h 8, d 64);
  // random 128 x 128 block masks of density 1 ... 0.05 (scripts/reproduce_blocksparse.sh's
  // setting). Dense methods run the dense problem, block-sparse ones the masks: no point is
  // skipped for being the wrong kind.
  p.push_back({"figure2-right",
               "FlashAttention Figure 2 right: block-sparse vs dense at N 4096, random masks of density 1-0.05, "
               "fwd and fwd+bwd",
               R"({"sweeps": [
                   {"method": ["flash2", "standard"], "pass": ["fwd", "fwdbwd"], "batch": 16, "heads": 8,
                    "seqlen": 4096, "head_dim": 64, "dtype": "fp16"},
                   {"method": ["blocksparse_flash", "blocksparse_standard"], "pass": ["fwd", "fwdbwd"], "batch": 16,
                    "heads": 8, "seqlen": 4096, "head_dim": 64, "dtype": "fp16", "pattern": "random",
                    "density": [1, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05], "sparse_block": 128}]})",
               {"flash2", "standard", "blocksparse_flash", "blocksparse_standard"}});
  p.push_back(
      {"fa2-figure4",
       "FlashAttention-2 Figure 4: fwd+bwd TFLOP/s (16k tokens, model dim 2048, d 64/128, causal off/on, N 512-16k)",
       fa2_sweep("fwdbwd"),
       {"standard", "flash1", "flash2"}});
  p.push_back({"fa2-figure5",
               "FlashAttention-2 Figure 5: forward TFLOP/s (same setting as Figure 4)",
               fa2_sweep("fwd"),
               {"standard", "flash1", "flash2"}});
  p.push_back({"fa2-figure6",
               "FlashAttention-2 Figure 6: backward TFLOP/s (same setting as Figure 4)",
               fa2_sweep("bwd"),
               {"standard", "flash1", "flash2"}});
  p.push_back({"fa2-figure7",
               "FlashAttention-2 Figure 7: fwd+bwd TFLOP/s on H100 (Figure 4's points, and flash3 beside them; run it "
               "on an H100)",
               fa2_sweep("fwdbwd", R"("standard", "flash1", "flash2", "flash3")"),
               {"standard", "flash1", "flash2", "flash3"}});
  p.push_back({"llama3-8b-decode",
               "decoding on Llama 3 8B's attention (32 query heads, 8 K/V heads, d 128): one query, batch 1-128, "
               "context 1k-128k, contiguous and paged:64 K/V",
               decode_sweep(32),
               {"flash_decode", "flash2", "standard"}});
  p.push_back({"llama3-70b-decode",
               "decoding on Llama 3 70B's attention (64 query heads, 8 K/V heads, d 128): one query, batch 1-128, "
               "context 1k-128k, contiguous and paged:64 K/V",
               decode_sweep(64),
               {"flash_decode", "flash2", "standard"}});
  // Variable-length prefill (issue 20): sequences of lengths uniform in 512-8192 packed into
  // 16k and 64k tokens (each pack drawn from the seed until the next sequence would pass the
  // budget), model dim 2048 (d 64: 32 heads, d 128: 16), causal off/on; flash2 on the packed
  // sequences and on the same sequences padded to the longest (key lengths = the lengths).
  // scripts/varlen_bench.sh adds the uniform batch at the mean length and judges the targets.
  p.push_back({"varlen-prefill",
               "variable-length prefill: lengths uniform in 512-8192, packs of 16k and 64k tokens, d 64/128, causal "
               "off/on, flash2 packed and padded to the longest",
               R"({"sweeps": [
                   {"method": "flash2", "pass": "fwd", "tokens": 16384, "model_dim": 2048, "head_dim": [64, 128],
                    "dtype": "fp16", "causal": [false, true], "seqlens": "uniform:512-8192",
                    "varlen_as": ["packed", "padded"]},
                   {"method": "flash2", "pass": "fwd", "tokens": 65536, "model_dim": 2048, "head_dim": [64, 128],
                    "dtype": "fp16", "causal": [false, true], "seqlens": "uniform:512-8192",
                    "varlen_as": ["packed", "padded"]}]})",
               {"flash2"}});
  // Variable-length decode (issue 20): Llama 3 8B's attention, one query per sequence over its own
  // context (key lengths uniform in 1k-16k and 4k-32k), batch 8 and 32; flash_decode on the packed
  // K/V and on the same sequences padded to the longest (key lengths = the lengths), flash2 on the
  // padded twin (it reads no packed decode); and at batch 32 the same sequences in pages of 64
  // tokens of their own (paged:64, as a serving engine's block table holds them: two points).
  p.push_back({"llama3-8b-decode-varlen",
               "variable-length decoding on Llama 3 8B's attention (GQA 32:8, d 128): one query, batch 8 and 32, "
               "context lengths uniform in 1k-16k and 4k-32k, flash_decode packed and padded to the longest, and "
               "paged:64 at batch 32",
               R"({"sweeps": [
                   {"method": "flash_decode", "pass": "fwd", "batch": [8, 32], "heads": 32, "kv_heads": 8,
                    "head_dim": 128, "dtype": "fp16", "seqlens": ["uniform:1024-16384", "uniform:4096-32768"],
                    "seqlen_q": 1, "varlen_as": ["packed", "padded"]},
                   {"method": "flash2", "pass": "fwd", "batch": [8, 32], "heads": 32, "kv_heads": 8,
                    "head_dim": 128, "dtype": "fp16", "seqlens": ["uniform:1024-16384", "uniform:4096-32768"],
                    "seqlen_q": 1, "varlen_as": "padded"},
                   {"method": "flash_decode", "pass": "fwd", "batch": 32, "heads": 32, "kv_heads": 8,
                    "head_dim": 128, "dtype": "fp16", "seqlens": ["uniform:1024-16384", "uniform:4096-32768"],
                    "seqlen_q": 1, "kv_layout": "paged:64"}]})",
               {"flash_decode", "flash2"}});
  return p;
}

}  // namespace

SweepFile Preset::sweep() const { return parse_sweep_text(sweep_json, "preset " + name); }

const std::vector<Preset>& all_presets() {
  static const std::vector<Preset> presets = make_presets();
  return presets;
}

const Preset* find_preset(const std::string& name) {
  for (const auto& p : all_presets())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> out;
  for (const auto& p : all_presets()) out.push_back(p.name);
  return out;
}

}  // namespace flashio

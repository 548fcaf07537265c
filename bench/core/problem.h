// Problem: one attention call's shape and options — the axes of a sweep point.
// Tensors are laid out [batch, heads, seqlen, head_dim] (BHND), contiguous.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/core/dtype.h"

namespace flashio {

enum class Pass { Fwd, Bwd, FwdBwd };
const char* to_string(Pass p);
std::optional<Pass> parse_pass(const std::string& s);  // fwd, bwd, fwdbwd (also fwd+bwd)

// Key padding: each sequence b attends only to its first key_lengths[b] keys.
enum class Padding { None, Random };  // Random: lengths uniform in [N-20, N] (FlashAttention's benchmark)
const char* to_string(Padding p);

struct Problem {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t kv_heads = 0;  // 0 = same as heads; fewer = GQA/MQA (must divide heads)
  int64_t seqlen_q = 1;
  int64_t seqlen_k = 0;  // 0 = same as seqlen_q
  int64_t head_dim = 64;
  DType dtype = DType::F16;
  // Top-left aligned: query i attends keys j <= i (as torch's is_causal), also when Nq != Nk
  // (decode: Nq < Nk, a query sees keys up to its own index; Nq > Nk: rows from Nk on see every
  // key). FlashAttention >= 2.1's bottom-right alignment is not implemented; a one-query decode
  // step under it is the unmasked problem (kernels/flash_decode/NOTES.md).
  bool causal = false;
  Padding padding = Padding::None;
  double dropout = 0.0;
  uint64_t seed = 0x5eed;
  // Bitwise-reproducible backward: dQ accumulated in a fixed order instead of with atomics
  // (flash2: K/V tiles add in turn, FlashAttention-2's deterministic mode). Methods that cannot
  // honour it give a `skipped` record; the forward passes of every method are deterministic.
  bool deterministic = false;
  double softmax_scale = 0.0;  // 0 = 1/sqrt(head_dim)
  // K/V storage (--kv-layout): 0 = contiguous [B, Hkv, Nk, d]; P > 0 = paged, pages of P tokens
  // ([pages, Hkv, P, d]) in a seeded random order, found through an int32 block table [B, ⌈Nk/P⌉]
  // (kv_pages_of). A storage layout only: the logical K/V, the reference and the check are the
  // same. P is a positive multiple of kKvPageMultiple. With a packed varlen decode (paged_varlen()):
  // sequence b's L_b keys in its own ⌈L_b/P⌉ pages, Σ_b ⌈L_b/P⌉ pages in all, the same table shape.
  int kv_page = 0;
  // Variable lengths (--seqlens, bench/core/varlen.h): "" = every sequence has seqlen_q tokens;
  // "uniform:A-B" (lengths drawn from the seed) or "file:PATH". seq_lengths holds the resolved
  // lengths (resolve_varlen): batch = their count, seqlen_q = the longest, seqlen_k = 0
  // (self-attention per sequence). Packed (the default): Q, O [H, T, d], K, V [Hkv, T, d],
  // L [H, T], T = Σ lengths, sequence b's tokens at rows cu[b] .. cu[b+1] of each head, no
  // padding. varlen_padded: the same sequences padded to the longest, [B, H, N, d] with key
  // lengths = the lengths (the key-padding path), its queries past a length computed and unused.
  // A record embeds the lengths (to_json "seq_lengths"), so a file: spec's path is never re-read.
  // Varlen decode (key_varlen(), --seqlen-q Nq with --seqlens): the lengths are the sequences'
  // KEY lengths (each one's context in a KV cache) and every sequence has seqlen_q = Nq queries,
  // fewer than the longest length, seqlen_k = the longest. Packed: Q, O [B, H, Nq, d] and
  // L [B, H, Nq] dense, K, V [Hkv, T, d] packed as above, or with kv_page paged per sequence
  // (paged_varlen, KvPages); padded: K, V [B, Hkv, Nk, d] (or the dense pages) with key lengths =
  // the lengths. A sequence of length 0 sees no key: its O rows are 0, its L −inf.
  std::string seqlens;
  std::vector<int32_t> seq_lengths;
  bool varlen_padded = false;
  int block_r = 0;             // forced tile rows (Br); 0 = the method's choice for the GPU
  int block_c = 0;             // forced tile columns (Bc); 0 = the method's choice
  // Forced tensor-core instruction of the fused kernels: "" (the method's choice: wgmma on a
  // Hopper GPU where the kernel has such a variant), "mma.sync" or "wgmma".
  std::string mma;
  // Block sparsity (bench/core/sparsity.h): "" or "none" = dense; butterfly, local, random,
  // causal_block, file:PATH. The mask is over sparse_block × sparse_block element blocks.
  std::string pattern;
  int sparse_block = 128;
  double sparse_density = 0.5;  // random: target fraction of non-zero blocks, in (0, 1]
  int sparse_window = 1;        // local: blocks on each side of the diagonal
  int sparse_global = 1;        // local: leading rows and columns that are all ones
  // A problem read from a record (problem_from_json): a file: pattern's path is never opened (a
  // result file must not make flashio read a path); its mask is the one the record embeds
  // ("pattern_mask", in the pattern-file format), and without one its density is the record's.
  bool from_record = false;
  std::string pattern_mask;
  std::optional<double> recorded_density;
  std::optional<std::pair<int64_t, int64_t>> recorded_blocks;

  bool sparse() const { return !pattern.empty() && pattern != "none"; }
  bool paged() const { return kv_page > 0; }
  bool varlen() const { return !seqlens.empty(); }
  // The varlen layout without padding (cu_seqlens; K/V packed [Hkv, T, d], or paged per sequence).
  bool packed() const { return varlen() && !varlen_padded; }
  // K/V packed [Hkv, T, d] (a packed varlen problem whose K/V are not paged).
  bool packed_kv() const { return packed() && !paged(); }
  // A varlen decode whose K/V are paged per sequence (vLLM's layout: a block table over a page pool).
  bool paged_varlen() const { return packed() && paged(); }
  // Varlen decode: the lengths are key lengths, each sequence has seqlen_q queries (above).
  bool key_varlen() const { return varlen() && nk() != seqlen_q; }
  bool packed_q() const { return packed() && !key_varlen(); }  // Q, O and L packed too
  // Keys beyond a per-sequence length are masked: --padding random, or a padded varlen problem.
  bool key_padded() const { return padding != Padding::None || (varlen() && varlen_padded); }
  // Real tokens: Σ seq_lengths for a varlen problem (keys of a varlen decode), else batch·seqlen_q.
  int64_t total_tokens() const;
  // Real query rows per head: Σ seq_lengths for a (self-attention) varlen problem, else batch·seqlen_q.
  int64_t query_tokens() const { return varlen() && !key_varlen() ? total_tokens() : batch * seqlen_q; }
  int64_t kvh() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t nk() const { return seqlen_k > 0 ? seqlen_k : seqlen_q; }
  double scale() const;
  // Elements of Q (and O) and of K (and V) as stored: packed varlen H·T·d and Hkv·T·d (varlen
  // decode: Q dense B·H·Nq·d, K/V packed). Paged, the logical keys' (the pages' unused slots are
  // not counted: KvPages::elements() is the pool's size).
  int64_t q_elements() const {
    return packed_q() ? heads * total_tokens() * head_dim : batch * heads * seqlen_q * head_dim;
  }
  int64_t kv_elements() const { return packed() ? kvh() * total_tokens() * head_dim : batch * kvh() * nk() * head_dim; }
  // Rows of L (query rows as stored): packed varlen H·T, else B·H·Nq.
  int64_t lse_elements() const { return packed_q() ? heads * total_tokens() : batch * heads * seqlen_q; }

  // The point's name, Google Benchmark style: b:4/h:16/n:4096/d:64/fp16[/causal]...[/det]
  std::string name() const;
  // Why the problem is impossible (d <= 0, heads not divisible by kv_heads, sizes beyond the
  // bounds below, ...), or nullopt.
  std::optional<std::string> invalid_reason() const;
};

// Bounds on a problem's sizes, so that every product of them is exact in int64 and no loop over
// them runs for ever: each extent at most kMaxExtent (the kernels index with 32-bit integers), a
// tensor at most kMaxTensorElements elements (2 TiB of fp16, beyond any GPU's memory).
inline constexpr int64_t kMaxExtent = (int64_t(1) << 31) - 1;
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;

// Page sizes (tokens) a paged K/V cache may have: positive multiples of this, the K/V tile of
// the kernels that read pages (flash_decode: 64 keys), so that no tile straddles two pages.
inline constexpr int kKvPageMultiple = 64;

// "contiguous" or "paged:P" (the --kv-layout value and the record's kv_layout).
std::string kv_layout_name(const Problem& p);
// Parses a --kv-layout value into Problem::kv_page (0 = contiguous); nullopt with `why` (one
// line naming the allowed values) when malformed or not a positive multiple of kKvPageMultiple.
std::optional<int> parse_kv_layout(const std::string& s, std::string* why);

// The paged storage of a problem's K/V (Problem::kv_page > 0): a block table of pages_per_seq =
// ⌈Nk/P⌉ entries per sequence; logical page j of sequence b stored at physical page
// table[b·pages_per_seq + j], a permutation of the pool drawn from the problem's seed. Dense:
// every sequence has pages_per_seq pages, pages = B·pages_per_seq. A paged varlen decode
// (Problem::paged_varlen): sequence b has ⌈L_b/P⌉ pages (none for L_b = 0), pages = Σ_b ⌈L_b/P⌉,
// and its table entries past them are -1 (never read).
struct KvPages {
  int64_t page = 0;
  int64_t pages_per_seq = 0;
  int64_t pages = 0;
  std::vector<int32_t> table;  // [B, pages_per_seq]
  std::vector<int32_t> used;   // [B]: pages of sequence b (pages_per_seq each, dense)
  // Elements of one physical page (all K/V heads): Hkv·P·d; of the paged K (or V) buffer.
  int64_t page_elements = 0;
  int64_t elements() const { return pages * page_elements; }
  // Element offset in the paged buffer of logical element (b, hk, key, col).
  int64_t offset(int64_t b, int64_t hk, int64_t key, int64_t col, int64_t kv_heads, int64_t d) const {
    const int64_t phys = table[size_t(b * pages_per_seq + key / page)];
    return ((phys * kv_heads + hk) * page + key % page) * d + col;
  }
};
KvPages kv_pages_of(const Problem& p);  // p.paged()

// a·b, or nullopt when it does not fit in int64 (a, b >= 0).
std::optional<int64_t> checked_mul(int64_t a, int64_t b);

// Valid key count per sequence for the problem's padding (deterministic in seed); a varlen
// problem's: its sequence lengths.
std::vector<int32_t> key_lengths(const Problem& p);

// Floating-point operations of one pass (FlashAttention-2 convention): forward
// 4·B·H·Nq·Nk·d, halved when causal; backward 2.5× forward; fwd+bwd 3.5×. With a block-sparse
// pattern, scaled by its density s (the work of the non-zero blocks).
double flops(const Problem& p, Pass pass);

// Bytes a pass must move between DRAM and the chip at the least: its tensors read once and its
// outputs written once: forward Q, K, V read, O written (+ L, fp32);
// backward Q, K, V, O, dO, L read, dQ, dK, dV written; fwd+bwd both. K and V count the logical
// keys (a paged cache's unused slots are not compulsory); key padding is not subtracted.
int64_t compulsory_bytes(const Problem& p, Pass pass);

// The point name: method/pass/problem-name.
std::string point_name(const std::string& method, Pass pass, const Problem& p);

nlohmann::json to_json(const Problem& p);
Problem problem_from_json(const nlohmann::json& j);  // throws std::runtime_error on a bad field

}  // namespace flashio
